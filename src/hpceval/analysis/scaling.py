"""Scalability: speedup, parallel efficiency, the knee, and placement sweeps.

Definitions (methodology §3, generalized to a reference that is not one core):

- cores of a run = ranks × threads_per_rank (threads 1 when not recorded);
- a *curve* is one platform, origin and problem (benchmark, metric and every parameter that
  is not a placement parameter: NPB kernel and class, an application's input...), over its
  placements (ranks, nodes, ranks_per_node, threads_per_rank, binding); the value of a
  placement is the mean of its pooled samples (repetitions and runs);
- at each core count the curve keeps the best placement (shortest time);
- the reference is the curve's point with the fewest cores;
- speedup = time(reference) / time (for a metric where larger is better, such as Mop/s:
  value / value(reference)); ideal speedup = cores / cores(reference);
  efficiency = speedup / ideal speedup (= speedup / cores when the reference is one core);
- the knee is the first point, in increasing cores, whose efficiency is below the threshold
  (default 0.5) or whose speedup is not larger than the previous point's: scaling stops
  there, and the curve *scales to* the core count of the point before it;
- a placement sweep is a core count of a curve measured with several placements; each
  placement's gain over the full-node placement (the fewest nodes; among those the fewest
  threads per rank, i.e. pure MPI) is time(full node) / time(placement): above 1 the
  placement is faster, usually on more nodes (fewer processes per instance), at a higher
  price.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from hpceval.analysis.frame import group_codes, numeric, point_columns, pool, select, text
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.labels import placement_label
from hpceval.model import Origin, ParamValue
from hpceval.units import HIGHER_IS_BETTER

DEFAULT_THRESHOLD: Final = 0.5
# Oversubscription and the pair kind are where ranks ran, not a problem of their own: a
# curve runs over the rank counts with its oversubscribed points marked (issue 23).
PLACEMENT_PARAMETERS: Final[frozenset[str]] = frozenset(
    {"ranks", "nodes", "ranks_per_node", "threads_per_rank", "binding", "oversubscribed", "pair"}
)


@dataclass(frozen=True)
class PlacedValue:
    """One placement of a problem (how it was run) and its value: the mean of its pooled
    samples (`samples` of them)."""

    cores: int
    ranks: int
    threads_per_rank: int
    nodes: int | None
    ranks_per_node: int | None
    binding: str | None
    value: float
    samples: int
    oversubscribed: bool


@dataclass(frozen=True)
class ScalingPoint(PlacedValue):
    """One placement of a problem with its time (or value) and scaling figures."""

    speedup: float
    ideal_speedup: float
    efficiency: float

    def label(self) -> str:
        """The placement notation (hpceval.labels): `4 nodes × 1 rank × 1 thread, ...`."""
        return placement_label(
            {
                "ranks": self.ranks,
                "nodes": self.nodes,
                "ranks_per_node": self.ranks_per_node,
                "threads_per_rank": self.threads_per_rank,
                "binding": self.binding,
                "oversubscribed": self.oversubscribed,
            }
        )


@dataclass(frozen=True)
class ScalingCurve:
    """Speedup and efficiency of one problem on one platform (best placement per core count)."""

    platform: str
    origin: Origin
    benchmark: str
    metric: str
    unit: str
    problem: Mapping[str, ParamValue]
    reference: ScalingPoint
    points: tuple[ScalingPoint, ...]
    threshold: float
    knee: ScalingPoint | None
    knee_reason: str
    scales_to: int


@dataclass(frozen=True)
class PlacementChoice:
    point: ScalingPoint
    gain: float  # time(full node) / time(this placement); > 1: faster
    extra_nodes: float | None  # nodes / nodes of the full-node placement (None if unknown)
    full_node: bool


@dataclass(frozen=True)
class PlacementSweep:
    """The placements measured at one core count, against the full-node placement."""

    platform: str
    origin: Origin
    benchmark: str
    metric: str
    problem: Mapping[str, ParamValue]
    cores: int
    full_node: ScalingPoint
    choices: tuple[PlacementChoice, ...]  # best first

    @property
    def best(self) -> PlacementChoice:
        return self.choices[0]


@dataclass(frozen=True)
class _Curve:
    platform: str
    origin: Origin
    benchmark: str
    metric: str
    unit: str
    problem: dict[str, ParamValue]
    placements: list[PlacedValue]  # in the order of the pooled points
    higher_is_better: bool


def scaling(
    frame: pd.DataFrame,
    *,
    benchmark: str = "npb",
    metric: str = "time",
    threshold: float = DEFAULT_THRESHOLD,
    platform_configs: Mapping[str, PlatformConfig] | None = None,
) -> tuple[ScalingCurve, ...]:
    """The scaling curve of every problem of `benchmark` on every platform of the frame: at
    each core count the best placement, or, for a platform in `platform_configs`, its
    default placement where it was measured (as a user would run it; the best elsewhere)."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold {threshold} is not in (0, 1]")
    curves: list[ScalingCurve] = []
    for c in _curves(frame, benchmark, metric):
        config = (platform_configs or {}).get(c.platform)
        best = _best_per_cores(c) if config is None else _default_per_cores(c, config)
        points = _scaling_points(best, c.higher_is_better)
        reference = points[0]
        knee: ScalingPoint | None = None
        reason = ""
        scales_to = points[-1].cores
        for previous, point in itertools.pairwise(points):
            if point.efficiency < threshold:
                knee = point
                reason = f"efficiency {point.efficiency:.2f} < {threshold:g}"
            elif point.speedup <= previous.speedup:
                knee = point
                reason = (
                    f"speedup {point.speedup:.2f} at {point.cores} cores is not above "
                    f"{previous.speedup:.2f} at {previous.cores}"
                )
            if knee is not None:
                scales_to = previous.cores
                break
        curves.append(
            ScalingCurve(
                platform=c.platform,
                origin=c.origin,
                benchmark=c.benchmark,
                metric=c.metric,
                unit=c.unit,
                problem=c.problem,
                reference=reference,
                points=tuple(points),
                threshold=threshold,
                knee=knee,
                knee_reason=reason,
                scales_to=scales_to,
            )
        )
    return tuple(curves)


