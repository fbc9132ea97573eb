"""Network models: Hockney fits of point-to-point time versus message size.

The Hockney model of the time to send n bytes is t(n) = α + n/β: α the start-up latency (µs),
β the asymptotic bandwidth (MB/s; 1 byte per µs is exactly 1 MB/s with 1 MB = 10⁶ B, so the
units need no factor). Its half-performance message size n½ = α·β is the size at which the
model's bandwidth n/t(n) reaches β/2, half the asymptotic bandwidth.

MPI libraries switch protocol with the message size (eager below a threshold, rendezvous
above; shared-memory transports also change copy method), so one line rarely fits all
sizes. `fit_hockney` fits the model piecewise: consecutive size ranges (segments) with their
own α and β, the breakpoints found from the data. For 0 to `max_breakpoints` breakpoints
(default 2) it takes, over every split into segments of at least `min_points` sizes, the
least-squares fit of each segment, and keeps the number of breakpoints that minimizes the
Bayesian information criterion

    N·ln(max(RSS/N, resolution²)) + k·ln N,   k = 3·segments - 1

(two parameters per segment and one per breakpoint). RSS is the sum of squared *relative*
residuals (t_measured - t_model) / t_measured, so that the µs of small messages count as much
as the ms of large ones (sizes are log-spaced, powers of two). `resolution` (default 1 %) is
the relative misfit below which differences are noise: a curve that one line fits to within
it gets no breakpoint.

Reported per segment: α, β, n½ = α·β (None when α ≤ 0 or β is not finite, i.e. the time
does not grow with the size), the sizes covered and the rms and largest relative residual.
The fit's α is that of the first (small-message) segment, its β that of the last; its n½ is
the half-bandwidth size of the whole piecewise model: the smallest n at which n / t(n)
reaches β/2 (solved segment by segment). It exists where the last segment's own α·β does not
(an inter-node series whose large-message line has α ≤ 0).

The time of each size is the statistics policy's (hpceval.analysis.policy: median over
repetitions by default); a fit whose rms relative residual exceeds ``POOR_FIT_RMS`` carries a
warning, and every fit names the runs whose measurements fed it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpceval.analysis.frame import (
    FloatArray,
    group_codes,
    numeric,
    point_columns,
    select,
)
from hpceval.analysis.policy import StatisticPolicy, summarize_groups
from hpceval.labels import described
from hpceval.model import Origin, ParamValue

DEFAULT_PATTERNS: Final[tuple[str, ...]] = ("pingpong",)
DEFAULT_RESOLUTION: Final = 0.01
MIN_POINTS: Final = 3
# rms relative residual above which a fit is flagged: the model misses by more than 10 %.
POOR_FIT_RMS: Final = 0.10


@dataclass(frozen=True)
class HockneySegment:
    """One size range [first_size, last_size] (bytes) with its own α (µs) and β (MB/s)."""

    first_size: int
    last_size: int
    alpha_us: float
    beta_mb_s: float
    n_half_bytes: float | None
    points: int
    rms_residual: float
    max_residual: float

    def predict(self, size: float) -> float:
        """Modelled time (µs) of a message of `size` bytes."""
        return self.alpha_us + (size / self.beta_mb_s if math.isfinite(self.beta_mb_s) else 0.0)


@dataclass(frozen=True)
class ModelPoint:
    """A measured point beside the model: mean time, modelled time, relative residual."""

    size: int
    time_us: float
    model_us: float
    residual: float


@dataclass(frozen=True)
class HockneyFit:
    """The piecewise Hockney model of one series (platform, origin, placement).

    `breakpoints` are the first sizes of the segments after the first; `criterion` is the
    BIC value of the chosen model; `placement` holds the series' parameters (pattern, pair,
    ranks, nodes, ...), the message size excepted.
    """

    platform: str
    origin: Origin
    benchmark: str
    metric: str
    placement: Mapping[str, ParamValue]
    segments: tuple[HockneySegment, ...]
    breakpoints: tuple[int, ...]
    points: tuple[ModelPoint, ...]
    rms_residual: float
    max_residual: float
    criterion: float
    statistic: str = "median"
    runs: tuple[int, ...] = ()  # the runs whose measurements fed the fit

    @property
    def alpha_us(self) -> float:
        return self.segments[0].alpha_us

    @property
    def beta_mb_s(self) -> float:
        return self.segments[-1].beta_mb_s

    @property
    def n_half_bytes(self) -> float | None:
        """The smallest size at which the model's bandwidth n / t(n) reaches β/2, β the last
        segment's: on segment (α, β_s), n / (α + n/β_s) = β/2 at n = α / (2/β - 1/β_s)."""
        beta = self.beta_mb_s
        if not math.isfinite(beta) or beta <= 0:
            return None
        for i, segment in enumerate(self.segments):
            slope = 1 / segment.beta_mb_s if math.isfinite(segment.beta_mb_s) else 0.0
            gap = 2 / beta - slope
            if gap <= 0:
                continue
            n = segment.alpha_us / gap
            # The segment's range reaches up to the next segment's first size.
            end = self.segments[i + 1].first_size if i + 1 < len(self.segments) else math.inf
            if n <= end and n >= (segment.first_size if i else 0):
                return max(n, 0.0)
        return None

    @property
    def warning(self) -> str:
        """Why the fit should not be trusted ("" when it may be)."""
        if self.rms_residual > POOR_FIT_RMS:
            return (
                f"poor fit: rms residual {self.rms_residual:.0%} > {POOR_FIT_RMS:.0%}: "
                "t = α + n/β does not describe this series (contention, a shaper, noise)"
            )
        return ""

    def segment_rows(self) -> list[dict[str, Any]]:
        """One table row per segment: its size range, α, β, n½ = α·β, residuals."""
        base = {
            "platform": self.platform,
            "origin": self.origin.value,
            "placement": described(self.placement),
        }
        return [
            {
                **base,
                "segment": i + 1,
                "first_size": s.first_size,
                "last_size": s.last_size,
                "points": s.points,
                "alpha_us": s.alpha_us,
                "beta_mb_s": s.beta_mb_s,
                "n_half_bytes": s.n_half_bytes,
                "rms_residual": s.rms_residual,
                "max_residual": s.max_residual,
            }
            for i, s in enumerate(self.segments)
        ]

    def segment_for(self, size: float) -> HockneySegment:
        for segment in reversed(self.segments):
            if size >= segment.first_size:
                return segment
        return self.segments[0]

    def predict(self, size: float) -> float:
        """Modelled time (µs) of `size` bytes, from the segment whose range holds it."""
        return self.segment_for(size).predict(size)

    def summary_row(self) -> dict[str, Any]:
        """The fit as one table row (`hpceval fit`, the report's Hockney table)."""
        return {
            "platform": self.platform,
            "origin": self.origin.value,
            "placement": described(self.placement),
            "alpha_us": self.alpha_us,
            "beta_mb_s": self.beta_mb_s,
            "n_half_bytes": self.n_half_bytes,
            "segments": len(self.segments),
            "breakpoints": " ".join(str(b) for b in self.breakpoints),
            "rms_residual": self.rms_residual,
            "max_residual": self.max_residual,
            "statistic": self.statistic,
            "runs": " ".join(str(r) for r in self.runs),
            "warning": self.warning,
        }


