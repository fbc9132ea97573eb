"""`mpj`: Java programs on this machine through MPJ Express (the `mpjrun` starter).

The platform's `[launcher]`:

    kind = "mpj"
    device = "multicore"     # MPJ's device (the mpjrun starter's key): multicore | niodev

The local scheduler (one process group on this machine) that fills the mpjrun starter's
request with the JVM and hpceval's copy of MPJ Express (hpceval.mpj). With the multicore
device all ranks are threads of one JVM. With `device = "niodev"` every rank is its own JVM,
connected to the others over TCP on this host: MPJRun asks an MPJ daemon (port 40055, MPJ's
conf) to start them, so this scheduler starts that daemon for the campaign (`session`) in
its own process group and stops the group, ranks included, on every exit path; a busy port
(another daemon) is a one-line error. niodev across hosts (daemons on other nodes) is
refused: not done yet.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hpceval.errors import UserError
from hpceval.execute import KILL_GRACE_S
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.local import LocalScheduler
from hpceval.launch.starters.base import Nodes, StartRequest
from hpceval.launch.starters.mpjrun import MpjrunOptions, MpjStartRequest, check_device
from hpceval.model import Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, MpjInstallation, installation

# Seconds a fresh daemon gets to listen on its port.
DAEMON_START_S = 30.0


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@contextlib.contextmanager
def local_daemon(mpj: MpjInstallation, port: int) -> Iterator[Path]:
    """An MPJ daemon on this host for the duration; yields the machines file naming it."""
    if not port_is_free(port):
        raise UserError(
            f"launcher.device niodev: port {port} is in use (another MPJ daemon?); "
            'stop it (mpjdaemon -halt) or use device = "multicore"'
        )
    workdir = Path(tempfile.mkdtemp(prefix="hpceval-mpj-"))
    machines = workdir / "machines"
    machines.write_text("localhost\n")
    with (workdir / "daemon.log").open("w") as log:
        daemon = subprocess.Popen(
            mpj.daemon_argv(port),
            cwd=workdir,
            env={**os.environ, "MPJ_HOME": str(mpj.home)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its group holds the ranks it starts: stopped together
        )
    try:
        deadline = time.monotonic() + DAEMON_START_S
        while port_is_free(port):
            if daemon.poll() is not None or time.monotonic() > deadline:
                tail = (workdir / "daemon.log").read_text().strip().splitlines()[-1:]
                raise UserError(f"the MPJ daemon did not start: {' '.join(tail) or 'no output'}")
            time.sleep(0.1)
        yield machines
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
        shutil.rmtree(workdir, ignore_errors=True)


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

    def preflight(self) -> None:
        check_device(self.device())
        installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        request = super().start_request(placement, program)
        mpj = installation()
        nodes = Nodes()
        if self.device() == "niodev":
            # Outside a session (the placement check before the campaign) no daemon runs yet.
            machines = self.machines or Path("machines")
            nodes = Nodes(hosts=("localhost",), hostfile=str(machines))
        fields = {**asdict_shallow(request), "executable": mpj.java, "nodes": nodes}
        return MpjStartRequest(**fields, mpj_home=str(mpj.home))


def asdict_shallow(request: StartRequest) -> dict[str, Any]:
    """The request's fields, values as they are (dataclasses.asdict would copy them deep)."""
    return {name: getattr(request, name) for name in request.__dataclass_fields__}
