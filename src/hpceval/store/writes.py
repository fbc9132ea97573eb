"""The Store's writes: each its own committed transaction."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hpceval.errors import UserError
from hpceval.model import (
    Environment,
    ExecutionRecord,
    ExecutionStatus,
    Measurement,
    Origin,
    Status,
)
from hpceval.store.bundles import (
    platform_config_hash,
)
from hpceval.store.engine import (
    StoreBase,
    outage_is_a_user_error,
)
from hpceval.store.rows import CalibrationRow, read_calibration_row
from hpceval.store.samples import (
    SeriesFields,
    encode_samples,
    series_ids_of,
    series_key,
    to_json,
)
from hpceval.store.schema import (
    EXECUTION_RUNNING,
    INDEXED_FACTS,
    CaseStatus,
    calibrations,
    environments,
    executions,
    fact_at,
    inserted_id,
    measurements,
    platforms,
    run_cases,
    runs,
)


class Writes(StoreBase):
    @outage_is_a_user_error
    def add_platform(self, name: str, config: Mapping[str, Any]) -> int:
        """The id of this (name, config), added if new."""
        encoded = to_json(config)
        config_hash = platform_config_hash(encoded)
        return self._insert_or_get(
            platforms,
            {"name": name, "config": encoded, "config_hash": config_hash},
            (platforms.c.name == name) & (platforms.c.config_hash == config_hash),
        )

    @outage_is_a_user_error
    def add_environment(self, env: Environment) -> int:
        """The id of this environment, added if its fingerprint is new."""
        values: dict[str, Any] = {"fingerprint": env.fingerprint, "facts": to_json(env.facts)}
        for column, path in INDEXED_FACTS.items():
            values[column] = fact_at(env.facts, path)
        return self._insert_or_get(
            environments, values, environments.c.fingerprint == env.fingerprint
        )

    @outage_is_a_user_error
    def create_run(
        self,
        *,
        suite_name: str,
        suite_config: Mapping[str, Any],
        platform_id: int,
        environment_id: int,
        launcher: str,
        cases: Sequence[tuple[str, str, Mapping[str, Any]]],
        hpceval_version: str,
        git_revision: str | None,
        origin: Origin,
        host: str,
        pid: int,
        note: str | None = None,
    ) -> int:
        """A new running run with its cases (case_key, benchmark, description), all pending."""
        keys = [case_key for case_key, _, _ in cases]
        duplicates = sorted({key for key in keys if keys.count(key) > 1})
        if duplicates:
            raise ValueError(f"duplicate case keys in run of suite {suite_name}: {duplicates}")
        with self._writer.begin() as conn:
            run_id = inserted_id(
                conn.execute(
                    runs.insert().values(
                        uid=str(uuid.uuid4()),
                        suite_name=suite_name,
                        suite_config=to_json(suite_config),
                        platform_id=platform_id,
                        environment_id=environment_id,
                        launcher=launcher,
                        status=Status.RUNNING.value,
                        started=self._clock(),
                        ended=None,
                        host=host,
                        pid=pid,
                        hpceval_version=hpceval_version,
                        git_revision=git_revision,
                        origin=origin.value,
                        note=note,
                    )
                )
            )
            if cases:
                conn.execute(
                    run_cases.insert(),
                    [
                        {
                            "run_id": run_id,
                            "case_key": case_key,
                            "ordinal": ordinal,
                            "benchmark": benchmark,
                            "description": to_json(description),
                            "status": CaseStatus.PENDING.value,
                        }
                        for ordinal, (case_key, benchmark, description) in enumerate(cases)
                    ],
                )
        return run_id

    @outage_is_a_user_error
    def set_run_status(self, run_id: int, status: Status, *, ended: float | None = None) -> None:
        """Set a run's status; a run that stops running gets `ended` (default: now)."""
        if status is Status.RUNNING:
            ended = None
        elif ended is None:
            ended = self._clock()
        with self._writer.begin() as conn:
            result = conn.execute(
                runs.update().where(runs.c.id == run_id).values(status=status.value, ended=ended)
            )
            if result.rowcount == 0:
                raise self._no_run(run_id)

    @outage_is_a_user_error
    def claim_run(self, run_id: int, *, host: str, pid: int) -> None:
        """Make this process the owner of a run being resumed: running again, on host/pid.

        Refused while the run is still running (its owner is alive, or has not yet been found
        dead by mark_dead_runs_interrupted).
        """
        with self._writer.begin() as conn:
            result = conn.execute(
                runs.update()
                .where(runs.c.id == run_id, runs.c.status != Status.RUNNING.value)
                .values(status=Status.RUNNING.value, ended=None, host=host, pid=pid)
            )
            if result.rowcount == 0:
                owner = conn.execute(
                    sa.select(runs.c.host, runs.c.pid).where(runs.c.id == run_id)
                ).one_or_none()
                if owner is None:
                    raise self._no_run(run_id)
                raise UserError(
                    f"run {run_id} is still running (pid {owner.pid} on {owner.host})",
                    source=self.url,
                )

    @outage_is_a_user_error
    def start_execution(
        self,
        run_id: int,
        case_key: str,
        benchmark: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        started: float,
    ) -> int:
        """Record a command about to be launched; finish_execution records how it ended."""
        with self._writer.begin() as conn:
            return inserted_id(
                conn.execute(
                    executions.insert().values(
                        run_id=run_id,
                        case_key=case_key,
                        benchmark=benchmark,
                        argv=list(argv),
                        env=dict(env),
                        status=EXECUTION_RUNNING,
                        started=started,
                    )
                )
            )

    @outage_is_a_user_error
    def finish_execution(self, execution_id: int, record: ExecutionRecord) -> None:
        with self._writer.begin() as conn:
            result = conn.execute(
                executions.update()
                .where(
                    executions.c.id == execution_id,
                    executions.c.case_key == record.case_key,
                    executions.c.benchmark == record.benchmark,
                )
                .values(
                    argv=list(record.argv),
                    env=dict(record.env),
                    status=record.status.value,
                    exit_code=record.exit_code,
                    started=record.started,
                    ended=record.ended,
                    stdout_tail=_text(record.stdout_tail),
                    stderr_tail=_text(record.stderr_tail),
                    error=_text(record.error),
                )
            )
            if result.rowcount == 0:
                raise ValueError(
                    f"no execution {execution_id} of {record.benchmark} case {record.case_key}"
                    f" in {self.url}"
                )

    @outage_is_a_user_error
    def set_case_status(self, run_id: int, case_key: str, status: str) -> None:
        """Set a case's status: a CaseStatus value (pending, done, failed, skipped)."""
        checked = CaseStatus(status)
        with self._writer.begin() as conn:
            result = conn.execute(
                run_cases.update()
                .where(run_cases.c.run_id == run_id, run_cases.c.case_key == case_key)
                .values(status=checked.value)
            )
            if result.rowcount == 0:
                raise ValueError(f"run {run_id} in {self.url} has no case {case_key!r}")

    @outage_is_a_user_error
    def add_measurement(
        self,
        run_id: int,
        execution_id: int | None,
        case_key: str,
        point_key: str,
        m: Measurement,
    ) -> int:
        """Store one measurement; it is committed when this returns."""
        statistics = None if m.statistics is None else to_json(m.statistics.to_dict())
        parameters = to_json(m.parameters)
        fields = (m.origin.value, m.benchmark, m.metric, m.unit, m.statistic, parameters)
        key = series_key(fields)
        with self._writer.begin() as conn:
            series_id = self._series.get(key) or series_ids_of(conn, {key: fields})[key]
            measurement_id = inserted_id(
                conn.execute(
                    measurements.insert().values(
                        run_id=run_id,
                        execution_id=execution_id,
                        case_key=case_key,
                        point_key=point_key,
                        benchmark=m.benchmark,
                        metric=m.metric,
                        unit=m.unit,
                        value=m.value,
                        statistic=m.statistic,
                        parameters=parameters,
                        statistics=statistics,
                        samples=encode_samples(m.samples),
                        details=to_json(m.details),
                        origin=m.origin.value,
                        created=self._clock(),
                        series_id=series_id,
                        implementation=m.implementation,
                    )
                )
            )
        self._series[key] = series_id
        return measurement_id

    @outage_is_a_user_error
    def series_ids(self, fields: Sequence[SeriesFields]) -> list[int]:
        """The series id of each (origin, benchmark, metric, unit, statistic, parameters),
        added where it is new (for writers that insert measurement rows in bulk)."""
        keyed = [(series_key(f), f) for f in fields]
        unknown = {key: f for key, f in keyed if key not in self._series}
        if unknown:
            with self._writer.begin() as conn:
                self._series.update(series_ids_of(conn, unknown))
        return [self._series[key] for key, _ in keyed]

    @outage_is_a_user_error
    def mark_dead_runs_interrupted(
        self, *, host: str, is_alive: Callable[[int], bool]
    ) -> list[int]:
        """Runs left 'running' on this host by a process that no longer exists → interrupted.

        Their executions still 'running' become interrupted too. The end time recorded is the
        run's last sign of life (its latest execution or measurement), not the time it was found.
        Returns the ids of the runs marked.
        """
        if self.read_only:
            return []
        with self._engine.connect() as conn:
            candidates = conn.execute(
                sa.select(runs.c.id, runs.c.pid).where(
                    runs.c.status == Status.RUNNING.value, runs.c.host == host
                )
            ).all()
        dead = [(row.id, row.pid) for row in candidates if not is_alive(row.pid)]
        marked: list[int] = []
        for run_id, pid in dead:
            with self._writer.begin() as conn:
                last_seen = _last_activity(conn, run_id)
                # Guarded by pid: a run claimed meanwhile by a live process is left alone.
                result = conn.execute(
                    runs.update()
                    .where(
                        runs.c.id == run_id,
                        runs.c.status == Status.RUNNING.value,
                        runs.c.host == host,
                        runs.c.pid == pid,
                    )
                    .values(status=Status.INTERRUPTED.value, ended=last_seen)
                )
                if result.rowcount == 0:
                    continue
                conn.execute(
                    executions.update()
                    .where(
                        executions.c.run_id == run_id,
                        executions.c.status == EXECUTION_RUNNING,
                    )
                    .values(
                        status=ExecutionStatus.INTERRUPTED.value,
                        ended=last_seen,
                        error=f"hpceval process {pid} on {host} died while this ran",
                    )
                )
            marked.append(run_id)
        return marked

    @outage_is_a_user_error
    def add_calibration(
        self,
        *,
        key: str,
        platform_name: str,
        source_kind: str,
        source: str,
        source_run_ids: Sequence[int],
        simgrid_version: str,
        parameters: Mapping[str, Any],
        residuals: Sequence[Mapping[str, Any]],
        max_residual: float,
        tolerance: float,
        iterations: int,
        converged: bool,
    ) -> CalibrationRow:
        """Store a calibration; committed when this returns."""
        uid = str(uuid.uuid4())
        with self._writer.begin() as conn:
            calibration_id = inserted_id(
                conn.execute(
                    calibrations.insert().values(
                        uid=uid,
                        key=key,
                        platform_name=platform_name,
                        source_kind=source_kind,
                        source=source,
                        source_run_ids=list(source_run_ids),
                        simgrid_version=simgrid_version,
                        parameters=to_json(parameters),
                        residuals=to_json(list(residuals)),
                        max_residual=max_residual,
                        tolerance=tolerance,
                        iterations=iterations,
                        converged=converged,
                        created=self._clock(),
                    )
                )
            )
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(calibrations).where(calibrations.c.id == calibration_id)
            ).one()
        return read_calibration_row(row)

    def _insert_or_get(
        self, table: sa.Table, values: Mapping[str, Any], identity: sa.ColumnElement[bool]
    ) -> int:
        """The id of the row matching `identity`, inserting `values` if there is none."""
        select_id = sa.select(table.c.id).where(identity)
        try:
            with self._writer.begin() as conn:
                existing = conn.execute(select_id).scalar_one_or_none()
                if existing is not None:
                    return int(existing)
                return inserted_id(conn.execute(table.insert().values(**values)))
        except sa.exc.IntegrityError:
            # PostgreSQL: another process inserted the same row between our select and insert
            # (SQLite cannot race here: the write lock is taken at BEGIN).
            with self._engine.connect() as conn:
                return int(conn.execute(select_id).scalar_one())


def _last_activity(conn: Connection, run_id: int) -> float:
    """The latest time anything of this run is known to have happened."""
    moments = [
        sa.select(runs.c.started).where(runs.c.id == run_id).scalar_subquery(),
        sa.select(sa.func.max(executions.c.started))
        .where(executions.c.run_id == run_id)
        .scalar_subquery(),
        sa.select(sa.func.max(executions.c.ended))
        .where(executions.c.run_id == run_id)
        .scalar_subquery(),
        sa.select(sa.func.max(measurements.c.created))
        .where(measurements.c.run_id == run_id)
        .scalar_subquery(),
    ]
    known = [value for value in conn.execute(sa.select(*moments)).one() if value is not None]
    return float(max(known))


def _text(value: str) -> str:
    """`value` storable in any database: PostgreSQL text cannot hold NUL characters (a crashed
    program's output may contain them)."""
    return value.replace("\x00", "\ufffd")
