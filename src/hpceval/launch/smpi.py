"""`smpi`: run a program built with smpicc on a simulated platform (SimGrid's smpirun).

Every rank runs inside one smpirun process on this machine; time, hosts and the network
are SimGrid's. Measurements taken through this launcher are labelled **simulated**. The
platform file and the SMPI settings (`cfg`: calibrated network factors, host speed) come from
`hpceval simulate` (hpceval.simulate), which writes a platform whose `[launcher]` is:

    kind = "smpi"
    mpirun = "smpirun"
    mpicc = "smpicc"
    platform_file = "/path/platform.xml"   # SimGrid platform (XML v4.1)
    workdir = "/path"                      # hostfiles are written here
    cfg = { "smpi/host-speed" = "1e9f" }   # each becomes --cfg=KEY:VALUE

Ranks are numbered node by node: the hostfile lists `node-0` ranks_per_node times, then
`node-1`, ... (the host names of hpceval.simulate.platform).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from hpceval.config import Argument, StrictModel
from hpceval.errors import UserError
from hpceval.launch import register
from hpceval.launch.base import Command, Launcher, thread_environment
from hpceval.model import Origin, Placement
from hpceval.simulate.platform import hostfile_lines


class SmpiOptions(StrictModel):
    platform_file: Argument
    workdir: Argument
    cfg: dict[str, str] = Field(default_factory=dict)


def cfg_args(cfg: dict[str, str]) -> list[str]:
    """`--cfg=KEY:VALUE` per setting, sorted; smpirun splits on blanks, so none may hold one."""
    args = []
    for key in sorted(cfg):
        value = cfg[key]
        if any(c.isspace() for c in key + value):
            raise UserError(f"launcher.cfg.{key}: SMPI settings cannot contain blanks")
        args.append(f"--cfg={key}:{value}")
    return args


@register
class SmpiLauncher(Launcher):
    name = "smpi"
    origin: ClassVar[Origin] = Origin.SIMULATED
    options_model = SmpiOptions

    def hostfile(self, placement: Placement) -> Path:
        """Where the hostfile of a placement is written."""
        options: SmpiOptions = self.options()
        return Path(options.workdir) / f"hosts-{placement.nodes}x{placement.ranks_per_node}.txt"

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        if placement.threads_per_rank != 1:
            raise UserError(
                f"placement {placement.label()}: SMPI simulates one thread per rank "
                f"(threads_per_rank {placement.threads_per_rank})"
            )
        self.check_placement(placement)
        options: SmpiOptions = self.options()
        hostfile = self.hostfile(placement)
        hostfile.parent.mkdir(parents=True, exist_ok=True)
        hostfile.write_text("\n".join(hostfile_lines(placement)) + "\n")
        argv = [
            self.runtime.mpirun,
            "-np", str(placement.ranks),
            "-platform", options.platform_file,
            "-hostfile", str(hostfile),
            *cfg_args(options.cfg),
            *self.platform.launcher.extra_args,
            *program,
        ]  # fmt: skip
        env = {**thread_environment(1), **self.platform.launcher.env}
        oversubscribed = self.oversubscribed(placement)
        notes = (
            ("simulated on SimGrid SMPI",)
            + (("more ranks than simulated cores: they share them",) if oversubscribed else ())
        )
        return Command(tuple(argv), env, placement, oversubscribed, notes)
