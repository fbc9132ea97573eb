"""A platform's history: every stored run of it, oldest first, as one series per measured
point (benchmark, metric, unit, parameters), each run one value with its within-run spread
and the provenance fields a change is explained by.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hpceval.analysis.frame import NON_POINT_PARAMETERS
from hpceval.errors import UserError
from hpceval.model import Measurement, Status
from hpceval.statistics import measurement_value
from hpceval.store import Store
from hpceval.units import HIGHER_IS_BETTER

# The provenance fields a change point names when they changed at its run: what moves a
# platform's performance without anyone touching hpceval's configuration.
CHANGE_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kernel", ("os", "kernel")),
    ("mpi", ("mpi", "version")),
    ("nic", ("network", "path")),
    ("transport intra-node", ("transport", "intra-node", "description")),
    ("transport inter-node", ("transport", "inter-node", "description")),
    ("hpceval", ("hpceval", "version")),
    ("hpceval revision", ("hpceval", "revision")),
    ("cpu", ("cpu", "model")),
    ("compiler", ("compiler", "version")),
)
# Runs whose points are real measurements (an interrupted run's stored points are).
HISTORY_STATUSES = (Status.COMPLETED, Status.INTERRUPTED)


@dataclass(frozen=True)
class RunPoint:
    run_id: int
    started: float
    value: float
    low: float | None  # the run's own confidence interval of the value, when it has one
    high: float | None
    provenance: Mapping[str, str | None]


@dataclass(frozen=True)
class Series:
    benchmark: str
    metric: str
    unit: str
    parameters: tuple[tuple[str, Any], ...]
    points: tuple[RunPoint, ...]

    @property
    def higher_is_better(self) -> bool:
        return HIGHER_IS_BETTER[self.unit]

    @property
    def values(self) -> npt.NDArray[np.float64]:
        return np.array([p.value for p in self.points], dtype=np.float64)

    def label(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.parameters)
        return f"{self.benchmark} {self.metric} [{self.unit}] {params}".strip()


def provenance_fields(facts: Mapping[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, path in CHANGE_FIELDS:
        value: Any = facts
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        out[name] = None if value is None else str(value)
    return out


def changed_fields(before: RunPoint, after: RunPoint) -> dict[str, tuple[str | None, str | None]]:
    """The provenance fields that differ between two consecutive runs: (before, after)."""
    return {
        name: (before.provenance.get(name), after.provenance.get(name))
        for name, _ in CHANGE_FIELDS
        if before.provenance.get(name) != after.provenance.get(name)
    }


def _point_key(m: Measurement) -> tuple[str, str, str, str]:
    params = {k: v for k, v in m.parameters.items() if k not in NON_POINT_PARAMETERS}
    return (m.benchmark, m.metric, m.unit, json.dumps(params, sort_keys=True, default=str))


def _run_point(run_id: int, started: float, ms: Sequence[Measurement], prov: Any) -> RunPoint:
    # Each measurement by the display statistic of its samples, not its stored value: the
    # stored value's statistic changed (mpibench: mean until 2026-11-25, then the median),
    # and a series must not step where only the statistic did.
    value = float(np.mean([measurement_value(m) for m in ms]))
    low = high = None
    if len(ms) == 1 and ms[0].statistics is not None:
        low, high = ms[0].statistics.ci_low, ms[0].statistics.ci_high
    elif len(ms) > 1:
        values = [measurement_value(m) for m in ms]
        low, high = float(min(values)), float(max(values))
    return RunPoint(run_id, started, value, low, high, prov)


def load_history(
    store: Store,
    platform: str,
    *,
    benchmark: str | None = None,
    metric: str | None = None,
    case: str | None = None,
) -> list[Series]:
    """Every series of `platform`'s stored runs (oldest run first); `case` is a glob on the
    stored case key (`mpibench:pingpong:*intra-node*`)."""
    all_runs = store.runs()
    runs = sorted(
        (r for r in all_runs if r.platform_name == platform and r.status in HISTORY_STATUSES),
        key=lambda r: (r.started, r.id),
    )
    if not runs:
        known = ", ".join(sorted({r.platform_name for r in all_runs})) or "none"
        raise UserError(f"{store.url}: no completed run of platform {platform!r} (stored: {known})")
    facts_of: dict[int, dict[str, str | None]] = {}
    grouped: dict[tuple[str, str, str, str], list[RunPoint]] = {}
    for run in runs:
        if run.environment_id not in facts_of:
            facts_of[run.environment_id] = provenance_fields(store.environment(run.environment_id))
        by_key: dict[tuple[str, str, str, str], list[Measurement]] = {}
        for sm in store.measurements(run.id, benchmark=benchmark, metric=metric):
            if case is not None and not fnmatch.fnmatchcase(sm.case_key, case):
                continue
            by_key.setdefault(_point_key(sm.measurement), []).append(sm.measurement)
        for key, ms in by_key.items():
            point = _run_point(run.id, run.started, ms, facts_of[run.environment_id])
            grouped.setdefault(key, []).append(point)
    series = []
    for (bench, met, unit, params), points in sorted(grouped.items()):
        parameters = tuple(sorted(json.loads(params).items()))
        series.append(Series(bench, met, unit, parameters, tuple(points)))
    return series
