"""`srun`: Slurm's srun starts the ranks itself through the PMI plugin the
scheduler names (`StartRequest.pmi`, PMIx by default).

    srun --mpi=PLUGIN --nodes=N --ntasks=P --ntasks-per-node=R --cpus-per-task=T
         --distribution=block:block --cpu-bind=UNIT --kill-on-bad-exit=1 [--overcommit]
         EXTRA -- PROGRAM

Block distribution puts rank r on node r // R, as the benchmarks' pair cases expect. The
ranks inherit srun's whole environment (the job script exports the variables), and binding
is Slurm's task plugin's: without one (TaskPlugin=task/none) --cpu-bind does nothing, which
the scheduler finds out and says in `unbound_reason`.
"""

from __future__ import annotations

from hpceval.launch.command import Command
from hpceval.launch.starters import register
from hpceval.launch.starters.base import (
    Starter,
    StartRequest,
    effective_placement,
    notes,
    rank_environment,
)

DEFAULT_PMI = "pmix"
CPU_BIND = {
    "core": "cores",
    "socket": "sockets",
    "numa": "ldoms",
    "hwthread": "threads",
    "none": "none",
}


@register
class SrunStarter(Starter):
    name = "srun"
    binds_through_scheduler = True
    program = "srun"

    def command(self, request: StartRequest) -> Command:
        placement = effective_placement(request)
        argv = [
            request.executable,
            f"--mpi={request.pmi or DEFAULT_PMI}",
            f"--nodes={placement.nodes}",
            f"--ntasks={placement.ranks}",
            f"--ntasks-per-node={placement.ranks_per_node}",
            f"--cpus-per-task={placement.threads_per_rank}",
            "--distribution=block:block",
            f"--cpu-bind={CPU_BIND[placement.binding]}",
            "--kill-on-bad-exit=1",
        ]
        if request.oversubscribed:
            # Slurm refuses more tasks than CPUs on a node unless told to overcommit.
            argv.append("--overcommit")
        argv += [*request.extra_args, "--", *request.program]
        return Command(
            tuple(argv),
            rank_environment(request),
            placement,
            request.oversubscribed,
            notes(request),
        )
