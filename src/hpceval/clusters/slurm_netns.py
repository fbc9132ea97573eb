"""A multi-node Slurm cluster on this machine: one slurmd per node of an emulated cluster.

`up()` builds an emulated cluster of the netns launcher (node I is the network namespace
hpceX-nI at 10.213.X.(I+1), links shaped with `tc tbf`), gives its bridge the address
10.213.X.254, and starts, as root:

- `munged` with a key of its own (its socket is a file: the namespaces reach it too);
- `slurmctld` in the root namespace, listening on the bridge's address, under the host name
  hpceX-ctl (a UTS namespace of its own: slurmctld checks its host name against
  SlurmctldHost);
- one `slurmd` per node, inside the node's network namespace and a UTS namespace whose host
  name is the node's name (`slurmd -N hpceX-nI`): NodeName, NodeHostname and the host name
  the ranks see are the namespace's, NodeAddr its address. Spool directory, pid file and log
  are per node (`%n` in slurm.conf); the port is the same in every node (each namespace has
  its own).

Every node declares all of this machine's CPUs (the nodes share them, as the netns
launcher's do) and TaskPlugin=task/none (binding ranks of two nodes to the same cores would
claim a placement that is not one). Jobs between nodes go over the shaped veths.

The cluster is named (default "default"); its files live in /run/hpceval-slurm/NAME/ and its
slurm.conf at a fixed path there, so a platform file can name it (`slurm_conf`). The netns
cluster's owner becomes slurmctld: while slurmctld lives, `hpceval netns cleanup` and the
netns launcher leave the namespaces alone; `down()` cancels the jobs, stops the daemons and
removes the namespaces and the files.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpceval.clusters import netns
from hpceval.errors import ToolMissing, UserError
from hpceval.execute import running_as_root

STATE_ROOT = Path("/run/hpceval-slurm")
PARTITION = "nodes"
CONTROLLER_OCTET = 254  # 10.213.X.254: the bridge's address, where slurmctld listens
SLURMD_PORT = 6818  # in every node's namespace
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
CLIENT_TIMEOUT_S = 30.0
MAX_NODES = 64  # one slurmd each, on this machine's cores
DAEMONS = {
    "munged": "/usr/sbin/munged",
    "slurmctld": "/usr/sbin/slurmctld",
    "slurmd": "/usr/sbin/slurmd",
}
CLIENTS = ("sbatch", "srun", "scontrol", "scancel", "sinfo", "squeue")
CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,23}$")
RECORD = "cluster.json"
NETNS_DIR = Path("/run/netns")  # where `ip netns add` names the namespaces


def check_name(name: str) -> str:
    if not CLUSTER_NAME.match(name):
        raise UserError(
            f"cluster name {name!r}: use 1-24 lower-case letters, digits and '-', "
            "starting with a letter"
        )
    return name


def cluster_dir(name: str) -> Path:
    return STATE_ROOT / check_name(name)


def conf_path(name: str) -> Path:
    """Where slurm.conf of cluster `name` is while it is up (SLURM_CONF, launcher.slurm_conf)."""
    return cluster_dir(name) / "slurm.conf"


def why_not_here() -> str | None:
    """Why the cluster cannot run on this machine (None: it can)."""
    if not running_as_root():
        return "starting munged, slurmctld and slurmd in network namespaces needs root"
    missing = [p for p in DAEMONS.values() if not os.access(p, os.X_OK)]
    missing += [c for c in (*CLIENTS, "ip", "unshare", "nsenter") if shutil.which(c) is None]
    if missing:
        return (
            f"{', '.join(missing)} missing (Debian: slurmctld slurmd slurm-client munge "
            "iproute2 util-linux; ./setup.sh installs them)"
        )
    return None


# --------------------------------------------------------------------------- configuration


def controller_address(layout: netns.ClusterLayout) -> str:
    return f"{netns.SUBNET_BASE}.{layout.index}.{CONTROLLER_OCTET}"


def controller_host(layout: netns.ClusterLayout) -> str:
    return f"{layout.name}-ctl"


def node_hardware(slurmd_c: str) -> str:
    """The hardware fields of `slurmd -C` (CPUs=... RealMemory=...), without NodeName."""
    line = next((ln for ln in slurmd_c.splitlines() if ln.startswith("NodeName=")), None)
    if line is None:
        raise UserError("slurmd -C printed no NodeName line")
    return " ".join(f for f in line.split()[1:] if not f.startswith("UpTime="))


def daemon_settings(
    directory: Path,
    *,
    cluster: str,
    controller: str,
    ctld_port: int,
    slurmd_port: int,
    slurmd_files: str = "",
    task_plugin: str = "task/none",
    min_job_age_s: int = 30,
) -> str:
    """slurm.conf's daemon settings for a cluster whose files all live in `directory` (root
    runs everything, munge on its own socket, no cgroups, no accounting database).

    `slurmd_files` goes into the slurmd's spool directory and file names: "%n" gives every
    node its own when several slurmd run on one machine."""
    d, n = directory, slurmd_files
    return f"""\
