"""Categories of points and the overhead summaries per category (used by compare, the report).

A point's category says what part of a platform it exercises (shared-memory messaging,
inter-node messaging, collectives, compute kernels, storage, applications); it comes from
its benchmark's declaration (hpceval.catalog), read without importing the benchmark.

Overhead summaries group the compared points of a platform by category and give the
geometric mean of the performance with its spread (geometric standard deviation, minimum,
maximum) and the verdict counts. They use one metric per kind of measurement
(``SUMMARY_METRICS``, declared by each benchmark: mpibench latency and collective time,
NPB time), because the other metrics (bandwidth = size/latency, Mop/s = operations/time)
restate the same points.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpceval.analysis.frame import IntArray, group_codes, numeric, present
from hpceval.analysis.ratios import Verdict
from hpceval.catalog import SUMMARY_METRICS as SUMMARY_METRICS  # the report reads it here
from hpceval.catalog import BenchmarkCategory, declaration
from hpceval.model import Origin
from hpceval.patterns import COLLECTIVES


class Category(StrEnum):
    """What part of a platform a point exercises (methodology §1: where the loss comes from)."""

    SHARED_MEMORY = "shared-memory messaging"  # mpibench p2p/rings: intra-node pair, one node
    INTER_NODE = "inter-node messaging"  # mpibench p2p: inter-node pair; multi-node rings
    COLLECTIVES = "collectives"  # mpibench bcast, reduce, allreduce, alltoall, ...
    COMPUTE = "compute kernels"  # npb
    STORAGE = "storage"  # fio and other I/O benchmarks
    APPLICATIONS = "applications"  # GROMACS, LAMMPS, ...
    OTHER = "other"


@dataclass(frozen=True)
class CategorySummary:
    """The points of one platform (and origin) in one category, summarized.

    `geomean` is the geometric mean of the performance (> 1: the platform does better),
    `geometric_sd` = exp(standard deviation of log performance) (1 when there is one point),
    `minimum`/`maximum` the extreme performances.
    """

    platform: str
    origin: Origin
    baseline: str
    baseline_origin: Origin
    category: Category
    points: int
    metrics: tuple[str, ...]
    geomean: float
    geometric_sd: float
    minimum: float
    maximum: float
    faster: int
    slower: int
    no_difference: int
    undetermined: int
    too_few: int = 0

    @property
    def slowdown(self) -> float:
        return 1 / self.geomean

    @property
    def overhead(self) -> float:
        """Relative loss against the baseline: 0.15 means 15 % slower (negative: faster)."""
        return self.slowdown - 1


_DECLARED: Final = list(BenchmarkCategory)


def declared_categories(table: pd.DataFrame) -> IntArray:
    """The category each row's benchmark declares for its metric (hpceval.catalog), as its
    position in `BenchmarkCategory`; -1 for a benchmark not installed here."""
    if "benchmark" not in table.columns or "metric" not in table.columns:
        return np.full(len(table), -1, dtype=np.int64)
    b_codes, benchmarks = pd.factorize(table["benchmark"])
    m_codes, metrics = pd.factorize(table["metric"])
    # One look-up per (benchmark, metric) pair, then a gather: the last row and column
    # stand for a missing value (code -1).
    lookup = np.full((len(benchmarks) + 1, len(metrics) + 1), -1, dtype=np.int64)
    for b, benchmark in enumerate(benchmarks):
        declared = declaration(str(benchmark))
        if declared is None:
            continue
        for m, metric in enumerate(metrics):
            lookup[b, m] = _DECLARED.index(declared.category_of(str(metric)))
    out: IntArray = lookup[np.asarray(b_codes), np.asarray(m_codes)]
    return out


def categorize(table: pd.DataFrame) -> IntArray:
    """The Category of each row, as its position in `Category`, from the category its
    benchmark declares (benchmark.toml, read through hpceval.catalog).

    Communication (mpibench's patterns, HPCC's b_eff figures) is split by the point: a
    collective pattern is collectives; otherwise shared-memory messaging for an intra-node
    pair or on one node, inter-node messaging for an inter-node pair or on several nodes.
    Compute and memory are compute kernels; storage is storage; applications are
    applications; a benchmark not declared here is other.
    """
    declared = declared_categories(table)

    def declared_as(*categories: BenchmarkCategory) -> npt.NDArray[np.bool_]:
        return np.isin(declared, [_DECLARED.index(c) for c in categories])

    communication = declared_as(BenchmarkCategory.COMMUNICATION)
    collective = communication & _is_in(table, "pattern", COLLECTIVES)
    messaging = communication & ~collective
    no_pair = ~present(table, "pair")
    nodes = numeric(table, "nodes")
    shared = messaging & (_is_in(table, "pair", {"intra-node"}) | (no_pair & (nodes == 1)))
    inter = messaging & (_is_in(table, "pair", {"inter-node"}) | (no_pair & (nodes > 1)))
    conditions = [
        shared,
        inter,
        collective,
        # STREAM (memory) is summarized with the compute kernels.
        declared_as(BenchmarkCategory.COMPUTE, BenchmarkCategory.MEMORY),
        declared_as(BenchmarkCategory.STORAGE),
        declared_as(BenchmarkCategory.APPLICATION),
    ]
    order = list(Category)
    choices = [
        order.index(c)
        for c in (
            Category.SHARED_MEMORY,
            Category.INTER_NODE,
            Category.COLLECTIVES,
            Category.COMPUTE,
            Category.STORAGE,
            Category.APPLICATIONS,
        )
    ]
    codes: IntArray = np.select(conditions, choices, default=order.index(Category.OTHER)).astype(
        np.int64
    )
    return codes


def _is_in(table: pd.DataFrame, column: str, values: Collection[str]) -> npt.NDArray[np.bool_]:
    """Where a column's value is one of `values` (False where missing or absent)."""
    if column not in table.columns:
        return np.zeros(len(table), dtype=bool)
    series = table[column]
    if isinstance(series.dtype, pd.CategoricalDtype):
        hits = np.append(np.isin(series.cat.categories.astype(object), list(values)), False)
        return np.asarray(hits[np.asarray(series.cat.codes, dtype=np.int64)], dtype=bool)
    return np.asarray(series.isin(list(values)).to_numpy(), dtype=bool)


