"""Benchmark registry: name -> instance. Adding a benchmark is adding a module here."""

from __future__ import annotations

import importlib

from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.errors import UserError

_REGISTRY: dict[str, Benchmark] = {}


def register(cls: type[Benchmark]) -> type[Benchmark]:
    if cls.name in _REGISTRY:
        raise RuntimeError(f"benchmark {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def benchmark_names() -> list[str]:
    return sorted(_REGISTRY)


def get_benchmark(name: str) -> Benchmark:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(
            f"unknown benchmark {name!r} (known: {', '.join(benchmark_names())})"
        ) from None


# The benchmarks ready to run; a new one is a package or module here, added to this list
# once its program builds and verifies.
for _module in ("mpibench", "mpibench_java", "npb", "fio", "hpcc", "gromacs", "lammps"):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = [
    "Benchmark",
    "Case",
    "ParsedPoint",
    "Program",
    "benchmark_names",
    "get_benchmark",
    "register",
]
