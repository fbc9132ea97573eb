"""`mpj`: Java programs on MPJ Express's starter (what `mpjrun` runs), on this machine.

The platform's `[launcher]`:

    kind = "mpj"
    device = "multicore"     # MPJ's device: multicore (ranks are threads of one JVM)

The program is an executable jar (`hpceval.mpj.compile_java_program`); the argv is

    java -cp starter.jar:runtimecommon.jar:log4j-1.2.jar runtime.starter.MPJRun
         -np N -dev multicore [extra_args] -jar PROGRAM.jar --opt=value ...

with MPJ_HOME set to hpceval's copy of MPJ Express (hpceval.mpj explains why a copy).
MPJRun reads ITS options anywhere on the command line (a program argument `-np 3` changes
the rank count) and knows no `--`: every program argument must therefore start with `--`
(MPJRun passes those through), which the launcher checks.

The multicore device runs all ranks as threads of one JVM that MPJ does not pin: the
placement's binding is recorded as "none". With `device = "niodev"` every rank is its own
JVM, connected to the others over TCP on this host: MPJRun asks an MPJ daemon (port 40055,
MPJ's conf) to start them, so the launcher starts that daemon for the campaign (`session`)
in its own process group and stops the group, ranks included, on every exit path; a busy
port (another daemon) is a one-line error. hybdev, and niodev across hosts (daemons on
other nodes), are refused: not done yet.
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
from dataclasses import replace
from pathlib import Path
from typing import Literal

from hpceval.config import StrictModel
from hpceval.errors import UserError
from hpceval.execute import KILL_GRACE_S
from hpceval.launch import register
from hpceval.launch.base import PLACEMENT_PROBE, Command, Launcher
from hpceval.model import Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, MpjInstallation, installation

# MPJ Express's devices; the ones hpceval can start today.
MpjDevice = Literal["multicore", "niodev", "hybdev"]
SUPPORTED_DEVICES = ("multicore", "niodev")
# Seconds a fresh daemon gets to listen on its port.
DAEMON_START_S = 30.0


class MpjOptions(StrictModel):
    device: MpjDevice = "multicore"


def check_device(device: str) -> None:
    if device not in SUPPORTED_DEVICES:
        raise UserError(
            f"launcher.device {device}: not supported by hpceval yet "
            '(supported: "multicore", "niodev" on one host)',
        )


def check_java_program(program: Sequence[str]) -> None:
    """The program is a jar, and MPJRun's option parser can read none of its arguments."""
    if tuple(program) == PLACEMENT_PROBE:
        return
    if not program or not program[0].endswith(".jar"):
        shown = program[0] if program else "nothing"
        raise UserError(
            f"launcher mpj starts Java programs (a .jar), not {shown}: run native benchmarks "
            "on a platform whose launcher is local"
        )
    for arg in program[1:]:
        if not arg.startswith("--"):
            raise UserError(
                f"launcher mpj: program argument {arg[:64]!r} does not start with '--' "
                "(MPJRun would read it as its own option)"
            )


def mpjrun_argv(
    starter: Sequence[str],
    device: str,
    ranks: int,
    extra: Sequence[str],
    program: Sequence[str],
    machines: Path | None = None,
) -> list[str]:
    """The starter's argv; `starter` is `java -cp ... runtime.starter.MPJRun`; niodev
    names its machines file (the hosts whose daemons start the ranks)."""
    check_device(device)
    check_java_program(program)
    hosts = ["-machinesfile", str(machines)] if machines is not None else []
    return [*starter, "-np", str(ranks), "-dev", device, *hosts, *extra, "-jar", *program]


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
class MpjLauncher(Launcher):
    name = "mpj"
    options_model = MpjOptions
    # The niodev daemon's machines file while a session runs.
    machines: Path | None = None

    def session(self) -> AbstractContextManager[None]:
        return self._session()

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        options: MpjOptions = self.options()
        if options.device != "niodev":
            yield
            return
        with local_daemon(installation(), DEFAULT_DAEMON_PORT) as machines:
            self.machines = machines
            try:
                yield
            finally:
                self.machines = None

    def preflight(self) -> None:
        options: MpjOptions = self.options()
        check_device(options.device)
        installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        options: MpjOptions = self.options()
        if placement.nodes != 1:
            raise UserError(
                f"launcher mpj runs on one node; placement {placement.label()} "
                f"asks for {placement.nodes}"
            )
        if placement.threads_per_rank != 1:
            raise UserError(
                f"placement {placement.label()}: launcher mpj runs one thread per rank "
                f"(threads_per_rank {placement.threads_per_rank})"
            )
        self.check_placement(placement)
        mpj = installation()
        machines = None
        if options.device == "niodev":
            # Outside a session (the placement check before the campaign) no daemon runs yet.
            machines = self.machines or Path("machines")
        argv = mpjrun_argv(
            mpj.starter_argv(),
            options.device,
            placement.ranks,
            self.platform.launcher.extra_args,
            program,
            machines,
        )
        env = {"MPJ_HOME": str(mpj.home), **self.platform.launcher.env}
        oversubscribed = self.oversubscribed(placement)
        effective = replace(placement, binding="none")
        notes: tuple[str, ...] = (
            "MPJ multicore: ranks are threads of one JVM, not bound to cores"
            if options.device == "multicore"
            else "MPJ niodev: one JVM per rank over TCP on this host, not bound to cores",
        )
        if oversubscribed:
            notes += ("oversubscribed: more ranks than cores",)
        return Command(tuple(argv), env, effective, oversubscribed, notes)
