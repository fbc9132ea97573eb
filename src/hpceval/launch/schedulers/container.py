"""`container`: the ranks run in podman containers on this machine, in one of the two
layouts users run: `mpi-inside` (mpirun and all ranks in one container: the starter's whole
argv runs under `podman run`) or `ranks-inside` (the host's mpirun starts `podman run …
program` as each rank). Options and the flags that make podman start here:
hpceval.containers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hpceval.containers import ContainerOptions, check_runtime, container_facts, run_prefix
from hpceval.launch.command import PLACEMENT_PROBE, Command
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.local import LocalScheduler
from hpceval.model import Placement


@register
class ContainerScheduler(LocalScheduler):
    name = "container"
    options_model = ContainerOptions

    def _program_dirs(self, program: Sequence[str]) -> list[str]:
        """The directory of the program (hpceval's build cache): an image does not hold it."""
        if not program or tuple(program) == PLACEMENT_PROBE or not program[0].startswith("/"):
            return []
        return [str(Path(program[0]).parent)]

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        options: ContainerOptions = self.options()
        binds = self._program_dirs(program)
        if options.layout == "ranks-inside":
            wrapped = [*run_prefix(options, binds=binds, rank=True), *program]
            return super().command(placement, wrapped)
        command = super().command(placement, program)
        argv = [*run_prefix(options, binds=binds), *command.argv]
        return replace(command, argv=tuple(argv))

    def preflight(self) -> None:
        check_runtime(self.options())

    def provenance(self) -> dict[str, Any]:
        return container_facts(self.options())
