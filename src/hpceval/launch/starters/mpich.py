"""`mpich`: MPICH's Hydra process manager (mpiexec / mpiexec.hydra, MPICH 3.x and 4.x).

    mpiexec -n N [-f F | -hosts h1:R,h2:R] [-ppn R] [-launcher ssh -launcher-exec S]
            -bind-to UNIT[:T] [-iface I] [-wdir W] -genv VAR VALUE... EXTRA PROGRAM

Options as `mpiexec.hydra --help` documents them: `-n`, `-f` (one `host:slots` per line),
`-hosts`, `-ppn` (ranks per node, filled node by node), `-bind-to core:T` (T cores per rank),
`-iface` (a device name, not a subnet), `-wdir`, `-genv NAME VALUE` (sets the variable for
every rank, on every node).
Hydra has no `--` before the program: it reports "unrecognized argument" (tried with
Debian's mpich 4.0.2), and it reads the first word that is not one of its options as the
program. Inside a Slurm allocation Hydra starts its proxies with srun by itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpceval.errors import UserError
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


def binding_args(placement: Placement) -> list[str]:
    """-bind-to for `placement` (already unbound when it must be)."""
    if placement.binding == "none":
        return ["-bind-to", "none"]
    spec = placement.binding
    if placement.threads_per_rank > 1:
        spec = f"{spec}:{placement.threads_per_rank}"
    return ["-bind-to", spec]


@register
class MpichStarter(Starter):
    name = "mpich"
    implementations = frozenset({"MPICH"})

    def hostfile_text(self, hosts: Sequence[str], slots: int) -> str:
        return "".join(f"{h}:{slots}\n" for h in hosts)

    def command(self, request: StartRequest) -> Command:
        placement = effective_placement(request)
        nodes = request.nodes
        argv = [request.executable, "-n", str(placement.ranks)]
        files: dict[str, str] = {}
        if nodes.hostfile is not None:
            files[nodes.hostfile] = self.hostfile_text(nodes.hosts, placement.ranks_per_node)
            argv += ["-f", nodes.hostfile]
        elif nodes.hosts:
            slots = placement.ranks_per_node
            argv += ["-hosts", ",".join(f"{h}:{slots}" for h in nodes.hosts)]
        if nodes.several:
            argv += ["-ppn", str(placement.ranks_per_node)]
        if request.remote_shell is not None:
            if request.remote_shell.args:
                raise UserError(
                    "launcher.ssh_args: MPICH's mpiexec passes no options to ssh; "
                    "put them in ~/.ssh/config instead"
                )
            shell = request.remote_shell
            argv += ["-launcher", shell.kind, "-launcher-exec", shell.program]
        argv += binding_args(placement)
        if request.interface:
            argv += ["-iface", request.interface]
        if request.workdir:
            argv += ["-wdir", request.workdir]
        rank_env = rank_environment(request)
        for key in sorted(rank_env):
            argv += ["-genv", key, rank_env[key]]
        argv += [*request.extra_args, *request.program]
        return Command(
            tuple(argv), rank_env, placement, request.oversubscribed, notes(request), files
        )
