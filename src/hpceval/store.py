"""The results store: platforms, environments, runs, executions and measurements.

One SQLAlchemy Core schema that works on SQLite (a file beside the user, the default) and on
PostgreSQL (shared by a team). Every write is its own committed transaction: a measurement is
durable as soon as `Store.add_measurement` returns, so a campaign killed with SIGKILL loses only
the point it was measuring, and `hpceval show` can read while a campaign writes.

The schema carries a version (`SCHEMA_VERSION`, kept in `schema_info`). A database written by a
newer hpceval, or an older one without a migration in `MIGRATIONS`, is refused with a
`UserError`; it is never read as if it had this version's layout.

Times are Unix seconds (`time.time()`) stored as floats, everywhere.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine

from hpceval.errors import UserError
from hpceval.model import (
    Environment,
    ExecutionRecord,
    ExecutionStatus,
    Measurement,
    Origin,
    Statistics,
    Status,
)

SCHEMA_VERSION: Final = 1
DEFAULT_URL: Final = "sqlite:///hpceval.db"

# How long an SQLite writer waits for another process's write transaction before giving up.
# Transactions here last milliseconds; the margin covers a slow disk or a WAL checkpoint.
SQLITE_BUSY_TIMEOUT_S: Final = 30.0

# Any constant works: it only has to be the same for every hpceval opening a PostgreSQL database.
_POSTGRES_SCHEMA_LOCK_KEY: Final = 0x6870636576616C  # "hpceval"

# Engine execution option read by the SQLite "begin" hook (see _configure_sqlite).
_SQLITE_BEGIN_OPTION: Final = "hpceval_sqlite_begin"

# JSON has no NaN or infinities (PostgreSQL's json type rejects Python's extension), so a
# non-finite float is written as {"$float": "nan" | "inf" | "-inf"} and turned back on reading.
_NON_FINITE_FLOAT_KEY: Final = "$float"

EXECUTION_RUNNING: Final = "running"  # executions.status while the command has not ended


class CaseStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


# Facts of an Environment copied into their own indexed columns, so that runs can be selected
# by CPU, hypervisor or MPI without reading JSON: column -> dotted path into the facts that
# hpceval.provenance.collect_environment gathers (a missing one is NULL).
INDEXED_FACTS: Final[Mapping[str, str]] = {
    "cpu_model": "cpu.model",
    "hypervisor": "virtualization.kind",
    "mpi_implementation": "mpi.implementation",
    "mpi_version": "mpi.version",
    "hpceval_version": "hpceval.version",
}

# Upgrades of an older schema: MIGRATIONS[n] turns a version-n database into version n + 1.
# They run in order, in the transaction that opens the database.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}


# Stable constraint names, so that a future migration can name what it alters on both dialects.
metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

platforms = sa.Table(
    "platforms",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("config_hash", sa.String(64), nullable=False),  # sha256 of the canonical JSON
    sa.UniqueConstraint("name", "config_hash"),
)

environments = sa.Table(
    "environments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("fingerprint", sa.Text, nullable=False, unique=True),
    sa.Column("facts", sa.JSON, nullable=False),
    *(sa.Column(column, sa.Text, nullable=True, index=True) for column in INDEXED_FACTS),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),  # uuid4: survives merging stores
    sa.Column("suite_name", sa.Text, nullable=False),
    sa.Column("suite_config", sa.JSON, nullable=False),
    sa.Column("platform_id", sa.Integer, sa.ForeignKey("platforms.id"), nullable=False),
    sa.Column("environment_id", sa.Integer, sa.ForeignKey("environments.id"), nullable=False),
    sa.Column("launcher", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("ended", sa.Float, nullable=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("hpceval_version", sa.Text, nullable=False),
    sa.Column("git_revision", sa.Text, nullable=True),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("note", sa.Text, nullable=True),
)

run_cases = sa.Table(
    "run_cases",
    metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("case_key", sa.Text, primary_key=True),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("description", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.UniqueConstraint("run_id", "ordinal"),
)

executions = sa.Table(
    "executions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, nullable=False, index=True),
    sa.Column("case_key", sa.Text, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("argv", sa.JSON, nullable=False),
    sa.Column("env", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("exit_code", sa.Integer, nullable=True),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("ended", sa.Float, nullable=True),
    sa.Column("stdout_tail", sa.Text, nullable=False, default=""),
    sa.Column("stderr_tail", sa.Text, nullable=False, default=""),
    sa.Column("error", sa.Text, nullable=False, default=""),
    # An execution belongs to a case of its run, not merely to the run.
    sa.ForeignKeyConstraint(["run_id", "case_key"], ["run_cases.run_id", "run_cases.case_key"]),
)

measurements = sa.Table(
    "measurements",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, nullable=False),
    sa.Column("execution_id", sa.Integer, sa.ForeignKey("executions.id"), nullable=True),
    sa.Column("case_key", sa.Text, nullable=False),
    sa.Column("point_key", sa.Text, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("unit", sa.String(16), nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("statistic", sa.String(16), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("statistics", sa.JSON(none_as_null=True), nullable=True),
    sa.Column("samples", sa.JSON, nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.ForeignKeyConstraint(["run_id", "case_key"], ["run_cases.run_id", "run_cases.case_key"]),
    # Serves "everything of a run" (prefix) and completed_points (the whole key).
    sa.Index("ix_measurements_run_point", "run_id", "case_key", "point_key"),
    sa.Index("ix_measurements_benchmark_metric", "benchmark", "metric"),
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
class StoredMeasurement:
    id: int
    run_id: int
    execution_id: int | None
    case_key: str
    point_key: str
    created: float
    measurement: Measurement


def database_url(url_or_path: str | None) -> URL:
    """The SQLAlchemy URL for a path or URL; PostgreSQL URLs get the psycopg 3 driver."""
    if url_or_path is None:
        return sa.make_url(DEFAULT_URL)
    if "://" not in url_or_path:
        return URL.create("sqlite", database=url_or_path)
    try:
        url = sa.make_url(url_or_path)
    except sa.exc.ArgumentError as exc:
        raise UserError(f"not a database URL ({exc})", source=url_or_path) from None
    if url.drivername in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    if url.drivername in ("sqlite", "postgresql+psycopg"):
        return url
    raise UserError(
        "unsupported database; give a file path, sqlite:///FILE or postgresql://HOST/DATABASE",
        source=url.render_as_string(hide_password=True),
    )


def open_store(
    url_or_path: str | None = None,
    *,
    create: bool = True,
    clock: Callable[[], float] = time.time,
) -> Store:
    """Open (and, if empty and `create`, initialise) the results database.

    None means hpceval.db in the current directory; a plain path is an SQLite file.
    With `create=False` a missing SQLite file or an empty database is a UserError (for
    commands that only read, so that a typo does not leave an empty database behind).
    """
    url = database_url(url_or_path)
    shown = url.render_as_string(hide_password=True)
    is_sqlite = url.get_backend_name() == "sqlite"
    # Errors about an SQLite database name its file, as the user typed it.
    source = url.database if is_sqlite and url.database else shown
    if is_sqlite and url.database and url.database != ":memory:":
        path = Path(url.database)
        if not path.exists() and not create:
            raise UserError("no such results database", source=source)
        if not path.parent.is_dir():
            raise UserError(f"directory {path.parent} does not exist", source=source)
    try:
        engine = _create_engine(url)
    except ImportError:
        raise UserError(
            "PostgreSQL needs psycopg: pip install 'hpceval[postgres]'", source=shown
        ) from None
    try:
        _prepare_schema(engine, shown, create=create, clock=clock)
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        raise UserError(_first_line(exc.orig or exc), source=source) from None
    except BaseException:
        engine.dispose()
        raise
    return Store(engine, shown, clock=clock)


class Store:
    """A results database. Every method runs, and commits, its own transaction.

    One Store per process: after a fork, the child must open its own.
    """

    def __init__(self, engine: Engine, url: str, *, clock: Callable[[], float] = time.time):
        self.url = url
        self._engine = engine
        self._writer = _writer(engine)
        self._clock = clock

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- writes ---------------------------------------------------------------------------

    def add_platform(self, name: str, config: Mapping[str, Any]) -> int:
        """The id of this (name, config), added if new."""
        encoded = _to_json(config)
        canonical = json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        config_hash = hashlib.sha256(canonical.encode()).hexdigest()
        return self._insert_or_get(
            platforms,
            {"name": name, "config": encoded, "config_hash": config_hash},
            (platforms.c.name == name) & (platforms.c.config_hash == config_hash),
        )

    def add_environment(self, env: Environment) -> int:
        """The id of this environment, added if its fingerprint is new."""
        values: dict[str, Any] = {"fingerprint": env.fingerprint, "facts": _to_json(env.facts)}
        for column, path in INDEXED_FACTS.items():
            values[column] = _fact(env.facts, path)
        return self._insert_or_get(
            environments, values, environments.c.fingerprint == env.fingerprint
        )

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
            run_id = _inserted_id(
                conn.execute(
                    runs.insert().values(
                        uid=str(uuid.uuid4()),
                        suite_name=suite_name,
                        suite_config=_to_json(suite_config),
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
                            "description": _to_json(description),
                            "status": CaseStatus.PENDING.value,
                        }
                        for ordinal, (case_key, benchmark, description) in enumerate(cases)
                    ],
                )
        return run_id

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
            return _inserted_id(
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
                    stdout_tail=record.stdout_tail,
                    stderr_tail=record.stderr_tail,
                    error=record.error,
                )
            )
            if result.rowcount == 0:
                raise ValueError(
                    f"no execution {execution_id} of {record.benchmark} case {record.case_key}"
                    f" in {self.url}"
                )

    def set_case_status(self, run_id: int, case_key: str, status: str) -> None:
        """Set a case's status: a CaseStatus value (pending, done, failed)."""
        checked = CaseStatus(status)
        with self._writer.begin() as conn:
            result = conn.execute(
                run_cases.update()
                .where(run_cases.c.run_id == run_id, run_cases.c.case_key == case_key)
                .values(status=checked.value)
            )
            if result.rowcount == 0:
                raise ValueError(f"run {run_id} in {self.url} has no case {case_key!r}")

    def add_measurement(
        self,
        run_id: int,
        execution_id: int | None,
        case_key: str,
        point_key: str,
        m: Measurement,
    ) -> int:
        """Store one measurement; it is committed when this returns."""
        statistics = None if m.statistics is None else _to_json(m.statistics.to_dict())
        with self._writer.begin() as conn:
            return _inserted_id(
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
                        parameters=_to_json(m.parameters),
                        statistics=statistics,
                        samples=_to_json(list(m.samples)),
                        details=_to_json(m.details),
                        origin=m.origin.value,
                        created=self._clock(),
                    )
                )
            )

    def mark_dead_runs_interrupted(
        self, *, host: str, is_alive: Callable[[int], bool]
    ) -> list[int]:
        """Runs left 'running' on this host by a process that no longer exists → interrupted.

        Their executions still 'running' become interrupted too. The end time recorded is the
        run's last sign of life (its latest execution or measurement), not the time it was found.
        Returns the ids of the runs marked.
        """
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

    # --- reads ----------------------------------------------------------------------------

    def run(self, run_id: int) -> RunRow:
        with self._engine.connect() as conn:
            row = conn.execute(_run_query().where(runs.c.id == run_id)).one_or_none()
        if row is None:
            raise self._no_run(run_id)
        return _run_row(row)

    def runs(self) -> list[RunRow]:
        """All runs, newest first."""
        with self._engine.connect() as conn:
            rows = conn.execute(_run_query().order_by(*_NEWEST_FIRST)).all()
        return [_run_row(row) for row in rows]

    def latest_run(self, *, statuses: Collection[Status] | None = None) -> RunRow | None:
        """The newest run, or the newest with one of `statuses`; None if there is none."""
        query = _run_query().order_by(*_NEWEST_FIRST).limit(1)
        if statuses is not None:
            query = query.where(runs.c.status.in_([status.value for status in statuses]))
        with self._engine.connect() as conn:
            row = conn.execute(query).one_or_none()
        return None if row is None else _run_row(row)

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

    def completed_points(self, run_id: int) -> set[tuple[str, str]]:
        """(case_key, point_key) pairs of a run that have at least one measurement."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(measurements.c.case_key, measurements.c.point_key)
                .where(measurements.c.run_id == run_id)
                .distinct()
            ).all()
        return {(row.case_key, row.point_key) for row in rows}

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

    def platform_config(self, platform_id: int) -> tuple[str, Mapping[str, Any]]:
        """A platform's name and configuration."""
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(platforms.c.name, platforms.c.config).where(platforms.c.id == platform_id)
            ).one_or_none()
        if row is None:
            raise UserError(f"no platform with id {platform_id}", source=self.url)
        return row.name, _from_json(row.config)

    # --- helpers --------------------------------------------------------------------------

    def _no_run(self, run_id: int) -> UserError:
        return UserError(f"no run with id {run_id} in {self.url}")

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
                return _inserted_id(conn.execute(table.insert().values(**values)))
        except sa.exc.IntegrityError:
            # PostgreSQL: another process inserted the same row between our select and insert
            # (SQLite cannot race here: the write lock is taken at BEGIN).
            with self._engine.connect() as conn:
                return int(conn.execute(select_id).scalar_one())


