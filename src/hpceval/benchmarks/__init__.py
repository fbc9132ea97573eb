"""Benchmark registry: name -> instance.

Adding a benchmark is adding a sub-package here (its module registers its class with
`@register`, its `benchmark.toml` declares its category), or installing a plug-in that names
its Benchmark class under the entry point group `hpceval.benchmarks` (the entry point's name
is the benchmark's name; hpceval.catalog describes the declaration beside it).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.catalog import benchmark_of_package, plugin_entry_points
from hpceval.errors import UserError

_REGISTRY: dict[str, Benchmark[Any]] = {}


def register(cls: type[Benchmark[Any]]) -> type[Benchmark[Any]]:
    if cls.name in _REGISTRY:
        raise RuntimeError(f"benchmark {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def benchmark_names() -> list[str]:
    return sorted(_REGISTRY)


def get_benchmark(name: str) -> Benchmark[Any]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(
            f"unknown benchmark {name!r} (known: {', '.join(benchmark_names())})"
        ) from None


def find_benchmark(name: str) -> Benchmark[Any] | None:
    """The registered benchmark of that name, or None (stored results of one not installed)."""
    return _REGISTRY.get(name)


def _import_all() -> None:
    """Every sub-package here is a benchmark; then the installed plug-ins."""
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            importlib.import_module(f"{__name__}.{info.name}")
            if benchmark_of_package(info.name) not in _REGISTRY:
                raise RuntimeError(f"benchmark package {info.name!r} registers no benchmark")
    for entry in plugin_entry_points():
        cls = entry.load()
        if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
            raise RuntimeError(f"benchmark plug-in {entry.value} is not a Benchmark class")
        if cls.name != entry.name:
            raise RuntimeError(f"benchmark plug-in {entry.name!r} names itself {cls.name!r}")
        register(cls)


_import_all()

__all__ = [
    "Benchmark",
    "Case",
    "ParsedPoint",
    "Program",
    "Tool",
    "benchmark_names",
    "find_benchmark",
    "get_benchmark",
    "register",
]