@dataclass(frozen=True)
class PiecewiseModel:
    """What `fit_hockney` finds: segments, breakpoints, per-point model and residuals."""

    segments: tuple[HockneySegment, ...]
    breakpoints: tuple[int, ...]
    points: tuple[ModelPoint, ...]
    rms_residual: float
    max_residual: float
    criterion: float


def fit_hockney(
    sizes: Sequence[float] | npt.NDArray[Any],
    times_us: Sequence[float] | npt.NDArray[Any],
    *,
    max_breakpoints: int = 2,
    min_points: int = MIN_POINTS,
    resolution: float = DEFAULT_RESOLUTION,
) -> PiecewiseModel:
    """The piecewise Hockney model of times (µs) against message sizes (bytes)."""
    if not 0 <= max_breakpoints <= 2:
        raise ValueError("max_breakpoints must be 0, 1 or 2")
    if min_points < 2:
        raise ValueError("a segment needs at least 2 points")
    x = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times_us, dtype=np.float64)
    if x.shape != t.shape or x.ndim != 1:
        raise ValueError("sizes and times must be 1-D arrays of the same length")
    if len(np.unique(x)) != len(x):
        raise ValueError("sizes repeat: pool the measurements of a size first")
    if not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise ValueError("times must be finite and positive")
    if np.any(x < 0):
        raise ValueError("sizes must not be negative")
    n = len(x)
    if n < min_points:
        raise ValueError(f"{n} sizes: a fit needs at least {min_points}")
    order = np.argsort(x)
    x, t = x[order], t[order]
    rss = _segment_rss(x, t)
    cuts, criterion = _best_split(rss, max_breakpoints, min_points, resolution)
    bounds = (0, *cuts, n)
    segments: list[HockneySegment] = []
    model = np.empty(n)
    for a, b in itertools.pairwise(bounds):
        a_us, c = _fit_segment(x[a:b], t[a:b])
        beta = 1 / c if c > 0 else math.inf
        model[a:b] = a_us + c * x[a:b]
        residual = (t[a:b] - model[a:b]) / t[a:b]
        segments.append(
            HockneySegment(
                first_size=int(x[a]),
                last_size=int(x[b - 1]),
                alpha_us=a_us,
                beta_mb_s=beta,
                n_half_bytes=a_us * beta if a_us > 0 and math.isfinite(beta) else None,
                points=b - a,
                rms_residual=float(np.sqrt(np.mean(residual**2))),
                max_residual=float(np.max(np.abs(residual))),
            )
        )
    residuals = (t - model) / t
    points = tuple(
        ModelPoint(int(s), float(ti), float(mi), float(r))
        for s, ti, mi, r in zip(x, t, model, residuals, strict=True)
    )
    return PiecewiseModel(
        segments=tuple(segments),
        breakpoints=tuple(int(x[c]) for c in cuts),
        points=points,
        rms_residual=float(np.sqrt(np.mean(residuals**2))),
        max_residual=float(np.max(np.abs(residuals))),
        criterion=float(criterion),
    )


