"""The statistics policy: one named statistic for every point value, interval and ratio.

docs/statistics.md explains the why; in short:

- The *statistic* is ``median`` (default: robust to descheduling and to the long right tail
  of timings on a shared machine), ``mean`` (the IMB/OSU convention, mean over iterations,
  for comparison with published tables) or ``min`` (the fastest sample: what the hardware
  can do when nothing disturbs it).
- It is applied to *times*. A rate (bandwidth, Mop/s, IOPS: a unit where higher is better)
  is an amount over a time, so its statistic is taken on the reciprocals of its samples
  and turned back: median rate = n / median(t), mean rate = n / mean(t) (the harmonic mean
  of the per-sample rates), min = n / min(t), the largest rate. Never the mean of per-sample
  rates, which over-weights the fast samples and disagrees with the latency it comes from.
- It is hierarchical. The rows of one platform, origin and point are its *repetitions*
  (one Measurement each, of one run or of several runs). Each repetition is summarized by
  the statistic of its samples; the point's value is the statistic of those per-repetition
  values, and its interval is a bootstrap over repetitions: run-to-run variance, not only
  the within-run spread of samples. A point with a single repetition has only its samples
  to resample: its interval is within-run only, and says so.
- A verdict (faster / slower / no significant difference) needs at least
  ``min_repetitions`` independent repetitions on both sides; below that it is
  "too few repetitions (n=2, need ≥3)", whatever the interval says.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeVar, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpceval.analysis.frame import FloatArray, IntArray, build_frame, flatten_samples
from hpceval.errors import UserError
from hpceval.model import Measurement
from hpceval.units import HIGHER_IS_BETTER

BoolArray = npt.NDArray[np.bool_]
Key = TypeVar("Key", bound=Hashable)
StatisticName = Literal["median", "mean", "min"]
STATISTICS: Final[tuple[str, ...]] = get_args(StatisticName)
DEFAULT_STATISTIC: Final = "median"
DEFAULT_MIN_REPETITIONS: Final = 3
# Where a user sets their own defaults (the CLI options read the same variables).
STATISTIC_VARIABLE: Final = "HPCEVAL_STATISTIC"
MIN_REPETITIONS_VARIABLE: Final = "HPCEVAL_MIN_REPETITIONS"

DESCRIPTIONS: Final[dict[str, str]] = {
    "median": "median of samples per repetition, median over repetitions",
    "mean": "mean of samples per repetition (the IMB/OSU convention), mean over repetitions",
    "min": "fastest sample (minimum time; for a rate, the rate of the minimum time)",
}

# Largest gathered block (groups x resamples x units) held at once by the bootstrap.
_BLOCK_ELEMENTS: Final = 4_000_000


@dataclass(frozen=True)
class StatisticPolicy:
    """Which statistic, how many repetitions a verdict needs, at which confidence."""

    statistic: StatisticName = DEFAULT_STATISTIC
    min_repetitions: int = DEFAULT_MIN_REPETITIONS
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise UserError(
                f"--statistic {self.statistic!r}: expected one of {', '.join(STATISTICS)}"
            )
        if self.min_repetitions < 1:
            raise UserError(f"--min-repetitions {self.min_repetitions}: must be at least 1")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence {self.confidence} is not between 0 and 1")

    def describe(self) -> str:
        """One line for a table title: the statistic, and what a verdict needs."""
        return (
            f"statistic: {self.statistic} ({DESCRIPTIONS[self.statistic]}); "
            f"{self.confidence:.0%} CI over repetitions; "
            f"verdicts need ≥{self.min_repetitions} repetitions"
        )

    def too_few(self, repetitions: int) -> str:
        return f"too few repetitions (n={repetitions}, need ≥{self.min_repetitions})"


def policy_from_environment(
    statistic: str | None = None, min_repetitions: int | None = None
) -> StatisticPolicy:
    """The policy of the options given, else of $HPCEVAL_STATISTIC and
    $HPCEVAL_MIN_REPETITIONS, else the defaults (median, 3)."""
    name = statistic or os.environ.get(STATISTIC_VARIABLE) or DEFAULT_STATISTIC
    if name not in STATISTICS:
        where = "--statistic" if statistic else f"${STATISTIC_VARIABLE}"
        raise UserError(f"{where} {name!r}: expected one of {', '.join(STATISTICS)}")
    if min_repetitions is None:
        text = os.environ.get(MIN_REPETITIONS_VARIABLE, "")
        try:
            min_repetitions = int(text) if text else DEFAULT_MIN_REPETITIONS
        except ValueError:
            raise UserError(f"${MIN_REPETITIONS_VARIABLE} {text!r}: not a whole number") from None
    return StatisticPolicy(statistic=name, min_repetitions=min_repetitions)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Summary:
    """Per group (platform, origin, point...): the policy's value and what it rests on.

    Values are in the metric's own unit. `value` is the policy's statistic; `minimum`,
    `median`, `mean` are the three statistics computed the same way (hierarchically, rates
    from times), so that every output can show them side by side. `repetitions` counts the
    rows (measurements) of the group, `samples` their raw samples. The resampling units of
    group g are `units[offsets[g] : offsets[g] + unit_count[g]]`, in the time domain (the
    reciprocal for a rate): the per-repetition values when there are two or more
    repetitions, else the samples of the single one (`over_repetitions` False).
    """

    keys: pd.DataFrame
    rate: BoolArray
    value: FloatArray
    minimum: FloatArray
    median: FloatArray
    mean: FloatArray
    repetitions: IntArray
    samples: IntArray
    over_repetitions: BoolArray
    units: FloatArray
    offsets: IntArray
    unit_count: IntArray


def summarize_groups(
    frame: pd.DataFrame,
    rows: IntArray,
    first: IntArray,
    by: list[str],
    policy: StatisticPolicy,
) -> Summary:
    """The policy applied to the groups of `frame` (`rows[i]` the group of row i, `first[g]`
    a row of group g): see the module docstring."""
    groups = len(first)
    flat, lengths = flatten_samples(frame)
    codes, names = pd.factorize(frame["unit"])
    rate_of_unit = np.asarray([HIGHER_IS_BETTER[str(u)] for u in names], dtype=bool)
    rate_row = rate_of_unit[np.asarray(codes)] if len(codes) else np.zeros(0, dtype=bool)
    times = flat
    if rate_row.any():
        rate_sample = np.repeat(rate_row, lengths)
        rates = flat[rate_sample]
        if np.any(rates <= 0):
            raise UserError("a rate with a non-positive sample: no time can be derived from it")
        times = flat.copy()
        times[rate_sample] = 1.0 / rates
    starts = np.cumsum(lengths) - lengths
    per_row = {
        "min": np.minimum.reduceat(times, starts) if len(times) else np.empty(0),
        "median": segment_medians(times, starts, lengths),
        "mean": np.add.reduceat(times, starts) / lengths if len(times) else np.empty(0),
    }
    repetitions = np.bincount(rows, minlength=groups).astype(np.int64)
    samples = np.bincount(rows, weights=lengths, minlength=groups).astype(np.int64)
    order = np.lexsort((np.arange(len(rows)), rows))  # rows of a group together
    group_start = np.cumsum(repetitions) - repetitions
    several = repetitions >= 2

    stats: dict[str, FloatArray] = {}
    for name, row_values in per_row.items():
        stats[name] = _statistic_of_segments(name, row_values[order], group_start, repetitions)
    # Units: per-repetition values of the policy's statistic, or a single repetition's
    # samples, which are already a run of `times` (no copy: offsets point into it).
    row_units = per_row[policy.statistic][order]
    single_row = order[group_start[~several]] if np.any(~several) else np.zeros(0, np.int64)
    unit_count = np.where(several, repetitions, 0)
    unit_count[~several] = lengths[single_row]
    offsets = np.empty(groups, dtype=np.int64)
    offsets[~several] = starts[single_row]
    offsets[several] = len(times) + group_start[several]
    units = np.concatenate([times, row_units])
    rate = rate_row[first] if len(first) else np.zeros(0, dtype=bool)
    natural = {name: _natural(v, rate) for name, v in stats.items()}
    return Summary(
        keys=frame.iloc[first][list(by)].reset_index(drop=True),
        rate=rate,
        value=natural[policy.statistic],
        minimum=natural["min"],
        median=natural["median"],
        mean=natural["mean"],
        repetitions=repetitions,
        samples=samples,
        over_repetitions=several,
        units=units,
        offsets=offsets,
        unit_count=unit_count.astype(np.int64),
    )


def values_of_groups(
    measurements: Sequence[Measurement], groups: Sequence[Key], policy: StatisticPolicy
) -> dict[Key, float]:
    """The policy's value of each group of measurements (`groups[i]` the group of
    `measurements[i]`), taken from their samples as `summarize_groups` does: each measurement
    (a repetition) by the statistic of its samples, then over the group's repetitions. A
    stored value is never re-averaged, so records stored with another statistic (an older
    mean) and measurements with an outlying sample or repetition read as every analysis
    reads them."""
    if len(measurements) != len(groups):
        raise ValueError(f"{len(measurements)} measurements but {len(groups)} group keys")
    codes: dict[Key, int] = {}
    rows = np.fromiter((codes.setdefault(g, len(codes)) for g in groups), np.int64, len(groups))
    if not len(rows):
        return {}
    first = np.unique(rows, return_index=True)[1].astype(np.int64)  # a row of each group
    frame = build_frame(("", None, m) for m in measurements)
    summary = summarize_groups(frame, rows, first, [], policy)
    return {g: float(summary.value[code]) for g, code in codes.items()}


def _natural(time_values: FloatArray, rate: BoolArray) -> FloatArray:
    """Back from the time domain: the reciprocal where the group is a rate."""
    with np.errstate(divide="ignore"):
        out: FloatArray = np.where(rate, 1.0 / time_values, time_values)
    return out


def segment_medians(values: FloatArray, starts: IntArray, lengths: IntArray) -> FloatArray:
    """The median of each segment values[starts[i] : starts[i] + lengths[i]] (non-empty):
    segments of one length at a time, as the rows of one matrix (a few dozen distinct
    lengths: vectorized partitions, not a sort of every value)."""
    out = np.empty(len(lengths))
    for k in np.unique(lengths).tolist():
        members = np.flatnonzero(lengths == k)
        step = max(1, _BLOCK_ELEMENTS // k)
        for start in range(0, len(members), step):
            part = members[start : start + step]
            out[part] = np.median(values[starts[part][:, None] + np.arange(k)], axis=1)
    return out


def _statistic_of_segments(
    name: str, values: FloatArray, starts: IntArray, lengths: IntArray
) -> FloatArray:
    """`name` (min, median, mean) of each non-empty segment of `values`."""
    if not len(lengths):
        return np.empty(0)
    if name == "mean":
        out: FloatArray = np.add.reduceat(values, starts) / lengths
        return out
    if name == "min":
        return np.asarray(np.minimum.reduceat(values, starts), dtype=np.float64)
    return segment_medians(values, starts, lengths)


def reduce_statistic(name: str, matrix: FloatArray) -> FloatArray:
    """The statistic along the last axis."""
    if name == "mean":
        return np.asarray(matrix.mean(axis=-1), dtype=np.float64)
    if name == "min":
        return np.asarray(matrix.min(axis=-1), dtype=np.float64)
    return np.asarray(np.median(matrix, axis=-1), dtype=np.float64)


def bootstrap_replicates(
    summary: Summary,
    groups: IntArray,
    policy: StatisticPolicy,
    resamples: int,
    seed: int,
    side: int,
) -> FloatArray:
    """Bootstrap replicates (len(groups) x resamples) of the statistic of each group, in
    the metric's own unit, resampling the group's units with replacement. The resampling
    pattern comes from a generator seeded with (seed, side, unit count): the same for every
    group with that many units, so results do not depend on the order of the groups."""
    out = np.empty((len(groups), resamples))
    counts = summary.unit_count[groups]
    for k in np.unique(counts).tolist():
        members = np.flatnonzero(counts == k)
        rng = np.random.default_rng([seed, side, k])
        picks = rng.integers(0, k, size=(resamples, k))
        step = max(1, _BLOCK_ELEMENTS // max(resamples * k, 1))
        for start in range(0, len(members), step):
            part = members[start : start + step]
            matrix = summary.units[summary.offsets[groups[part]][:, None] + np.arange(k)]
            out[part] = reduce_statistic(policy.statistic, matrix[:, picks])
    rate = summary.rate[groups][:, None]
    with np.errstate(divide="ignore"):
        natural: FloatArray = np.where(rate, 1.0 / out, out)
    return natural


def percentile_bounds(replicates: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray]:
    """The percentile interval of each row of replicates (order statistics floor((B-1)a/2)
    and ceil((B-1)(1-a/2)), a = 1 - confidence)."""
    b = replicates.shape[1]
    alpha = 1 - confidence
    k_low = math.floor((b - 1) * alpha / 2)
    k_high = math.ceil((b - 1) * (1 - alpha / 2))
    part = np.partition(replicates, (k_low, k_high), axis=1)
    return part[:, k_low], part[:, k_high]


def point_intervals(
    summary: Summary,
    policy: StatisticPolicy,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[FloatArray, FloatArray]:
    """The bootstrap interval of each group's value (NaN where a group has one unit)."""
    low = np.full(len(summary.value), np.nan)
    high = np.full(len(summary.value), np.nan)
    idx = np.flatnonzero(summary.unit_count >= 2)
    step = max(1, _BLOCK_ELEMENTS // resamples)
    for start in range(0, len(idx), step):
        part = idx[start : start + step]
        reps = bootstrap_replicates(summary, part, policy, resamples, seed, 0)
        low[part], high[part] = percentile_bounds(reps, policy.confidence)
    return low, high