def summarized_rows(table: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """The rows of a comparison table that overhead summaries use: one metric per kind of
    measurement (SUMMARY_METRICS) and a positive, finite performance."""
    bench = table["benchmark"].astype(object).to_numpy()
    metric = table["metric"].astype(object).to_numpy()
    use = np.ones(len(table), dtype=bool)
    for name, metrics in SUMMARY_METRICS.items():
        use &= (bench != name) | np.isin(metric, list(metrics))
    perf = table["performance"].to_numpy(dtype=np.float64)
    out: npt.NDArray[np.bool_] = use & np.isfinite(perf) & (perf > 0)
    return out


def summarize(table: pd.DataFrame, *, baseline: str) -> tuple[CategorySummary, ...]:
    """Overhead summaries of a comparison table per platform, origin and category."""
    if table.empty:
        return ()
    use = summarized_rows(table)
    perf = table["performance"].to_numpy(dtype=np.float64)
    metric = table["metric"].astype(object).to_numpy()
    by = ["platform", "origin", "baseline_origin", "category"]
    part = table.loc[use, by].reset_index(drop=True)
    if part.empty:
        return ()
    codes, first = group_codes(part, by)
    groups = len(first)
    logs = np.log(perf[use])
    count = np.bincount(codes, minlength=groups)
    mean = np.bincount(codes, weights=logs, minlength=groups) / count
    squares = np.bincount(codes, weights=(logs - mean[codes]) ** 2, minlength=groups)
    sd = np.sqrt(np.where(count > 1, squares / np.maximum(count - 1, 1), 0.0))
    order = np.argsort(codes, kind="stable")
    offsets = np.zeros(groups, dtype=np.int64)
    np.cumsum(count[:-1], out=offsets[1:])
    minimum = np.minimum.reduceat(logs[order], offsets)
    maximum = np.maximum.reduceat(logs[order], offsets)
    verdict = np.asarray(table["verdict"].astype(object).to_numpy()[use], dtype=object)
    tally = {
        v: np.bincount(codes, weights=(verdict == v.value), minlength=groups).astype(int)
        for v in Verdict
    }
    metric_codes, metric_names = pd.factorize(metric[use])
    pairs = np.unique(codes * len(metric_names) + metric_codes)
    metrics_of: dict[int, list[str]] = {}
    for pair in pairs.tolist():
        metrics_of.setdefault(pair // len(metric_names), []).append(
            str(metric_names[pair % len(metric_names)])
        )
    keys = part.iloc[first].astype(object).to_numpy()
    out: list[CategorySummary] = []
    for g in range(groups):
        platform, origin, b_origin, category = (str(k) for k in keys[g])
        out.append(
            CategorySummary(
                platform=platform,
                origin=Origin(origin),
                baseline=baseline,
                baseline_origin=Origin(b_origin),
                category=Category(category),
                points=int(count[g]),
                metrics=tuple(sorted(metrics_of[g])),
                geomean=float(np.exp(mean[g])),
                geometric_sd=float(np.exp(sd[g])),
                minimum=float(np.exp(minimum[g])),
                maximum=float(np.exp(maximum[g])),
                faster=int(tally[Verdict.FASTER][g]),
                slower=int(tally[Verdict.SLOWER][g]),
                no_difference=int(tally[Verdict.NO_DIFFERENCE][g]),
                undetermined=int(tally[Verdict.UNDETERMINED][g]),
                too_few=int(tally[Verdict.TOO_FEW][g]),
            )
        )
    out.sort(key=lambda x: (x.platform, x.origin, list(Category).index(x.category)))
    return tuple(out)