ClusterName={cluster}
SlurmctldHost={controller}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool{"/" + n if n else ""}
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd{"-" + n if n else ""}.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd{"-" + n if n else ""}.log
ProctrackType=proctrack/linuxproc
TaskPlugin={task_plugin}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
EnforcePartLimits=ALL
ReturnToService=2
MinJobAge={min_job_age_s}
KillWait=2
InactiveLimit=0
"""


def slurm_conf(directory: Path, layout: netns.ClusterLayout, ctld_port: int, hardware: str) -> str:
    """slurm.conf of the cluster (pure: tested line by line)."""
    d = directory
    nodes = [layout.namespace(i) for i in range(layout.nodes)]
    node_lines = "\n".join(
        f"NodeName={n} NodeHostname={n} NodeAddr={layout.address(i)} {hardware} State=UNKNOWN"
        for i, n in enumerate(nodes)
    )
    controller = f"{controller_host(layout)}({controller_address(layout)})"
    settings = daemon_settings(
        d, cluster=layout.name, controller=controller, ctld_port=ctld_port,
        slurmd_port=SLURMD_PORT, slurmd_files="%n",
    )  # fmt: skip
    return f"""\
# Written by hpceval (hpceval cluster slurm up): a Slurm cluster of {layout.nodes} network-namespace
# nodes on one machine. Removed by `hpceval cluster slurm down`.
{settings}TmpFS={d}/tmp/%n
SlurmdTimeout=60
{node_lines}
PartitionName={PARTITION} Nodes={",".join(nodes)} Default=YES MaxTime=INFINITE State=UP
"""


def as_host(hostname: str, argv: Sequence[str]) -> list[str]:
    """argv as on a host of its own, exec'd (same pid): its own host name (a UTS namespace)
    and its own System V IPC (an IPC namespace), so that MPI libraries see the nodes as
    separate machines (UCX's shared-memory transports reach only the same IPC namespace)."""
    script = 'echo "$1" > /proc/sys/kernel/hostname && shift && exec "$@"'
    return ["unshare", "--uts", "--ipc", "/bin/sh", "-c", script, "sh", hostname, *argv]


def daemon_argvs(directory: Path, layout: netns.ClusterLayout) -> dict[str, list[str]]:
    """The daemons' command lines, by name, in start order (pure: tested argv by argv)."""
    d, conf = directory, str(directory / "slurm.conf")
    argvs = {
        "munged": [
            DAEMONS["munged"], "--foreground", "--force", f"--socket={d}/munge.socket",
            f"--key-file={d}/munge.key", f"--pid-file={d}/munged.pid",
            f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed",
        ],
        "slurmctld": as_host(
            controller_host(layout), [DAEMONS["slurmctld"], "-D", "-i", "-f", conf]
        ),
    }  # fmt: skip
    for i in range(layout.nodes):
        node = layout.namespace(i)
        slurmd = [DAEMONS["slurmd"], "-D", "-N", node, "-f", conf]
        # nsenter, not `ip netns exec`: that one remounts /sys in a mount namespace of its
        # own, without /sys/fs/cgroup, and slurmd 22.05 will not start without it.
        argvs[f"slurmd-{node}"] = ["nsenter", f"--net={NETNS_DIR}/{node}", *as_host(node, slurmd)]
    return argvs


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class SlurmNetnsCluster:
    """A cluster that is up (read from its record)."""

    name: str
    index: int
    nodes: int
    link: str
    directory: Path
    daemons: Mapping[str, Mapping[str, Any]]  # name -> {"pid": ..., "start": ...}

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    @property
    def layout(self) -> netns.ClusterLayout:
        return netns.ClusterLayout(self.index, self.nodes)

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with SLURM_CONF pointing at the cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def node_names(self) -> list[str]:
        return [self.layout.namespace(i) for i in range(self.nodes)]

    def alive(self) -> dict[str, bool]:
        """Which daemons still run (the pid is theirs: same start time)."""
        return {name: _is_running(rec) for name, rec in self.daemons.items()}

    def client(
        self, *argv: str, timeout: float = CLIENT_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip

    def node_states(self) -> dict[str, str]:
        """sinfo's state of every node ("idle", "alloc", "down*", ...)."""
        out = self.client("sinfo", "--noheader", "--Node", "--format=%N %t").stdout
        return dict(line.split(None, 1) for line in out.splitlines() if len(line.split()) == 2)


def _is_running(record: Mapping[str, Any]) -> bool:
    pid = record.get("pid")
    return isinstance(pid, int) and netns.process_start(pid) == record.get("start")


def load(name: str) -> SlurmNetnsCluster | None:
    """The record of cluster `name`, None when there is none."""
    path = cluster_dir(name) / RECORD
    try:
        data = json.loads(path.read_text())
        return SlurmNetnsCluster(
            name=name, index=int(data["index"]), nodes=int(data["nodes"]), link=str(data["link"]),
            directory=path.parent, daemons=dict(data["daemons"]),
        )  # fmt: skip
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: unreadable cluster record ({e}); remove it with down") from e


def _save(cluster: SlurmNetnsCluster) -> None:
    record = {
        "name": cluster.name, "index": cluster.index, "nodes": cluster.nodes,
        "link": cluster.link, "daemons": cluster.daemons,
    }  # fmt: skip
    draft = cluster.directory / f".{RECORD}.tmp"
    draft.write_text(json.dumps(record, indent=1))
    draft.replace(cluster.directory / RECORD)


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def _stop(record: Mapping[str, Any]) -> None:
    """SIGTERM, then SIGKILL, the daemon of `record` (only if that pid is still it)."""
    pid = record.get("pid")
    if not isinstance(pid, int):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _is_running(record):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _is_running(record) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
            time.sleep(0.05)


# --------------------------------------------------------------------------- up and down


def up(
    name: str = "default",
    nodes: int = 2,
    link: str = "none",
    *,
    report: Callable[[str], None] = lambda line: None,
) -> SlurmNetnsCluster:
    """Build the namespaces and start the daemons; return once every node is idle.

    A failure removes everything started so far, and says which daemon failed and why."""
    if why := why_not_here():
        raise ToolMissing(f"cannot start a Slurm cluster here: {why}")
    if not 1 <= nodes <= MAX_NODES:
        raise UserError(f"--nodes: {nodes} is not between 1 and {MAX_NODES}")
    try:
        netns.link_rate(link)
    except ValueError as e:
        raise UserError(f"--link: {e}") from None
    options = netns.NetnsOptions(link=link)
    directory = cluster_dir(name)
    existing = load(name)
    if existing is not None:
        if all(existing.alive().values()):
            raise UserError(
                f"Slurm cluster {name!r} is already up (SLURM_CONF={existing.conf}); "
                f"stop it with: hpceval cluster slurm down --name {name}"
            )
        report(f"removing what is left of Slurm cluster {name!r} (a daemon had died)")
        down(name)
    elif directory.exists():
        shutil.rmtree(directory)
    hardware = node_hardware(_run_checked([DAEMONS["slurmd"], "-C"]))
    with netns.signals_deferred():
        netns.reap_leftovers(report)
        layout = netns.build_cluster(nodes, options)
    cluster = SlurmNetnsCluster(name, layout.index, nodes, link, directory, {})
    try:
        _start(cluster, hardware)
    except BaseException:
        down(name, layout_index=layout.index)
        raise
    return load(name) or cluster


def _run_checked(argv: Sequence[str]) -> str:
    proc = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False
    )
    if proc.returncode != 0:
        raise UserError(f"{argv[0]} failed: {_tail_text(proc.stderr)}")
    return proc.stdout


def _tail_text(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def _start(cluster: SlurmNetnsCluster, hardware: str) -> None:
    layout, d = cluster.layout, cluster.directory
    d.mkdir(mode=0o755, parents=True)  # searchable by all: munged checks its socket's dir
    (d / "state").mkdir()
    for node in cluster.node_names():  # each node's own: slurm.conf names them with %n
        (d / "spool" / node).mkdir(parents=True)
        (d / "tmp" / node).mkdir(parents=True)  # TmpFS: PMIx's client files
    key = d / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    _run_checked(["ip", "address", "add", f"{controller_address(layout)}/24", "dev", layout.bridge])
    cluster.conf.write_text(slurm_conf(d, layout, _free_port(), hardware))
    daemons: dict[str, dict[str, Any]] = {}
    procs: dict[str, subprocess.Popen[bytes]] = {}

    def record() -> None:
        _save(SlurmNetnsCluster(**{**cluster.__dict__, "daemons": daemons}))

    def died() -> str | None:
        for name, proc in procs.items():
            if proc.poll() is not None:
                output = f"{_tail(d / f'{name}.out')} {_tail(d / f'{name}.log')}"
                return f"{name} exited with status {proc.returncode}: {output}"
        return None

    deadline = time.monotonic() + START_TIMEOUT_S
    for name, argv in daemon_argvs(d, layout).items():
        with (d / f"{name}.out").open("wb") as out:
            # A session of its own: the daemons outlive the command that started them.
            procs[name] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, env={**os.environ, "SLURM_CONF": str(cluster.conf)},
            )  # fmt: skip
        pid = procs[name].pid
        daemons[name] = {"pid": pid, "start": netns.process_start(pid)}
        record()
        if name == "munged":
            while not (d / "munge.socket").exists():
                if (why := died()) or time.monotonic() > deadline:
                    raise UserError(f"munged did not start: {why or 'no socket'}")
                time.sleep(0.05)
        if name == "slurmctld":
            # The namespaces now live as long as slurmctld does.
            netns.hand_over(layout, pid)
    live = SlurmNetnsCluster(**{**cluster.__dict__, "daemons": daemons})
    while True:
        if why := died():
            raise UserError(f"the Slurm cluster did not start: {why}")
        states = live.node_states()
        if len(states) == cluster.nodes and set(states.values()) == {"idle"}:
            return
        if time.monotonic() > deadline:
            raise UserError(
                f"Slurm nodes not idle after {START_TIMEOUT_S:g} s (sinfo: {states or 'nothing'}); "
                f"slurmctld.log: {_tail(d / 'slurmctld.log', 3)}"
            )
        time.sleep(0.2)


def down(name: str = "default", *, layout_index: int | None = None) -> list[str]:
    """Cancel the jobs, stop the daemons, remove the namespaces and the files; what was
    stopped or removed (empty when the cluster was not up)."""
    if not running_as_root():
        raise UserError("stopping the Slurm cluster's daemons needs root")
    cluster = load(name)
    done: list[str] = []
    if cluster is not None:
        if cluster.alive().get("slurmctld"):
            jobs = cluster.client("squeue", "--noheader", "--format=%i").stdout.split()
            if jobs:
                cluster.client("scancel", *jobs)
                done.append(f"cancelled jobs {', '.join(jobs)}")
        # Nodes first (their jobs end with them), the controller, the authentication last.
        for daemon in sorted(cluster.daemons, key=lambda n: ("slurmd" not in n, n == "munged")):
            if _is_running(cluster.daemons[daemon]):
                _stop(cluster.daemons[daemon])
                done.append(daemon)
        layout_index = cluster.index
    ours = [os.getpid()]  # the owner while `up` builds the cluster; slurmctld after
    if cluster is not None and isinstance(
        pid := cluster.daemons.get("slurmctld", {}).get("pid"), int
    ):
        ours.append(pid)
    if layout_index is not None and _namespaces_free_to_remove(layout_index, ours):
        done += netns.remove_cluster(layout_index)
    directory = cluster_dir(name)
    if directory.exists():
        shutil.rmtree(directory)
        done.append(str(directory))
    return done


def _namespaces_free_to_remove(index: int, ours: Sequence[int]) -> bool:
    """Emulated cluster `index` exists and is ours to remove: owned by this process or our
    slurmctld, or by nobody alive. (When slurmctld died, the netns launcher may have removed
    our namespaces and given the index to a cluster of someone else.)"""
    try:
        state = json.loads(netns.state_file(index).read_text())
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    owner = state.get("pid") if isinstance(state, dict) else None
    if owner in ours or not isinstance(state, dict):
        return True
    return not (isinstance(owner, int) and netns.process_start(owner) == state.get("start"))


def names() -> list[str]:
    """The clusters with a record (up, or left over)."""
    if not STATE_ROOT.is_dir():
        return []
    return sorted(p.parent.name for p in STATE_ROOT.glob(f"*/{RECORD}"))
