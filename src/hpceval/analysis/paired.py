"""Paired ratios: runs of two platforms interleaved in time (A, B, A, B, ...), each run of
one paired with the run of the other in the same position of their time orders, so that the
load of the moment is common to both sides of a pair and divides out of its ratio."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy.stats import bootstrap

CONFIDENCE = 0.95
RESAMPLES = 4999


def paired_ratios(
    numerator: Sequence[float] | npt.NDArray[np.float64],
    denominator: Sequence[float] | npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """numerator[i] / denominator[i] for the pairs both sides have (the shorter side's count):
    each side's values in time order."""
    n = min(len(numerator), len(denominator))
    top = np.asarray(numerator, dtype=np.float64)[:n]
    bottom = np.asarray(denominator, dtype=np.float64)[:n]
    return np.asarray(top / bottom, dtype=np.float64)


def median_interval(ratios: npt.NDArray[np.float64]) -> tuple[float, float, float]:
    """The median of paired ratios and its bootstrap 95 % percentile interval (fewer than 3
    pairs, or no spread: the smallest and largest ratio)."""
    median = float(np.median(ratios))
    if len(ratios) < 3 or np.ptp(ratios) == 0:
        return median, float(ratios.min()), float(ratios.max())
    ci = bootstrap((ratios,), np.median, confidence_level=CONFIDENCE, n_resamples=RESAMPLES,
                   method="percentile", random_state=1).confidence_interval  # fmt: skip
    return median, float(ci.low), float(ci.high)
