"""Emulated clusters on this machine: one Linux network namespace per node.

Node I of cluster X is the network namespace `hpceX-nI`. Its interface `eth0` (address
10.213.X.(I+1)/24) is one end of a veth pair whose other end, `hpceXnI`, is a port of the
bridge `hpceXbr` in the root namespace (the bridge has no address: nothing outside the
cluster's namespaces is reachable from them, nor they from outside). A link profile ("1GbE",
"10GbE", or a rate such as "100mbit") shapes both ends of every veth with `tc tbf`, so each
node sends and receives at most at that rate. The rsh agent `netns-rsh` runs a command line
in a node's namespace as sshd would on a real host.

Each cluster is recorded in /run/hpceval-netns/hpceX.json with its owner's pid and start
time. A cluster whose owner is gone (killed with kill -9) is removed at the next session's
start; `cleanup_netns()` (`hpceval netns cleanup`) removes every cluster without a living
owner. The `netns` scheduler (hpceval.launch.schedulers.netns) runs campaigns on such a
cluster; the emulated Slurm cluster (hpceval.clusters.slurm_netns) runs its daemons in one.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from hpceval.config import StrictModel
from hpceval.errors import ToolMissing, UserError
from hpceval.execute import KILL_GRACE_S, last_line, running_as_root

IP = "ip"
TC = "tc"
STATE_DIR = Path("/run/hpceval-netns")
# `ip netns exec NODE` mounts the files of /etc/netns/NODE over those of /etc.
NETNS_ETC = Path("/etc/netns")
AGENT_RESOURCE = "netns-rsh"
NAME_PREFIX = "hpce"
SUBNET_BASE = "10.213"  # cluster X uses 10.213.X.0/24
MAX_CLUSTERS = 256
MAX_NODES = 254  # addresses .1 to .254 of the cluster's /24
NODE_INTERFACE = "eth0"
COMMAND_TIMEOUT_S = 30.0
# The kernel dismantles a deleted namespace's veths asynchronously: how long to wait for it.
VETH_REMOVAL_S = 2.0

# Link profiles: tc rate in bit/s (None: no shaping).
LINK_PROFILES: Mapping[str, int | None] = {
    "none": None,
    "1GbE": 1_000_000_000,
    "10GbE": 10_000_000_000,
}
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(kbit|mbit|gbit)$")
_RATE_UNITS = {"kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
# tbf: by default the bucket holds 2 ms at the link rate (at least two full frames). The
# kernel refills it from a timer whose softirq runs late on a loaded machine: with buckets of
# a frame or two (24 µs at 1 Gbit/s) a 1 MiB ping-pong between two nodes got 40-60 MB/s of
# the 125 on this 2-core VM under load, with 0.5 ms 50-77, with 2 ms 117-127 (perf/
# study_compare.py --bursts measures it). Messages up to about the bucket's size leave at the veth's
# speed: the link's rate holds from a few buckets up (docs/clusters.md, "Emulation limits").
# Up to 20 ms of traffic may queue before the kernel drops (tcp then backs off); that is a
# queue limit, not a delay: this kernel has no qdisc that delays packets (no netem, fq, etf).
TBF_BURST_S = 0.002
TBF_LATENCY = "20ms"
FRAME_OVERHEAD_BYTES = 14  # Ethernet header beyond the MTU
DELAY_UNAVAILABLE = (
    "no latency added: this kernel has no packet-delaying qdisc (netem, fq, etf absent) "
    "and no tc classifier to attach one; the links add only the veths' own microseconds"
)

# Names this launcher creates: namespaces hpceX-nI, host-side veths hpceXnI, bridges hpceXbr.
_OWN_NAME = re.compile(rf"^{NAME_PREFIX}(\d{{1,3}})(-n\d{{1,3}}|n\d{{1,3}}|br)$")


def link_rate(link: str) -> int | None:
    """A link profile or tc rate -> bit/s (None: unshaped); ValueError names the valid ones."""
    if link in LINK_PROFILES:
        return LINK_PROFILES[link]
    m = _RATE.match(link)
    if not m or float(m.group(1)) <= 0:
        known = ", ".join(LINK_PROFILES)
        raise ValueError(f"unknown link profile {link!r} (use {known} or a rate like 100mbit)")
    return round(float(m.group(1)) * _RATE_UNITS[m.group(2)])


class NetnsOptions(StrictModel):
    """The netns launcher's keys in the platform's [launcher] table."""

    # Link shaping of every node: "none", "1GbE", "10GbE", or a tc rate ("100mbit", "2.5gbit").
    link: str = "none"
    mtu: int = Field(1500, ge=576, le=65535)
    # Ranks yield the core when they wait (Open MPI's mpi_yield_when_idle). Turning it off
    # shows why it is on: busy-polling ranks starve the veth traffic of the shared cores.
    yield_when_idle: bool = True
    # tbf bucket in bytes ("auto": 2 ms at the link rate, at least two frames). Smaller
    # holds the rate for smaller messages on an idle machine; see TBF_BURST_S for the cost.
    burst: int | Literal["auto"] = "auto"

    @field_validator("burst")
    @classmethod
    def _whole_frames(cls, v: int | str, info: ValidationInfo) -> int | str:
        if isinstance(v, int) and v < 2 * (int(info.data.get("mtu", 1500)) + 14):
            raise ValueError("must hold two frames: at least 2 x (mtu + 14) bytes")
        return v

    def burst_bytes(self) -> int | None:
        """The tbf bucket of a shaped link (None: unshaped)."""
        rate = link_rate(self.link)
        if rate is None:
            return None
        if isinstance(self.burst, int):
            return self.burst
        return max(2 * (self.mtu + FRAME_OVERHEAD_BYTES), round(rate / 8 * TBF_BURST_S))

    @field_validator("link")
    @classmethod
    def _known_link(cls, v: str) -> str:
        link_rate(v)
        return v


# --------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class ClusterLayout:
    """The names and addresses of emulated cluster number `index`."""

    index: int
    nodes: int

    @property
    def name(self) -> str:
        return f"{NAME_PREFIX}{self.index}"

    def namespace(self, node: int) -> str:
        return f"{self.name}-n{node}"

    def host_link(self, node: int) -> str:
        return f"{self.name}n{node}"

    @property
    def bridge(self) -> str:
        return f"{self.name}br"

    @property
    def subnet(self) -> str:
        return f"{SUBNET_BASE}.{self.index}.0/24"

    def address(self, node: int) -> str:
        return f"{SUBNET_BASE}.{self.index}.{node + 1}"

    @property
    def agent(self) -> Path:
        return STATE_DIR / f"{self.name}.rsh"

    @property
    def state_file(self) -> Path:
        return state_file(self.index)


def state_file(index: int) -> Path:
    return STATE_DIR / f"{NAME_PREFIX}{index}.json"


def tbf_args(rate_bits: int, burst: int) -> list[str]:
    return ["tbf", "rate", f"{rate_bits}bit", "burst", str(burst), "latency", TBF_LATENCY]


def emulation_facts(nodes: int, options: NetnsOptions) -> dict[str, Any]:
    """What an emulated cluster is and is not (stored with every run's provenance)."""
    rate = link_rate(options.link)
    burst = options.burst_bytes()
    cores = os.cpu_count() or 1
    limits = [
        f"the {nodes} emulated nodes share this machine's {cores} cores: placement and "
        "compute results are not hardware figures",
        DELAY_UNAVAILABLE,
    ]
    if rate is not None and burst is not None:
        limits.append(
            f"links shaped to {rate / 1e9:g} Gbit/s by tc tbf with a {burst} B bucket: "
            f"messages up to about {burst // 1024} KiB leave at the veth's speed"
        )
    else:
        limits.append("links not shaped: the veths run at memory-copy speed")
    return {
        "kind": "network namespaces",
        "nodes": nodes,
        "shared_cores": cores,
        "link": options.link,
        "rate_bit_s": rate,
        "shaper": None if rate is None else "tc tbf",
        "burst_bytes": burst,
        "mtu": options.mtu,
        "queue_limit": None if rate is None else TBF_LATENCY,
        "added_latency_s": 0.0,
        "limits": limits,
    }


def setup_commands(layout: ClusterLayout, options: NetnsOptions) -> list[list[str]]:
    """The ip/tc commands that build the cluster, in order (pure: tested argv by argv)."""
    mtu = str(options.mtu)
    rate = link_rate(options.link)
    burst = options.burst_bytes()
    cmds = [
        [IP, "link", "add", layout.bridge, "mtu", mtu, "type", "bridge"],
        [IP, "link", "set", layout.bridge, "up"],
    ]
    for node in range(layout.nodes):
        ns, host = layout.namespace(node), layout.host_link(node)
        cmds += [
            [IP, "netns", "add", ns],
            [IP, "link", "add", host, "mtu", mtu, "type", "veth",
             "peer", "name", NODE_INTERFACE, "mtu", mtu, "netns", ns],
            [IP, "link", "set", host, "master", layout.bridge, "up"],
            [IP, "-n", ns, "link", "set", "lo", "up"],
            [IP, "-n", ns, "address", "add", f"{layout.address(node)}/24",
             "dev", NODE_INTERFACE],
            [IP, "-n", ns, "link", "set", NODE_INTERFACE, "up"],
        ]  # fmt: skip
        if rate is not None and burst is not None:
            # Both ends: what the node sends, and what the bridge delivers to it.
            cmds += [
                [TC, "qdisc", "add", "dev", host, "root", *tbf_args(rate, burst)],
                [
                    TC,
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    NODE_INTERFACE,
                    "root",
                    *tbf_args(rate, burst),
                ],
            ]
    return cmds


def run_tool(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise ToolMissing(
            f"{argv[0]} not found: the netns launcher needs iproute2 (apt-get install iproute2)"
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError(
            f"`{shlex.join(argv)}` did not finish within {COMMAND_TIMEOUT_S:g} s"
        ) from None
    if check and proc.returncode != 0:
        cause = last_line(proc.stderr) or f"exit status {proc.returncode}"
        raise UserError(f"netns: `{shlex.join(argv)}` failed: {cause}")
    return proc


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C/SIGTERM wait until the namespaces are fully built or fully removed."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def process_start(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _owner_record() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "start": process_start(pid), "created": time.time()}


def _owner_alive(state: Mapping[str, Any]) -> bool:
    pid = state.get("pid")
    if not isinstance(pid, int):
        return False
    start = process_start(pid)
    return start is not None and start == state.get("start")


@dataclass
class _Cluster:
    """What exists of one cluster index: its state record, namespaces and root-side links."""

    index: int
    state: dict[str, Any] | None = None
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{NAME_PREFIX}{self.index}"

    @property
    def owner_alive(self) -> bool:
        return self.state is not None and _owner_alive(self.state)

    def names(self) -> list[str]:
        return sorted(self.namespaces) + sorted(self.links)


def _namespaces() -> list[str]:
    out = run_tool([IP, "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _root_links() -> list[str]:
    try:
        return os.listdir("/sys/class/net")
    except OSError:
        return []


def _survey() -> dict[int, _Cluster]:
    """Every cluster of this launcher on the machine, live or left over."""
    clusters: dict[int, _Cluster] = {}

    def get(index: int) -> _Cluster:
        return clusters.setdefault(index, _Cluster(index))

    if STATE_DIR.is_dir():
        for path in STATE_DIR.glob(f"{NAME_PREFIX}*.json"):
            m = re.fullmatch(rf"{NAME_PREFIX}(\d+)\.json", path.name)
            if not m:
                continue
            try:
                state = json.loads(path.read_text())
            except (OSError, ValueError):
                state = {}
            get(int(m.group(1))).state = state if isinstance(state, dict) else {}
    for ns in _namespaces():
        if (m := _OWN_NAME.match(ns)) and m.group(2).startswith("-n"):
            get(int(m.group(1))).namespaces.append(ns)
    for link in _root_links():
        if (m := _OWN_NAME.match(link)) and not m.group(2).startswith("-n"):
            get(int(m.group(1))).links.append(link)
    return clusters


def _running(pid: int) -> bool:
    """Still running: it exists and is not a zombie waiting for its parent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _kill_processes_in(namespace: str) -> None:
    """Stop what still runs in a node (daemons or ranks of an interrupted execution)."""
    proc = run_tool([IP, "netns", "pids", namespace], check=False)
    mine = {os.getpid(), os.getppid()}
    pids = [int(p) for p in proc.stdout.split() if p.isdigit() and int(p) not in mine]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + KILL_GRACE_S
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _running(p)]
            if pids:
                time.sleep(0.05)
        if not pids:
            return


def _remove_cluster(index: int) -> list[str]:
    """Remove everything of cluster `index` (what exists of it); the names removed.

    Its record goes last, and only once nothing is left: what could not be removed stays
    recorded, so the next session (its owner being gone by then) removes it."""
    cluster = _survey().get(index, _Cluster(index))
    for ns in cluster.namespaces:
        _kill_processes_in(ns)
    for ns in cluster.namespaces:
        run_tool([IP, "netns", "delete", ns], check=False)
    # Its nodes' hosts files, namespaces or not (a build interrupted before creating them).
    remove_hosts([p.name for p in NETNS_ETC.glob(f"{NAME_PREFIX}{index}-n*")])
    # Deleting a namespace deletes its veth pair; delete what is left, the bridge last.
    for link in sorted(cluster.links, key=lambda name: name.endswith("br")):
        if Path("/sys/class/net", link).exists():
            run_tool([IP, "link", "delete", link], check=False)
    deadline = time.monotonic() + VETH_REMOVAL_S
    while (left := _survey().get(index, _Cluster(index)).names()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel dismantles a namespace's veths asynchronously
    if left:
        raise UserError(
            f"netns: could not remove {', '.join(left)}; remove with: hpceval netns cleanup"
        )
    for path in (ClusterLayout(index, 0).agent, state_file(index)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return cluster.names()


def _allocate(nodes: int) -> ClusterLayout:
    """A free cluster index, claimed by creating its state file (O_EXCL: no two owners)."""
    STATE_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    taken = set(_survey())
    # Written in full first, then linked into place: a record is never seen half-written.
    draft = STATE_DIR / f".draft-{os.getpid()}"
    draft.write_text(json.dumps({**_owner_record(), "nodes": nodes}))
    try:
        for index in range(MAX_CLUSTERS):
            if index in taken:
                continue
            try:
                os.link(draft, state_file(index))
            except FileExistsError:
                continue
            return ClusterLayout(index, nodes)
    finally:
        draft.unlink()
    raise UserError(
        f"netns: all {MAX_CLUSTERS} emulated cluster slots are in use; "
        "remove leftovers with: hpceval netns cleanup"
    )


def hosts_file_text(layout: ClusterLayout, machine_hosts: str) -> str:
    """The /etc/hosts of the cluster's nodes: this machine's, then every node's name and
    address (pure). MPJ Express looks its own host name up (the agent names a node after its
    namespace) and tells the other nodes that address."""
    nodes = "".join(f"{layout.address(n)} {layout.namespace(n)}\n" for n in range(layout.nodes))
    base = machine_hosts.rstrip("\n") + "\n" if machine_hosts.strip() else ""
    return f"{base}# hpceval emulated cluster {layout.name}\n{nodes}"


def nodes_hosts_text(layout: ClusterLayout) -> str:
    """The nodes' /etc/hosts on this machine (hosts_file_text over this machine's)."""
    try:
        machine_hosts = Path("/etc/hosts").read_text()
    except OSError:
        machine_hosts = "127.0.0.1 localhost\n"
    return hosts_file_text(layout, machine_hosts)


def install_hosts(layout: ClusterLayout) -> None:
    """/etc/netns/NODE/hosts, which `ip netns exec NODE` mounts over /etc/hosts (for MPJ
    Express only: with node names that resolve, Open MPI's mpirun takes node 0 for itself and
    starts its ranks without the agent, under this machine's host name). Removed with the
    cluster (`remove_hosts`, and `_remove_cluster` after a kill)."""
    text = nodes_hosts_text(layout)
    for n in range(layout.nodes):
        directory = NETNS_ETC / layout.namespace(n)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "hosts").write_text(text)


def remove_hosts(namespaces: Sequence[str]) -> None:
    for ns in namespaces:
        with contextlib.suppress(FileNotFoundError):
            (NETNS_ETC / ns / "hosts").unlink()
        with contextlib.suppress(OSError):
            (NETNS_ETC / ns).rmdir()


def _install_agent(layout: ClusterLayout) -> None:
    """The rsh agent, copied beside the state file (no spaces in its path, always executable)."""
    text = (importlib.resources.files(__package__) / AGENT_RESOURCE).read_text()
    tmp = layout.agent.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o755)
    tmp.replace(layout.agent)


def build_cluster(nodes: int, options: NetnsOptions) -> ClusterLayout:
    """Create an emulated cluster of `nodes` nodes, owned by this process (removed whole if
    any step fails). Call with signals deferred."""
    layout = _allocate(nodes)
    try:
        _install_agent(layout)
        for argv in setup_commands(layout, options):
            run_tool(argv)
    except BaseException:
        _remove_cluster(layout.index)
        raise
    return layout


def remove_cluster(index: int) -> list[str]:
    """Remove emulated cluster `index` (what exists of it); the names removed."""
    return _remove_cluster(index)


def hand_over(layout: ClusterLayout, pid: int) -> None:
    """Make process `pid` the cluster's owner: the cluster then lives as long as it does
    (a daemon that serves the cluster, such as an emulated Slurm cluster's slurmctld)."""
    record = {"pid": pid, "start": process_start(pid), "created": time.time(),
              "nodes": layout.nodes}  # fmt: skip
    draft = layout.state_file.with_suffix(".tmp")
    draft.write_text(json.dumps(record))
    draft.replace(layout.state_file)


def require_root() -> None:
    if not running_as_root():
        raise UserError("the netns launcher needs root (ip netns)")


def reap_leftovers(report: Callable[[str], None]) -> None:
    """Remove the clusters whose owner died; report those with no owner recorded."""
    for cluster in sorted(_survey().values(), key=lambda c: c.index):
        if cluster.owner_alive:
            continue
        if cluster.state is not None:
            try:
                removed = _remove_cluster(cluster.index)
            except UserError as e:
                report(str(e))
                continue
            if removed:
                pid = cluster.state.get("pid", "?")
                report(
                    f"netns: removed emulated cluster {cluster.name} left over by process "
                    f"{pid}, which is gone: {', '.join(removed)}"
                )
        elif cluster.namespaces or cluster.links:
            report(
                f"netns: {', '.join(cluster.names())} left over from an earlier run (no owner "
                "recorded), not used; remove with: hpceval netns cleanup"
            )


def cleanup_netns() -> list[str]:
    """Remove every emulated cluster without a living owner; the namespaces/links removed."""
    require_root()
    removed: list[str] = []
    failed: list[str] = []
    for cluster in sorted(_survey().values(), key=lambda c: c.index):
        if not cluster.owner_alive:
            try:
                removed += _remove_cluster(cluster.index)
            except UserError:
                failed += _survey().get(cluster.index, cluster).names()
    if failed:
        raise UserError(
            f"netns: could not remove {', '.join(failed)} (removed: {', '.join(removed) or 'none'})"
        )
    return removed
