"""MPI starter registry: name -> class. A duplicate name is a programming error.

A starter builds the argv and environment that start a program's ranks (`base.Starter`);
adding one is adding a module here with a `@register`ed class.
"""

from __future__ import annotations

import importlib
import pkgutil

from hpceval.errors import UserError
from hpceval.launch.starters.base import Starter

_REGISTRY: dict[str, type[Starter]] = {}


def register(cls: type[Starter]) -> type[Starter]:
    if cls.name in _REGISTRY:
        raise RuntimeError(f"starter {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def starter_names() -> list[str]:
    return sorted(_REGISTRY)


def get_starter_class(name: str) -> type[Starter]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(
            f"unknown starter {name!r} (known: {', '.join(starter_names())})"
        ) from None


def starter_for_implementation(implementation: str) -> type[Starter] | None:
    """The starter an MPI implementation ships (Open MPI: mpirun; MPICH: Hydra's mpiexec)."""
    own = [
        cls
        for cls in _REGISTRY.values()
        if cls.implementations is not None and implementation in cls.implementations
    ]
    return own[0] if len(own) == 1 else None


def _import_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")


_import_all()

__all__ = [
    "Starter",
    "get_starter_class",
    "register",
    "starter_for_implementation",
    "starter_names",
]
