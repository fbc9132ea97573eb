"""Ratios of the policy's statistic (hpceval.analysis.policy) with their confidence intervals:
bootstrap over repetitions (or a single repetition's samples), or a closed form for very many
points, and the verdicts (see hpceval.analysis.compare)."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from hpceval.analysis.frame import FloatArray, IntArray
from hpceval.analysis.policy import (
    StatisticPolicy,
    Summary,
    bootstrap_replicates,
    percentile_bounds,
)
from hpceval.units import HIGHER_IS_BETTER

CiMethod = Literal["auto", "bootstrap", "delta"]

DEFAULT_RESAMPLES: Final = 2000
# Largest bootstrap work (resamples x resampled units, see bootstrap_work) that method
# "auto" takes on (about two seconds on a 2-core machine); beyond it, the closed form.
BOOTSTRAP_BUDGET: Final = 40_000_000
# Welch degrees of freedom beyond which Student's t is taken at this value.
_DF_CAP: Final = 100_000
# Pairs whose replicates are held in memory at once (pairs x resamples, per side).
_PAIR_ELEMENTS: Final = 2_000_000
# Normal quantile used by the order-statistic standard error of a median.
_Z95: Final = 1.959963984540054


class Verdict(StrEnum):
    FASTER = "faster"
    SLOWER = "slower"
    NO_DIFFERENCE = "no significant difference"
    TOO_FEW = "too few repetitions"
    UNDETERMINED = "undetermined"


def ratio_columns(
    summary: Summary,
    ga: IntArray,
    gb: IntArray,
    policy: StatisticPolicy,
    method: CiMethod,
    resamples: int,
    seed: int,
) -> tuple[dict[str, Any], str]:
    """The numeric columns of the comparison table (group ga against group gb, the policy's
    statistic on both sides), and the CI method used."""
    n_a, n_b = summary.unit_count[ga], summary.unit_count[gb]
    r_a, r_b = summary.repetitions[ga], summary.repetitions[gb]
    v_a, v_b = summary.value[ga], summary.value[gb]
    positive = (v_a > 0) & (v_b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(positive, v_a / v_b, np.nan)
    has_ci = positive & (n_a >= 2) & (n_b >= 2)
    used: Literal["bootstrap", "delta"] = "delta" if method == "delta" else "bootstrap"
    if method == "auto":
        work = bootstrap_work(n_a[has_ci], n_b[has_ci], resamples)
        used = "bootstrap" if work <= BOOTSTRAP_BUDGET else "delta"
    if used == "delta" and policy.statistic == "min":
        used = "bootstrap"  # no closed form for the minimum: resampled, whatever it costs
    low = np.full(len(ga), np.nan)
    high = np.full(len(ga), np.nan)
    idx = np.flatnonzero(has_ci)
    if len(idx):
        if used == "bootstrap":
            lo, hi = bootstrap_ratio_ci(summary, ga[idx], gb[idx], policy, resamples, seed)
        else:
            lo, hi = closed_form_ratio_ci(summary, ga[idx], gb[idx], policy)
        low[idx], high[idx] = lo, hi
    unit_codes, unit_names = pd.factorize(summary.keys["unit"].astype(object).to_numpy()[ga])
    hib = np.asarray([HIGHER_IS_BETTER[str(u)] for u in unit_names], dtype=bool)[unit_codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        perf = np.where(hib, ratio, 1 / ratio)
        perf_low = np.where(hib, low, 1 / high)
        perf_high = np.where(hib, high, 1 / low)
    verdicts = list(Verdict)
    enough = (r_a >= policy.min_repetitions) & (r_b >= policy.min_repetitions)
    verdict = np.full(len(ga), verdicts.index(Verdict.UNDETERMINED), dtype=np.int64)
    verdict[has_ci] = verdicts.index(Verdict.NO_DIFFERENCE)
    verdict[has_ci & (perf_low > 1)] = verdicts.index(Verdict.FASTER)
    verdict[has_ci & (perf_high < 1)] = verdicts.index(Verdict.SLOWER)
    verdict[positive & ~enough] = verdicts.index(Verdict.TOO_FEW)
    notes = np.full(len(ga), "", dtype=object)
    single_a, single_b = n_a < 2, n_b < 2
    notes[single_a & ~single_b] = "single sample on the platform: no confidence interval"
    notes[single_b & ~single_a] = "single sample on the baseline: no confidence interval"
    notes[single_a & single_b] = "single samples: no confidence interval"
    fewest = np.minimum(r_a, r_b)
    for i in np.flatnonzero(positive & ~enough).tolist():
        text = policy.too_few(int(fewest[i]))
        notes[i] = f"{text}; {notes[i]}" if notes[i] else text
    notes[~positive] = "non-positive value: no ratio"
    note_codes, note_names = pd.factorize(notes)
    columns: dict[str, Any] = {
        "statistic": pd.Categorical.from_codes(
            np.zeros(len(ga), dtype=np.int64), pd.Index([policy.statistic])
        ),
        "value": v_a,
        "baseline_value": v_b,
        "repetitions": r_a,
        "baseline_repetitions": r_b,
        "samples": summary.samples[ga],
        "baseline_samples": summary.samples[gb],
        "median": summary.median[ga],
        "mean": summary.mean[ga],
        "min": summary.minimum[ga],
        "baseline_median": summary.median[gb],
        "baseline_mean": summary.mean[gb],
        "baseline_min": summary.minimum[gb],
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "higher_is_better": hib,
        "performance": perf,
        "performance_low": perf_low,
        "performance_high": perf_high,
        "verdict": pd.Categorical.from_codes(verdict, pd.Index([v.value for v in verdicts])),
        "ci_over": pd.Categorical.from_codes(
            np.where(
                has_ci,
                np.where(summary.over_repetitions[ga] & summary.over_repetitions[gb], 1, 2),
                0,
            ).astype(np.int64),
            pd.Index(["", "repetitions", "samples (within-run only)"]),
        ),
        "ci_method": pd.Categorical.from_codes(has_ci.astype(np.int64), pd.Index(["", used])),
        "note": pd.Categorical.from_codes(
            np.asarray(note_codes, dtype=np.int64), pd.Index([str(n) for n in note_names])
        ),
    }
    return columns, used


def bootstrap_work(n_a: IntArray, n_b: IntArray, resamples: int) -> int:
    """The bootstrap's work: resamples x the units resampled on both sides."""
    return resamples * (int(n_a.sum()) + int(n_b.sum()) + len(n_a))