def placement_sweeps(
    frame: pd.DataFrame, *, benchmark: str = "npb", metric: str = "time"
) -> tuple[PlacementSweep, ...]:
    """Every core count measured with several placements (nodes known), per problem."""
    sweeps: list[PlacementSweep] = []
    for c in _curves(frame, benchmark, metric):
        best = _best_per_cores(c)
        reference = _scaling_points(best, c.higher_is_better)[0]
        at_cores: dict[int, list[PlacedValue]] = {}
        for placement in c.placements:
            if placement.nodes is not None:
                at_cores.setdefault(placement.cores, []).append(placement)
        for cores, group in sorted(at_cores.items()):
            if len(group) < 2:
                continue
            # Full node first: fewest nodes, then fewest threads per rank, ranks per node.
            ordered = sorted(group, key=lambda p: (p.nodes, p.threads_per_rank,
                                                   _last_if_none(p.ranks_per_node)))  # fmt: skip
            points = _scaling_points(ordered, c.higher_is_better, reference=reference)
            full = points[0]
            choices = []
            for point in points:
                gain = point.value / full.value if c.higher_is_better else full.value / point.value
                extra = point.nodes / full.nodes if point.nodes is not None and full.nodes else None
                choices.append(PlacementChoice(point, gain, extra, point is full))
            choices.sort(key=lambda ch: -ch.gain)
            sweeps.append(
                PlacementSweep(
                    platform=c.platform,
                    origin=c.origin,
                    benchmark=c.benchmark,
                    metric=c.metric,
                    problem=c.problem,
                    cores=int(str(cores)),
                    full_node=full,
                    choices=tuple(choices),
                )
            )
    return tuple(sweeps)


