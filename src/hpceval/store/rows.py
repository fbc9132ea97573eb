"""What the Store's reads return: one frozen dataclass per kind of row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from hpceval.model import (
    ExecutionStatus,
    Measurement,
    Origin,
    Statistics,
    Status,
)
from hpceval.store.samples import (
    _from_json,
    decode_samples,
)
from hpceval.store.schema import (
    CaseStatus,
    platforms,
    runs,
)


@dataclass(frozen=True)
class RunRow:
    id: int
    uid: str
    suite_name: str
    suite_config: Mapping[str, Any]
    platform_id: int
    platform_name: str
    environment_id: int
    launcher: str
    status: Status
    started: float
    ended: float | None
    host: str
    pid: int
    hpceval_version: str
    git_revision: str | None
    origin: Origin
    note: str | None


@dataclass(frozen=True)
class CaseRow:
    run_id: int
    ordinal: int
    case_key: str
    benchmark: str
    description: Mapping[str, Any]
    status: CaseStatus


@dataclass(frozen=True)
class ExecutionRow:
    id: int
    run_id: int
    case_key: str
    benchmark: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    status: ExecutionStatus | Literal["running"]
    exit_code: int | None
    started: float
    ended: float | None
    stdout_tail: str
    stderr_tail: str
    error: str


@dataclass(frozen=True)
class CalibrationRow:
    """A stored SMPI calibration (see the calibrations table)."""

    id: int
    uid: str
    key: str
    platform_name: str
    source_kind: str
    source: str
    source_run_ids: tuple[int, ...]
    simgrid_version: str
    parameters: Mapping[str, Any]
    residuals: tuple[Mapping[str, Any], ...]
    max_residual: float
    tolerance: float
    iterations: int
    converged: bool
    created: float

    def run_reference(self) -> dict[str, Any]:
        """What a simulated run's suite_config["calibration"] says of the calibration it
        used (the uid ties it across databases: transfer re-maps the id by it)."""
        return {
            "id": self.id,
            "uid": self.uid,
            "max_residual": self.max_residual,
            "simgrid_version": self.simgrid_version,
            "source": self.source,
        }


@dataclass(frozen=True)
class StoredMeasurement:
    id: int
    run_id: int
    execution_id: int | None
    case_key: str
    point_key: str
    created: float
    measurement: Measurement


def measurement_from_values(values: Mapping[str, Any] | sa.RowMapping) -> Measurement:
    """The Measurement of a stored measurements row (checks unit, value and statistics)."""
    statistics = values["statistics"]
    return Measurement(
        benchmark=values["benchmark"],
        metric=values["metric"],
        value=values["value"],
        unit=values["unit"],
        parameters=_from_json(values["parameters"]),
        samples=_samples_of(values["samples"]),
        statistics=None if statistics is None else Statistics.from_dict(_from_json(statistics)),
        statistic=values["statistic"],
        origin=Origin(values["origin"]),
        details=_from_json(values["details"]),
    )


def _samples_of(value: Any) -> tuple[float, ...]:
    """Samples as stored (bytes) or as a bundle carries them (a JSON list)."""
    if isinstance(value, bytes | memoryview):
        return decode_samples(value)
    return tuple(float(sample) for sample in _from_json(value))


def _run_query() -> sa.Select[Any]:
    return sa.select(runs, platforms.c.name.label("platform_name")).join(
        platforms, runs.c.platform_id == platforms.c.id
    )


def _run_row(row: sa.Row[Any]) -> RunRow:
    return RunRow(
        id=row.id,
        uid=row.uid,
        suite_name=row.suite_name,
        suite_config=_from_json(row.suite_config),
        platform_id=row.platform_id,
        platform_name=row.platform_name,
        environment_id=row.environment_id,
        launcher=row.launcher,
        status=Status(row.status),
        started=row.started,
        ended=row.ended,
        host=row.host,
        pid=row.pid,
        hpceval_version=row.hpceval_version,
        git_revision=row.git_revision,
        origin=Origin(row.origin),
        note=row.note,
    )


def _calibration_row(row: sa.Row[Any]) -> CalibrationRow:
    return CalibrationRow(
        id=row.id,
        uid=row.uid,
        key=row.key,
        platform_name=row.platform_name,
        source_kind=row.source_kind,
        source=row.source,
        source_run_ids=tuple(int(i) for i in row.source_run_ids),
        simgrid_version=row.simgrid_version,
        parameters=_from_json(row.parameters),
        residuals=tuple(_from_json(row.residuals)),
        max_residual=row.max_residual,
        tolerance=row.tolerance,
        iterations=row.iterations,
        converged=bool(row.converged),
        created=row.created,
    )


def _stored_measurement(row: sa.Row[Any]) -> StoredMeasurement:
    return StoredMeasurement(
        id=row.id,
        run_id=row.run_id,
        execution_id=row.execution_id,
        case_key=row.case_key,
        point_key=row.point_key,
        created=row.created,
        measurement=measurement_from_values(row._mapping),
    )
