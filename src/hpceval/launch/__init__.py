"""Launcher registry: name -> class. A duplicate name is a programming error."""

from __future__ import annotations

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


# Registration happens on import of each launcher module.
from hpceval.launch import local as _local  # noqa: E402,F401

__all__ = ["Command", "Launcher", "MpiRuntime", "get_launcher_class", "launcher_names", "register"]
