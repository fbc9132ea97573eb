"""Benchmark registry: name -> instance. Adding a benchmark is adding a module here."""

from __future__ import annotations

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


from hpceval.benchmarks import mpibench as _mpibench  # noqa: E402,F401

__all__ = [
    "Benchmark",
    "Case",
    "ParsedPoint",
    "Program",
    "benchmark_names",
    "get_benchmark",
    "register",
]
