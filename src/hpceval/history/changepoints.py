"""Change points of a run series: where the level of a metric moved, and how much.

Binary segmentation with a permutation test, the scheme of E-Divisive means (Matteson &
James 2014) that MongoDB's and Apache Otava's performance CI use, with the mean-shift cost:
in each segment, ruptures' binary segmentation (model "l2") places the best single split;
the split is kept when its weighted mean difference

    T = max_k sqrt(k (n - k) / n) |mean(x[:k]) - mean(x[k:])|

exceeds that of most random orders of the same values (the permutation p-value below
`alpha`), and both sides are searched again. Under no change the runs are exchangeable, so a
stationary series of any noise distribution is flagged with probability about `alpha`
(the first test is the whole series'), whatever its length.

Values are compared on a log scale when all positive: a change is relative (+8 % latency),
the same whether the metric is in µs or s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import ruptures
from scipy import stats

FloatArray = npt.NDArray[np.float64]

DEFAULT_ALPHA = 0.01
DEFAULT_PERMUTATIONS = 499
DEFAULT_MIN_SIZE = 3  # runs on each side of a change
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class ChangePoint:
    """The level moved between run `index - 1` and run `index` (positions in the series)."""

    index: int
    p_value: float
    ratio: float  # mean after / mean before (1.08: 8 % higher)
    ratio_low: float
    ratio_high: float
    before: float  # mean of the segment before
    after: float  # mean of the segment after


def _statistic(values: FloatArray, min_size: int) -> FloatArray:
    """T at every allowed split of each row of `values` (rows: orders of one segment)."""
    n = values.shape[-1]
    k = np.arange(min_size, n - min_size + 1)
    csum = np.cumsum(values, axis=-1)
    total = csum[..., -1:]
    left = csum[..., k - 1] / k
    right = (total - csum[..., k - 1]) / (n - k)
    return np.asarray(np.sqrt(k * (n - k) / n) * np.abs(left - right), dtype=np.float64)


def _best_split(values: FloatArray, min_size: int) -> int:
    """ruptures' single best split of the segment under the mean-shift (l2) cost."""
    algo = ruptures.Binseg(model="l2", min_size=min_size, jump=1).fit(values)
    return int(algo.predict(n_bkps=1)[0])


def _p_value(
    values: FloatArray, split: int, min_size: int, permutations: int, rng: np.random.Generator
) -> float:
    observed = float(_statistic(values, min_size)[split - min_size])
    orders = rng.permuted(np.broadcast_to(values, (permutations, values.size)), axis=1)
    exceeding = int(np.count_nonzero(_statistic(orders, min_size).max(axis=1) >= observed))
    return (1 + exceeding) / (1 + permutations)


def ratio_interval(
    before: FloatArray, after: FloatArray, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float]:
    """after/before as a ratio of means with a Welch t interval on the log scale (positive
    values), or a difference interval mapped to a ratio of the before mean (otherwise)."""
    positive = bool(np.all(before > 0) and np.all(after > 0))
    a, b = (np.log(before), np.log(after)) if positive else (before, after)
    result = stats.ttest_ind(b, a, equal_var=False)
    ci = result.confidence_interval(confidence)
    diff = float(np.mean(b) - np.mean(a))
    low, high = float(ci.low), float(ci.high)
    if not np.isfinite(low):  # both segments constant: no spread to put an interval on
        low = high = diff
    if positive:
        return float(np.exp(diff)), float(np.exp(low)), float(np.exp(high))
    base = float(np.mean(before)) or 1.0
    return 1 + diff / base, 1 + low / base, 1 + high / base


def detect(
    series: Sequence[float] | FloatArray,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_size: int = DEFAULT_MIN_SIZE,
    permutations: int = DEFAULT_PERMUTATIONS,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> list[ChangePoint]:
    """The change points of `series` (one value per run, oldest first), in order."""
    raw = np.asarray(series, dtype=np.float64)
    if not np.all(np.isfinite(raw)):
        raise ValueError("the series holds a non-finite value")
    values = np.log(raw) if raw.size and np.all(raw > 0) else raw
    rng = np.random.default_rng(seed)
    found: list[tuple[int, float]] = []
    pending = [(0, values.size)]
    while pending:
        start, end = pending.pop()
        segment = values[start:end]
        if segment.size < 2 * min_size or np.ptp(segment) == 0:
            continue
        split = _best_split(segment, min_size)
        p = _p_value(segment, split, min_size, permutations, rng)
        if p <= alpha:
            found.append((start + split, p))
            pending += [(start, start + split), (start + split, end)]
    splits = sorted(found)
    bounds = [0, *(s for s, _ in splits), raw.size]
    changes = []
    for i, (index, p) in enumerate(splits):
        before, after = raw[bounds[i] : index], raw[index : bounds[i + 2]]
        ratio, low, high = ratio_interval(before, after, confidence)
        changes.append(
            ChangePoint(index, p, ratio, low, high, float(np.mean(before)), float(np.mean(after)))
        )
    return changes
