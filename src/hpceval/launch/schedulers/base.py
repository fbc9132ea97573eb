"""The scheduler interface: how a job is started and followed, apart from the MPI argv.

A scheduler (local process group, SSH hosts, emulated network namespaces, Slurm job) decides
where the ranks run and how the job is started, followed and stopped: `session()` around a
campaign, `preflight()` before it, `submit()` per execution (a `Running` with next_line /
wait / stop, which kills the whole process group or cancels the job on every exit path).
It pairs with an MPI starter (`launch.starters`) that builds the argv: `command()` fills a
`StartRequest` with the scheduler's decisions and asks the starter for the argv, once.

A platform names both: `[launcher] kind` picks the scheduler (and, for `smpi`, the
starter), `starter` picks the starter explicitly; by default each scheduler uses its own
(`default_starter`) or the one of the MPI found on the machine (`mpirun`: Open MPI's mpirun
or MPICH's mpiexec).
"""

from __future__ import annotations

import contextlib
from abc import ABC
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from hpceval.config import LauncherConfig, PlatformConfig
from hpceval.errors import UserError
from hpceval.execute import Executor, LocalExecutor, Running, running_as_root
from hpceval.launch.command import Command, MpiRuntime
from hpceval.launch.starters import get_starter_class, starter_for_implementation, starter_names
from hpceval.launch.starters.base import Starter, StartRequest
from hpceval.model import Origin, Placement

# `starter = "mpirun"`: the starter of the MPI found on the machine (Open MPI or MPICH).
OWN_STARTER = "mpirun"
# Platform kinds that name a starter as well as a scheduler.
KIND_STARTERS: Mapping[str, str] = {"smpi": "smpirun"}


def starter_name(launcher: LauncherConfig, default: str | None) -> str:
    """The starter a platform names (explicitly, by its kind, or its scheduler's default);
    "mpirun" when it is the MPI's own, known once the MPI is found."""
    name = launcher.starter or KIND_STARTERS.get(launcher.kind) or default or OWN_STARTER
    if name != OWN_STARTER:
        get_starter_class(name)  # a UserError names the known ones
    return name


def check_starter_name(name: str) -> None:
    if name != OWN_STARTER and name not in starter_names():
        known = ", ".join(repr(n) for n in starter_names())
        raise ValueError(f"unknown starter {name!r}: use {known} or {OWN_STARTER!r}")


def resolve_starter(name: str, runtime: MpiRuntime) -> Starter:
    """The starter of that name for the MPI found (`mpirun`: the MPI's own)."""
    if name == OWN_STARTER:
        cls = starter_for_implementation(runtime.implementation)
        if cls is None:
            raise UserError(
                f"{runtime.mpirun} is {runtime.implementation}: no starter for it "
                f"(set launcher.starter to one of {', '.join(starter_names())})"
            )
    else:
        cls = get_starter_class(name)
    if cls.implementations is not None and runtime.implementation not in cls.implementations:
        raise UserError(
            f"launcher.starter: {cls.name} starts {' or '.join(sorted(cls.implementations))} "
            f"programs, but {runtime.mpirun} is {runtime.implementation}"
        )
    return cls()


