"""The Store's reads: runs, cases, executions, measurements, environments, platforms,
calibrations.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any, Final

import sqlalchemy as sa

from hpceval.errors import UserError
from hpceval.model import (
    Status,
)
from hpceval.store.dialect import dialect_of
from hpceval.store.engine import (
    StoreBase,
    outage_is_a_user_error,
)
from hpceval.store.rows import (
    CalibrationRow,
    CaseRow,
    DatabaseState,
    ExecutionRow,
    RunRow,
    StoredMeasurement,
    read_calibration_row,
    read_case_row,
    read_execution_row,
    read_run_row,
    read_stored_measurement,
    run_query,
)
from hpceval.store.samples import (
    from_json,
)
from hpceval.store.schema import (
    calibrations,
    environments,
    executions,
    measurements,
    platforms,
    run_cases,
    runs,
    schema_info,
)


class Reads(StoreBase):
    @outage_is_a_user_error
    def run(self, run_id: int) -> RunRow:
        with self._engine.connect() as conn:
            row = conn.execute(run_query().where(runs.c.id == run_id)).one_or_none()
        if row is None:
            raise self._no_run(run_id)
        return read_run_row(row)

    @outage_is_a_user_error
    def runs(self) -> list[RunRow]:
        """All runs, newest first."""
        with self._engine.connect() as conn:
            rows = conn.execute(run_query().order_by(*_NEWEST_FIRST)).all()
        return [read_run_row(row) for row in rows]

    @outage_is_a_user_error
    def latest_run(self, *, statuses: Collection[Status] | None = None) -> RunRow | None:
        """The newest run, or the newest with one of `statuses`; None if there is none."""
        query = run_query().order_by(*_NEWEST_FIRST).limit(1)
        if statuses is not None:
            query = query.where(runs.c.status.in_([status.value for status in statuses]))
        with self._engine.connect() as conn:
            row = conn.execute(query).one_or_none()
        return None if row is None else read_run_row(row)

    @outage_is_a_user_error
    def cases(self, run_id: int) -> list[CaseRow]:
        """A run's cases in the suite's order."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(run_cases)
                .where(run_cases.c.run_id == run_id)
                .order_by(run_cases.c.ordinal)
            ).all()
        return [read_case_row(row) for row in rows]

    @outage_is_a_user_error
    def executions(self, run_id: int) -> list[ExecutionRow]:
        """A run's executions in the order they were started."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(executions).where(executions.c.run_id == run_id).order_by(executions.c.id)
            ).all()
        return [read_execution_row(row) for row in rows]

    @outage_is_a_user_error
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
        return [read_stored_measurement(row) for row in rows]

    @outage_is_a_user_error
    def completed_points(self, run_id: int) -> set[tuple[str, str]]:
        """(case_key, point_key) pairs of a run that have at least one measurement."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(measurements.c.case_key, measurements.c.point_key)
                .where(measurements.c.run_id == run_id)
                .distinct()
            ).all()
        return {(row.case_key, row.point_key) for row in rows}

    @outage_is_a_user_error
    def environment(self, environment_id: int) -> Mapping[str, Any]:
        """The facts of an environment."""
        with self._engine.connect() as conn:
            facts = conn.execute(
                sa.select(environments.c.facts).where(environments.c.id == environment_id)
            ).scalar_one_or_none()
        if facts is None:
            raise UserError(f"no environment with id {environment_id}", source=self.url)
        result: Mapping[str, Any] = from_json(facts)
        return result

    @outage_is_a_user_error
    def platform_config(self, platform_id: int) -> tuple[str, Mapping[str, Any]]:
        """A platform's name and configuration."""
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(platforms.c.name, platforms.c.config).where(platforms.c.id == platform_id)
            ).one_or_none()
        if row is None:
            raise UserError(f"no platform with id {platform_id}", source=self.url)
        return row.name, from_json(row.config)

    def state(self) -> DatabaseState:
        """What identifies the content of this database now (see DatabaseState); an error of
        the database propagates as SQLAlchemy raises it (a cache falls back on reading)."""
        with self._engine.connect() as conn:
            count, last = conn.execute(
                sa.select(sa.func.count(), sa.func.max(measurements.c.id)).select_from(measurements)
            ).one()
            version, created = conn.execute(
                sa.select(schema_info.c.version, schema_info.c.created)
            ).one()
        url = self._engine.url
        file = dialect_of(url).database_file(url)
        return DatabaseState(
            url=url.render_as_string(hide_password=True),
            database=os.path.realpath(file) if file is not None else url.database or "",
            schema_version=int(version),
            created=float(created),
            measurements=int(count),
            last_measurement_id=int(last or 0),
        )

    @outage_is_a_user_error
    def implementations(self) -> list[tuple[str, str, str]]:
        """Which program measured what where: the distinct (platform name, benchmark,
        implementation) of the measurements (compare refuses to mix implementations)."""
        query = (
            sa.select(platforms.c.name, measurements.c.benchmark, measurements.c.implementation)
            .distinct()
            .join(runs, measurements.c.run_id == runs.c.id)
            .join(platforms, runs.c.platform_id == platforms.c.id)
        )
        with self._engine.connect() as conn:
            return sorted((str(a), str(b), str(c)) for a, b, c in conn.execute(query))

    @outage_is_a_user_error
    def calibration(self, calibration_id: int) -> CalibrationRow:
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(calibrations).where(calibrations.c.id == calibration_id)
            ).one_or_none()
        if row is None:
            raise UserError(f"no calibration with id {calibration_id}", source=self.url)
        return read_calibration_row(row)

    @outage_is_a_user_error
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
        return [read_calibration_row(row) for row in rows]


_NEWEST_FIRST: Final = (runs.c.started.desc(), runs.c.id.desc())
