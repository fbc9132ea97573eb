"""Comparison with a baseline platform: ratios with confidence intervals, verdicts, summaries.

Definitions (one *side* is a platform's measurements of one origin; its repetitions at a
point are the measurements of that point, one per repetition of each run):

- every value, interval and ratio uses one named statistic, the policy's
  (hpceval.analysis.policy, docs/statistics.md): median by default, mean (IMB/OSU) or min,
  taken on times (a rate's statistic is the amount over the statistic of its times) and
  hierarchically: per repetition, then over repetitions;
- ratio = value(platform) / value(baseline), in the metric's own direction;
- performance = the ratio oriented so that > 1 means the platform does better: the ratio
  itself when a larger value is better in the metric's unit (``units.HIGHER_IS_BETTER``:
  bandwidth, Mop/s), its inverse when a smaller one is (time, latency);
- slowdown = 1 / performance (how many times slower; a time ratio for a time metric) and
  overhead = slowdown - 1 (0.15: 15 % slower, as the studies report virtualization overhead);
- the confidence interval of the ratio (level `confidence`, default 95 %), by one of two
  methods (the one used is recorded on every row, with what was resampled, ``ci_over``):

  * ``bootstrap``: the percentile interval of `resamples` bootstrap replicates of the ratio
    of the statistics, each side resampled with replacement on its own: over its
    repetitions when it has two or more (run-to-run variance), over its samples when it has
    one (within-run only). One resampling pattern per unit count and side, drawn from a
    generator seeded with (seed, side, count), so results do not depend on the order of the
    points.
  * ``delta``: a closed form for very many points: log(ratio) ± t·se, se² the sum of both
    sides' squared relative standard errors (of a mean: Welch; of a median: from its
    distribution-free order-statistic interval).
  * ``auto`` (the default): bootstrap while its work stays within ``BOOTSTRAP_BUDGET``
    (about two seconds), delta beyond; the min statistic is always resampled.

  A point with a single unit on either side has no interval (it says so in ``note``).
- verdict: *faster* when the whole interval of the performance lies above 1, *slower* when it
  lies below 1, *no significant difference* when it contains 1, *too few repetitions* when
  either side has fewer than the policy's ``min_repetitions`` (the interval is still given),
  *undetermined* without an interval.

Overhead summaries group the points of a platform by category (shared-memory messaging,
inter-node messaging, collectives, compute kernels, storage, applications) and give the
geometric mean of the performance with its spread (geometric standard deviation, minimum,
maximum) and the verdict counts. They use one metric per kind of measurement
(``SUMMARY_METRICS``, declared by each benchmark: mpibench latency and collective time,
NPB time), because the other metrics (bandwidth = size/latency, Mop/s = operations/time)
restate the same points. The category of a point comes from its benchmark's declaration
(hpceval.catalog), read without importing the benchmark.

Measured, emulated and simulated data are never mixed silently: a side whose origin is not
the baseline's is refused (``CrossOriginError``, naming the CLI flags ``--allow-mixed-origins``
and ``--baseline-origin``) unless ``allow_mixed_origins=True``, and then every row and summary
carries both origins.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpceval.analysis.frame import (
    IntArray,
    check_frame,
    group_codes,
    numeric,
    point_columns,
    present,
)
from hpceval.analysis.matching import (
    UNMATCHED_COLUMNS,
    PlacementMode,
    match_groups,
    parse_mode,
)
from hpceval.analysis.policy import StatisticPolicy, summarize_groups
from hpceval.analysis.ratios import (
    DEFAULT_RESAMPLES,
    CiMethod,
    Verdict,
    ratio_columns,
)
from hpceval.catalog import SUMMARY_METRICS as SUMMARY_METRICS  # the report reads it here
from hpceval.catalog import BenchmarkCategory, declaration
from hpceval.errors import UserError
from hpceval.labels import PLACEMENT_FACETS, placement_label
from hpceval.model import Origin, ParamValue
from hpceval.patterns import COLLECTIVES

if TYPE_CHECKING:  # the CLI starts without pydantic (tests/test_cli.py)
    from hpceval.config import PlatformConfig


class Category(StrEnum):
    """What part of a platform a point exercises (methodology §1: where the loss comes from)."""

    SHARED_MEMORY = "shared-memory messaging"  # mpibench p2p/rings: intra-node pair, one node
    INTER_NODE = "inter-node messaging"  # mpibench p2p: inter-node pair; multi-node rings
    COLLECTIVES = "collectives"  # mpibench bcast, reduce, allreduce, alltoall, ...
    COMPUTE = "compute kernels"  # npb
    STORAGE = "storage"  # fio and other I/O benchmarks
    APPLICATIONS = "applications"  # GROMACS, LAMMPS, ...
    OTHER = "other"


class CrossOriginError(UserError):
    """A comparison across measured / emulated / simulated data that was not asked for."""


@dataclass(frozen=True)
class PointComparison:
    """One point compared with the baseline (a row of `Comparison.table`)."""

    platform: str
    origin: Origin
    baseline_origin: Origin
    category: Category
    benchmark: str
    metric: str
    unit: str
    parameters: Mapping[str, ParamValue]
    statistic: str
    value: float
    baseline_value: float
    repetitions: int
    baseline_repetitions: int
    samples: int
    baseline_samples: int
    median: float
    mean: float
    min: float
    baseline_median: float
    baseline_mean: float
    baseline_min: float
    ratio: float
    ratio_low: float | None
    ratio_high: float | None
    higher_is_better: bool
    performance: float
    performance_low: float | None
    performance_high: float | None
    verdict: Verdict
    ci_over: str
    ci_method: str
    note: str

    @property
    def slowdown(self) -> float:
        return 1 / self.performance if self.performance else math.inf

    @property
    def overhead(self) -> float:
        return self.slowdown - 1


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


@dataclass(frozen=True)
class Comparison:
    """Every point of the compared platforms against the baseline.

    `table` has one row per point present on both a platform side and the baseline, columns:
    platform, origin, baseline_origin, category, benchmark, metric, unit, the point's parameter
    columns, statistic, value, baseline_value (the statistic on each side), repetitions,
    baseline_repetitions, samples, baseline_samples, median, mean, min and their baseline_
    counterparts, ratio, ratio_low, ratio_high, higher_is_better, performance,
    performance_low, performance_high, verdict, ci_over, ci_method, note (NaN bounds where
    there is no interval). `unmatched[platform]` counts the platform's
    points without a baseline counterpart, `baseline_only[platform]` the baseline's points the
    platform lacks.
    """

    baseline: str
    baseline_origin: Origin
    platforms: tuple[str, ...]
    policy: StatisticPolicy
    method: str
    resamples: int | None
    seed: int
    table: pd.DataFrame
    parameters: tuple[str, ...]
    unmatched: Mapping[str, int]
    baseline_only: Mapping[str, int]
    summaries: tuple[CategorySummary, ...]
    placement_mode: PlacementMode = PlacementMode.DEFAULT
    # One row per point without counterpart, with the reason (matching.UNMATCHED_COLUMNS).
    unmatched_points: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(UNMATCHED_COLUMNS))
    )

    @property
    def confidence(self) -> float:
        return self.policy.confidence

    def points(self) -> Iterator[PointComparison]:
        """The rows of `table` as values (for small tables: this is a Python loop)."""
        for record in self.table.to_dict("records"):
            yield _point_from_record({str(k): v for k, v in record.items()}, self.parameters)

    def summary(self, platform: str, category: Category | str) -> CategorySummary | None:
        for s in self.summaries:
            if s.platform == platform and s.category == category:
                return s
        return None


def compare(
    frame: pd.DataFrame,
    baseline: str,
    *,
    platforms: Sequence[str] | None = None,
    baseline_origin: Origin | str | None = None,
    allow_mixed_origins: bool = False,
    policy: StatisticPolicy | None = None,
    method: CiMethod = "auto",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    placement: PlacementMode | str = PlacementMode.DEFAULT,
    platform_configs: Mapping[str, PlatformConfig] | None = None,
) -> Comparison:
    """Compare `platforms` (default: every other platform of the frame) with `baseline`,
    under the statistics `policy` (default: median, verdicts from 3 repetitions), pairing
    their points by workload as `placement` says (hpceval.analysis.matching; the default
    placements come from `platform_configs`, the platform files of the runs)."""
    check_frame(frame)
    policy = policy or StatisticPolicy()
    mode = placement if isinstance(placement, PlacementMode) else parse_mode(placement)
    if resamples < 100:
        raise ValueError(f"resamples {resamples} is too few for a percentile interval")
    names = sorted(str(p) for p in frame["platform"].unique())
    if baseline not in names:
        raise UserError(
            f"no measurements of baseline platform {baseline!r} "
            f"(platforms: {', '.join(names) or 'none'})"
        )
    chosen = [p for p in names if p != baseline] if platforms is None else list(platforms)
    for p in chosen:
        if p not in names:
            raise UserError(f"no measurements of platform {p!r} (platforms: {', '.join(names)})")
    # The sides (platform, origin) of the frame: a handful of rows, decided on in Python.
    side_code, side_first = group_codes(frame, ["platform", "origin"])
    side_names = frame.iloc[side_first][["platform", "origin"]].astype(object).to_numpy()
    side_platform = [str(p) for p in side_names[:, 0]]
    side_origin = [str(o) for o in side_names[:, 1]]
    base_origins = sorted(
        o for p, o in zip(side_platform, side_origin, strict=True) if p == baseline
    )
    if baseline_origin is None:
        if len(base_origins) > 1:
            raise CrossOriginError(
                f"baseline {baseline!r} has {' and '.join(base_origins)} measurements: "
                f"choose one with --baseline-origin {'|'.join(base_origins)}"
            )
        b_origin = Origin(base_origins[0])
    else:
        b_origin = Origin(baseline_origin)
        if b_origin.value not in base_origins:
            raise UserError(
                f"--baseline-origin {b_origin.value}: baseline {baseline!r} has no "
                f"{b_origin.value} measurements (it has {', '.join(base_origins)})"
            )
    base_side = next(
        i
        for i, (p, o) in enumerate(zip(side_platform, side_origin, strict=True))
        if p == baseline and o == b_origin.value
    )
    # The baseline's own other origins are compared with it only when it is named in `platforms`.
    compared = [i for i, p in enumerate(side_platform) if p in chosen and i != base_side]
    foreign = [i for i in compared if side_origin[i] != b_origin.value]
    if foreign and not allow_mixed_origins:
        listed = ", ".join(f"{side_platform[i]} ({side_origin[i]})" for i in foreign)
        raise CrossOriginError(
            f"the baseline {baseline!r} is {b_origin.value}, but {listed} is not: "
            "name the platforms of one origin, or put them side by side deliberately "
            "with --allow-mixed-origins"
        )
    wanted = np.zeros(len(side_first), dtype=bool)
    wanted[[base_side, *compared]] = True
    mask = wanted[side_code]

    sub = frame.loc[mask].reset_index(drop=True)
    side_code = side_code[mask]
    pcols = point_columns(sub)
    params = tuple(c for c in pcols if c not in ("benchmark", "metric", "unit"))
    point_code, _ = group_codes(sub, pcols)
    n_points = int(point_code.max()) + 1 if len(sub) else 0
    combined = side_code * max(n_points, 1) + point_code
    _, first, rows = np.unique(combined, return_index=True, return_inverse=True)
    rows = rows.astype(np.int64).reshape(len(sub))
    pooled = summarize_groups(sub, rows, first.astype(np.int64), ["platform", "origin", *pcols],
                              policy)  # fmt: skip
    g_side = side_code[first]

    side_labels = [
        side_platform[i] + (f" ({side_origin[i]})" if side_origin[i] != b_origin.value else "")
        for i in range(len(side_first))
    ]
    matched = match_groups(
        pooled.keys,
        pooled.value,
        pooled.samples,
        g_side,
        base_side,
        compared,
        side_labels,
        side_platform,
        mode,
        platform_configs or {},
    )
    ga, gb = matched.platform_groups, matched.baseline_groups
    unpaired = matched.unmatched

    def count_listed(s: int, side: str) -> int:
        return int(((unpaired["platform"] == side_labels[s]) & (unpaired["side"] == side)).sum())

    unmatched = {side_labels[s]: count_listed(s, "platform") for s in compared}
    baseline_only = {side_labels[s]: count_listed(s, "baseline") for s in compared}

    table, used = ratio_columns(pooled, ga, gb, policy, method, resamples, seed)
    keys = pooled.keys.iloc[ga].reset_index(drop=True)
    base_keys = pooled.keys.iloc[gb].reset_index(drop=True)
    columns: dict[str, Any] = {
        "platform": _categorical(keys["platform"]),
        "origin": _categorical(keys["origin"]),
        "baseline_origin": pd.Categorical.from_codes(
            np.zeros(len(keys), dtype=np.int64), pd.Index([b_origin.value])
        ),
        "category": pd.Categorical.from_codes(
            categorize(keys), pd.Index([c.value for c in Category])
        ),
    }
    taken = set(columns) | set(table)
    for column in pcols:
        # A parameter named like a result column (e.g. "ratio") keeps a prefixed name.
        columns[f"parameter.{column}" if column in taken else column] = keys[column]
    params = tuple(f"parameter.{c}" if c in taken else c for c in params)
    columns.update(table)
    columns["placement"] = _labels(keys)
    columns["baseline_placement"] = _labels(base_keys)
    out = pd.DataFrame(columns)
    summaries = summarize(out, baseline=baseline)
    return Comparison(
        baseline=baseline,
        baseline_origin=b_origin,
        platforms=tuple(chosen),
        policy=policy,
        method=used,
        resamples=resamples if used == "bootstrap" else None,
        seed=seed,
        table=out,
        parameters=params,
        unmatched=unmatched,
        baseline_only=baseline_only,
        summaries=summaries,
        placement_mode=mode,
        unmatched_points=unpaired,
    )


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


def _labels(keys: pd.DataFrame) -> pd.Categorical[Any]:
    """The placement label of each row (hpceval.labels), computed once per distinct one."""
    facets = [c for c in ("ranks", "threads_per_rank", *PLACEMENT_FACETS) if c in keys.columns]
    if not facets or keys.empty:
        return pd.Categorical([""] * len(keys))
    codes, first = group_codes(keys, facets)
    names = [placement_label(_record(keys, int(i), facets)) for i in first]
    return pd.Categorical(np.asarray(names, dtype=object)[codes])


def _record(keys: pd.DataFrame, row: int, columns: Sequence[str]) -> dict[str, Any]:
    return {c: keys[c].iloc[row] for c in columns}


def _categorical(series: pd.Series[Any]) -> pd.Categorical:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return pd.Categorical(series).remove_unused_categories()
    return pd.Categorical(series.astype(object))


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


def _point_from_record(record: Mapping[str, Any], params: Sequence[str]) -> PointComparison:
    def bound(v: Any) -> float | None:
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    parameters: dict[str, ParamValue] = {}
    for name in params:
        v = record.get(name)
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            continue
        parameters[name.removeprefix("parameter.")] = v.item() if isinstance(v, np.generic) else v
    return PointComparison(
        platform=str(record["platform"]),
        origin=Origin(record["origin"]),
        baseline_origin=Origin(record["baseline_origin"]),
        category=Category(record["category"]),
        benchmark=str(record["benchmark"]),
        metric=str(record["metric"]),
        unit=str(record["unit"]),
        parameters=parameters,
        statistic=str(record["statistic"]),
        value=float(record["value"]),
        baseline_value=float(record["baseline_value"]),
        repetitions=int(record["repetitions"]),
        baseline_repetitions=int(record["baseline_repetitions"]),
        samples=int(record["samples"]),
        baseline_samples=int(record["baseline_samples"]),
        median=float(record["median"]),
        mean=float(record["mean"]),
        min=float(record["min"]),
        baseline_median=float(record["baseline_median"]),
        baseline_mean=float(record["baseline_mean"]),
        baseline_min=float(record["baseline_min"]),
        ratio=float(record["ratio"]),
        ratio_low=bound(record["ratio_low"]),
        ratio_high=bound(record["ratio_high"]),
        higher_is_better=bool(record["higher_is_better"]),
        performance=float(record["performance"]),
        performance_low=bound(record["performance_low"]),
        performance_high=bound(record["performance_high"]),
        verdict=Verdict(record["verdict"]),
        ci_over=str(record["ci_over"]),
        ci_method=str(record["ci_method"]),
        note=str(record["note"]),
    )
