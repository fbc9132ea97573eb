"""Statistics derived from raw samples.

Raw samples are what the store keeps; everything here is recomputable from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Final

import numpy as np

# scipy.special's Student-t quantile: the same function scipy.stats.t.ppf calls, without
# importing scipy.stats (~1 s), which every hpceval command would otherwise pay at start-up.
from scipy.special import stdtrit

from hpceval.errors import ImpossibleValue
from hpceval.model import Measurement, Statistics
from hpceval.units import HIGHER_IS_BETTER

# The statistics a value can be summarized by (docs/statistics.md): median (the default,
# robust to descheduling), mean (the IMB/OSU convention), min (the fastest sample).
STATISTIC_NAMES: Final[tuple[str, ...]] = ("median", "mean", "min")
# The statistic terminal tables show (`hpceval show --statistic`); analyses take theirs from
# hpceval.analysis.policy.
DISPLAY_STATISTIC: ContextVar[str] = ContextVar("display_statistic", default="median")

# pyperf's rule of thumb: a spread this large means the machine was not quiet.
UNSTABLE_STDEV_FRACTION = 0.10
# Modified Z-score above which a sample is an outlier (Iglewicz & Hoaglin; hyperfine uses it).
OUTLIER_MODIFIED_Z = 3.5


def describe(
    samples: Sequence[float],
    *,
    confidence: float = 0.95,
    extra: Mapping[str, float] | None = None,
) -> Statistics:
    """Count, min, max, median, mean, stdev and the Student-t confidence interval of the mean."""
    if not samples:
        raise ValueError("no samples to describe")
    values = np.asarray(samples, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ImpossibleValue("samples contain non-finite values")
    n = len(values)
    with np.errstate(over="ignore"):
        mean = float(values.mean())
        stdev = float(values.std(ddof=1)) if n > 1 else 0.0
    if not (math.isfinite(mean) and math.isfinite(stdev)):
        # Samples near the largest double (1e200 µs...): no time or rate is that large.
        raise ImpossibleValue(f"samples too large to describe (mean {mean}, stdev {stdev})")
    ci_low: float | None = None
    ci_high: float | None = None
    if n > 1:
        half = float(stdtrit(n - 1, (1 + confidence) / 2)) * stdev / math.sqrt(n)
        ci_low, ci_high = mean - half, mean + half
    return Statistics(
        count=n,
        minimum=float(values.min()),
        maximum=float(values.max()),
        median=float(np.median(values)),
        mean=mean,
        stdev=stdev,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        extra=dict(extra or {}),
    )


def rate_statistics(
    amount: float, times: Sequence[float], *, confidence: float = 0.95
) -> Statistics:
    """The statistics of a rate (bytes per second, operations per second) derived from the
    statistics of its times: median rate = amount / median(time), mean rate = amount /
    mean(time), the confidence interval mapped through amount / t. Never the mean of the
    per-sample rates, which over-weights the fast samples (docs/methodology.md)."""
    st = describe(times, confidence=confidence)
    if st.minimum <= 0:
        raise ValueError("a rate needs positive times")
    rates = [amount / t for t in times]
    mean = amount / st.mean
    bounded = st.ci_low is not None and st.ci_low > 0
    return Statistics(
        count=st.count,
        minimum=amount / st.maximum,
        maximum=amount / st.minimum,
        median=amount / st.median,
        mean=mean,
        stdev=float(np.std(rates, ddof=1)) if st.count > 1 else 0.0,
        # A time interval reaching 0 maps to an unbounded rate: no interval then.
        ci_low=amount / st.ci_high if bounded and st.ci_high else None,
        ci_high=amount / st.ci_low if bounded and st.ci_low else None,
        confidence=confidence,
    )


def outlier_count(samples: Sequence[float]) -> int:
    """Samples whose modified Z-score (median absolute deviation based) exceeds 3.5."""
    values = np.asarray(samples, dtype=float)
    if len(values) < 3:
        return 0
    median = np.median(values)
    mad = np.median(np.abs(values - median))
    if mad == 0:
        return 0
    modified_z = 0.6745 * (values - median) / mad
    return int(np.sum(np.abs(modified_z) > OUTLIER_MODIFIED_Z))


def quality_warnings(st: Statistics, *, target_rci: float | None = None) -> list[str]:
    """Warnings about a point's reliability, each naming a remedy (pyperf/hyperfine style)."""
    warnings: list[str] = []
    if st.count < 2:
        warnings.append("single sample, no confidence interval: raise the time budget")
    elif target_rci is not None and st.relative_ci > target_rci:
        warnings.append(
            f"CI ±{st.relative_ci:.1%} misses the {target_rci:.0%} target: "
            "raise the budget or quiet the machine"
        )
    if st.mean and st.stdev / abs(st.mean) >= UNSTABLE_STDEV_FRACTION:
        warnings.append(
            f"stdev is {st.stdev / abs(st.mean):.0%} of the mean: the machine was not quiet"
        )
    return warnings


def summary_value(values: Sequence[float], unit: str, name: str | None = None) -> float:
    """The statistic `name` (default: the display statistic) of repeated values of one unit.
    A rate (a unit where higher is better) is summarized through its times: the amount over
    the statistic of the reciprocals, so min is the largest rate (that of the least time)."""
    name = name or DISPLAY_STATISTIC.get()
    x = np.asarray(values, dtype=float)
    rate = HIGHER_IS_BETTER.get(unit, False)
    if rate:
        x = 1.0 / x
    if name == "mean":
        out = float(np.mean(x))
    elif name == "min":
        out = float(np.min(x))
    else:
        out = float(np.median(x))
    return 1.0 / out if rate else out


def measurement_value(m: Measurement, name: str | None = None) -> float:
    """One measurement's value by the statistic `name` (default: the display statistic),
    from its samples (its value when it has none)."""
    return summary_value(m.samples or (m.value,), m.unit, name)
