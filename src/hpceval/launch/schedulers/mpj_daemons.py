"""MPJ Express daemons for a campaign: on this host (`local_daemon`) or one in every node of
an emulated cluster (`node_daemons`).

MPJRun asks the daemon of every host in its machines file to start that host's rank JVMs
(niodev: one JVM per rank, TCP between them). hpceval starts the daemons itself when a
campaign's session opens and stops them, with the ranks they started, when it closes. Each
daemon runs under hpceval's reaper (hpceval.reaper), which gets SIGTERM when hpceval dies, even
by kill -9, and then ends everything below it: no daemon or rank JVM outlives hpceval.

In an emulated cluster a daemon runs through the cluster's rsh agent, as a real node's would
through ssh: in the node's namespace, with the node's own host name (MPJ looks its host name
up, in the nodes' hosts file installed for the daemons' lifetime, and tells the other nodes
that address), and with a home
directory of its own (the daemons keep their jobs' files under ~/.mpj_users and empty it;
nodes sharing one home would delete each other's files).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from hpceval.clusters.netns import IP, ClusterLayout, install_hosts, remove_hosts
from hpceval.errors import UserError
from hpceval.execute import KILL_GRACE_S, die_with_parent, reaped
from hpceval.mpj import MpjInstallation

# Seconds a fresh daemon gets to listen on its port.
DAEMON_START_S = 30.0
# A connection attempt to a daemon's port from inside a node (exit status 0: listening).
_PROBE = (
    "import socket,sys\n"
    "s=socket.socket()\ns.settimeout(1)\n"
    "sys.exit(s.connect_ex((sys.argv[1],int(sys.argv[2]))))"
)


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def listening_in(namespace: str, address: str, port: int) -> bool:
    """Whether something listens on address:port, seen from inside `namespace`."""
    probe = [IP, "netns", "exec", namespace, sys.executable, "-I", "-S", "-c", _PROBE,
             address, str(port)]  # fmt: skip
    try:
        return subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def start_daemon(
    argv: list[str], mpj: MpjInstallation, log: Path, cwd: Path
) -> subprocess.Popen[bytes]:
    """One daemon, reaped, in a process group of its own (with the ranks it starts)."""
    with log.open("w") as out:
        return subprocess.Popen(
            reaped(argv),
            cwd=cwd,
            env={**os.environ, "MPJ_HOME": str(mpj.home)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def stop_daemon(daemon: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon's group (its reaper ends the ranks too), SIGKILL after a grace."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if daemon.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.wait(timeout=KILL_GRACE_S)


def _wait_listening(
    daemon: subprocess.Popen[bytes], log: Path, listening: Callable[[], bool], where: str
) -> None:
    deadline = time.monotonic() + DAEMON_START_S
    while not listening():
        if daemon.poll() is not None or time.monotonic() > deadline:
            text = log.read_text(errors="replace") if log.is_file() else ""
            tail = text.strip().splitlines()[-1:]
            raise UserError(
                f"the MPJ daemon {where} did not start: {' '.join(tail) or 'no output'}"
            )
        time.sleep(0.1)


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
    log = workdir / "daemon.log"
    daemon = start_daemon(mpj.daemon_argv(port), mpj, log, workdir)
    try:
        _wait_listening(daemon, log, lambda: not port_is_free(port), "on this host")
        yield machines
    finally:
        stop_daemon(daemon)
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def node_daemons(layout: ClusterLayout, mpj: MpjInstallation, port: int) -> Iterator[Path]:
    """A daemon in every node of the emulated cluster; yields the campaign's directory
    (where the machines files go)."""
    workdir = Path(tempfile.mkdtemp(prefix="hpceval-mpj-"))
    daemons: list[subprocess.Popen[bytes]] = []
    install_hosts(layout)
    try:
        for node in range(layout.nodes):
            ns = layout.namespace(node)
            home = workdir / ns
            home.mkdir()
            argv = mpj.daemon_argv(port, home=home)
            log = workdir / f"{ns}.log"
            daemons.append(start_daemon([str(layout.agent), ns, shlex.join(argv)], mpj, log, home))
        for node, daemon in enumerate(daemons):
            ns, address = layout.namespace(node), layout.address(node)

            def listening(ns: str = ns, address: str = address) -> bool:
                return listening_in(ns, address, port)

            _wait_listening(daemon, workdir / f"{ns}.log", listening, f"in node {ns}")
        yield workdir
    finally:
        for daemon in daemons:
            stop_daemon(daemon)
        remove_hosts([layout.namespace(n) for n in range(layout.nodes)])
        shutil.rmtree(workdir, ignore_errors=True)