def bootstrap_ratio_ci(
    summary: Summary,
    ga: IntArray,
    gb: IntArray,
    policy: StatisticPolicy,
    resamples: int,
    seed: int,
) -> tuple[FloatArray, FloatArray]:
    """Percentile bootstrap interval of statistic(group ga) / statistic(group gb) for each
    pair, each side resampled on its own (independent), over its units (repetitions, or a
    single repetition's samples)."""
    low = np.empty(len(ga))
    high = np.empty(len(ga))
    step = max(1, _PAIR_ELEMENTS // resamples)
    for start in range(0, len(ga), step):
        part = slice(start, start + step)
        rep_a = bootstrap_replicates(summary, ga[part], policy, resamples, seed, 0)
        rep_b = bootstrap_replicates(summary, gb[part], policy, resamples, seed, 1)
        low[part], high[part] = percentile_bounds(rep_a / rep_b, policy.confidence)
    return low, high


def closed_form_ratio_ci(
    summary: Summary, ga: IntArray, gb: IntArray, policy: StatisticPolicy
) -> tuple[FloatArray, FloatArray]:
    """The interval without resampling, for very many points: the delta method on the log
    ratio, with the standard error of a mean (Welch) or of a median (from the
    distribution-free order-statistic interval of each side)."""
    if policy.statistic == "mean":
        m_a, var_a, n_a = _unit_moments(summary, ga)
        m_b, var_b, n_b = _unit_moments(summary, gb)
        low_t, high_t = delta_ratio_ci(m_a, var_a, n_a, m_b, var_b, n_b, policy.confidence)
    else:
        se_a = _median_log_se(summary, ga)
        se_b = _median_log_se(summary, gb)
        z = float(stdtrit(_DF_CAP, (1 + policy.confidence) / 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_t = _time_value(summary, ga) / _time_value(summary, gb)
        spread = np.exp(z * np.sqrt(se_a**2 + se_b**2))
        low_t, high_t = ratio_t / spread, ratio_t * spread
    # The units are times: a rate's ratio is the inverse of its time ratio.
    rate = summary.rate[ga]
    with np.errstate(divide="ignore"):
        return np.where(rate, 1 / high_t, low_t), np.where(rate, 1 / low_t, high_t)


def _time_value(summary: Summary, groups: IntArray) -> FloatArray:
    value = summary.value[groups]
    with np.errstate(divide="ignore"):
        out: FloatArray = np.where(summary.rate[groups], 1 / value, value)
    return out


def _unit_moments(summary: Summary, groups: IntArray) -> tuple[FloatArray, FloatArray, IntArray]:
    """Mean, variance (ddof 1) and count of each group's units."""
    n = summary.unit_count[groups]
    idx = summary.offsets[groups]
    total = int(n.sum())
    segment = np.repeat(np.arange(len(groups)), n)
    starts = np.cumsum(n) - n
    gather = np.repeat(idx - starts, n) + np.arange(total)
    x = summary.units[gather]
    mean = np.bincount(segment, weights=x, minlength=len(groups)) / n
    squares = np.bincount(segment, weights=(x - mean[segment]) ** 2, minlength=len(groups))
    return mean, squares / np.maximum(n - 1, 1), n


def _median_log_se(summary: Summary, groups: IntArray) -> FloatArray:
    """Standard error of log(median) of each group's units, from the order statistics that
    bound a distribution-free 95 % interval of the median: (log x(u) - log x(l)) / (2 z).
    Groups of one unit count at a time, as the rows of one partitioned matrix."""
    n = summary.unit_count[groups]
    se = np.empty(len(groups))
    for k in np.unique(n).tolist():
        members = np.flatnonzero(n == k)
        half = _Z95 * math.sqrt(k) / 2
        lower = min(max(math.floor(k / 2 - half), 0), k - 1)
        upper = min(max(math.ceil(k / 2 + half), 0), k - 1)
        step = max(1, _PAIR_ELEMENTS // k)
        for start in range(0, len(members), step):
            part = members[start : start + step]
            x = summary.units[summary.offsets[groups[part]][:, None] + np.arange(k)]
            x.partition((lower, upper), axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                se[part] = (np.log(x[:, upper]) - np.log(x[:, lower])) / (2 * _Z95)
    out: FloatArray = np.nan_to_num(se, nan=np.inf)
    return out


def delta_ratio_ci(
    mean_a: FloatArray,
    var_a: FloatArray,
    n_a: IntArray,
    mean_b: FloatArray,
    var_b: FloatArray,
    n_b: IntArray,
    confidence: float,
) -> tuple[FloatArray, FloatArray]:
    """Interval of mean_a / mean_b from the delta method on the log ratio (Welch's t)."""
    ratio = mean_a / mean_b
    va = var_a / (n_a * mean_a**2)
    vb = var_b / (n_b * mean_b**2)
    se = np.sqrt(va + vb)
    denominator = va**2 / (n_a - 1) + vb**2 / (n_b - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denominator > 0, (va + vb) ** 2 / denominator, np.inf)
    # Degrees of freedom rounded down (a slightly wider interval), capped where t is z to
    # 4 digits, so that Student's quantile is computed once per distinct value.
    whole = np.clip(np.floor(df), 1, _DF_CAP).astype(np.int64)
    distinct, position = np.unique(whole, return_inverse=True)
    t = np.asarray(stdtrit(distinct.astype(np.float64), (1 + confidence) / 2))[position]
    spread = np.exp(t.reshape(se.shape) * se)
    return ratio / spread, ratio * spread