_NEWEST_FIRST: Final = (runs.c.started.desc(), runs.c.id.desc())


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


def _stored_measurement(row: sa.Row[Any]) -> StoredMeasurement:
    statistics = (
        None if row.statistics is None else Statistics.from_dict(_from_json(row.statistics))
    )
    return StoredMeasurement(
        id=row.id,
        run_id=row.run_id,
        execution_id=row.execution_id,
        case_key=row.case_key,
        point_key=row.point_key,
        created=row.created,
        measurement=Measurement(
            benchmark=row.benchmark,
            metric=row.metric,
            value=row.value,
            unit=row.unit,
            parameters=_from_json(row.parameters),
            samples=tuple(float(sample) for sample in _from_json(row.samples)),
            statistics=statistics,
            statistic=row.statistic,
            origin=Origin(row.origin),
            details=_from_json(row.details),
        ),
    )


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


def _inserted_id(result: sa.CursorResult[Any]) -> int:
    primary_key = result.inserted_primary_key
    if primary_key is None:  # only an executemany() insert has none
        raise RuntimeError("an insert returned no primary key")
    return int(primary_key[0])


def _fact(facts: Mapping[str, Any], dotted_path: str) -> str | None:
    value: Any = facts
    for key in dotted_path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return None if value is None else str(value)


