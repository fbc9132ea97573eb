"""`local`: mpirun/mpiexec on this machine (one node)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hpceval.errors import UserError
from hpceval.launch import register
from hpceval.launch.base import Command, Launcher, running_as_root, thread_environment
from hpceval.model import Placement
from hpceval.toolchain import run_as_root_requirements

# Ranks that busy-poll on an oversubscribed node starve each other (and veth traffic);
# yielding keeps them moving at the cost of latency, which the `oversubscribed` flag records.
OPEN_MPI_YIELD_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}

_OPEN_MPI_BIND = {
    "core": "core",
    "socket": "socket",
    "numa": "numa",
    "hwthread": "hwthread",
    "none": "none",
}


def open_mpi_args(placement: Placement, oversubscribed: bool) -> tuple[list[str], Placement]:
    """mpirun options for mapping and binding, and the placement as it will really be."""
    args: list[str] = []
    if oversubscribed:
        # Binding several ranks to one core would serialize them; let the kernel schedule.
        return ["--oversubscribe", "--bind-to", "none"], replace(placement, binding="none")
    if placement.threads_per_rank > 1:
        # PE=n reserves n cores per rank so each rank's threads get their own cores.
        args += ["--map-by", f"slot:PE={placement.threads_per_rank}"]
    else:
        args += ["--map-by", "core"]
    args += ["--bind-to", _OPEN_MPI_BIND[placement.binding]]
    if placement.binding == "hwthread":
        args.append("--use-hwthread-cpus")
    return args, placement


def mpich_args(placement: Placement, oversubscribed: bool) -> tuple[list[str], Placement]:
    if oversubscribed or placement.binding == "none":
        return ["-bind-to", "none"], replace(placement, binding="none")
    unit = {"core": "core", "socket": "socket", "numa": "numa", "hwthread": "hwthread"}
    spec = unit[placement.binding]
    if placement.threads_per_rank > 1:
        spec = f"{spec}:{placement.threads_per_rank}"
    return ["-bind-to", spec], placement


def environment_args(implementation: str, env: dict[str, str]) -> list[str]:
    """Export the variables to the ranks explicitly (mpirun may not forward them remotely)."""
    args: list[str] = []
    for key in sorted(env):
        if implementation == "Open MPI":
            args += ["-x", key]
        else:
            args += ["-genv", key, env[key]]
    return args


@register
class LocalLauncher(Launcher):
    name = "local"

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        if placement.nodes != 1:
            raise UserError(
                f"the local launcher runs on one node; placement {placement.label()} "
                f"asks for {placement.nodes}"
            )
        self.check_placement(placement)
        oversubscribed = self.oversubscribed(placement)
        impl = self.runtime.implementation
        rank_env = thread_environment(placement.threads_per_rank, oversubscribed=oversubscribed)
        launcher_env: dict[str, str] = {}
        if impl == "Open MPI":
            mapping, effective = open_mpi_args(placement, oversubscribed)
            if running_as_root():
                # Open MPI refuses to start as root unless told; mpirun itself reads these.
                launcher_env.update(run_as_root_requirements(impl).env)
            if oversubscribed:
                rank_env.update(OPEN_MPI_YIELD_ENV)
        else:
            mapping, effective = mpich_args(placement, oversubscribed)
        rank_env.update(self.platform.launcher.env)
        argv = [self.runtime.mpirun, "-np", str(placement.ranks), *mapping]
        argv += environment_args(impl, rank_env)
        argv += self.platform.launcher.extra_args
        argv += list(program)
        notes = (
            ("oversubscribed: binding disabled, ranks yield when idle",) if oversubscribed else ()
        )
        return Command(tuple(argv), {**launcher_env, **rank_env}, effective, oversubscribed, notes)
