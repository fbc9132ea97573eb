"""`openmpi`: Open MPI's mpirun (4.x options).

    mpirun -np N [--hostfile F | --host h1:R,h2:R] MAPPING [--mca plm_rsh_agent ...]
           [--mca btl self,vader,tcp] [--mca btl_tcp_if_include I --mca oob_tcp_if_include I]
           [--wdir W] -x VAR... EXTRA -- PROGRAM

Ranks go node by node when the ranks may span nodes (`--map-by ppr:R:node`, rank r on node
r // R, as the benchmarks' pair cases expect), core by core on this machine alone. A rank of
T threads reserves T cores (`PE=T`) when it is bound. Variables reach the ranks through `-x`
(mpirun forwards them to remote nodes); the run-as-root permission is mpirun's own and is set
in its environment only.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpceval.launch.command import Command
from hpceval.launch.starters import register
from hpceval.launch.starters.base import (
    Starter,
    StartRequest,
    effective_placement,
    notes,
    rank_environment,
)
from hpceval.model import Placement
from hpceval.toolchain import run_as_root_requirements


def mapping_args(placement: Placement, *, oversubscribed: bool, by_node: bool) -> list[str]:
    """--map-by/--bind-to for `placement` (already unbound when it must be)."""
    threads, binding = placement.threads_per_rank, placement.binding
    pe = f":PE={threads}" if threads > 1 and binding != "none" else ""
    if by_node:
        args = ["--map-by", f"ppr:{placement.ranks_per_node}:node{pe}"]
    elif oversubscribed:
        args = []
    else:
        # PE=n reserves n cores per rank so each rank's threads get their own cores.
        args = ["--map-by", f"slot{pe}" if pe else "core"]
    if oversubscribed:
        args.append("--oversubscribe")
    args += ["--bind-to", binding]
    if binding == "hwthread":
        args.append("--use-hwthread-cpus")
    return args


@register
class OpenMpiStarter(Starter):
    name = "openmpi"
    implementations = frozenset({"Open MPI"})

    def hostfile_text(self, hosts: Sequence[str], slots: int) -> str:
        return "".join(f"{h} slots={slots}\n" for h in hosts)

    def command(self, request: StartRequest) -> Command:
        placement = effective_placement(request)
        nodes = request.nodes
        rank_env = rank_environment(request)
        argv = [request.executable, "-np", str(placement.ranks)]
        files: dict[str, str] = {}
        if nodes.hostfile is not None:
            files[nodes.hostfile] = self.hostfile_text(nodes.hosts, placement.ranks_per_node)
            argv += ["--hostfile", nodes.hostfile]
        elif nodes.hosts:
            slots = placement.ranks_per_node
            argv += ["--host", ",".join(f"{h}:{slots}" for h in nodes.hosts)]
        argv += mapping_args(
            placement, oversubscribed=request.oversubscribed, by_node=nodes.several
        )
        if request.remote_shell is not None:
            argv += ["--mca", "plm_rsh_agent", request.remote_shell.program]
            if request.remote_shell.args:
                # One MCA value: mpirun splits it on blanks (the config refuses blanks in one).
                argv += ["--mca", "plm_rsh_args", " ".join(request.remote_shell.args)]
        if request.tcp_only:
            argv += ["--mca", "btl", "self,vader,tcp"]
        if network := request.subnet or request.interface:
            argv += ["--mca", "btl_tcp_if_include", network]
            argv += ["--mca", "oob_tcp_if_include", network]
        if request.workdir:
            argv += ["--wdir", request.workdir]
        for key in sorted(rank_env):
            argv += ["-x", key]
        argv += [*request.extra_args, "--", *request.program]
        env = dict(rank_env)
        if request.as_root:
            # Open MPI refuses to start as root unless told; mpirun itself reads these.
            env.update(run_as_root_requirements("Open MPI").env)
        return Command(tuple(argv), env, placement, request.oversubscribed, notes(request), files)