def _to_json(value: Any) -> Any:
    """`value` with tuples as lists and non-finite floats tagged (see _NON_FINITE_FLOAT_KEY)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {_NON_FINITE_FLOAT_KEY: repr(value)}
    if isinstance(value, Mapping):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_to_json(item) for item in value]
    return value


def _from_json(value: Any) -> Any:
    """The inverse of _to_json."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get(_NON_FINITE_FLOAT_KEY), str):
            return float(value[_NON_FINITE_FLOAT_KEY])
        return {key: _from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_json(item) for item in value]
    return value


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _writer(engine: Engine) -> Engine:
    """`engine` (same pool) for write transactions: on SQLite they lock at BEGIN."""
    return engine.execution_options(**{_SQLITE_BEGIN_OPTION: "IMMEDIATE"})


def _create_engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
        _configure_sqlite(engine)
        return engine
    return sa.create_engine(url)


def _configure_sqlite(engine: Engine) -> None:
    """WAL, foreign keys, and explicit BEGIN so that writers take the lock up front.

    WAL lets `hpceval show` read while a campaign writes, and two campaigns write in turn
    (each waiting up to SQLITE_BUSY_TIMEOUT_S). A deferred transaction that reads before it
    writes can fail at once with "database is locked" when another process committed in
    between; write transactions therefore BEGIN IMMEDIATE. synchronous stays FULL: a commit
    survives a power cut, not only a killed process. WAL needs a local filesystem (not NFS).
    """

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Python's sqlite3 would otherwise issue its own BEGIN (always deferred).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(_SQLITE_BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _prepare_schema(engine: Engine, url: str, *, create: bool, clock: Callable[[], float]) -> None:
    """Create the schema in an empty database, migrate an older one, refuse anything else."""
    with _writer(engine).begin() as conn:
        if conn.dialect.name == "postgresql":
            # Two processes opening a fresh database at once would both create the schema.
            conn.execute(
                sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _POSTGRES_SCHEMA_LOCK_KEY}
            )
        tables = set(sa.inspect(conn).get_table_names())
        if not tables:
            if not create:
                raise UserError("holds no hpceval results", source=url)
            metadata.create_all(conn)
            conn.execute(schema_info.insert().values(version=SCHEMA_VERSION, created=clock()))
            return
        if schema_info.name not in tables:
            raise UserError("not an hpceval results database (no schema_info table)", source=url)
        versions = conn.execute(sa.select(schema_info.c.version)).scalars().all()
        if len(versions) != 1:
            raise UserError(
                f"schema_info holds {len(versions)} versions instead of one; not readable",
                source=url,
            )
        version = int(versions[0])
        if version > SCHEMA_VERSION:
            raise UserError(
                f"schema version {version} is newer than this hpceval supports "
                f"({SCHEMA_VERSION}); upgrade hpceval",
                source=url,
            )
        steps = range(version, SCHEMA_VERSION)
        unmigratable = [step for step in steps if step not in MIGRATIONS]
        if unmigratable:
            raise UserError(
                f"schema version {version} is older than this hpceval supports "
                f"({SCHEMA_VERSION}) and there is no migration from version {unmigratable[0]}; "
                "open it with the hpceval that wrote it",
                source=url,
            )
        for step in steps:
            MIGRATIONS[step](conn)
        if version != SCHEMA_VERSION:
            conn.execute(schema_info.update().values(version=SCHEMA_VERSION))
        missing = sorted(set(metadata.tables) - set(sa.inspect(conn).get_table_names()))
        if missing:
            raise UserError(f"damaged hpceval database: missing tables {missing}", source=url)
