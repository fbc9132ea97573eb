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
inter-node messaging, collectives, compute kernels, storage, applications): both are in
hpceval.analysis.categories.

Measured, emulated and simulated data are never mixed silently: a side whose origin is not
the baseline's is refused (``CrossOriginError``, naming the CLI flags ``--allow-mixed-origins``
and ``--baseline-origin``) unless ``allow_mixed_origins=True``, and then every row and summary
carries both origins.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hpceval.analysis.categories import Category, CategorySummary, categorize, summarize
from hpceval.analysis.frame import check_frame, group_codes, point_columns
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
from hpceval.errors import UserError
from hpceval.labels import PLACEMENT_FACETS, placement_label
from hpceval.model import Origin, ParamValue

if TYPE_CHECKING:  # the CLI starts without pydantic (tests/test_cli.py)
    from hpceval.config import PlatformConfig


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
    mix_implementations: bool = False,
) -> Comparison:
    """Compare `platforms` (default: every other platform of the frame) with `baseline`,
    under the statistics `policy` (default: median, verdicts from 3 repetitions), pairing
    their points by workload as `placement` says (hpceval.analysis.matching; the default
    placements come from `platform_configs`, the platform files of the runs). A point
    pairs with the same implementation's (C with C, Java with Java, on a platform that ran
    both); `mix_implementations` pairs across them, one implementation per side and point."""
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
    pcols = point_columns(sub, implementation=False if mix_implementations else None)
    if mix_implementations:
        _check_one_implementation(sub, pcols)
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


def _check_one_implementation(frame: pd.DataFrame, pcols: Sequence[str]) -> None:
    """Mixing pairs one side's implementation with the other's: a platform that measured
    a point with two implementations (C and Java in one suite run) would pool them."""
    by = ["platform", "origin", *pcols]
    counts = frame.groupby(by, observed=True, dropna=False)["implementation"].nunique()
    if (counts > 1).any():
        first: tuple[Any, ...] = counts[counts > 1].index[0]
        platform, benchmark = str(first[0]), str(first[2])
        found = frame.loc[
            (frame["platform"] == platform) & (frame["benchmark"] == benchmark), "implementation"
        ]
        raise UserError(
            f"platform {platform!r} measured {benchmark} with "
            f"{' and '.join(sorted({str(i) for i in found.unique()}))}: mixing implementations "
            "pairs one per platform; compare without mixing (each with its own), or see the "
            "report's Java overhead section for Java vs C on one platform"
        )


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
