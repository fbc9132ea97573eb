"""`mpj`: Java programs on this machine through MPJ Express (the `mpjrun` starter).

The platform's `[launcher]`:

    kind = "mpj"
    device = "multicore"     # MPJ's device (the mpjrun starter's key): multicore | niodev

The local scheduler (one process group on this machine) that fills the mpjrun starter's
request with the JVM and hpceval's copy of MPJ Express (hpceval.mpj). With the multicore
device all ranks are threads of one JVM. With `device = "niodev"` every rank is its own JVM,
connected to the others over TCP on this host: MPJRun asks an MPJ daemon (port 40055, MPJ's
conf) to start them, so this scheduler starts that daemon for the campaign (`session`) in
its own process group and stops the group, ranks included, on every exit path (also when
hpceval is killed: hpceval.launch.schedulers.mpj_daemons); a busy port (another daemon) is a
one-line error. niodev across nodes runs on the netns emulated cluster (launcher.schedulers.
netns with starter = "mpjrun").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hpceval.errors import UserError
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.local import LocalScheduler
from hpceval.launch.schedulers.mpj_daemons import local_daemon, port_is_free
from hpceval.launch.starters.base import Nodes, StartRequest
from hpceval.launch.starters.mpjrun import (
    DAEMON_DEVICES,
    MpjrunOptions,
    MpjStartRequest,
    check_device,
)
from hpceval.model import Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, installation


@register
class MpjScheduler(LocalScheduler):
    name = "mpj"
    default_starter = "mpjrun"
    # The niodev daemon's machines file while a session runs.
    machines: Path | None = None

    def device(self) -> str:
        options: MpjrunOptions | None = self.starter_options()
        return options.device if options is not None else "multicore"

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            stack.callback(self.close)
            if self.device() == "niodev":
                self.machines = stack.enter_context(
                    local_daemon(installation(), DEFAULT_DAEMON_PORT)
                )
                stack.callback(setattr, self, "machines", None)
            yield

    def session(self) -> AbstractContextManager[None]:
        return self._session()

    def _check_device(self) -> None:
        check_device(self.device())
        if self.device() == "hybdev":
            raise UserError(
                "launcher.device hybdev: MPJ's hybrid device runs across nodes: use the netns "
                'emulated cluster (kind = "netns", starter = "mpjrun", e.g. '
                'netns-2x2-mpj-hybdev); on this machine alone use "multicore"'
            )

    def preflight(self) -> None:
        self._check_device()
        installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        self._check_device()
        request = super().start_request(placement, program)
        nodes = Nodes()
        if self.device() == "niodev":
            # Outside a session (the placement check before the campaign) no daemon runs yet.
            machines = self.machines or Path("machines")
            nodes = Nodes(hosts=("localhost",), hostfile=str(machines))
        return mpj_request(request, nodes)


def check_daemon_device(device: str, who: str) -> None:
    """A scheduler across nodes starts MPJ daemons: niodev or hybdev, not multicore."""
    check_device(device)
    if device not in DAEMON_DEVICES:
        raise UserError(
            f"launcher.device {device}: {who} runs MPJ Express's niodev (one JVM per rank) or "
            "hybdev (one JVM per node) device, with an MPJ daemon on every node; multicore runs "
            'on one machine (kind = "mpj")'
        )


def mpj_request(request: StartRequest, nodes: Nodes) -> MpjStartRequest:
    """The scheduler's request for the mpjrun starter: MPJ's JVM and home, the nodes."""
    mpj = installation()
    fields = {**asdict_shallow(request), "executable": mpj.java, "nodes": nodes}
    return MpjStartRequest(**fields, mpj_home=str(mpj.home))


def asdict_shallow(request: StartRequest) -> dict[str, Any]:
    """The request's fields, values as they are (dataclasses.asdict would copy them deep)."""
    return {name: getattr(request, name) for name in request.__dataclass_fields__}


__all__ = ["MpjScheduler", "check_daemon_device", "mpj_request", "port_is_free"]