def fit_network(
    frame: pd.DataFrame,
    *,
    patterns: Sequence[str] = DEFAULT_PATTERNS,
    benchmark: str = "mpibench",
    metric: str = "latency",
    max_breakpoints: int = 2,
    min_points: int = MIN_POINTS,
    resolution: float = DEFAULT_RESOLUTION,
    policy: StatisticPolicy | None = None,
) -> tuple[HockneyFit, ...]:
    """Hockney fits of every series of the frame: one per platform, origin and placement.

    A series is the `metric` of `benchmark` for the given patterns at every message size of
    one platform, origin and parameter set (pattern, pair, ranks, nodes, ranks_per_node,
    threads_per_rank, binding...); the time of a size is the `policy`'s statistic (default:
    median over repetitions). Series with fewer than `min_points` sizes are left out.
    """
    policy = policy or StatisticPolicy()
    rows = select(frame, benchmark=benchmark, metrics=[metric])
    if "pattern" in rows.columns:
        rows = rows.loc[rows["pattern"].isin(list(patterns)).to_numpy()]
    if rows.empty or "size" not in rows.columns:
        return ()
    by = ["platform", "origin", *point_columns(rows)]
    rows = rows.loc[np.isfinite(numeric(rows, "size"))].reset_index(drop=True)
    if rows.empty:
        return ()
    point_rows, point_first = group_codes(rows, by)
    summary = summarize_groups(rows, point_rows, point_first, by, policy)
    keys = summary.keys
    series_columns = [c for c in by if c != "size"]
    series, first = group_codes(keys, series_columns)
    sizes = numeric(keys, "size")
    order = np.argsort(series, kind="stable")
    bounds = np.searchsorted(series[order], np.arange(len(first) + 1))
    parameter_names = [c for c in series_columns if c not in ("platform", "origin")]
    parameter_names = [c for c in parameter_names if c not in ("benchmark", "metric", "unit")]
    run_of_row = rows["run"].to_numpy(dtype=np.float64, na_value=np.nan)
    series_of_row = series[point_rows]
    fits: list[HockneyFit] = []
    for s in range(len(first)):
        members = order[bounds[s] : bounds[s + 1]]
        if len(members) < min_points:
            continue
        model = fit_hockney(
            sizes[members],
            summary.value[members],
            max_breakpoints=max_breakpoints,
            min_points=min_points,
            resolution=resolution,
        )
        head = keys.iloc[int(first[s])]
        placement: dict[str, ParamValue] = {}
        for name in parameter_names:
            v = head[name]
            if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                continue
            placement[name] = v.item() if isinstance(v, np.generic) else v
        fits.append(
            HockneyFit(
                platform=str(head["platform"]),
                origin=Origin(str(head["origin"])),
                benchmark=benchmark,
                metric=metric,
                placement=placement,
                segments=model.segments,
                breakpoints=model.breakpoints,
                points=model.points,
                rms_residual=model.rms_residual,
                max_residual=model.max_residual,
                criterion=model.criterion,
                statistic=policy.statistic,
                runs=tuple(
                    int(r) for r in np.unique(run_of_row[series_of_row == s]) if math.isfinite(r)
                ),
            )
        )
    return tuple(fits)


