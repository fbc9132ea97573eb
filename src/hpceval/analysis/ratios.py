"""Confidence intervals of ratios of pooled means: bootstrap (resampling the raw samples) or
delta method (Welch), and what each costs (see hpceval.analysis.compare)."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from hpceval.analysis.frame import (
    FloatArray,
    IntArray,
    Pooled,
)
from hpceval.units import HIGHER_IS_BETTER

CiMethod = Literal["auto", "bootstrap", "delta"]

DEFAULT_RESAMPLES: Final = 2000
# Largest bootstrap work (see bootstrap_work) that method "auto" takes on (about 2 s on a
# 2-core machine).
BOOTSTRAP_BUDGET: Final = 20_000_000
# Relative costs in bootstrap_work, measured on the 2-core machine: a weight drawn (numpy's
# multinomial) costs about two replicates (a ratio and its share of the order statistics,
# ~70 ns); a multiply-add of the products, about 1/256 of one.
_UNITS_PER_WEIGHT_DRAWN: Final = 2
_PRODUCTS_PER_UNIT: Final = 256
# Welch degrees of freedom beyond which Student's t is taken at this value.
_DF_CAP: Final = 100_000
# Bootstrap replicates held in memory at once (rows x resamples), per side.
_CHUNK_ELEMENTS: Final = 2_000_000
# Replicate means of baseline points held at once (points x resamples).
_BASELINE_ELEMENTS: Final = 8_000_000

# The `note` of a comparison row.
NOTES: Final[tuple[str, ...]] = (
    "",
    "single sample on the platform: no confidence interval",
    "single sample on the baseline: no confidence interval",
    "single samples: no confidence interval",
    "non-positive mean: no ratio",
)


class Verdict(StrEnum):
    FASTER = "faster"
    SLOWER = "slower"
    NO_DIFFERENCE = "no significant difference"
    UNDETERMINED = "undetermined"


def ratio_columns(
    pooled: Pooled,
    ga: IntArray,
    gb: IntArray,
    confidence: float,
    method: CiMethod,
    resamples: int,
    seed: int,
) -> tuple[dict[str, Any], str]:
    """The numeric columns of the comparison table, and the CI method used."""
    n_a, n_b = pooled.count[ga], pooled.count[gb]
    m_a, m_b = pooled.mean[ga], pooled.mean[gb]
    positive = (m_a > 0) & (m_b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(positive, m_a / m_b, np.nan)
    has_ci = positive & (n_a >= 2) & (n_b >= 2)
    used: Literal["bootstrap", "delta"] = "delta" if method == "delta" else "bootstrap"
    if method == "auto":
        work = bootstrap_work(n_a[has_ci], n_b[has_ci], resamples)
        used = "bootstrap" if work <= BOOTSTRAP_BUDGET else "delta"
    low = np.full(len(ga), np.nan)
    high = np.full(len(ga), np.nan)
    idx = np.flatnonzero(has_ci)
    if len(idx):
        if used == "bootstrap":
            lo, hi = bootstrap_ratio_ci(pooled, ga[idx], gb[idx], confidence, resamples, seed)
        else:
            lo, hi = delta_ratio_ci(
                m_a[idx], pooled.var[ga[idx]], n_a[idx],
                m_b[idx], pooled.var[gb[idx]], n_b[idx],
                confidence,
            )  # fmt: skip
        low[idx], high[idx] = lo, hi
    unit_codes, unit_names = pd.factorize(pooled.keys["unit"].astype(object).to_numpy()[ga])
    hib = np.asarray([HIGHER_IS_BETTER[str(u)] for u in unit_names], dtype=bool)[unit_codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        perf = np.where(hib, ratio, 1 / ratio)
        perf_low = np.where(hib, low, 1 / high)
        perf_high = np.where(hib, high, 1 / low)
    verdicts = list(Verdict)
    verdict = np.full(len(ga), verdicts.index(Verdict.UNDETERMINED), dtype=np.int64)
    verdict[has_ci] = verdicts.index(Verdict.NO_DIFFERENCE)
    verdict[has_ci & (perf_low > 1)] = verdicts.index(Verdict.FASTER)
    verdict[has_ci & (perf_high < 1)] = verdicts.index(Verdict.SLOWER)
    single_a, single_b = n_a < 2, n_b < 2
    note = np.zeros(len(ga), dtype=np.int64)  # positions in NOTES
    note[single_a & ~single_b] = 1
    note[single_b & ~single_a] = 2
    note[single_a & single_b] = 3
    note[~positive] = 4
    columns: dict[str, Any] = {
        "samples": n_a,
        "baseline_samples": n_b,
        "mean": m_a,
        "baseline_mean": m_b,
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "higher_is_better": hib,
        "performance": perf,
        "performance_low": perf_low,
        "performance_high": perf_high,
        "verdict": pd.Categorical.from_codes(verdict, pd.Index([v.value for v in verdicts])),
        "ci_method": pd.Categorical.from_codes(has_ci.astype(np.int64), pd.Index(["", used])),
        "note": pd.Categorical.from_codes(note, pd.Index(NOTES)),
    }
    return columns, used


def bootstrap_work(n_a: IntArray, n_b: IntArray, resamples: int) -> int:
    """The bootstrap's work in units of one replicate (see BOOTSTRAP_BUDGET): per resample,
    each point's ratio and order statistics, each weight drawn (one matrix per distinct
    sample count and side, of that many rows) and the products of the samples by them."""
    drawn = int(np.unique(n_a).sum()) + int(np.unique(n_b).sum())
    products = int(n_a.sum()) + int(n_b.sum())
    units = len(n_a) + _UNITS_PER_WEIGHT_DRAWN * drawn + products // _PRODUCTS_PER_UNIT
    return resamples * units


def bootstrap_ratio_ci(
    pooled: Pooled,
    ga: IntArray,
    gb: IntArray,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[FloatArray, FloatArray]:
    """Percentile bootstrap interval of mean(group ga) / mean(group gb), for each pair.

    Groups need at least one sample each; see the module docstring for the scheme. Each
    weight matrix is drawn once per section of baseline groups (one section unless there are
    very many), and the replicate means of a baseline group, shared by every platform
    compared with it, are computed once.
    """
    n_a = pooled.count[ga]
    alpha = 1 - confidence
    k_low = math.floor((resamples - 1) * alpha / 2)
    k_high = math.ceil((resamples - 1) * (1 - alpha / 2))
    low = np.empty(len(ga))
    high = np.empty(len(ga))
    bases, base_of_pair = np.unique(gb, return_inverse=True)
    base_of_pair = base_of_pair.reshape(len(gb))
    # Baseline groups in order of sample count, so that a section draws few matrices.
    by_count = np.argsort(pooled.count[bases], kind="stable")
    rank = np.empty(len(bases), dtype=np.int64)
    rank[by_count] = np.arange(len(bases))
    per_section = max(1, _BASELINE_ELEMENTS // resamples)
    section_of_pair = rank[base_of_pair] // per_section
    for section in np.unique(section_of_pair).tolist():
        members = by_count[section * per_section : (section + 1) * per_section]
        position = np.full(len(bases), -1, dtype=np.int64)
        position[members] = np.arange(len(members))
        replicates_b = _replicate_means(pooled, bases[members], 1, resamples, seed)
        pairs = np.flatnonzero(section_of_pair == section)
        pairs = pairs[np.argsort(n_a[pairs], kind="stable")]
        for block in _runs_of_equal(n_a[pairs], pairs):
            na = int(n_a[block[0]])
            wa = _weight_matrix(0, na, resamples, seed)
            step = max(1, _CHUNK_ELEMENTS // resamples)
            for start in range(0, len(block), step):
                part = block[start : start + step]
                xa = pooled.values[pooled.offsets[ga[part]][:, None] + np.arange(na)]
                r = (xa @ wa) / replicates_b[position[base_of_pair[part]]]
                r.partition((k_low, k_high), axis=1)
                low[part] = r[:, k_low]
                high[part] = r[:, k_high]
    return low, high


def _replicate_means(
    pooled: Pooled, groups: IntArray, side: int, resamples: int, seed: int
) -> FloatArray:
    """The bootstrap replicates of the mean of each group (rows: groups, in order of sample
    count), each weight matrix drawn once."""
    out = np.empty((len(groups), resamples))
    counts = pooled.count[groups]
    step = max(1, _CHUNK_ELEMENTS // resamples)
    for block in _runs_of_equal(counts, np.arange(len(groups))):
        n = int(counts[block[0]])
        w = _weight_matrix(side, n, resamples, seed)
        for start in range(0, len(block), step):
            part = block[start : start + step]
            x = pooled.values[pooled.offsets[groups[part]][:, None] + np.arange(n)]
            out[part] = x @ w
    return out


def _weight_matrix(side: int, n: int, resamples: int, seed: int) -> FloatArray:
    """Resampling weights (n x resamples) for `n` samples on one side, from a generator
    seeded with (seed, side, n): the same for every point with that many samples."""
    rng = np.random.default_rng([seed, side, n])
    counts = rng.multinomial(n, np.full(n, 1 / n), size=resamples)
    return np.ascontiguousarray((counts / n).T)


def _runs_of_equal(keys: IntArray, items: IntArray) -> list[IntArray]:
    """`items` cut where `keys` (sorted, aligned with them) changes value."""
    change = np.flatnonzero(np.diff(keys) != 0) + 1
    return [run for run in np.split(items, change) if len(run)]


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
