"""The launcher interface: (placement, program argv) -> argv + environment.

Launchers never build shell strings: the campaign executes `Command.argv` directly. Each
launcher is a small registered class; adding one is adding a module (see `__init__`).
"""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.execute import Executor, LocalExecutor
from hpceval.model import Origin, Placement


@dataclass(frozen=True)
class Command:
    """What to execute: argv, the variables set on top of the inherited environment, and the
    placement as it will really be (binding is dropped when a node is oversubscribed)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    placement: Placement
    oversubscribed: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class MpiRuntime:
    """What a launcher needs to know of the MPI installation."""

    implementation: str  # "Open MPI" | "MPICH" | ...
    mpirun: str  # path of the mpirun/mpiexec to use


# The program `hpceval run` asks a launcher to start for each placement before anything is
# built, to refuse an impossible placement early; launchers check the program's own form
# (hpceval.launch.mpj: a jar) only on real programs.
PLACEMENT_PROBE: tuple[str, ...] = ("true",)


def thread_environment(threads_per_rank: int, *, oversubscribed: bool = False) -> dict[str, str]:
    """OpenMP settings for hybrid runs; set always, so a stray OMP_NUM_THREADS cannot leak in.

    On an oversubscribed node the ranks are not bound, so pinning every rank's threads to
    the first cores would stack them; and threads that spin at barriers (the default active
    wait) steal the cores the other ranks' threads need: measured here on 2 cores, NPB CG
    class W as 4 ranks x 2 threads took 39.5 s with OMP_WAIT_POLICY=ACTIVE and 0.31 s
    passive (MG W: 1.78 s against 0.10 s).
    """
    env = {"OMP_NUM_THREADS": str(threads_per_rank)}
    if threads_per_rank > 1:
        if oversubscribed:
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        else:
            env["OMP_PLACES"] = "cores"
            env["OMP_PROC_BIND"] = "close"
    return env


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


class Launcher(ABC):
    name: ClassVar[str]
    # Measurements taken through this launcher are labelled with this origin.
    origin: ClassVar[Origin] = Origin.MEASURED
    # The launcher's own keys in the platform's [launcher] table (None: it has none).
    options_model: ClassVar[type[BaseModel] | None] = None

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> BaseModel | None:
        """Validate the launcher-specific keys; pydantic.ValidationError names the bad one."""
        if cls.options_model is None:
            if options:
                raise ValueError(f"{next(iter(options))}: unknown field")
            return None
        return cls.options_model.model_validate(dict(options))

    def options(self) -> Any:
        """The validated launcher-specific options (an instance of options_model)."""
        return self.validate_options(self.platform.launcher.options())

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        self.platform = platform
        self.runtime = runtime

    @abstractmethod
    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        """The argv + environment that starts `program` on `placement`."""

    def session(self) -> AbstractContextManager[None]:
        """What must exist while a campaign runs (an emulated cluster's namespaces...).

        Entered around the whole campaign and left on every exit path, also after an error
        or an interruption. Most launchers need nothing."""
        return contextlib.nullcontext()

    def executor(self, time_limit_s: float | None = None) -> Executor:
        """How commands are started: a local child process unless a scheduler is involved.

        `time_limit_s` is the case's time limit: a scheduler sizes its job's own limit on it."""
        return LocalExecutor()

    def preflight(self) -> None:  # noqa: B027 - optional hook, most launchers need nothing
        """Checks before a campaign starts (hosts reachable, daemons up); raise UserError."""

    def check_placement(self, placement: Placement) -> None:
        if placement.nodes > self.platform.nodes:
            raise UserError(
                f"placement {placement.label()} needs {placement.nodes} nodes but platform "
                f"{self.platform.name!r} has {self.platform.nodes}"
            )
        cores = self.platform.resolved_cores_per_node()
        used = placement.ranks_per_node * placement.threads_per_rank
        if used > cores and not self.platform.launcher.oversubscribe:
            raise UserError(
                f"placement {placement.label()} needs {used} cores per node but platform "
                f"{self.platform.name!r} has {cores} and oversubscribe = false"
            )

    def oversubscribed(self, placement: Placement) -> bool:
        used = placement.ranks_per_node * placement.threads_per_rank
        return used > self.platform.resolved_cores_per_node()
