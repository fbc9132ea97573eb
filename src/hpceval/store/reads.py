"""The Store's reads: runs, cases, executions, measurements, environments, platforms,
calibrations.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

import sqlalchemy as sa

from hpceval.errors import UserError
from hpceval.model import (
    ExecutionStatus,
    Status,
)
from hpceval.store.engine import (
    StoreBase,
    _outage_is_a_user_error,
)
from hpceval.store.rows import (
    CalibrationRow,
    CaseRow,
    ExecutionRow,
    RunRow,
    StoredMeasurement,
    _calibration_row,
    _run_query,
    _run_row,
    _stored_measurement,
)
from hpceval.store.samples import (
    _from_json,
)
from hpceval.store.schema import (
    EXECUTION_RUNNING,
    CaseStatus,
    calibrations,
    environments,
    executions,
    measurements,
    platforms,
    run_cases,
    runs,
)


class Reads(StoreBase):
    @_outage_is_a_user_error
    def run(self, run_id: int) -> RunRow:
        with self._engine.connect() as conn:
            row = conn.execute(_run_query().where(runs.c.id == run_id)).one_or_none()
        if row is None:
            raise self._no_run(run_id)
        return _run_row(row)

    @_outage_is_a_user_error
    def runs(self) -> list[RunRow]:
        """All runs, newest first."""
        with self._engine.connect() as conn:
            rows = conn.execute(_run_query().order_by(*_NEWEST_FIRST)).all()
        return [_run_row(row) for row in rows]

    @_outage_is_a_user_error
    def latest_run(self, *, statuses: Collection[Status] | None = None) -> RunRow | None:
        """The newest run, or the newest with one of `statuses`; None if there is none."""
        query = _run_query().order_by(*_NEWEST_FIRST).limit(1)
        if statuses is not None:
            query = query.where(runs.c.status.in_([status.value for status in statuses]))
        with self._engine.connect() as conn:
            row = conn.execute(query).one_or_none()
        return None if row is None else _run_row(row)

    @_outage_is_a_user_error
    def cases(self, run_id: int) -> list[CaseRow]:
        """A run's cases in the suite's order."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(run_cases)
                .where(run_cases.c.run_id == run_id)
                .order_by(run_cases.c.ordinal)
            ).all()
        return [
            CaseRow(
                run_id=row.run_id,
                ordinal=row.ordinal,
                case_key=row.case_key,
                benchmark=row.benchmark,
                description=_from_json(row.description),
                status=CaseStatus(row.status),
            )
            for row in rows
        ]

    @_outage_is_a_user_error
    def executions(self, run_id: int) -> list[ExecutionRow]:
        """A run's executions in the order they were started."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(executions).where(executions.c.run_id == run_id).order_by(executions.c.id)
            ).all()
        return [
            ExecutionRow(
                id=row.id,
                run_id=row.run_id,
                case_key=row.case_key,
                benchmark=row.benchmark,
                argv=tuple(row.argv),
                env=dict(row.env),
                status=(
                    EXECUTION_RUNNING
                    if row.status == EXECUTION_RUNNING
                    else ExecutionStatus(row.status)
                ),
                exit_code=row.exit_code,
                started=row.started,
                ended=row.ended,
                stdout_tail=row.stdout_tail,
                stderr_tail=row.stderr_tail,
                error=row.error,
            )
            for row in rows
        ]

    @_outage_is_a_user_error
    def measurements(
        self,
        run_id: int | None = None,
        *,
        benchmark: str | None = None,
        metric: str | None = None,
    ) -> list[StoredMeasurement]:
        """Measurements in the order they were stored, optionally of one run/benchmark/metric."""
        query = sa.select(measurements).order_by(measurements.c.id)
        if run_id is not None:
            query = query.where(measurements.c.run_id == run_id)
        if benchmark is not None:
            query = query.where(measurements.c.benchmark == benchmark)
        if metric is not None:
            query = query.where(measurements.c.metric == metric)
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [_stored_measurement(row) for row in rows]

    @_outage_is_a_user_error
    def completed_points(self, run_id: int) -> set[tuple[str, str]]:
        """(case_key, point_key) pairs of a run that have at least one measurement."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(measurements.c.case_key, measurements.c.point_key)
                .where(measurements.c.run_id == run_id)
                .distinct()
            ).all()
        return {(row.case_key, row.point_key) for row in rows}

    @_outage_is_a_user_error
    def environment(self, environment_id: int) -> Mapping[str, Any]:
        """The facts of an environment."""
        with self._engine.connect() as conn:
            facts = conn.execute(
                sa.select(environments.c.facts).where(environments.c.id == environment_id)
            ).scalar_one_or_none()
        if facts is None:
            raise UserError(f"no environment with id {environment_id}", source=self.url)
        result: Mapping[str, Any] = _from_json(facts)
        return result

    @_outage_is_a_user_error
    def platform_config(self, platform_id: int) -> tuple[str, Mapping[str, Any]]:
        """A platform's name and configuration."""
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(platforms.c.name, platforms.c.config).where(platforms.c.id == platform_id)
            ).one_or_none()
        if row is None:
            raise UserError(f"no platform with id {platform_id}", source=self.url)
        return row.name, _from_json(row.config)

    @_outage_is_a_user_error
    def calibration(self, calibration_id: int) -> CalibrationRow:
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(calibrations).where(calibrations.c.id == calibration_id)
            ).one_or_none()
        if row is None:
            raise UserError(f"no calibration with id {calibration_id}", source=self.url)
        return _calibration_row(row)

    @_outage_is_a_user_error
    def calibrations(
        self, *, key: str | None = None, platform_name: str | None = None
    ) -> list[CalibrationRow]:
        """Calibrations, newest first, optionally with one key or of one platform."""
        query = sa.select(calibrations).order_by(calibrations.c.id.desc())
        if key is not None:
            query = query.where(calibrations.c.key == key)
        if platform_name is not None:
            query = query.where(calibrations.c.platform_name == platform_name)
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [_calibration_row(row) for row in rows]


_NEWEST_FIRST: Final = (runs.c.started.desc(), runs.c.id.desc())