def _fit_segment(x: FloatArray, t: FloatArray) -> tuple[float, float]:
    """α and slope c = 1/β minimizing Σ((t - α - c·x)/t)²: least squares of 1 on (1/t, x/t)."""
    scale = float(x.max()) or 1.0
    design = np.column_stack([1 / t, (x / scale) / t])
    (alpha, c_scaled), *_ = np.linalg.lstsq(design, np.ones(len(t)), rcond=None)
    return float(alpha), float(c_scaled) / scale


def _segment_rss(x: FloatArray, t: FloatArray) -> FloatArray:
    """rss[a, b]: the relative residual sum of squares of the best line over points [a, b).

    The regression of 1 on (u, v) = (1/t, x/t) for every run at once, from running sums
    (x scaled to [0, 1] for conditioning); inf for runs of fewer than two points or with
    a singular system. Only used to choose the breakpoints: the chosen segments are refitted
    with a least-squares solver.
    """
    n = len(x)
    scale = float(x.max()) or 1.0
    u = 1 / t
    v = (x / scale) / t

    def window(values: FloatArray) -> FloatArray:
        running: FloatArray = np.concatenate([np.zeros(1), np.cumsum(values)])
        sums: FloatArray = running[None, :] - running[:, None]  # [a, b] = sum over [a, b)
        return sums

    m = window(np.ones(n))
    suu, suv, svv = window(u * u), window(u * v), window(v * v)
    su, sv = window(u), window(v)
    det = suu * svv - suv * suv
    ok = (m >= 2) & (det > 1e-10 * np.abs(suu * svv))
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = (su * svv - sv * suv) / det
        c = (suu * sv - suv * su) / det
        rss = m - 2 * alpha * su - 2 * c * sv + alpha**2 * suu + 2 * alpha * c * suv + c**2 * svv
    result: FloatArray = np.where(ok, np.maximum(rss, 0.0), np.inf)
    return result


def _best_split(
    rss: FloatArray, max_breakpoints: int, min_points: int, resolution: float
) -> tuple[tuple[int, ...], float]:
    """The cuts (0, 1 or 2 indices) minimizing the penalized criterion, and its value."""
    n = rss.shape[0] - 1
    floor = n * resolution**2

    def criterion(total: FloatArray | float, segments: int) -> FloatArray:
        k = 3 * segments - 1
        return np.asarray(n * np.log(np.maximum(total, floor) / n) + k * math.log(n))

    best_cuts: tuple[int, ...] = ()
    best = float(criterion(rss[0, n], 1))
    if max_breakpoints >= 1 and n >= 2 * min_points:
        b = np.arange(min_points, n - min_points + 1)
        scores = criterion(rss[0, b] + rss[b, n], 2)
        i = int(np.argmin(scores))
        if scores[i] < best - 1e-9:
            best, best_cuts = float(scores[i]), (int(b[i]),)
    if max_breakpoints >= 2 and n >= 3 * min_points:
        b1 = np.arange(min_points, n - 2 * min_points + 1)[:, None]
        b2 = np.arange(2 * min_points, n - min_points + 1)[None, :]
        valid = b2 - b1 >= min_points
        total = rss[0, b1] + rss[b1, np.minimum(b2, n)] + rss[np.minimum(b2, n), n]
        scores = np.where(valid, criterion(total, 3), np.inf)
        i2, j2 = (int(v) for v in np.unravel_index(int(np.argmin(scores)), scores.shape))
        if scores[i2, j2] < best - 1e-9:
            best, best_cuts = float(scores[i2, j2]), (int(b1[i2, 0]), int(b2[0, j2]))
    if not math.isfinite(best):
        raise ValueError("no line could be fitted (degenerate sizes)")
    return best_cuts, best
