"""Launcher registry: name -> class. A duplicate name is a programming error."""

from __future__ import annotations

import importlib
import pkgutil

from hpceval.errors import UserError
from hpceval.launch.base import Command, Launcher, MpiRuntime

_REGISTRY: dict[str, type[Launcher]] = {}


def register(cls: type[Launcher]) -> type[Launcher]:
    if cls.name in _REGISTRY:
        raise RuntimeError(f"launcher {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def launcher_names() -> list[str]:
    return sorted(_REGISTRY)


def get_launcher_class(name: str) -> type[Launcher]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(
            f"unknown launcher {name!r} (known: {', '.join(launcher_names())})"
        ) from None


def _import_all() -> None:
    """Every module of this package registers its launcher: adding one is adding a module."""
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")


_import_all()

__all__ = ["Command", "Launcher", "MpiRuntime", "get_launcher_class", "launcher_names", "register"]
