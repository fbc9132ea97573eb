"""The results store: platforms, environments, runs, executions and measurements.

One SQLAlchemy Core schema that works on SQLite (a file beside the user, the default) and on
PostgreSQL (shared by a team). Every write is its own committed transaction: a measurement is
durable as soon as `Store.add_measurement` returns, so a campaign killed with SIGKILL loses only
the point it was measuring, and `hpceval show` can read while a campaign writes.

The schema carries a version (`SCHEMA_VERSION`, kept in `schema_info`). A database written by a
newer hpceval, or an older one without a migration in `MIGRATIONS`, is refused with a
`UserError`; it is never read as if it had this version's layout.

A database that goes away (server stopped, connection lost, SQLite locked too long) makes any
Store method raise StoreUnavailable, a one-line UserError; what was committed stays committed.

Runs move between databases and files as RunBundles (export_run / import_run; the file format
is hpceval.transfer's): ids are remapped, platforms and environments reused by content, and a
run is recognised by its uid, so importing it twice adds nothing.

Times are Unix seconds (`time.time()`) stored as floats, everywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import multiprocessing
import time
import uuid
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Concatenate, Final, Literal, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt
import orjson
import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine

from hpceval.arrays import run_indices
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
from hpceval.readonly import read_only_reason, read_only_url
from hpceval.workers import fork_workers

SCHEMA_VERSION: Final = 3
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

_SAMPLE_DTYPE: Final = np.dtype("<f8")  # how samples are stored (see encode_samples)

# The engines of this process's Stores not closed yet (see close_open_stores). Weak: a Store
# dropped without close() keeps its engine, and so its connections, alive until the garbage
# collector finds the cycle they sit in; until then this set still reaches it.
_OPEN_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()

# Rows read per slice by Store.measurement_columns.
_READ_SLICE: Final = 100_000
# Below this many rows per worker, the bulk read is not worth forking for.
_ROWS_PER_READ_WORKER: Final = 150_000
READ_WORKERS_ENV: Final = "HPCEVAL_READ_WORKERS"

EXECUTION_RUNNING: Final = "running"  # executions.status while the command has not ended


class CaseStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # its tool was missing; --resume tries it again


class StoreUnavailable(UserError):
    """The database went away or cannot be written (server stopped, connection lost, disk full,
    SQLite locked beyond its busy timeout). What was committed before stays committed."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _outage_is_a_user_error(
    method: Callable[Concatenate[Store, _P], _R],
) -> Callable[Concatenate[Store, _P], _R]:
    """A lost connection or an unusable database ends the command with one line, not a traceback.

    Only operational failures: an IntegrityError or a ProgrammingError is a bug and propagates.
    """

    def wrapper(self: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sa.exc.DBAPIError as exc:
            lost = exc.connection_invalidated or isinstance(
                exc, sa.exc.OperationalError | sa.exc.InterfaceError
            )
            if not lost:
                raise
            raise StoreUnavailable(
                f"the results database is unavailable ({_first_line(exc.orig or exc)}); "
                "what was committed before is kept",
                source=self.url,
            ) from None

    functools.update_wrapper(wrapper, method)
    return wrapper


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

# What a measurement measures, once per distinct (origin, benchmark, metric, unit, statistic,
# parameters) (schema version 3): a million measurements share a few thousand series, and the
# analysis reads a measurement's series id instead of six texts (see measurement_columns).
# The measurement keeps those columns too: they are what queries filter on and what a
# RunBundle carries.
series = sa.Table(
    "series",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("key", sa.String(64), nullable=False, unique=True),  # see series_key
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("unit", sa.String(16), nullable=False),
    sa.Column("statistic", sa.String(16), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
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
    # The raw samples as float64, little-endian, one after the other (schema version 3; JSON
    # before): read in bulk as one array, NaN and infinities as they are.
    sa.Column("samples", sa.LargeBinary, nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id"), nullable=False),
    sa.ForeignKeyConstraint(["run_id", "case_key"], ["run_cases.run_id", "run_cases.case_key"]),
    # Serves "everything of a run" (prefix) and completed_points (the whole key).
    sa.Index("ix_measurements_run_point", "run_id", "case_key", "point_key"),
    sa.Index("ix_measurements_benchmark_metric", "benchmark", "metric"),
)

# SimGrid SMPI calibrations (schema version 2; see hpceval.simulate.calibrate): the fitted
# network factors and host speed of a simulated platform, the residuals per message size
# against the measured (or published) curve they were fitted on, and where that curve came
# from. Simulated runs name the calibration they used by uid (in their suite_config).
calibrations = sa.Table(
    "calibrations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),
    # Same key = same inputs (platform or profile, source curves, SimGrid, options): reusable.
    sa.Column("key", sa.String(64), nullable=False, index=True),
    sa.Column("platform_name", sa.Text, nullable=False),
    sa.Column("source_kind", sa.String(16), nullable=False),  # platform | profile
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("source_run_ids", sa.JSON, nullable=False),
    sa.Column("simgrid_version", sa.Text, nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("residuals", sa.JSON, nullable=False),
    sa.Column("max_residual", sa.Float, nullable=False),
    sa.Column("tolerance", sa.Float, nullable=False),
    sa.Column("iterations", sa.Integer, nullable=False),
    sa.Column("converged", sa.Boolean, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


def _add_calibrations_table(conn: Connection) -> None:
    """Schema 1 -> 2: the calibrations table (nothing else changed)."""
    calibrations.create(conn, checkfirst=True)


MIGRATIONS[1] = _add_calibrations_table

# --------------------------------------------------------------------------- samples, series

# Measurements converted per slice by the schema 2 -> 3 migration.
_MIGRATION_SLICE: Final = 20_000
# Keys per `IN (...)` list when series are looked up.
_SERIES_LOOKUP_SLICE: Final = 500

# What a series is: (origin, benchmark, metric, unit, statistic, parameters as _to_json
# encodes them).
SeriesFields = tuple[str, str, str, str, str, Any]


def encode_samples(samples: Sequence[float] | npt.NDArray[np.float64]) -> bytes:
    """The stored form of samples: float64 little-endian, one after the other."""
    return np.asarray(samples, dtype=_SAMPLE_DTYPE).tobytes()


def decode_samples(data: bytes | memoryview) -> tuple[float, ...]:
    """The samples of their stored form (see encode_samples)."""
    if len(data) % _SAMPLE_DTYPE.itemsize:
        raise ValueError(f"samples: {len(data)} bytes is not a whole number of float64 values")
    return tuple(np.frombuffer(data, dtype=_SAMPLE_DTYPE).tolist())


def portable_samples(data: bytes | memoryview) -> list[Any]:
    """Stored samples as a RunBundle carries them: a JSON list (non-finite values tagged)."""
    encoded: list[Any] = _to_json(list(decode_samples(data)))
    return encoded


def samples_from_portable(value: Any) -> bytes:
    """The stored form of a bundle's samples (a JSON list of numbers, non-finite tagged); a
    ValueError names what is not a number."""
    if not isinstance(value, list):
        raise ValueError(f"expected a list of numbers, not {value!r}")
    floats = []
    for item in _from_json(value):
        if not isinstance(item, int | float) or isinstance(item, bool):
            raise ValueError(f"expected a list of numbers, found {item!r}")
        floats.append(float(item))
    return encode_samples(floats)


def series_key(fields: SeriesFields) -> str:
    """sha256 of the canonical JSON of a series' fields: the same series in any database."""
    return hashlib.sha256(_canonical(list(fields)).encode()).hexdigest()


def _series_of(values: Mapping[str, Any]) -> SeriesFields:
    """The series of a measurements row (its values as stored or as a bundle carries them)."""
    return (values["origin"], values["benchmark"], values["metric"], values["unit"],
            values["statistic"], values["parameters"])  # fmt: skip


def _series_ids(conn: Connection, wanted: Mapping[str, SeriesFields]) -> dict[str, int]:
    """The id of each series (by key), added to the series table where it is not there.

    Safe against another writer adding the same series at the same time: the insert skips
    keys that exist (ON CONFLICT DO NOTHING, on both dialects), then every id is read back.
    """
    found = _known_series(conn, list(wanted))
    missing = [key for key in wanted if key not in found]
    if missing:
        insert: Any
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        columns = ("origin", "benchmark", "metric", "unit", "statistic", "parameters")
        conn.execute(
            insert(series).on_conflict_do_nothing(index_elements=["key"]),
            [{"key": key, **dict(zip(columns, wanted[key], strict=True))} for key in missing],
        )
        found.update(_known_series(conn, missing))
    return found


def _known_series(conn: Connection, keys: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(keys), _SERIES_LOOKUP_SLICE):
        chunk = keys[start : start + _SERIES_LOOKUP_SLICE]
        query = sa.select(series.c.key, series.c.id).where(series.c.key.in_(chunk))
        found.update((str(key), int(id_)) for key, id_ in conn.execute(query))
    return found


def _series_and_binary_samples(conn: Connection) -> None:
    """Schema 2 -> 3: the series table, each measurement's series_id, and the samples from
    JSON text to float64 bytes (a column replaced: added, filled, the old one dropped)."""
    series.create(conn)
    binary = sa.LargeBinary().compile(dialect=conn.dialect)
    conn.execute(sa.text("ALTER TABLE measurements ADD COLUMN series_id INTEGER "
                         "REFERENCES series (id)"))  # fmt: skip
    conn.execute(sa.text(f"ALTER TABLE measurements ADD COLUMN samples_binary {binary}"))
    old = sa.table(
        "measurements",
        *(sa.column(name) for name in ("id", "origin", "benchmark", "metric", "unit",
                                       "statistic", "series_id", "samples_binary")),
        sa.column("parameters", sa.JSON),
        sa.column("samples", sa.JSON),
    )  # fmt: skip
    update = (
        sa.update(old)
        .where(old.c.id == sa.bindparam("row_id"))
        .values(series_id=sa.bindparam("row_series"), samples_binary=sa.bindparam("row_samples"))
    )
    last = 0
    while True:
        rows = conn.execute(
            sa.select(old.c.id, old.c.origin, old.c.benchmark, old.c.metric, old.c.unit,
                      old.c.statistic, sa.cast(old.c.parameters, sa.Text),
                      sa.cast(old.c.samples, sa.Text))
            .where(old.c.id > last)
            .order_by(old.c.id)
            .limit(_MIGRATION_SLICE)
        ).all()  # fmt: skip
        if not rows:
            break
        parameters = decode_json_texts([row[6] for row in rows], tagged=True)
        samples = decode_json_texts([row[7] for row in rows], tagged=True)
        fields = [(*row[1:6], p) for row, p in zip(rows, parameters, strict=True)]
        keys = [series_key(f) for f in fields]
        ids = _series_ids(conn, dict(zip(keys, fields, strict=True)))
        conn.execute(
            update,
            [
                {"row_id": row[0], "row_series": ids[key],
                 "row_samples": samples_from_portable(values)}
                for row, key, values in zip(rows, keys, samples, strict=True)
            ],
        )  # fmt: skip
        last = rows[-1][0]
    conn.execute(sa.text("ALTER TABLE measurements DROP COLUMN samples"))
    conn.execute(sa.text("ALTER TABLE measurements RENAME COLUMN samples_binary TO samples"))
    if conn.dialect.name == "postgresql":
        # (SQLite cannot add NOT NULL to a column; hpceval never writes a NULL there.)
        conn.execute(sa.text("ALTER TABLE measurements ALTER COLUMN samples SET NOT NULL, "
                             "ALTER COLUMN series_id SET NOT NULL"))  # fmt: skip


MIGRATIONS[2] = _series_and_binary_samples


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


# What a measurement is, less its run, value and samples: (platform name, origin, benchmark,
# metric, unit, statistic, parameters as stored JSON text).
MeasurementKind = tuple[str, str, str, str, str, str, str]


@dataclass(frozen=True)
class MeasurementColumns:
    """Measurements as columns, rows in (run id, measurement id) order.

    The set-oriented read behind the analysis frame (`Store.measurement_columns`): no
    Measurement objects are built. Row i has run `run_id[i]`, value `value[i]`,
    `sample_counts[i]` samples (0: stored without), which follow those of the rows before it
    in `samples`, and the kind `kinds[kind[i]]`: each distinct kind (a few thousand for a
    million rows) is held once.
    """

    run_id: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]
    sample_counts: npt.NDArray[np.int64]
    samples: npt.NDArray[np.float64]
    kind: npt.NDArray[np.int64]
    kinds: list[MeasurementKind]

    def __len__(self) -> int:
        return len(self.run_id)


@dataclass(frozen=True)
class _RowsRead:
    """Rows of the bulk read as arrays: run, value, series id, bytes of samples per row, and
    the rows' sample bytes end to end."""

    run_id: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]
    series_id: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    data: bytes


# The id ranges of the bulk read in progress, for the forked workers to read by index (they
# inherit the Store and the queries; only an index goes out, only arrays come back).
_READS: list[tuple[Store, sa.Select[Any]]] = []


def read_workers() -> int:
    """$HPCEVAL_READ_WORKERS, else the CPUs this process may run on (1 without fork)."""
    return fork_workers(READ_WORKERS_ENV)


def _read_range_in_worker(index: int) -> _RowsRead:
    store, query = _READS[index]
    # The parent's pooled connections are not this process's to use (nor to close).
    store._engine.dispose(close=False)
    return store._read_range(query)


def close_open_stores() -> None:
    """Close every Store of this process not closed yet (before a process ends without the
    interpreter's clean-up: SQLite then checkpoints and removes its write-ahead log)."""
    for engine in list(_OPEN_ENGINES):
        engine.dispose()
    _OPEN_ENGINES.clear()


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


def shown_url(url: URL) -> str:
    """`url` as users write it: postgresql://… (the driver is hpceval's business), no password."""
    plain = url.set(drivername="postgresql") if url.drivername == "postgresql+psycopg" else url
    return plain.render_as_string(hide_password=True)


def open_store(
    url_or_path: str | None = None,
    *,
    create: bool = True,
    read_only: bool = False,
    clock: Callable[[], float] = time.time,
) -> Store:
    """Open (and, if empty and `create`, initialise) the results database.

    None means hpceval.db in the current directory; a plain path is an SQLite file.
    With `create=False` a missing SQLite file or an empty database is a UserError (for
    commands that only read, so that a typo does not leave an empty database behind).
    `read_only` (commands that only read): an SQLite file that cannot be written (read-only
    file system, no write permission) is opened read-only, and can still be read. A file that
    can be written is opened as usual: SQLite then removes its write-ahead log on closing.
    """
    url = database_url(url_or_path)
    shown = shown_url(url)
    is_sqlite = url.get_backend_name() == "sqlite"
    # Errors about an SQLite database name its file, as the user typed it.
    source = url.database if is_sqlite and url.database else shown
    if is_sqlite and url.database and url.database != ":memory:":
        path = Path(url.database)
        if not path.exists() and not create:
            raise UserError("no such results database", source=source)
        if not path.parent.is_dir():
            raise UserError(f"directory {path.parent} does not exist", source=source)
        why = read_only_reason(path) if path.exists() else None
        if why and read_only:
            url = read_only_url(path)
        elif why:  # refused before SQLite creates its log beside the file
            raise UserError(f"read-only: {why}; commands that only read it work", source=source)
    try:
        engine = _create_engine(url)
    except ImportError:
        raise UserError(
            "PostgreSQL needs psycopg: pip install 'hpceval[postgres]'", source=shown
        ) from None
    try:
        upgraded_from = _prepare_schema(engine, shown, create=create, clock=clock)
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        cause = _first_line(exc.orig or exc)
        if is_sqlite and url.database and (why := read_only_reason(Path(source))):
            cause = f"read-only: {why} ({cause}); commands that only read it work"
        raise UserError(cause, source=source) from None
    except BaseException:
        engine.dispose()
        raise
    store = Store(engine, shown, clock=clock)
    store.upgraded_from = upgraded_from
    store.read_only = _read_only(engine)
    return store


class Store:
    """A results database. Every method runs, and commits, its own transaction.

    One Store per process: after a fork, the child must open its own.
    """

    def __init__(self, engine: Engine, url: str, *, clock: Callable[[], float] = time.time):
        self.url = url
        # The schema version this database had before open_store migrated it (None: it did not).
        self.upgraded_from: int | None = None
        self.read_only = False  # an SQLite file opened read-only: writes fail
        self._engine = engine
        self._writer = _writer(engine)
        self._clock = clock
        # Series ids by key, once committed (series rows are never changed or deleted).
        self._series: dict[str, int] = {}
        _OPEN_ENGINES.add(engine)

    def close(self) -> None:
        self._engine.dispose()
        _OPEN_ENGINES.discard(self._engine)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- writes ---------------------------------------------------------------------------

    @_outage_is_a_user_error
    def add_platform(self, name: str, config: Mapping[str, Any]) -> int:
        """The id of this (name, config), added if new."""
        encoded = _to_json(config)
        config_hash = platform_config_hash(encoded)
        return self._insert_or_get(
            platforms,
            {"name": name, "config": encoded, "config_hash": config_hash},
            (platforms.c.name == name) & (platforms.c.config_hash == config_hash),
        )

    @_outage_is_a_user_error
    def add_environment(self, env: Environment) -> int:
        """The id of this environment, added if its fingerprint is new."""
        values: dict[str, Any] = {"fingerprint": env.fingerprint, "facts": _to_json(env.facts)}
        for column, path in INDEXED_FACTS.items():
            values[column] = _fact(env.facts, path)
        return self._insert_or_get(
            environments, values, environments.c.fingerprint == env.fingerprint
        )

    @_outage_is_a_user_error
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

    @_outage_is_a_user_error
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

    @_outage_is_a_user_error
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

    @_outage_is_a_user_error
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

    @_outage_is_a_user_error
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

    @_outage_is_a_user_error
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

    @_outage_is_a_user_error
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
        parameters = _to_json(m.parameters)
        fields = (m.origin.value, m.benchmark, m.metric, m.unit, m.statistic, parameters)
        key = series_key(fields)
        with self._writer.begin() as conn:
            series_id = self._series.get(key) or _series_ids(conn, {key: fields})[key]
            measurement_id = _inserted_id(
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
                        details=_to_json(m.details),
                        origin=m.origin.value,
                        created=self._clock(),
                        series_id=series_id,
                    )
                )
            )
        self._series[key] = series_id
        return measurement_id

    @_outage_is_a_user_error
    def series_ids(self, fields: Sequence[SeriesFields]) -> list[int]:
        """The series id of each (origin, benchmark, metric, unit, statistic, parameters),
        added where it is new (for writers that insert measurement rows in bulk)."""
        keyed = [(series_key(f), f) for f in fields]
        unknown = {key: f for key, f in keyed if key not in self._series}
        if unknown:
            with self._writer.begin() as conn:
                self._series.update(_series_ids(conn, unknown))
        return [self._series[key] for key, _ in keyed]

    @_outage_is_a_user_error
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

    # --- reads ----------------------------------------------------------------------------

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
    def measurement_columns(
        self,
        *,
        run_ids: Collection[int] | None = None,
        platform_names: Collection[str] | None = None,
        benchmark: str | None = None,
        metric: str | None = None,
    ) -> MeasurementColumns:
        """Every measurement of the given runs / platforms / benchmark / metric (None: any), as
        columns, in one query: the filters are SQL's.

        Rows come in (run id, measurement id) order, the order of `measurements(run)` for each
        run in turn. Each row is read as four values (run, value, samples bytes, series id);
        what the series and runs say (the kind) is read once per series and per run. A million
        rows take a second or two rather than the minutes that building a Measurement per row
        takes.
        """
        query = sa.select(
            measurements.c.run_id,
            measurements.c.value,
            measurements.c.samples,
            measurements.c.series_id,
        ).order_by(measurements.c.id)  # storage order; runs are put in order below, stably
        if run_ids is not None:
            query = query.where(measurements.c.run_id.in_(sorted(set(run_ids))))
        if platform_names is not None:
            of_platforms = (
                sa.select(runs.c.id)
                .join(platforms, runs.c.platform_id == platforms.c.id)
                .where(platforms.c.name.in_(sorted(set(platform_names))))
            )
            query = query.where(measurements.c.run_id.in_(of_platforms))
        if benchmark is not None:
            query = query.where(measurements.c.benchmark == benchmark)
        if metric is not None:
            query = query.where(measurements.c.metric == metric)
        parts = self._read_rows(query)
        # Runs and series are read after the rows (which workers may read on connections of
        # their own): neither is ever deleted, so every row read finds its run and series.
        with self._engine.connect() as conn:
            run_platform = {
                int(row[0]): str(row[1])
                for row in conn.execute(
                    sa.select(runs.c.id, platforms.c.name).join(
                        platforms, runs.c.platform_id == platforms.c.id
                    )
                )
            }
            described = {
                int(row[0]): tuple(row[1:])
                for row in conn.execute(
                    sa.select(series.c.id, series.c.origin, series.c.benchmark, series.c.metric,
                              series.c.unit, series.c.statistic,
                              sa.cast(series.c.parameters, sa.Text))
                )
            }  # fmt: skip
        run_ids_read = _joined([p.run_id for p in parts], np.int64)
        sizes = _joined([p.sizes for p in parts], np.int64)
        if (sizes % _SAMPLE_DTYPE.itemsize).any():
            raise ValueError("measurements: stored samples that are not whole float64 values")
        flat = np.frombuffer(b"".join(p.data for p in parts), dtype=_SAMPLE_DTYPE).astype(
            np.float64
        )
        counts = sizes // _SAMPLE_DTYPE.itemsize
        value = _joined([p.value for p in parts], np.float64)
        series_ids = _joined([p.series_id for p in parts], np.int64)
        # A kind is (platform, series): the run's platform by code, then both codes in one.
        names = sorted(set(run_platform.values()))
        runs_known = np.array(sorted(run_platform), dtype=np.int64)
        platform_code = np.array([names.index(run_platform[int(r)]) for r in runs_known],
                                 dtype=np.int64)  # fmt: skip
        per_platform = max(described, default=0) + 1
        combined = (
            platform_code[np.searchsorted(runs_known, run_ids_read)] * per_platform + series_ids
        )
        distinct, kind = np.unique(combined, return_inverse=True)
        kinds: list[MeasurementKind] = [
            (names[int(code) // per_platform], *described[int(code) % per_platform])
            for code in distinct
        ]
        kind = kind.astype(np.int64).reshape(-1)
        if len(run_ids_read) and (np.diff(run_ids_read) < 0).any():
            # Runs interleaved in storage (a run resumed after another, an import): a stable
            # sort by run keeps the measurement ids in order within each run.
            order = np.argsort(run_ids_read, kind="stable")
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            flat = flat[run_indices(starts[order], counts[order])]
            run_ids_read, value, counts, kind = (
                run_ids_read[order],
                value[order],
                counts[order],
                kind[order],
            )
        return MeasurementColumns(run_ids_read, value, counts, flat, kind, kinds)

    def _read_rows(self, query: sa.Select[Any]) -> list[_RowsRead]:
        """The (run, value, samples, series) rows of `query`, in id order, as arrays.

        A large table is read in id ranges by forked worker processes, one connection each
        (a million rows: ~2 s of building Python rows, which run in parallel that way);
        a small one, or where there is no fork, here.
        """
        bounds = query.with_only_columns(
            sa.func.min(measurements.c.id), sa.func.max(measurements.c.id)
        ).order_by(None)  # the ids the filters select: one run of a large table is read here
        with self._engine.connect() as conn:
            low, high = conn.execute(bounds).one()
        workers = 1 if low is None or not self._reopenable() else min(
            read_workers(), max(1, (int(high) - int(low) + 1) // _ROWS_PER_READ_WORKER)
        )  # fmt: skip
        if workers <= 1:
            return [self._read_range(query)]
        edges = np.linspace(int(low), int(high) + 1, workers + 1).astype(np.int64).tolist()
        ranges = [
            query.where(measurements.c.id >= start, measurements.c.id < end)
            for start, end in itertools.pairwise(edges)
        ]
        _READS[:] = [(self, r) for r in ranges]
        try:
            with ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("fork")
            ) as pool:
                return list(pool.map(_read_range_in_worker, range(len(ranges))))
        except (BrokenProcessPool, OSError):
            # A worker lost (killed, out of memory), or no process could be started: read
            # here; an error of the database itself is raised here as it is.
            return [self._read_range(r) for r in ranges]
        finally:
            _READS.clear()

    def _reopenable(self) -> bool:
        """Whether another connection sees this database (not an in-memory SQLite one)."""
        url = self._engine.url
        if url.get_backend_name() != "sqlite":
            return True
        database = url.database or ""
        return database not in ("", ":memory:") and "mode=memory" not in str(url)

    def _read_range(self, query: sa.Select[Any]) -> _RowsRead:
        run_parts: list[npt.NDArray[np.int64]] = []
        value_parts: list[npt.NDArray[np.float64]] = []
        series_parts: list[npt.NDArray[np.int64]] = []
        count_parts: list[npt.NDArray[np.int64]] = []
        data_parts: list[bytes] = []
        with self._engine.connect() as conn:
            # On the driver's own cursor (a server-side one on PostgreSQL), in slices: plain
            # tuples, without the SQLAlchemy Row built around each (a third of the time). The
            # filters are numbers and names, written into the SQL by the dialect's quoting.
            sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
            driver = conn.connection.driver_connection
            if driver is None:
                raise RuntimeError("no database connection")
            postgres = conn.dialect.name == "postgresql"
            cursor = driver.cursor(name="hpceval_bulk_read") if postgres else driver.cursor()
            try:
                cursor.execute(sql)
                while rows := cursor.fetchmany(_READ_SLICE):
                    slice_runs, slice_values, slice_data, slice_series = zip(*rows, strict=True)
                    run_parts.append(np.array(slice_runs, dtype=np.int64))
                    value_parts.append(np.array(slice_values, dtype=np.float64))
                    series_parts.append(np.array(slice_series, dtype=np.int64))
                    count_parts.append(
                        np.fromiter(map(len, slice_data), dtype=np.int64, count=len(slice_data))
                    )
                    data_parts.append(b"".join(slice_data))
            finally:
                cursor.close()
        return _RowsRead(
            _joined(run_parts, np.int64),
            _joined(value_parts, np.float64),
            _joined(series_parts, np.int64),
            _joined(count_parts, np.int64),
            b"".join(data_parts),
        )

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

    # --- SMPI calibrations ------------------------------------------------------------------

    @_outage_is_a_user_error
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
            calibration_id = _inserted_id(
                conn.execute(
                    calibrations.insert().values(
                        uid=uid,
                        key=key,
                        platform_name=platform_name,
                        source_kind=source_kind,
                        source=source,
                        source_run_ids=list(source_run_ids),
                        simgrid_version=simgrid_version,
                        parameters=_to_json(parameters),
                        residuals=_to_json(list(residuals)),
                        max_residual=max_residual,
                        tolerance=tolerance,
                        iterations=iterations,
                        converged=converged,
                        created=self._clock(),
                    )
                )
            )
        return self.calibration(calibration_id)

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

    # --- portable runs (see RunBundle; hpceval.transfer writes them to files) -------------

    @_outage_is_a_user_error
    def select_runs(self, selection: Sequence[str] | None = None) -> list[int]:
        """Ids of the runs named by id, uid or a unique uid prefix (8+ characters); all runs,
        oldest first, when `selection` is None. An unknown name is a UserError."""
        with self._engine.connect() as conn:
            rows = conn.execute(sa.select(runs.c.id, runs.c.uid).order_by(runs.c.id)).all()
        if selection is None:
            return [row.id for row in rows]
        ids = {row.id for row in rows}
        chosen: list[int] = []
        for name in selection:
            name = name.strip()
            if name.isdigit() and int(name) in ids:
                matches = [int(name)]
            else:
                prefix = len(name) >= 8
                matches = [
                    row.id
                    for row in rows
                    if row.uid == name or (prefix and row.uid.startswith(name))
                ]
            if len(matches) != 1:
                cause = "no run" if not matches else f"{len(matches)} runs"
                raise UserError(f"{cause} with id or uid {name!r}", source=self.url)
            if matches[0] not in chosen:
                chosen.append(matches[0])
        return chosen

    @_outage_is_a_user_error
    def export_run(self, run_id: int) -> RunBundle:
        """A run with everything attached, read from one consistent state of the database
        (a campaign may be writing it meanwhile)."""
        with self._snapshot() as conn:
            bundle = _read_bundle(conn, run_id)
        if bundle is None:
            raise self._no_run(run_id)
        return bundle

    @_outage_is_a_user_error
    def import_run(self, bundle: RunBundle) -> ImportOutcome:
        """Add a run from another database or an export file, all of it or nothing.

        Its platform and environment are reused when one with the same identity is here; new
        ids are given to the run, its executions and measurements. A run already here (same
        uid) is never duplicated: see ImportAction for what happens to it.
        """
        for attempt in range(2):
            try:
                with self._writer.begin() as conn:
                    return _import_bundle(conn, bundle)
            except sa.exc.IntegrityError as exc:
                # PostgreSQL: another process added this run, platform or environment between
                # our look and our insert; the second attempt finds it.
                if attempt:
                    raise UserError(
                        f"run {bundle.uid} cannot be imported ({_first_line(exc.orig or exc)})",
                        source=self.url,
                    ) from None
        raise AssertionError("unreachable")

    def compact(self) -> None:
        """SQLite: fold the write-ahead log into the file and leave WAL mode, so that the file
        alone holds everything (to be copied elsewhere). open_store turns WAL on again."""
        if self._engine.dialect.name != "sqlite":
            return
        self._engine.dispose()  # a pooled connection would keep the log open
        with self._engine.connect() as conn:
            raw: Any = conn.connection.driver_connection
            raw.execute("PRAGMA journal_mode = DELETE")
        self._engine.dispose()

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[Connection]:
        """A read transaction that sees one state of the database throughout."""
        with self._engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ")
            # SQLite (WAL): a transaction's reads all see the state of its first read.
            with conn.begin():
                yield conn

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


# --------------------------------------------------------------------------- portable runs
# A run travels between databases and export files as a RunBundle: every column of the run and
# of what belongs to it, except those that only mean something inside one database (ids and
# references by id). A bundle names its platform by (name, config_hash), its environment by
# fingerprint, and a measurement its execution by its index in the bundle's executions.
# Values are as stored: JSON columns keep the _to_json encoding, so nothing is re-encoded;
# but the samples, stored as bytes, travel as a JSON list (portable_samples).

LOCAL_COLUMNS: Final[Mapping[str, frozenset[str]]] = {
    platforms.name: frozenset({"id"}),
    # The indexed facts are derived from `facts` (INDEXED_FACTS), and derived again on import.
    environments.name: frozenset({"id", *INDEXED_FACTS}),
    runs.name: frozenset({"id", "platform_id", "environment_id"}),
    run_cases.name: frozenset({"run_id"}),
    executions.name: frozenset({"id", "run_id"}),
    # The series is derived from the measurement's own columns, and derived again on import.
    measurements.name: frozenset({"id", "run_id", "execution_id", "series_id"}),
    # A calibration names the runs it was fitted on by uid (CALIBRATION_SOURCE_RUNS) instead.
    calibrations.name: frozenset({"id", "source_run_ids"}),
}
BUNDLE_TABLES: Final = (platforms, environments, runs, run_cases, executions, measurements)
EXECUTION_INDEX: Final = "execution"  # a bundle measurement's reference to its execution
# A bundle calibration's runs it was fitted on, by uid (those of its source_run_ids that are
# runs of the database it comes from), in source_run_ids' order.
CALIBRATION_SOURCE_RUNS: Final = "source_runs"

# What a later copy of a run may change: a resumed run gets a new owner, status and end time
# (and its cases a new status). Every other column of a run is fixed when it is created.
MUTABLE_RUN_COLUMNS: Final = frozenset({"status", "ended", "host", "pid", "note"})

_FINALITY: Final = {
    Status.RUNNING.value: 0,
    Status.INTERRUPTED.value: 1,
    Status.FAILED.value: 2,
    Status.COMPLETED.value: 2,
}


def portable_columns(table: sa.Table) -> list[sa.Column[Any]]:
    """The columns of `table` that a RunBundle carries, in the table's order."""
    local = LOCAL_COLUMNS[table.name]
    return [column for column in table.columns if column.name not in local]


def platform_config_hash(encoded_config: Any) -> str:
    """sha256 of the canonical JSON of a platform's (encoded) configuration."""
    canonical = json.dumps(
        encoded_config, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class RunBundle:
    """One run with everything attached, independent of any database's ids."""

    platform: Mapping[str, Any]  # portable columns of each table (see LOCAL_COLUMNS)
    environment: Mapping[str, Any]
    run: Mapping[str, Any]
    cases: Sequence[Mapping[str, Any]]  # in the suite's order
    executions: Sequence[Mapping[str, Any]]  # in the order they were started
    measurements: Sequence[Mapping[str, Any]]  # in the order they were stored, + EXECUTION_INDEX
    # The SMPI calibration a simulated run names in its suite_config (portable columns +
    # CALIBRATION_SOURCE_RUNS), or None: not a simulated run, or its calibration is not in the
    # database the bundle comes from.
    calibration: Mapping[str, Any] | None = None

    @property
    def uid(self) -> str:
        return str(self.run["uid"])


class ImportAction(StrEnum):
    IMPORTED = "imported"  # the run was not here: added
    SKIPPED = "skipped"  # already here, with everything this copy holds
    UPDATED = "updated"  # here, and this copy is a later state of it (resumed since): completed
    CONFLICT = "conflict"  # here, and the copies disagree: left unchanged


@dataclass(frozen=True)
class ImportOutcome:
    uid: str
    action: ImportAction
    run_id: int  # the run's id in the database imported into
    detail: str
    executions_added: int = 0
    measurements_added: int = 0


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


def _portable(table: sa.Table, row: sa.Row[Any]) -> dict[str, Any]:
    values = row._mapping
    portable = {column.name: values[column.name] for column in portable_columns(table)}
    if table is measurements:
        portable["samples"] = portable_samples(portable["samples"])
    return portable


def _read_bundle(conn: Connection, run_id: int) -> RunBundle | None:
    run = conn.execute(sa.select(runs).where(runs.c.id == run_id)).one_or_none()
    if run is None:
        return None
    platform = conn.execute(sa.select(platforms).where(platforms.c.id == run.platform_id)).one()
    environment = conn.execute(
        sa.select(environments).where(environments.c.id == run.environment_id)
    ).one()
    case_rows = conn.execute(
        sa.select(run_cases).where(run_cases.c.run_id == run_id).order_by(run_cases.c.ordinal)
    ).all()
    execution_rows = conn.execute(
        sa.select(executions).where(executions.c.run_id == run_id).order_by(executions.c.id)
    ).all()
    measurement_rows = conn.execute(
        sa.select(measurements).where(measurements.c.run_id == run_id).order_by(measurements.c.id)
    ).all()
    calibration = _portable_calibration(conn, calibration_reference(_portable(runs, run)))
    index = {row.id: position for position, row in enumerate(execution_rows)}
    bundled: list[dict[str, Any]] = []
    for row in measurement_rows:
        if row.execution_id is not None and row.execution_id not in index:
            raise ValueError(
                f"measurement {row.id} of run {run_id} belongs to execution {row.execution_id}"
                " of another run"
            )
        position = None if row.execution_id is None else index[row.execution_id]
        bundled.append({**_portable(measurements, row), EXECUTION_INDEX: position})
    return RunBundle(
        platform=_portable(platforms, platform),
        environment=_portable(environments, environment),
        run=_portable(runs, run),
        cases=[_portable(run_cases, row) for row in case_rows],
        executions=[_portable(executions, row) for row in execution_rows],
        measurements=bundled,
        calibration=calibration,
    )


def calibration_reference(run: Mapping[str, Any]) -> str | None:
    """The uid of the SMPI calibration a simulated run (its portable row) names in its
    suite_config ({"calibration": {"id": ..., "uid": ...}}), or None."""
    if run.get("origin") != Origin.SIMULATED.value:
        return None
    config = run.get("suite_config")
    named = config.get("calibration") if isinstance(config, Mapping) else None
    if not isinstance(named, Mapping) or "id" not in named:
        return None
    uid = named.get("uid")
    return uid if isinstance(uid, str) and uid else None


def _portable_calibration(conn: Connection, uid: str | None) -> dict[str, Any] | None:
    """The calibration `uid` as a bundle carries it: its runs named by uid, not by id."""
    if uid is None:
        return None
    row = conn.execute(sa.select(calibrations).where(calibrations.c.uid == uid)).one_or_none()
    if row is None:
        return None
    ids = [int(run_id) for run_id in row.source_run_ids]
    uid_of: dict[int, str] = {}
    if ids:
        uid_of = {
            int(found.id): str(found.uid)
            for found in conn.execute(sa.select(runs.c.id, runs.c.uid).where(runs.c.id.in_(ids)))
        }
    return {
        **_portable(calibrations, row),
        CALIBRATION_SOURCE_RUNS: [uid_of[run_id] for run_id in ids if run_id in uid_of],
    }


def _with_local_calibration(conn: Connection, bundle: RunBundle) -> tuple[RunBundle, str]:
    """`bundle` with the calibration it names brought here and named by its id here.

    The calibration is matched by uid, inserted when it is not here and the bundle carries
    it. The run's suite_config then names it by this database's id, or by None where it is not
    here (an id from elsewhere would name another calibration); runs here that name it are
    brought in line (one imported before its calibration gets the new id). Returns the bundle
    and what was done, for the import's detail.
    """
    uid = calibration_reference(bundle.run)
    if uid is None:
        return bundle, ""
    done = ""
    local_id = conn.execute(
        sa.select(calibrations.c.id).where(calibrations.c.uid == uid)
    ).scalar_one_or_none()
    carried = bundle.calibration
    if local_id is None and carried is not None and carried.get("uid") == uid:
        source_uids = list(carried[CALIBRATION_SOURCE_RUNS])
        local_runs: dict[str, int] = {}
        if source_uids:
            local_runs = {
                str(found.uid): int(found.id)
                for found in conn.execute(
                    sa.select(runs.c.id, runs.c.uid).where(runs.c.uid.in_(source_uids))
                )
            }
        local_id = _inserted_id(
            conn.execute(
                calibrations.insert().values(
                    **{k: v for k, v in carried.items() if k != CALIBRATION_SOURCE_RUNS},
                    # Only the source runs that are here can be named (by their id here).
                    source_run_ids=[local_runs[u] for u in source_uids if u in local_runs],
                )
            )
        )
        done = f", calibration {uid[:8]} added as {local_id}"
    simulated = conn.execute(
        sa.select(runs.c.id, runs.c.suite_config).where(runs.c.origin == Origin.SIMULATED.value)
    ).all()
    for found in simulated:
        config = found.suite_config
        named = config.get("calibration") if isinstance(config, Mapping) else None
        if isinstance(named, Mapping) and named.get("uid") == uid and named.get("id") != local_id:
            conn.execute(
                runs.update()
                .where(runs.c.id == found.id)
                .values(suite_config={**config, "calibration": {**named, "id": local_id}})
            )
    config = bundle.run["suite_config"]
    local = {**config, "calibration": {**config["calibration"], "id": local_id}}
    return dataclasses.replace(bundle, run={**bundle.run, "suite_config": local}), done


def _id_of(
    conn: Connection, table: sa.Table, values: Mapping[str, Any], identity: sa.ColumnElement[bool]
) -> int:
    existing = conn.execute(sa.select(table.c.id).where(identity)).scalar_one_or_none()
    if existing is not None:
        return int(existing)
    return _inserted_id(conn.execute(table.insert().values(**values)))


def _import_bundle(conn: Connection, bundle: RunBundle) -> ImportOutcome:
    bundle, calibration_done = _with_local_calibration(conn, bundle)
    existing = conn.execute(
        sa.select(runs.c.id).where(runs.c.uid == bundle.uid)
    ).scalar_one_or_none()
    if existing is not None:
        here = _read_bundle(conn, existing)
        assert here is not None
        outcome = _reconcile(conn, int(existing), here, bundle)
        return dataclasses.replace(outcome, detail=outcome.detail + calibration_done)
    platform = bundle.platform
    platform_id = _id_of(
        conn,
        platforms,
        platform,
        (platforms.c.name == platform["name"])
        & (platforms.c.config_hash == platform["config_hash"]),
    )
    facts = _from_json(bundle.environment["facts"])
    environment = {
        **bundle.environment,
        **{column: _fact(facts, path) for column, path in INDEXED_FACTS.items()},
    }
    environment_id = _id_of(
        conn,
        environments,
        environment,
        environments.c.fingerprint == bundle.environment["fingerprint"],
    )
    run_id = _inserted_id(
        conn.execute(
            runs.insert().values(
                **bundle.run, platform_id=platform_id, environment_id=environment_id
            )
        )
    )
    if bundle.cases:
        conn.execute(run_cases.insert(), [{**case, "run_id": run_id} for case in bundle.cases])
    execution_ids = _insert_executions(conn, run_id, bundle.executions)
    _insert_measurements(conn, run_id, bundle.measurements, lambda index: execution_ids[index])
    return ImportOutcome(
        uid=bundle.uid,
        action=ImportAction.IMPORTED,
        run_id=run_id,
        detail=(
            f"{len(bundle.cases)} cases, {len(bundle.executions)} executions, "
            f"{len(bundle.measurements)} measurements{calibration_done}"
        ),
        executions_added=len(bundle.executions),
        measurements_added=len(bundle.measurements),
    )


def _insert_executions(
    conn: Connection, run_id: int, rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Insert executions in order; their new ids, in the same order."""
    if not rows:
        return []
    result = conn.execute(
        executions.insert().returning(executions.c.id, sort_by_parameter_order=True),
        [{**row, "run_id": run_id} for row in rows],
    )
    return [int(execution_id) for execution_id in result.scalars().all()]


def _insert_measurements(
    conn: Connection,
    run_id: int,
    rows: Sequence[Mapping[str, Any]],
    execution_id: Callable[[int], int],
) -> None:
    """Insert bundle measurements in order; `execution_id` maps an execution index to an id."""
    if not rows:
        return
    fields = [_series_of(row) for row in rows]
    keys = [series_key(f) for f in fields]
    series_ids = _series_ids(conn, dict(zip(keys, fields, strict=True)))
    conn.execute(
        measurements.insert(),
        [
            {
                **{key: value for key, value in row.items() if key != EXECUTION_INDEX},
                "run_id": run_id,
                "execution_id": (
                    None if row[EXECUTION_INDEX] is None else execution_id(row[EXECUTION_INDEX])
                ),
                "samples": samples_from_portable(row["samples"]),
                "series_id": series_ids[key],
            }
            for row, key in zip(rows, keys, strict=True)
        ],
    )


def _execution_key(execution: Mapping[str, Any]) -> tuple[str, float]:
    """What identifies an execution across copies of a run: its case and start time."""
    return execution["case_key"], execution["started"]


def _measurement_keys(bundle: RunBundle) -> list[str]:
    """Each measurement's whole content, its execution named by _execution_key."""
    keys = []
    for measurement in bundle.measurements:
        index = measurement[EXECUTION_INDEX]
        execution = None if index is None else list(_execution_key(bundle.executions[index]))
        keys.append(_canonical({**measurement, EXECUTION_INDEX: execution}))
    return keys


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _covers(
    executions_a: Mapping[tuple[str, float], Mapping[str, Any]],
    measurements_a: Counter[str],
    executions_b: Mapping[tuple[str, float], Mapping[str, Any]],
    measurements_b: Counter[str],
) -> bool:
    """Whether copy A holds everything copy B holds (an execution still running in B may
    have ended in A)."""
    for key, execution in executions_b.items():
        if key not in executions_a:
            return False
        if executions_a[key] != execution and execution["status"] != EXECUTION_RUNNING:
            return False
    return not measurements_b - measurements_a


def _reconcile(conn: Connection, run_id: int, here: RunBundle, there: RunBundle) -> ImportOutcome:
    """A run that is already here meets another copy of itself (`there`).

    The copies must be the same run (every fixed column, platform, environment and planned
    cases equal), or it is a conflict. Executions are matched by case and start time,
    measurements by their whole content. If this database holds everything the other copy
    holds, nothing changes (skipped). If the other copy holds everything this one does and
    more, or the same but further on (a run resumed or marked interrupted since), the run is
    brought up to it (updated): new executions and measurements are added, executions that
    were still running take their recorded end, and the run and case statuses follow. Copies
    that each hold something the other lacks are a conflict: nothing is changed.
    """

    def outcome(
        action: ImportAction, detail: str, added: tuple[int, int] = (0, 0)
    ) -> ImportOutcome:
        return ImportOutcome(there.uid, action, run_id, detail, *added)

    fixed = [column.name for column in portable_columns(runs)]
    differing = [
        name
        for name in fixed
        if name not in MUTABLE_RUN_COLUMNS and here.run[name] != there.run[name]
    ]
    if (here.platform["name"], here.platform["config_hash"]) != (
        there.platform["name"],
        there.platform["config_hash"],
    ):
        differing.append("platform")
    if here.environment["fingerprint"] != there.environment["fingerprint"]:
        differing.append("environment")

    def planned(bundle: RunBundle) -> list[dict[str, Any]]:
        return [{k: v for k, v in case.items() if k != "status"} for case in bundle.cases]

    if planned(here) != planned(there):
        differing.append("cases")
    if differing:
        return outcome(
            ImportAction.CONFLICT,
            f"a run with this uid is here but differs in {', '.join(differing)}; left unchanged",
        )
    here_executions = {_execution_key(e): e for e in here.executions}
    there_executions = {_execution_key(e): e for e in there.executions}
    if len(here_executions) != len(here.executions) or len(there_executions) != len(
        there.executions
    ):
        return outcome(
            ImportAction.CONFLICT,
            "two executions of one case started at the same time; left unchanged",
        )
    there_keys = _measurement_keys(there)
    here_measurements, there_measurements = Counter(_measurement_keys(here)), Counter(there_keys)
    here_has_all = _covers(here_executions, here_measurements, there_executions, there_measurements)
    there_has_all = _covers(
        there_executions, there_measurements, here_executions, here_measurements
    )

    def content(bundle: RunBundle) -> tuple[Any, ...]:
        # (The environment's facts may differ in volatile notes under the same fingerprint.)
        return bundle.run, bundle.cases, bundle.executions, bundle.measurements

    if content(here) == content(there):
        return outcome(ImportAction.SKIPPED, "already here")
    if not there_has_all:
        if here_has_all:
            return outcome(ImportAction.SKIPPED, "already here, with more than this copy")
        return outcome(
            ImportAction.CONFLICT,
            "this copy and the one here each hold executions or measurements the other lacks;"
            " left unchanged",
        )
    ended = [
        key
        for key, execution in here_executions.items()
        if execution["status"] == EXECUTION_RUNNING and there_executions[key] != execution
    ]
    if here_has_all and not ended and not _further_on(here, there):
        return outcome(ImportAction.SKIPPED, "already here (this copy is an earlier state)")

    # `there` is a later state of the run: bring this copy up to it.
    conn.execute(
        runs.update()
        .where(runs.c.id == run_id)
        .values(**{name: there.run[name] for name in MUTABLE_RUN_COLUMNS})
    )
    for case in there.cases:
        conn.execute(
            run_cases.update()
            .where(run_cases.c.run_id == run_id, run_cases.c.case_key == case["case_key"])
            .values(status=case["status"])
        )
    ids = {
        (row.case_key, row.started): row.id
        for row in conn.execute(
            sa.select(executions.c.id, executions.c.case_key, executions.c.started).where(
                executions.c.run_id == run_id
            )
        )
    }
    for execution_key in ended:
        conn.execute(
            executions.update()
            .where(executions.c.id == ids[execution_key])
            .values(**there_executions[execution_key])
        )
    new_executions = [e for e in there.executions if _execution_key(e) not in here_executions]
    ids.update(
        zip(
            map(_execution_key, new_executions),
            _insert_executions(conn, run_id, new_executions),
            strict=True,
        )
    )
    unmatched = here_measurements.copy()
    new_measurements = []
    for measurement, key in zip(there.measurements, there_keys, strict=True):
        if unmatched[key] > 0:
            unmatched[key] -= 1
        else:
            new_measurements.append(measurement)
    _insert_measurements(
        conn,
        run_id,
        new_measurements,
        lambda index: ids[_execution_key(there.executions[index])],
    )
    return outcome(
        ImportAction.UPDATED,
        f"+{len(new_executions)} executions, +{len(new_measurements)} measurements "
        f"(status {here.run['status']} → {there.run['status']})",
        (len(new_executions), len(new_measurements)),
    )


def _further_on(here: RunBundle, there: RunBundle) -> bool:
    """With the same executions and measurements: whether `there` is a later state of the run
    (its status more final, or as final and ended later, or cases settled that are pending here)."""
    here_cases = {case["case_key"]: case["status"] for case in here.cases}
    if any(
        here_cases.get(case["case_key"]) == CaseStatus.PENDING.value
        and case["status"] != CaseStatus.PENDING.value
        for case in there.cases
    ):
        return True

    def position(bundle: RunBundle) -> tuple[int, float]:
        return _FINALITY.get(bundle.run["status"], 0), bundle.run["ended"] or 0.0

    return position(there) > position(here)


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


def _joined(parts: Sequence[npt.NDArray[Any]], dtype: type) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


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


def decode_json_texts(texts: Sequence[str], *, tagged: bool = False) -> list[Any]:
    """The values of many stored JSON texts (as written by this module), decoded in one pass.

    One parse of the texts joined into a JSON array (orjson), instead of a parse per text;
    non-finite floats come back as floats (see _NON_FINITE_FLOAT_KEY), or as their tags
    (the values as _to_json encoded them) with `tagged`.
    """
    if not texts:
        return []
    joined = "[" + ",".join(texts) + "]"
    try:
        values: list[Any] = orjson.loads(joined)
    except orjson.JSONDecodeError:
        # What orjson refuses and the json module accepts (integers beyond 64 bits).
        values = json.loads(joined)
    if not tagged and _NON_FINITE_FLOAT_KEY in joined:
        values = [_from_json(value) for value in values]
    return values


def _text(value: str) -> str:
    """`value` storable in any database: PostgreSQL text cannot hold NUL characters (a crashed
    program's output may contain them)."""
    return value.replace("\x00", "\ufffd")


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _read_only(engine: Engine) -> bool:
    """An SQLite engine opened with mode=ro: setting WAL mode would be a write."""
    return engine.url.query.get("mode") == "ro"


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
            if not _read_only(engine):
                cursor.execute("PRAGMA journal_mode = WAL")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(_SQLITE_BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _prepare_schema(
    engine: Engine, url: str, *, create: bool, clock: Callable[[], float]
) -> int | None:
    """Create the schema in an empty database, migrate an older one, refuse anything else.

    Returns the version an older database had before it was migrated (None if it was not).
    Migrations run in order in one transaction with the version bump: a failure leaves the
    database exactly as it was.
    """
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
            return None
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
            try:
                MIGRATIONS[step](conn)
            except Exception as exc:
                # Leaving the `with` block rolls back every step: the database stays as it was.
                raise UserError(
                    f"upgrading the schema from version {step} to {step + 1} failed "
                    f"({_first_line(exc)}); the database was left unchanged at version {version}",
                    source=url,
                ) from exc
        if version != SCHEMA_VERSION:
            conn.execute(schema_info.update().values(version=SCHEMA_VERSION))
        missing = sorted(set(metadata.tables) - set(sa.inspect(conn).get_table_names()))
        if missing:
            raise UserError(f"damaged hpceval database: missing tables {missing}", source=url)
        return version if version != SCHEMA_VERSION else None