def _curves(frame: pd.DataFrame, benchmark: str, metric: str) -> list[_Curve]:
    rows = select(frame, benchmark=benchmark, metrics=[metric])
    if "ranks" in rows.columns:
        rows = rows.loc[rows["ranks"].notna().to_numpy()]
    if rows.empty or "ranks" not in rows.columns:
        return []
    by = ["platform", "origin", *point_columns(rows)]
    pooled = pool(rows, by)
    keys = pooled.keys
    problem_columns = [c for c in by if c not in PLACEMENT_PARAMETERS]
    curve, first = group_codes(keys, problem_columns)
    ranks = numeric(keys, "ranks")
    threads = np.nan_to_num(numeric(keys, "threads_per_rank"), nan=1.0)
    cores = (ranks * threads).astype(np.int64)
    nodes = numeric(keys, "nodes")
    per_node = numeric(keys, "ranks_per_node")
    binding = text(keys, "binding")
    over = (
        keys["oversubscribed"].astype(object).to_numpy() == True  # noqa: E712
        if "oversubscribed" in keys.columns
        else np.zeros(len(keys), dtype=bool)
    )
    names = [c for c in problem_columns if c not in ("platform", "origin", "benchmark")]
    heads = keys.iloc[first][problem_columns].to_dict("records")
    # The placements of each curve, in pooled-point order (plain values: a few per curve).
    members: list[list[PlacedValue]] = [[] for _ in range(len(first))]
    for g, c, r, t, n, rpn, b, v, k, o in zip(
        curve.tolist(), cores.tolist(), ranks.astype(np.int64).tolist(),
        threads.astype(np.int64).tolist(), nodes.tolist(), per_node.tolist(), binding.tolist(),
        pooled.mean.tolist(), pooled.count.tolist(), over.tolist(), strict=True,
    ):  # fmt: skip
        members[g].append(
            PlacedValue(c, r, t, _optional_int(n), _optional_int(rpn),
                       None if _missing(b) else str(b), float(v), int(k), bool(o))
        )  # fmt: skip
    out: list[_Curve] = []
    for head, placements in zip(heads, members, strict=True):
        problem: dict[str, ParamValue] = {}
        for name in names:
            if name in ("metric", "unit"):
                continue
            v = head[name]
            if _missing(v):
                continue
            problem[name] = v.item() if isinstance(v, np.generic) else v
        unit = str(head["unit"])
        out.append(
            _Curve(
                platform=str(head["platform"]),
                origin=Origin(str(head["origin"])),
                benchmark=str(head["benchmark"]),
                metric=str(head["metric"]),
                unit=unit,
                problem=problem,
                placements=placements,
                higher_is_better=HIGHER_IS_BETTER[unit],
            )
        )
    return out


def _last_if_none(v: int | None) -> tuple[bool, int]:
    """A sort key that puts None after every number (as pandas puts missing values)."""
    return (v is None, v or 0)


def _best_per_cores(c: _Curve) -> list[PlacedValue]:
    """At each core count, the placement with the best value (ties: fewest nodes, then the
    first in pooled order)."""
    sign = -1.0 if c.higher_is_better else 1.0
    ordered = sorted(c.placements,
                     key=lambda p: (p.cores, sign * p.value, _last_if_none(p.nodes)))  # fmt: skip
    best: dict[int, PlacedValue] = {}
    for placement in ordered:
        best.setdefault(placement.cores, placement)
    return list(best.values())


def _default_per_cores(c: _Curve, config: PlatformConfig) -> list[PlacedValue]:
    """At each core count the platform's default placement (PlatformConfig.default_placement)
    where it was measured, else the best one."""
    chosen = {p.cores: p for p in _best_per_cores(c)}
    if any(p.nodes is not None and p.nodes > config.nodes for p in c.placements):
        return list(chosen.values())  # not the platform file these runs describe
    for p in c.placements:
        try:
            want = config.default_placement(p.ranks, p.threads_per_rank)
        except UserError:
            continue
        if (p.nodes, p.ranks_per_node) == (want.nodes, want.ranks_per_node):
            chosen[p.cores] = p
    return [chosen[cores] for cores in sorted(chosen)]


def _scaling_points(
    placements: list[PlacedValue], higher_is_better: bool, *, reference: ScalingPoint | None = None
) -> list[ScalingPoint]:
    ref_cores = reference.cores if reference else placements[0].cores
    ref_value = reference.value if reference else placements[0].value
    points = []
    for p in placements:
        speedup = p.value / ref_value if higher_is_better else ref_value / p.value
        ideal = p.cores / ref_cores
        points.append(
            ScalingPoint(
                cores=p.cores,
                ranks=p.ranks,
                threads_per_rank=p.threads_per_rank,
                nodes=p.nodes,
                ranks_per_node=p.ranks_per_node,
                binding=p.binding,
                value=p.value,
                samples=p.samples,
                oversubscribed=p.oversubscribed,
                speedup=speedup,
                ideal_speedup=ideal,
                efficiency=speedup / ideal,
            )
        )
    return points


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _optional_int(v: Any) -> int | None:
    return None if _missing(v) else int(v)
