"""MPJ Express daemons for a campaign: on this host (`local_daemon`), one in every node of
an emulated cluster (`node_daemons`), or one on every host of a hostfile platform
(`held_daemons`, over SSH).

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

On hostfile hosts a daemon is held by the SSH session that started it (`HELD_DAEMON_SCRIPT`):
the remote shell starts the daemon in a session of its own, then reads its standard input
until the SSH connection closes, and then ends the daemon's whole process group (the rank
JVMs it started are in it) and removes its home directory. The connection closes when hpceval
closes the session's input (the campaign ends), when the reaper ends ssh, or when the kernel
closes hpceval's end of the pipe (hpceval killed, even by kill -9): nothing stays on the hosts.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hpceval.clusters.netns import IP, ClusterLayout, install_hosts, remove_hosts
from hpceval.errors import UserError
from hpceval.execute import KILL_GRACE_S, die_with_parent, reaped
from hpceval.mpj import MpjInstallation
from hpceval.reaper import REMOVE_ENV

# Seconds a fresh daemon gets to listen on its port.
DAEMON_START_S = 30.0
# The kernel's TCP socket tables of a network namespace (read from inside it).
PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
# A socket's state in those tables: 0A is TCP_LISTEN.
TCP_LISTEN = "0A"


# Seconds a port MPJ needs may stay held by another socket before the session gives up (an
# outgoing connection that the kernel gave that port as its ephemeral one soon closes).
PORT_HELD_WAIT_S = 10.0
# TIME_WAIT: a closed connection's socket, which does not keep a listener (SO_REUSEADDR, as
# Java's ServerSocket sets it) from binding the port.
TCP_TIME_WAIT = "06"


def held_ports(table: str) -> set[int]:
    """The local ports of every socket in /proc/net/tcp or tcp6 text that would keep a
    listener off its port: listening or connected, not TIME_WAIT (pure). MPJ's ports (40002,
    40052, 40055) lie in Linux's ephemeral range, so an outgoing connection can hold one."""
    ports = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] != TCP_TIME_WAIT and ":" in fields[1]:
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listening_ports(table: str) -> set[int]:
    """The ports of the listening sockets in /proc/net/tcp or tcp6 text (pure). Readiness is
    read there, never probed by connecting: MPJ's daemon takes a connection that sends
    nothing for a bad client, and a probe at the wrong moment left it unable to start ranks."""
    ports = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == TCP_LISTEN and ":" in fields[1]:
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _tables_here() -> str:
    texts = []
    for path in PROC_NET_TCP:
        with contextlib.suppress(OSError):
            texts.append(Path(path).read_text())
    return "".join(texts)


def port_is_free(port: int) -> bool:
    """No socket of this network namespace listens on `port` (nothing connects to it)."""
    return port not in listening_ports(_tables_here())


