"""`hpceval simulate --validate`: a projection held against what was measured.

Each figure of a simulated run is paired with the same figure measured (or emulated, never
simulated) on the same platform: same benchmark, metric and parameters that define the case
(mpibench: pattern, size, ranks, pair, ranks per node; NPB: kernel, class, ranks). The
measured figure is pooled over the runs that measured it (all of them, or the latest
`pool_runs`): per run the median of its samples (as the calibration reads its curves), then the
median over those runs, with their lowest and highest (the run-to-run spread: on a shared
host one run can be 40 % off the next, and a projection inside that spread cannot be told
from the measurement). A projection from a published profile is held against the profile's
published figures where it has them (the rings at their rank count). The error is
(projected - measured) / measured, per figure; figures without a counterpart are counted,
not guessed. A projection replayed more than once (`hpceval simulate --repeat`: NPB cases,
each replay timing the computation on this host anew) is held by the median of its replays,
their lowest and highest beside: on a 2-core VM two projections of the same data put MG
class A at 4 ranks -27.5 and -3.4 % from the measurement (issue 21, 2026-12-03), a spread
one replay cannot show. Figures measured with more ranks than the host's cores
(`oversubscribed`) are left out, unless the projection was calibrated at the same share of
the cores (`--host-share`, hpceval.simulate.sources.host_share_target): then they are what
it projects.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpceval.errors import UserError
from hpceval.model import Measurement, Origin
from hpceval.simulate.contention import RingFigures
from hpceval.simulate.pooling import check_pool_runs, newest, runs_text
from hpceval.simulate.sources import same_setup_runs
from hpceval.store import Store

# The parameters that say which figure a measurement is (beside benchmark and metric).
KEY_PARAMETERS: Mapping[str, tuple[str, ...]] = {
    "mpibench": ("pattern", "size", "ranks", "pair", "nodes"),
    "npb": ("kernel", "class", "ranks", "nodes"),
}
METRICS = frozenset({"latency", "bandwidth", "time"})


@dataclass(frozen=True)
class Reference:
    """What a projected figure is held against: the median over the runs that measured it,
    each run's value the median of its samples (oldest run first); none for a published
    figure."""

    value: float
    source: str  # where it comes from, in words
    run_values: tuple[float, ...] = ()


@dataclass(frozen=True)
class Check:
    figure: str  # benchmark, metric and key parameters, in words
    unit: str
    measured: float  # the median over the runs
    projected: float
    source: str  # where the measured figure comes from
    run_values: tuple[float, ...] = ()  # per measured run (none: a published figure)
    replays: tuple[float, ...] = ()  # per replay of the projection, when replayed twice or more

    @property
    def error(self) -> float:
        return (self.projected - self.measured) / self.measured

    @property
    def runs(self) -> int:
        return len(self.run_values)

    @property
    def low(self) -> float:
        return min(self.run_values, default=self.measured)

    @property
    def high(self) -> float:
        return max(self.run_values, default=self.measured)

    @property
    def inside_spread(self) -> bool | None:
        """Whether the projection lies between the lowest and highest run; None with fewer
        than two runs (no spread to be inside)."""
        return self.low <= self.projected <= self.high if self.runs >= 2 else None

    @property
    def replay_errors(self) -> tuple[float, float] | None:
        """The errors of the lowest and highest replay; None with fewer than two replays."""
        if len(self.replays) < 2:
            return None
        return ((min(self.replays) - self.measured) / self.measured,
                (max(self.replays) - self.measured) / self.measured)  # fmt: skip


def _value(m: Measurement) -> float:
    return statistics.median(m.samples) if m.samples else m.value


def figure_key(m: Measurement) -> tuple[Any, ...] | None:
    """(benchmark, metric, key parameters...) or None for a figure not validated."""
    names = KEY_PARAMETERS.get(m.benchmark)
    if names is None or m.metric not in METRICS:
        return None
    p = m.parameters
    return (m.benchmark, m.metric, *(p.get(n) for n in names))


def describe(key: tuple[Any, ...]) -> str:
    benchmark, metric, *values = key
    names = KEY_PARAMETERS[benchmark]
    parts = [f"{n} {v}" for n, v in zip(names, values, strict=True) if v is not None]
    return f"{benchmark} {metric}: " + ", ".join(parts)


def measured_figures(
    store: Store, platform: str, oversubscribed: bool = False, pool_runs: int | None = None
) -> dict[tuple[Any, ...], Reference]:
    """Key -> the figure pooled over the measured runs of `platform` that measured it (the
    latest `pool_runs` of them; None: all); `oversubscribed`: the figures measured on shared
    cores too."""
    check_pool_runs(pool_runs)
    measured = {
        r.id: r
        for r in store.runs()
        if r.platform_name == platform and r.origin is not Origin.SIMULATED
    }
    # The runs of the latest one's setup, as the calibration pools them.
    platform_runs = set(same_setup_runs(store, measured)[0]) if measured else set()
    # key -> run -> (samples pooled over the run's measurements of the figure, origins)
    found: dict[tuple[Any, ...], dict[int, tuple[list[float], set[str]]]] = {}
    for sm in store.measurements():
        m = sm.measurement
        if sm.run_id not in platform_runs or m.origin is Origin.SIMULATED or (
                m.parameters.get("oversubscribed") and not oversubscribed):  # fmt: skip
            continue
        key = figure_key(m)
        if key is None:
            continue
        samples, origins = found.setdefault(key, {}).setdefault(sm.run_id, ([], set()))
        samples.extend(m.samples or (m.value,))
        origins.add(m.origin.value)
    out: dict[tuple[Any, ...], Reference] = {}
    for key, by_run in found.items():
        run_ids = sorted(newest(by_run, pool_runs))
        values = tuple(statistics.median(by_run[r][0]) for r in run_ids)
        origins = set().union(*(by_run[r][1] for r in run_ids))
        out[key] = Reference(statistics.median(values), runs_text(origins, run_ids), values)
    return out


def published_rings(rings: RingFigures) -> dict[tuple[Any, ...], Reference]:
    """The profile's ring figures under the keys a simulated run's rings carry."""
    out: dict[tuple[Any, ...], Reference] = {}
    nodes = rings.nodes
    for pattern in ("natural_ring", "random_ring"):
        name = pattern.split("_")[0]
        for metric, size, value in (
            ("latency", rings.small, getattr(rings, f"{name}_latency_us")),
            ("bandwidth", rings.large, getattr(rings, f"{name}_bandwidth_mb_s")),
        ):
            key = ("mpibench", metric, pattern, size, rings.ranks, None, nodes)
            out[key] = Reference(value, rings.origin)
    return out


def validate_run(
    store: Store,
    run_id: int,
    published: Mapping[tuple[Any, ...], Reference] = {},
    host_share: bool = False,
    pool_runs: int | None = None,
) -> tuple[list[Check], int]:
    """(checks, figures without a counterpart) of simulated run `run_id`; `host_share`:
    it was calibrated at the share of the host's cores its ranks had when measured;
    `pool_runs`: the measured figure pooled over the latest that many runs that measured it
    (None: all)."""
    run = store.run(run_id)
    if run.origin is not Origin.SIMULATED:
        raise UserError(f"run {run_id} is not a simulated run: nothing to validate")
    reference = {**measured_figures(store, run.platform_name, host_share, pool_runs),
                 **published}  # fmt: skip
    # key -> (unit, one value per measurement: NPB's replays are one measurement each)
    projected: dict[tuple[Any, ...], tuple[str, list[float]]] = {}
    for sm in store.measurements(run_id):
        key = figure_key(sm.measurement)
        if key is not None:
            projected.setdefault(key, (sm.measurement.unit, []))[1].append(
                _value(sm.measurement))  # fmt: skip
    checks: list[Check] = []
    missing = 0
    for key, (unit, values) in projected.items():
        if key not in reference:
            missing += 1
            continue
        ref = reference[key]
        if ref.value > 0:
            checks.append(Check(describe(key), unit, ref.value, statistics.median(values),
                                ref.source, ref.run_values,
                                tuple(values) if len(values) > 1 else ()))  # fmt: skip
    return sorted(checks, key=lambda c: c.figure), missing