class Scheduler(ABC):
    name: ClassVar[str]
    # Measurements taken through this scheduler are labelled with this origin; an instance
    # whose starter simulates labels them SIMULATED whatever the scheduler.
    origin: Origin = Origin.MEASURED
    # The scheduler's own keys in the platform's [launcher] table (None: it has none).
    options_model: ClassVar[type[BaseModel] | None] = None
    # The starter used when the platform names none (None: the MPI's own, `mpirun`).
    default_starter: ClassVar[str | None] = None

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        self.platform = platform
        self.runtime = runtime
        self.starter = resolve_starter(
            starter_name(platform.launcher, self.default_starter), runtime
        )
        if self.starter.origin is not Origin.MEASURED:
            self.origin = self.starter.origin

    # ----------------------------------------------------------------- identity, options

    @property
    def kind(self) -> str:
        """The platform's launcher kind: what a run records as its launcher."""
        return self.platform.launcher.kind

    @classmethod
    def validate_options(
        cls, options: Mapping[str, Any], starter: type[Starter] | None = None
    ) -> tuple[BaseModel | None, BaseModel | None]:
        """Validate the [launcher] keys of this scheduler and of its starter (each key is one
        of theirs); pydantic.ValidationError or ValueError("key: cause") names the bad one."""
        starter_model = starter.options_model if starter is not None else None
        starter_keys = set(starter_model.model_fields) if starter_model is not None else set()
        own = {k: v for k, v in options.items() if k not in starter_keys}
        theirs = {k: v for k, v in options.items() if k in starter_keys}
        if cls.options_model is None:
            if own:
                raise ValueError(f"{next(iter(own))}: unknown field")
            own_options = None
        else:
            own_options = cls.options_model.model_validate(own)
        starter_options = starter_model.model_validate(theirs) if starter_model else None
        return own_options, starter_options

    def options(self) -> Any:
        """The validated scheduler-specific options (an instance of options_model)."""
        return self.validate_options(self.platform.launcher.options(), type(self.starter))[0]

    def starter_options(self) -> Any:
        return self.validate_options(self.platform.launcher.options(), type(self.starter))[1]

    # ----------------------------------------------------------------- commands

    def emulation(self) -> dict[str, Any] | None:
        """What an emulated platform is and is not (its limits), for the run's provenance;
        None on real hardware."""
        return None

    def check_placement(self, placement: Placement) -> None:
        if problem := self.platform.placement_problem(placement):
            raise UserError(problem)

    def oversubscribed(self, placement: Placement) -> bool:
        used = placement.ranks_per_node * placement.threads_per_rank
        return used > self.platform.resolved_cores_per_node()

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        """What the starter is asked to start; schedulers add where and how (hosts, remote
        shell, binding they cannot honour)."""
        launcher = self.platform.launcher
        return StartRequest(
            placement=placement,
            program=tuple(program),
            implementation=self.runtime.implementation,
            executable=self.starter.program or self.runtime.mpirun,
            oversubscribed=self.oversubscribed(placement),
            rank_env=dict(launcher.env),
            extra_args=tuple(launcher.extra_args),
            as_root=running_as_root(),
            options=self.starter_options(),
        )

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        """The argv + environment that start `program` on `placement`; the files the argv
        names (hostfiles) are written."""
        self.check_placement(placement)
        command = self.starter.command(self.start_request(placement, program))
        for path, text in command.files.items():
            write_if_changed(Path(path), text)
        return command

    # ----------------------------------------------------------------- jobs

    def session(self) -> AbstractContextManager[None]:
        """What must exist while a campaign runs (an emulated cluster's namespaces...).

        Entered around the whole campaign and left on every exit path, also after an error
        or an interruption; leaving it calls `close()`."""
        return self._session()

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        try:
            yield
        finally:
            self.close()

    def close(self) -> None:  # noqa: B027 - optional hook, most schedulers need nothing
        """Remove what the campaign's commands left (hostfiles, finished jobs' directories)."""

    def executor(self, time_limit_s: float | None = None) -> Executor:
        """How commands are started: a local child process group unless a batch system is
        involved. `time_limit_s` is the case's: a batch job's own limit is sized on it."""
        return LocalExecutor()

    def submit(self, command: Command, time_limit_s: float | None = None) -> Running:
        """Start a command built by `command()` and follow it."""
        return self.executor(time_limit_s).start(command.argv, command.env)

    def preflight(self) -> None:  # noqa: B027 - optional hook, most schedulers need nothing
        """Checks before a campaign starts (hosts reachable, daemons up); raise UserError."""

    def provenance(self) -> dict[str, Any] | None:
        """What a run records of this scheduler beyond the machine (a container runtime's
        version, image and limits), asked inside the session; None: nothing."""
        return None


def write_if_changed(path: Path, text: str) -> None:
    """Write a file the argv names; one already there with that text is left alone."""
    if path.is_file() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
