"""Scheduler registry: name -> class. A duplicate name is a programming error.

A scheduler starts and follows jobs (`base.Scheduler`); adding one is adding a module here
with a `@register`ed class.
"""

from __future__ import annotations

import importlib
import pkgutil

from hpceval.launch.schedulers.base import Scheduler

_REGISTRY: dict[str, type[Scheduler]] = {}


def register(cls: type[Scheduler]) -> type[Scheduler]:
    if cls.name in _REGISTRY:
        raise RuntimeError(f"scheduler {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def scheduler_names() -> list[str]:
    return sorted(_REGISTRY)


def find_scheduler_class(name: str) -> type[Scheduler] | None:
    return _REGISTRY.get(name)


def _import_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")


_import_all()

__all__ = ["Scheduler", "find_scheduler_class", "register", "scheduler_names"]
