"""SMPI's piecewise network factors: segments fitted on a PingPong curve, and the factors.

SMPI times a message of n bytes on a route of latency L and bandwidth B as
L·lat_factor(n) + n / (B·bw_factor(n)), each factor piecewise constant over size ranges
(`smpi/lat-factor`, `smpi/bw-factor`). A curve's segments (piecewise_fit: α + (n + 16) / β
each, SMPI's 16-byte envelope counted) over the nominal route's L and B give the factors
(factors), written in SMPI's syntax by factor_string. hpceval.simulate.calibrate iterates
this against real smpirun PingPongs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from scipy.optimize import nnls

from hpceval.analysis.network import fit_hockney

# Factors are bounded so that SMPI is never given a zero or absurd one.
MIN_FACTOR: Final = 1e-3
MAX_FACTOR: Final = 1e3
SMPI_ENVELOPE_BYTES: Final = 16
# A segment of one size from this size up is all transfer time, below it all latency.
BANDWIDTH_BOUND_BYTES: Final = 65536


@dataclass(frozen=True)
class Segment:
    """Sizes from `first_size` up: time = alpha_us + (size + 16) / beta_mb_s (SMPI's
    envelope; β inf: flat)."""

    first_size: int
    alpha_us: float
    beta_mb_s: float

    def predict(self, size: float) -> float:
        return self.alpha_us + (size / self.beta_mb_s if math.isfinite(self.beta_mb_s) else 0.0)


def _fit_nonnegative(x: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """α ≥ 0 and slope c ≥ 0 minimizing Σ((t - α - c·x)/t)² (relative least squares)."""
    scale = float(x.max()) or 1.0
    design = np.column_stack([1 / t, (x / scale) / t])
    (alpha, c_scaled), _ = nnls(design, np.ones(len(t)))
    return float(alpha), float(c_scaled) / scale


def _max_residual(x: np.ndarray, t: np.ndarray, alpha: float, c: float) -> float:
    return float(np.max(np.abs((t - alpha - c * x) / t)))


def piecewise_fit(
    sizes: Sequence[int], times_us: Sequence[float], *, tolerance: float
) -> list[Segment]:
    """Segments (first sizes increasing) that fit every size within `tolerance` if they can.

    Fitted as SMPI times a message, α + (n + 16) / β: SMPI sends a 16-byte envelope through
    the bandwidth term. Fitted on n alone, a steep small-size segment (β of a few MB/s, on a
    noisy curve) put 0.42 µs on a 0-byte message measured at 0.27 µs, which no factor undid."""
    x = np.asarray(sizes, dtype=np.float64) + SMPI_ENVELOPE_BYTES
    t = np.asarray(times_us, dtype=np.float64)
    if len(x) < 2:
        raise ValueError("a piecewise fit needs at least 2 sizes")
    if len(x) >= 3:
        model = fit_hockney(x, t, max_breakpoints=2, min_points=min(3, len(x)))
        starts = [0, *(int(np.searchsorted(x, b)) for b in model.breakpoints)]
    else:
        starts = [0]
    bounds = [*starts, len(x)]
    pieces = [(bounds[i], bounds[i + 1]) for i in range(len(starts))]
    done: list[tuple[int, int]] = []
    while pieces:
        a, b = pieces.pop()
        alpha, c = _fit_nonnegative(x[a:b], t[a:b])
        if b - a < 2 or _max_residual(x[a:b], t[a:b], alpha, c) <= tolerance:
            done.append((a, b))
            continue
        # Split where the two halves fit best (each keeps at least one size).
        best: tuple[float, int] | None = None
        for cut in range(a + 1, b):
            total = 0.0
            for lo, hi in ((a, cut), (cut, b)):
                al, cl = _fit_nonnegative(x[lo:hi], t[lo:hi])
                total += float(np.sum(((t[lo:hi] - al - cl * x[lo:hi]) / t[lo:hi]) ** 2))
            if best is None or total < best[0]:
                best = (total, cut)
        assert best is not None
        pieces += [(a, best[1]), (best[1], b)]
    segments = []
    for a, b in sorted(done):
        alpha, c = _fit_nonnegative(x[a:b], t[a:b])
        if b - a == 1:
            # One size: a small message's time is latency, a large one's is transfer (as
            # latency, 710 µs at 4 MiB needed a factor beyond MAX_FACTOR on a loopback).
            if sizes[a] >= BANDWIDTH_BOUND_BYTES:
                alpha, c = 0.0, float(t[a] / x[a])
            else:
                alpha, c = float(t[a]), 0.0
        segments.append(Segment(int(sizes[a]), alpha, 1 / c if c > 0 else math.inf))
    return segments


def clamp(value: float) -> float:
    return min(MAX_FACTOR, max(MIN_FACTOR, value))


def factors(
    segments: Sequence[Segment], route_latency_s: float, route_bandwidth_Bps: float
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(lat factors, bw factors) as (first size, factor), relative to the nominal route."""
    lat = [(s.first_size, clamp(s.alpha_us * 1e-6 / route_latency_s)) for s in segments]
    bw = [
        (s.first_size, clamp(s.beta_mb_s * 1e6 / route_bandwidth_Bps) if math.isfinite(
            s.beta_mb_s) else MAX_FACTOR)
        for s in segments
    ]  # fmt: skip
    return lat, bw


def factor_string(pairs: Sequence[tuple[int, float]]) -> str:
    """SMPI's syntax "threshold:factor;..." for segments given by their first sizes.

    SMPI applies the factor of threshold T to a message of n bytes when n + 16 > T (up to the
    next threshold): it counts a 16-byte envelope (measured with SimGrid 3.32: a factor at
    T = 1000 applies from n = 985 on). A segment starting at size s therefore gets the
    threshold s + 15, which holds s and not the size before it; the first segment gets 0.
    """
    ordered = sorted(pairs)
    thresholds = [0] + [size + SMPI_ENVELOPE_BYTES - 1 for size, _ in ordered[1:]]
    entries = sorted(zip(thresholds, ordered, strict=True), reverse=True)
    return ";".join(f"{t}:{value:.9g}" for t, (_, value) in entries)


def factor_at(pairs: Sequence[tuple[int, float]], size: int) -> float:
    value = sorted(pairs)[0][1]
    for first, f in sorted(pairs):
        if size >= first:
            value = f
    return value
