"""Launchers: a scheduler (how a job is started and followed) paired with an MPI starter
(the argv and environment that start the ranks).

A platform's `[launcher] kind` names the scheduler (`local`, `hostfile`, `netns`, `slurm`;
`smpi` is the local scheduler with the `smpirun` starter) and `starter` the starter
(`openmpi`, `mpich`, `srun`, `smpirun`; default: the scheduler's own or the MPI's found on
the machine). Adding either is adding one module to `schedulers/` or `starters/`.
"""

from __future__ import annotations

from collections.abc import Mapping

from hpceval.config import LauncherConfig
from hpceval.errors import UserError
from hpceval.launch.command import Command, MpiRuntime
from hpceval.launch.schedulers import Scheduler, find_scheduler_class, scheduler_names
from hpceval.launch.schedulers.base import (
    KIND_STARTERS,
    OWN_STARTER,
    check_starter_name,
    starter_name,
)
from hpceval.launch.starters import get_starter_class

# Launchers are schedulers holding their starter: the campaign needs no other object.
Launcher = Scheduler

# Platform kinds that are a scheduler with a given starter: kind -> scheduler.
_KIND_SCHEDULERS: Mapping[str, str] = {"smpi": "local"}


def launcher_names() -> list[str]:
    """The platform kinds: every scheduler, and the pairs named by kind (smpi)."""
    return sorted({*scheduler_names(), *KIND_STARTERS})


def get_launcher_class(kind: str) -> type[Scheduler]:
    """The scheduler class of a platform kind."""
    cls = find_scheduler_class(_KIND_SCHEDULERS.get(kind, kind))
    if cls is None:
        raise UserError(f"unknown launcher {kind!r} (known: {', '.join(launcher_names())})")
    return cls


def validate_launcher(launcher: LauncherConfig) -> None:
    """Check a platform's [launcher] table before anything runs: the kind, the starter and
    the keys each of them owns. UserError for the kind; ValueError("field: cause") or
    pydantic.ValidationError for a key."""
    scheduler = get_launcher_class(launcher.kind)
    if launcher.starter is not None:
        try:
            check_starter_name(launcher.starter)
        except ValueError as e:
            raise ValueError(f"starter: {e}") from None
    name = starter_name(launcher, scheduler.default_starter)
    starter = None if name == OWN_STARTER else get_starter_class(name)
    scheduler.validate_options(launcher.options(), starter)


__all__ = [
    "Command",
    "Launcher",
    "MpiRuntime",
    "Scheduler",
    "get_launcher_class",
    "launcher_names",
    "validate_launcher",
]
