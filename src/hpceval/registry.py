"""Named plug-in classes (schedulers, starters): one registry each, filled by the modules of
a package as they are imported. A duplicate name is a programming error."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """name -> class; `what` names the kind in messages ("scheduler", "starter")."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._classes: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> type[T]:
        name: str = getattr(cls, "name")  # noqa: B009 - every plug-in class declares it
        if name in self._classes:
            raise RuntimeError(f"{self.what} {name!r} registered twice")
        self._classes[name] = cls
        return cls

    def names(self) -> list[str]:
        return sorted(self._classes)

    def find(self, name: str) -> type[T] | None:
        return self._classes.get(name)

    def classes(self) -> list[type[T]]:
        return list(self._classes.values())


def import_modules(package: str, path: Iterable[str], *, skip: Iterable[str] = ("base",)) -> None:
    """Import every module of a package (each registers its classes): adding one to the
    registry is adding a module."""
    left_out = set(skip)
    for info in pkgutil.iter_modules(path):
        if info.name not in left_out:
            importlib.import_module(f"{package}.{info.name}")