def listening_in(namespace: str, port: int) -> bool:
    """Whether a socket listens on `port` in `namespace` (its tables, read from inside)."""
    read = [IP, "netns", "exec", namespace, "cat", *PROC_NET_TCP]
    try:
        proc = subprocess.run(read, capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return False
    # (cat still prints tcp when a kernel without IPv6 has no tcp6.)
    return port in listening_ports(proc.stdout)


def start_daemon(
    argv: list[str], mpj: MpjInstallation, log: Path, cwd: Path, workdir: Path
) -> subprocess.Popen[bytes]:
    """One daemon, reaped, in a process group of its own (with the ranks it starts); its
    reaper removes the campaign's `workdir` when it ends, also after hpceval's SIGKILL."""
    with log.open("w") as out:
        return subprocess.Popen(
            reaped(argv),
            cwd=cwd,
            env={**os.environ, "MPJ_HOME": str(mpj.home), REMOVE_ENV: str(workdir)},
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


def _wait_ports_free(ports: dict[int, str]) -> None:
    """Every one of MPJ's ports free on this host, or a one-line error naming the held one: a
    listener there is another MPJ (or anything else), a connection's end may close soon."""
    deadline = time.monotonic() + PORT_HELD_WAIT_S
    while True:
        table = _tables_here()
        listening, held = listening_ports(table), held_ports(table)
        busy = sorted(p for p in ports if p in held)
        if not busy:
            return
        port = busy[0]
        if port in listening or time.monotonic() > deadline:
            what = "another MPJ daemon?" if port in listening else "held by a connection"
            raise UserError(
                f"launcher.device niodev: port {port} is in use ({what}), and "
                f"{ports[port]} listens there; stop it (mpjdaemon -halt) or use "
                'device = "multicore"'
            )
        time.sleep(0.2)


@contextlib.contextmanager
def local_daemon(mpj: MpjInstallation, port: int) -> Iterator[Path]:
    """An MPJ daemon on this host for the duration; yields the machines file naming it. It is
    ready when both its ports listen: the daemon's and its port manager's, whose thread the
    daemon starts first and outlives (a daemon whose port manager could not bind accepts a
    job and never starts its ranks)."""
    ports = {p: who for p, who in mpj.ports().items() if who != "the MPJ daemon"}
    ports[port] = "the MPJ daemon"
    _wait_ports_free(ports)
    daemon_ports = {p for p, who in ports.items() if who.startswith("the MPJ daemon")}
    workdir = Path(tempfile.mkdtemp(prefix="hpceval-mpj-"))
    machines = workdir / "machines"
    machines.write_text("localhost\n")
    log = workdir / "daemon.log"
    daemon = start_daemon(mpj.daemon_argv(port), mpj, log, workdir, workdir)
    try:
        _wait_listening(
            daemon,
            log,
            lambda: daemon_ports <= listening_ports(_tables_here()),
            "on this host",
        )
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
            agent = [str(layout.agent), ns, shlex.join(argv)]
            daemons.append(start_daemon(agent, mpj, log, home, workdir))
        for node, daemon in enumerate(daemons):
            ns = layout.namespace(node)

            def listening(ns: str = ns) -> bool:
                return listening_in(ns, port)

            _wait_listening(daemon, workdir / f"{ns}.log", listening, f"in node {ns}")
        yield workdir
    finally:
        for daemon in daemons:
            stop_daemon(daemon)
        remove_hosts([layout.namespace(n) for n in range(layout.nodes)])
        shutil.rmtree(workdir, ignore_errors=True)


# The remote side of a held daemon ($1 MPJ_HOME, $2 java, $3 port): a fixed script, the
# values passed as its positional parameters (quoted by shlex for the remote shell). `setsid`
# in a background job (not a group leader) does not fork: $! is the daemon's process group.
HELD_DAEMON_SCRIPT = """\
home=$(mktemp -d "${TMPDIR:-/tmp}/hpceval-mpj-XXXXXX") || exit 1
cd "$home" || exit 1
MPJ_HOME=$1; export MPJ_HOME
setsid "$2" -Duser.home="$home" -jar "$MPJ_HOME/lib/daemon.jar" "$3" </dev/null &
daemon=$!
stop() {
  exec >/dev/null 2>&1
  trap '' HUP TERM INT PIPE
  for sig in TERM KILL; do
    kill -"$sig" -"$daemon"
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
      kill -0 -"$daemon" || break
      sleep 0.1
    done
  done
  cd / && rm -rf "$home"
  exit 0
}
trap stop HUP TERM INT PIPE
cat >/dev/null
stop
"""
# Seconds a held daemon's remote shell gets to end it after its input closed.
HELD_STOP_S = 10.0


def held_daemon_argv(mpj: MpjInstallation, port: int) -> list[str]:
    """The command (for this host, or the remote command of ssh) that starts a held daemon."""
    return ["/bin/sh", "-c", HELD_DAEMON_SCRIPT, "sh", str(mpj.home), mpj.java, str(port)]


def listening_at(host: str, port: int) -> bool:
    """Whether something here or on `host` accepts connections on `port`."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def stop_held(daemon: subprocess.Popen[bytes]) -> None:
    """Close the daemon's input (its remote shell then ends it), kill what is left after
    HELD_STOP_S."""
    if daemon.stdin is not None:
        with contextlib.suppress(OSError):
            daemon.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        daemon.wait(timeout=HELD_STOP_S)
    stop_daemon(daemon)


@contextlib.contextmanager
def held_daemons(
    hosts: Sequence[str],
    remote_shell: Callable[[str], list[str] | None],
    mpj: MpjInstallation,
    port: int,
) -> Iterator[Path]:
    """A daemon on every host, each held by the command that started it: `remote_shell(host)`
    is the argv prefix that runs a command on the host (ssh ... -- HOST), None for this
    machine. Yields the campaign's directory (where the machines files go)."""
    unique = list(dict.fromkeys(hosts))
    if busy := [h for h in unique if listening_at(h, port)]:
        raise UserError(
            f"launcher starter mpjrun: port {port} is in use on {', '.join(busy)} (another MPJ "
            "daemon?); stop it (mpjdaemon -halt) before the campaign"
        )
    workdir = Path(tempfile.mkdtemp(prefix="hpceval-mpj-"))
    daemons: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    try:
        for index, host in enumerate(unique):
            argv = held_daemon_argv(mpj, port)
            prefix = remote_shell(host)
            if prefix is not None:
                argv = [*prefix, shlex.join(argv)]  # ssh hands its remote shell one line
            log = workdir / f"daemon-{index}.log"
            with log.open("w") as out:
                daemon = subprocess.Popen(
                    reaped(argv),
                    cwd=workdir,
                    # (its reaper removes the machines file's directory, also after SIGKILL)
                    env={**os.environ, REMOVE_ENV: str(workdir)},
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            daemons.append((host, daemon, log))
        for host, daemon, log in daemons:

            def listening(host: str = host) -> bool:
                return listening_at(host, port)

            _wait_listening(daemon, log, listening, f"on host {host}")
        yield workdir
    finally:
        for _, daemon, _ in daemons:
            if daemon.stdin is not None:
                with contextlib.suppress(OSError):
                    daemon.stdin.close()
        for _, daemon, _ in daemons:
            stop_held(daemon)
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------- in a Slurm job

# Where the starter's argv names the machines file; the job writes it (its nodes are known
# only there) and puts its path in that place.
MACHINES_PLACEHOLDER = "@HPCEVAL_MPJ_MACHINES@"
# Seconds the job's daemons get to listen on their port.
JOB_DAEMON_START_S = 60
# Inside the batch job ($1 MPJ_HOME, $2 java, $3 port, $4 machines-file lines per node, $5
# seconds the daemons get, $6 MACHINES_PLACEHOLDER, then MPJRun's argv): one daemon per
# allocated node as a job step (each with a home of its own: the nodes may share /tmp),
# MPJRun once they all listen, the step ended after it and the homes removed. The daemons
# and the ranks they start belong to the step: scancel of the job (hpceval stopped or killed,
# the time limit) ends them with it.
JOB_DAEMONS_SCRIPT = r"""
mpj_home=$1 java=$2 port=$3 per_node=$4 start_s=$5 placeholder=$6
shift 6
dir=$(mktemp -d "${TMPDIR:-/tmp}/hpceval-mpj-XXXXXX") || exit 1
# A step on every node (its home: the job's and node's, removed by a second step at the end).
# (--ntasks too: the job's SLURM_NTASKS, the ranks', would override --ntasks-per-node.)
on_nodes() {
  srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 \
    --mpi=none "$@"
}
home='${TMPDIR:-/tmp}/hpceval-mpj-$SLURM_JOB_ID-$SLURM_NODEID'
on_nodes --kill-on-bad-exit=1 /bin/sh -c "h=$home"'
mkdir -p "$h" && cd "$h" && MPJ_HOME=$1 exec "$2" -Duser.home="$h" -jar "$1/lib/daemon.jar" "$3"' \
  sh "$mpj_home" "$java" "$port" </dev/null >"$dir/daemons.log" 2>&1 &
daemons=$!
stop() {
  kill -TERM "$daemons" 2>/dev/null
  wait "$daemons"
  # --overlap: the daemons' step may still be completing (its resources not yet free).
  on_nodes --overlap /bin/sh -c "rm -rf -- \"$home\"" </dev/null >/dev/null 2>&1
  rm -rf "$dir"
}
for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
  until (exec 3<>"/dev/tcp/$node/$port") 2>/dev/null; do
    if ! kill -0 "$daemons" 2>/dev/null || [ "$SECONDS" -gt "$start_s" ]; then
      why=$(tail -n 1 "$dir/daemons.log")
      echo "hpceval: the MPJ daemon on node $node did not start: ${why:-no output}" >&2
      stop
      exit 1
    fi
    sleep 0.2
  done
  for _ in $(seq "$per_node"); do echo "$node"; done >>"$dir/machines"
done
argv=()
for arg; do
  [ "$arg" = "$placeholder" ] && arg=$dir/machines
  argv+=("$arg")
done
MPJ_HOME=$mpj_home "${argv[@]}"
status=$?
stop
exit "$status"
"""


def job_daemons_argv(
    mpj_home: str, java: str, port: int, per_node: int, mpjrun: Sequence[str]
) -> list[str]:
    """The argv a Slurm job runs for MPJRun's `mpjrun` argv (its machines file named by
    MACHINES_PLACEHOLDER): bash, the fixed script, the values as positional parameters."""
    return ["/bin/bash", "-c", JOB_DAEMONS_SCRIPT, "bash", mpj_home, java, str(port),
            str(per_node), str(JOB_DAEMON_START_S), MACHINES_PLACEHOLDER, *mpjrun]  # fmt: skip
