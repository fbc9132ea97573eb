"""`hpceval simulate --validate`: a projection held against what was measured.

Each figure of a simulated run is paired with the same figure measured (or emulated, never
simulated) on the same platform: same benchmark, metric and parameters that define the case
(mpibench: pattern, size, ranks, pair, ranks per node; NPB: kernel, class, ranks), from
the latest run that measured it, by the median of its samples (as the calibration reads its
curves). A projection from a published profile is held against the profile's published
figures where it has them (the rings at their rank count). The error is
(projected - measured) / measured, per figure; figures without a counterpart are counted,
not guessed. Figures measured with more ranks than the host's cores (`oversubscribed`) are
left out, unless the projection was calibrated at the same share of the cores
(`--host-share`, hpceval.simulate.sources.host_share_target): then they are what it
projects.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpceval.errors import UserError
from hpceval.model import Measurement, Origin
from hpceval.simulate.contention import RingFigures
from hpceval.store import Store

# The parameters that say which figure a measurement is (beside benchmark and metric).
KEY_PARAMETERS: Mapping[str, tuple[str, ...]] = {
    "mpibench": ("pattern", "size", "ranks", "pair", "nodes"),
    "npb": ("kernel", "class", "ranks", "nodes"),
}
METRICS = frozenset({"latency", "bandwidth", "time"})


@dataclass(frozen=True)
class Check:
    figure: str  # benchmark, metric and key parameters, in words
    unit: str
    measured: float
    projected: float
    source: str  # where the measured figure comes from

    @property
    def error(self) -> float:
        return (self.projected - self.measured) / self.measured


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
    store: Store, platform: str, oversubscribed: bool = False
) -> dict[tuple[Any, ...], tuple[float, str]]:
    """Key -> (median, "origin run N") from the latest measured run of `platform` per key;
    `oversubscribed`: the figures measured on shared cores too."""
    runs = {
        r.id: r
        for r in store.runs()
        if r.platform_name == platform and r.origin is not Origin.SIMULATED
    }
    found: dict[tuple[Any, ...], tuple[int, float, str]] = {}
    for sm in store.measurements():
        m = sm.measurement
        if sm.run_id not in runs or m.origin is Origin.SIMULATED or (
                m.parameters.get("oversubscribed") and not oversubscribed):  # fmt: skip
            continue
        key = figure_key(m)
        if key is None:
            continue
        if key not in found or found[key][0] <= sm.run_id:
            found[key] = (sm.run_id, _value(m), f"{m.origin.value} run {sm.run_id}")
    return {k: (v, src) for k, (_, v, src) in found.items()}


def published_rings(rings: RingFigures) -> dict[tuple[Any, ...], tuple[float, str]]:
    """The profile's ring figures under the keys a simulated run's rings carry."""
    out: dict[tuple[Any, ...], tuple[float, str]] = {}
    nodes = rings.nodes
    for pattern in ("natural_ring", "random_ring"):
        name = pattern.split("_")[0]
        for metric, size, value in (
            ("latency", rings.small, getattr(rings, f"{name}_latency_us")),
            ("bandwidth", rings.large, getattr(rings, f"{name}_bandwidth_mb_s")),
        ):
            key = ("mpibench", metric, pattern, size, rings.ranks, None, nodes)
            out[key] = (value, rings.origin)
    return out


def validate_run(
    store: Store,
    run_id: int,
    published: Mapping[tuple[Any, ...], tuple[float, str]] = {},
    host_share: bool = False,
) -> tuple[list[Check], int]:
    """(checks, figures without a counterpart) of simulated run `run_id`; `host_share`:
    it was calibrated at the share of the host's cores its ranks had when measured."""
    run = store.run(run_id)
    if run.origin is not Origin.SIMULATED:
        raise UserError(f"run {run_id} is not a simulated run: nothing to validate")
    reference = {**measured_figures(store, run.platform_name, host_share), **published}
    checks: list[Check] = []
    missing = 0
    for sm in store.measurements(run_id):
        key = figure_key(sm.measurement)
        if key is None:
            continue
        if key not in reference:
            missing += 1
            continue
        measured, source = reference[key]
        if measured > 0:
            checks.append(Check(describe(key), sm.measurement.unit, measured,
                                _value(sm.measurement), source))  # fmt: skip
    return sorted(checks, key=lambda c: c.figure), missing
