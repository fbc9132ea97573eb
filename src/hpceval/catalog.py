"""The benchmark catalogue: what each benchmark declares in its `benchmark.toml`, read
without importing its code.

Why a file beside the code, and not the category stored with each measurement: `compare`
and the report must know what a measurement exercises (communication, compute, storage...)
without importing benchmark modules (the import-layer contract, and `hpceval compare`
starts without pydantic and the launchers), and storing a category with every run would
change the stored schema and leave older databases and imported results without one. A
declaration in the benchmark's own folder keeps one source (the `Benchmark` class reads its
category from the same file), needs no change outside that folder, and categorises every
stored measurement, old or imported, by its benchmark's name.

A declaration (all keys but `category` optional):

    category = "communication"        # BenchmarkCategory: the benchmark's measurements
    summary_metrics = ["latency"]     # the metrics overhead summaries use (default: all)
    counterpart = "npb"               # an official code: hpceval's benchmark of its problems
    [metric_categories]               # metric-name prefix -> category, where it differs
    "pingpong_" = "communication"
    [units]                           # units this benchmark adds to the vocabulary
    "ns/day" = "higher"               # "higher" or "lower": which is better

Built-in benchmarks: `hpceval/benchmarks/<name>/benchmark.toml`. Plug-ins (entry point group
`hpceval.benchmarks`, name = the benchmark's name): `benchmark.toml` beside the entry
point's module (in its package folder), found with `importlib.util.find_spec`, which
imports at most the module's parent packages, never the module.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, Final, TypeVar

from hpceval.errors import UserError

DECLARATION_FILE: Final = "benchmark.toml"
ENTRY_POINT_GROUP: Final = "hpceval.benchmarks"
BUILTIN_DIR: Final = Path(__file__).parent / "benchmarks"


class BenchmarkCategory(StrEnum):
    """What part of a platform a benchmark's measurements exercise."""

    COMMUNICATION = "communication"  # message passing: point-to-point, rings, collectives
    COMPUTE = "compute"  # CPU-bound kernels (NPB, HPL, DGEMM, FFT)
    MEMORY = "memory"  # memory bandwidth (STREAM)
    STORAGE = "storage"  # file systems and disks (fio)
    APPLICATION = "application"  # whole scientific codes (GROMACS, LAMMPS)


@dataclass(frozen=True)
class Declaration:
    name: str
    category: BenchmarkCategory
    source: str  # the file, for messages
    # (metric-name prefix, category) where a metric's category is not the benchmark's
    metric_categories: tuple[tuple[str, BenchmarkCategory], ...] = ()
    summary_metrics: frozenset[str] | None = None  # None: every metric
    units: Mapping[str, bool] = field(default_factory=dict)  # unit -> higher is better
    # An official code's benchmark names hpceval's own benchmark measuring the same problems
    # (`counterpart = "npb"`): what `hpceval validate` holds it against. None for own ones.
    counterpart: str | None = None

    def category_of(self, metric: str) -> BenchmarkCategory:
        for prefix, category in self.metric_categories:
            if metric.startswith(prefix):
                return category
        return self.category


def _category(value: Any, source: str, key: str) -> BenchmarkCategory:
    try:
        return BenchmarkCategory(value)
    except ValueError:
        known = ", ".join(c.value for c in BenchmarkCategory)
        raise UserError(f"{source}: {key}: {value!r} is not a category ({known})") from None


def parse_declaration(name: str, text: str, source: str) -> Declaration:
    """A benchmark's declaration from its TOML text (UserError naming file and key)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{source}: {e}") from None
    known = {"category", "summary_metrics", "metric_categories", "units", "counterpart"}
    unknown = set(raw) - known
    if unknown:
        raise UserError(f"{source}: {sorted(unknown)[0]}: unknown key")
    if "category" not in raw:
        raise UserError(f"{source}: category: missing")
    summary = raw.get("summary_metrics")
    if summary is not None and not (
        isinstance(summary, list) and summary and all(isinstance(m, str) for m in summary)
    ):
        raise UserError(f"{source}: summary_metrics: not a list of metric names")
    prefixes = raw.get("metric_categories", {})
    units = raw.get("units", {})
    if not isinstance(prefixes, dict) or not isinstance(units, dict):
        raise UserError(f"{source}: metric_categories and units must be tables")
    counterpart = raw.get("counterpart")
    if counterpart is not None and not isinstance(counterpart, str):
        raise UserError(f"{source}: counterpart: not a benchmark name")
    directions = {"higher": True, "lower": False}
    for unit, better in units.items():
        if better not in directions:
            raise UserError(f"{source}: units.{unit}: {better!r} is not 'higher' or 'lower'")
    return Declaration(
        name=name,
        category=_category(raw["category"], source, "category"),
        source=source,
        # Longest prefix first: the most specific one decides.
        metric_categories=tuple(
            (prefix, _category(value, source, f"metric_categories.{prefix}"))
            for prefix, value in sorted(prefixes.items(), key=lambda kv: -len(kv[0]))
        ),
        summary_metrics=frozenset(summary) if summary is not None else None,
        units={unit: directions[better] for unit, better in units.items()},
        counterpart=counterpart,
    )


def benchmark_of_package(package: str) -> str:
    """The benchmark a built-in package holds: its name, '_' read as '-' (a Python package
    name cannot hold the '-' of `mpibench-java`)."""
    return package.replace("_", "-")


def _builtin_files() -> Iterator[tuple[str, Path]]:
    for path in sorted(BUILTIN_DIR.glob(f"*/{DECLARATION_FILE}")):
        yield benchmark_of_package(path.parent.name), path


def plugin_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed plug-in benchmarks (entry point group `hpceval.benchmarks`)."""
    return sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)


def _plugin_file(entry: importlib.metadata.EntryPoint) -> Path:
    try:
        spec = importlib.util.find_spec(entry.module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise UserError(f"benchmark plug-in {entry.name!r}: module {entry.module} not found")
    return Path(spec.origin).parent / DECLARATION_FILE


@cache
def declarations() -> Mapping[str, Declaration]:
    """Every benchmark's declaration, by benchmark name (built-ins, then plug-ins)."""
    files = dict(_builtin_files())
    for entry in plugin_entry_points():
        if entry.name in files:
            raise UserError(f"benchmark plug-in {entry.name!r}: a benchmark of that name exists")
        files[entry.name] = _plugin_file(entry)
    out = {}
    for name, path in files.items():
        try:
            text = path.read_text()
        except OSError as e:
            raise UserError(f"{path}: cannot read the benchmark's declaration: {e}") from None
        out[name] = parse_declaration(name, text, str(path))
    return out


def declaration(name: str) -> Declaration | None:
    return declarations().get(name)


V = TypeVar("V")


class LazyMapping(Mapping[str, V]):
    """A read-only mapping built from the declarations when first read (importing a module
    that defines one reads no file)."""

    def __init__(self, build: Callable[[], Mapping[str, V]]) -> None:
        self._build = cache(build)

    def __getitem__(self, key: str) -> V:
        return self._build()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())


def _summary_metrics() -> Mapping[str, frozenset[str]]:
    return {
        name: d.summary_metrics
        for name, d in declarations().items()
        if d.summary_metrics is not None
    }


# benchmark -> the metrics the overhead summaries use (a benchmark not listed: all metrics).
SUMMARY_METRICS: Final[Mapping[str, frozenset[str]]] = LazyMapping(_summary_metrics)
