"""`netns`: campaigns on an emulated cluster on this machine (hpceval.clusters.netns: one
network namespace per node, veths to a bridge, optional `tc tbf` link limits).

The starter (Open MPI's mpirun or MPICH's Hydra mpiexec) runs inside node 0 and starts one
daemon (proxy) in every node through the cluster's rsh agent. Ranks on different nodes talk
TCP over the veths, ranks of one node shared memory. The nodes share this machine's cores,
so ranks of a multi-node placement are not bound (the MPI in each namespace would bind them
to the same cores) and ranks yield when idle: busy-polling ranks starve the veth traffic
(0-byte PingPong between two nodes of 2 ranks each on 2 cores: 14-20 ms without yielding,
14-24 µs with it). Every measurement taken through this scheduler is labelled emulated.

With `starter = "mpjrun"` (Java programs on MPJ Express, device niodev or hybdev) the session
also starts an MPJ daemon in every node (hpceval.launch.schedulers.mpj_daemons) and MPJRun
runs in node 0 through the cluster's agent; its machines file names the placement's nodes.

The namespaces exist only inside `session()`: created on entry, removed on every exit.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hpceval.clusters.netns import (
    IP,
    MAX_NODES,
    NODE_INTERFACE,
    TC,
    ClusterLayout,
    NetnsOptions,
    build_cluster,
    emulation_facts,
    link_rate,
    reap_leftovers,
    remove_cluster,
    require_root,
    run_tool,
    signals_deferred,
)
from hpceval.config import PlatformConfig
from hpceval.errors import ToolMissing, UserError
from hpceval.launch.command import Command, MpiRuntime
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.base import Scheduler, write_if_changed
from hpceval.launch.schedulers.mpj import mpj_request
from hpceval.launch.schedulers.mpj_daemons import node_daemons
from hpceval.launch.starters.base import Nodes, RemoteShell, StartRequest
from hpceval.launch.starters.mpjrun import DAEMON_DEVICES, check_device, machines_file
from hpceval.model import Origin, Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, MPJ_STARTER, installation

SHARED_CORES_NOTE = "emulated nodes share this machine's cores: binding disabled"
# The starters that start daemons through an rsh agent.
RSH_STARTERS = ("openmpi", "mpich")
# With MPJ Express's starter (its daemons started by the session, one per node): its devices.
MPJ_DEVICES = DAEMON_DEVICES

# MPICH (Debian's is ch4:ucx; UCX carries its messages within a node too). UCX reaches a peer
# by shared memory (sysv, posix, cma) only in the same IPC namespace, and each node runs in one
# of its own (netns-rsh, slurmd): ranks of one node share memory, ranks of two nodes take TCP,
# on eth0 only (the emulated link). Without the IPC namespaces UCX took shared memory between
# nodes too, bypassing the veths (1 MiB ping-pong in 50 us on a 100mbit link); with `self,tcp`
# it took TCP within a node as well (found by the transport check: 3.8 us instead of 0.3 us).
# HYDRA_IFACE: Hydra's proxies reach mpiexec at its eth0 address (the node names resolve
# nowhere), also when Slurm starts them.
MPICH_EMULATED_ENV = {
    "UCX_TLS": "self,sm,tcp",
    "UCX_NET_DEVICES": NODE_INTERFACE,
    "HYDRA_IFACE": NODE_INTERFACE,
}


def machine_cores() -> int:
    """The cores all emulated nodes share."""
    return os.cpu_count() or 1


def emulated_rank_env(implementation: str) -> dict[str, str]:
    """What the ranks of an MPI need to take the emulated links between namespaces."""
    return dict(MPICH_EMULATED_ENV) if implementation == "MPICH" else {}


def _stderr(line: str) -> None:
    print(f"hpceval: {line}", file=sys.stderr, flush=True)


@register
class NetnsScheduler(Scheduler):
    name = "netns"
    origin = Origin.EMULATED
    options_model = NetnsOptions

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        super().__init__(platform, runtime)
        self.layout: ClusterLayout | None = None  # the cluster while a session is open
        self.mpj_workdir: Path | None = None  # the MPJ daemons' directory (starter mpjrun)
        self.report: Callable[[str], None] = _stderr

    @property
    def runs_mpj(self) -> bool:
        return self.starter.name == MPJ_STARTER

    def _check_platform(self) -> None:
        if self.runs_mpj:
            device = self.starter_options().device
            check_device(device)
            if device not in MPJ_DEVICES:
                raise UserError(
                    f"launcher.device {device}: the netns launcher runs MPJ Express's niodev "
                    "(one JVM per rank) or hybdev (one JVM per node) device, TCP between nodes"
                )
        elif self.starter.name not in RSH_STARTERS:
            raise UserError(
                "the netns launcher starts ranks through the rsh agent of Open MPI or MPICH; "
                f"{self.runtime.mpirun} is {self.runtime.implementation}"
            )
        if self.platform.nodes > MAX_NODES:
            raise UserError(
                f"platform {self.platform.name!r}: nodes: the netns launcher emulates at most "
                f"{MAX_NODES} nodes"
            )

    def preflight(self) -> None:
        require_root()
        self._check_platform()
        if self.runs_mpj:
            installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed
        run_tool([IP, "netns", "list"])
        if shutil.which("unshare") is None:
            raise ToolMissing("unshare not found: the netns launcher needs util-linux")
        if link_rate(self.options().link) is not None:
            run_tool([TC, "-V"])

    def session(self) -> contextlib.AbstractContextManager[None]:
        return self._cluster_session()

    @contextlib.contextmanager
    def _cluster_session(self) -> Iterator[None]:
        require_root()
        self._check_platform()
        options: NetnsOptions = self.options()
        with signals_deferred():
            reap_leftovers(self.report)
            layout = build_cluster(self.platform.nodes, options)
        self.layout = layout
        try:
            if self.runs_mpj:
                with node_daemons(layout, installation(), DEFAULT_DAEMON_PORT) as workdir:
                    self.mpj_workdir = workdir
                    try:
                        yield
                    finally:
                        self.mpj_workdir = None
            else:
                yield
        finally:
            self.layout = None
            with signals_deferred():
                remove_cluster(layout.index)

    def emulation(self) -> dict[str, Any] | None:
        return emulation_facts(self.platform.nodes, self.options())

    def oversubscribed(self, placement: Placement) -> bool:
        # The emulated nodes share this machine's cores.
        used = placement.ranks * placement.threads_per_rank
        return super().oversubscribed(placement) or used > machine_cores()

    def _layout(self) -> ClusterLayout:
        """The cluster of the session; outside one, cluster 0 (argv only checked, never run)."""
        return self.layout or ClusterLayout(0, self.platform.nodes)

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        """Ranks node by node over the cluster's namespaces, TCP on its subnet."""
        options: NetnsOptions = self.options()
        layout = self._layout()
        request = super().start_request(placement, program)
        if self.runs_mpj:
            hosts = tuple(layout.namespace(n) for n in range(placement.nodes))
            machines = Path("machines")  # outside a session (the placement check): not read
            if self.mpj_workdir is not None:
                machines = self.mpj_workdir / f"machines-{placement.label()}"
                device = self.starter_options().device
                write_if_changed(machines, machines_file(hosts, placement, device))
            return mpj_request(request, Nodes(hosts=hosts, hostfile=str(machines)))
        return replace(
            request,
            nodes=Nodes(hosts=tuple(layout.namespace(n) for n in range(placement.nodes))),
            # The MPI in each namespace would bind its ranks to the same cores.
            unbound_reason=None if placement.nodes == 1 else SHARED_CORES_NOTE,
            yield_when_idle=options.yield_when_idle,
            rank_env={**emulated_rank_env(self.runtime.implementation), **request.rank_env},
            remote_shell=RemoteShell(str(layout.agent), kind="rsh"),
            tcp_only=True,
            interface=NODE_INTERFACE,
            subnet=layout.subnet,
        )

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        """The starter in node 0, a daemon in each node."""
        self._check_platform()
        command = super().command(placement, program)
        node0 = self._layout().namespace(0)
        if self.runs_mpj:
            # MPJRun in node 0 as a node's own process: its host name, the nodes' hosts file.
            agent = str(self._layout().agent)
            return replace(command, argv=(agent, node0, shlex.join(command.argv)))
        return replace(command, argv=(IP, "netns", "exec", node0, *command.argv))
