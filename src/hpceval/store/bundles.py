"""Portable runs: a run with everything attached, carried between databases and export files."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hpceval.model import (
    ExecutionStatus,
    Origin,
    Status,
)
from hpceval.store.samples import (
    portable_samples,
    samples_from_portable,
)
from hpceval.store.schema import (
    EXECUTION_RUNNING,
    INDEXED_FACTS,
    CaseStatus,
    calibrations,
    environments,
    executions,
    measurements,
    metadata,
    platforms,
    run_cases,
    runs,
)

# --------------------------------------------------------------------------- portable runs
# A run travels between databases and export files as a RunBundle: every column of the run and
# of what belongs to it, except those that only mean something inside one database (ids and
# references by id). A bundle names its platform by (name, config_hash), its environment by
# fingerprint, and a measurement its execution by its index in the bundle's executions.
# Values are as stored: JSON columns keep the to_json encoding, so nothing is re-encoded;
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

FINALITY: Final = {
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


def _portable(table: sa.Table, row: sa.Row[Any]) -> dict[str, Any]:
    values = row._mapping
    portable = {column.name: values[column.name] for column in portable_columns(table)}
    if table is measurements:
        portable["samples"] = portable_samples(portable["samples"])
    return portable


def read_bundle(conn: Connection, run_id: int) -> RunBundle | None:
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


# --------------------------------------------------------------------------- checking bundles


class InvalidBundle(Exception):
    """Content that does not have the form of a RunBundle's (a file being read: the message
    says where and what)."""


# The values a column may take, where the store gives it a vocabulary.
_VOCABULARY: Final[Mapping[tuple[str, str], frozenset[str]]] = {
    (runs.name, "status"): frozenset(status.value for status in Status),
    (runs.name, "origin"): frozenset(origin.value for origin in Origin),
    (run_cases.name, "status"): frozenset(status.value for status in CaseStatus),
    (executions.name, "status"): frozenset(
        [*(status.value for status in ExecutionStatus), EXECUTION_RUNNING]
    ),
    (measurements.name, "origin"): frozenset(origin.value for origin in Origin),
    (calibrations.name, "source_kind"): frozenset({"platform", "profile"}),
}


def check_fields(value: Any, expected: frozenset[str] | set[str], where: str) -> None:
    """`value` is an object with exactly the fields `expected`."""
    if not isinstance(value, dict):
        raise InvalidBundle(f"{where}: expected an object")
    unknown = sorted(set(value) - expected)
    if unknown:
        raise InvalidBundle(f"{where}: unknown fields {unknown}")
    missing = sorted(expected - set(value))
    if missing:
        raise InvalidBundle(f"{where}: missing fields {missing}")


def checked_row(
    table_name: str, value: Any, where: str, *, extra: Sequence[str] = ()
) -> dict[str, Any]:
    """`value` checked as the portable columns of a row of table `table_name` (plus `extra`
    keys), as a bundle carries it; an InvalidBundle names the field and what is wrong."""
    table = metadata.tables[table_name]
    columns = portable_columns(table)
    if isinstance(value, dict):
        # Columns added since the bundle was written: their server default (a measurement
        # of an older file is hpceval's own).
        value = {**_added_defaults(table, value), **value}
    check_fields(value, {column.name for column in columns} | set(extra), where)
    row: dict[str, Any] = dict(value)
    for column in columns:
        row[column.name] = _column_value(table, column, row[column.name], f"{where}.{column.name}")
    return row


# Columns added to a table after bundles without them were written, with the value those
# bundles mean: table name -> {column: value}.
ADDED_COLUMNS: Final[Mapping[str, Mapping[str, Any]]] = {
    measurements.name: {"implementation": "hpceval"},
}


def _added_defaults(table: sa.Table, value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ADDED_COLUMNS.get(table.name, {}).items() if k not in value}


def _column_value(table: sa.Table, column: sa.Column[Any], value: Any, where: str) -> Any:
    if value is None:
        if column.nullable:
            return None
        raise InvalidBundle(f"{where}: must not be null")
    kind = column.type
    if isinstance(kind, sa.JSON):
        return value  # any JSON value
    if isinstance(kind, sa.LargeBinary):
        # Stored as bytes (the samples), carried as a JSON list of numbers: kept as floats,
        # the form a database gives back, so that a run read here and the file compare equal.
        try:
            return portable_samples(samples_from_portable(value))
        except ValueError as exc:
            raise InvalidBundle(f"{where}: {exc}") from None
    if isinstance(kind, sa.Boolean):
        if not isinstance(value, bool):
            raise InvalidBundle(f"{where}: expected true or false, not {value!r}")
    elif isinstance(kind, sa.Integer):
        if not _is_int(value):
            raise InvalidBundle(f"{where}: expected an integer, not {value!r}")
    elif isinstance(kind, sa.Float):
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
        ):
            raise InvalidBundle(f"{where}: expected a number, not {value!r}")
        value = float(value)
    elif isinstance(kind, sa.String):
        if not isinstance(value, str):
            raise InvalidBundle(f"{where}: expected a string, not {value!r}")
        if kind.length is not None and len(value) > kind.length:
            raise InvalidBundle(f"{where}: longer than {kind.length} characters")
        allowed = _VOCABULARY.get((table.name, column.name))
        if allowed is not None and value not in allowed:
            raise InvalidBundle(f"{where}: {value!r} is not one of {sorted(allowed)}")
    else:  # a column type added to the schema without a check here
        raise AssertionError(f"no check for {table.name}.{column.name} ({kind!r})")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Every bundle table has a check for each of its column types (asserted at import time, so a
# schema change that this module cannot read fails every test at once, not in the field).
for _table in (*BUNDLE_TABLES, calibrations):
    for _column in portable_columns(_table):
        assert isinstance(
            _column.type,
            sa.JSON | sa.LargeBinary | sa.Boolean | sa.Integer | sa.Float | sa.String,
        ), _column
