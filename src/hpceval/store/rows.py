"""What the Store's reads return: one frozen dataclass per kind of row."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, TypeVar, Union

import sqlalchemy as sa

from hpceval.model import (
    HPCEVAL_IMPLEMENTATION,
    ExecutionStatus,
    Measurement,
    Origin,
    Statistics,
    Status,
)
from hpceval.store.samples import (
    decode_samples,
    from_json,
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


@dataclass(frozen=True)
class DatabaseState:
    """What identifies the measurements a database holds: measurements are only ever inserted
    (no code path updates or deletes one), so its identity (URL, file, creation time) with the
    count and the largest id of its measurements pins every row."""

    url: str  # the engine's URL, no password
    database: str  # the real path of its file (SQLite), else the database's name
    schema_version: int
    created: float
    measurements: int
    last_measurement_id: int  # 0: none


def measurement_from_values(values: Mapping[str, Any] | sa.RowMapping) -> Measurement:
    """The Measurement of a stored measurements row (checks unit, value and statistics)."""
    statistics = values["statistics"]
    return Measurement.from_stored(
        benchmark=values["benchmark"],
        metric=values["metric"],
        value=values["value"],
        unit=values["unit"],
        parameters=from_json(values["parameters"]),
        samples=_samples_of(values["samples"]),
        statistics=None if statistics is None else Statistics.from_dict(from_json(statistics)),
        statistic=values["statistic"],
        origin=Origin(values["origin"]),
        details=from_json(values["details"]),
        # A bundle written before schema version 4 has none: hpceval's own.
        implementation=values.get("implementation") or HPCEVAL_IMPLEMENTATION,
    )


def _samples_of(value: Any) -> tuple[float, ...]:
    """Samples as stored (bytes) or as a bundle carries them (a JSON list)."""
    if isinstance(value, bytes | memoryview):
        return decode_samples(value)
    return tuple(float(sample) for sample in from_json(value))


def run_query() -> sa.Select[Any]:
    return sa.select(runs, platforms.c.name.label("platform_name")).join(
        platforms, runs.c.platform_id == platforms.c.id
    )


_Row = TypeVar("_Row")


def row_reader(
    cls: type[_Row], **computed: Callable[[sa.RowMapping], Any]
) -> Callable[[sa.Row[Any]], _Row]:
    """The function that turns a database row into a `cls` (a dataclass): each field is the
    column of its name, converted as its annotated type says (see _converter); a field in
    `computed` is built from the whole row instead."""
    hints = typing.get_type_hints(cls)
    converters = {
        field.name: _converter(hints[field.name])
        for field in dataclasses.fields(cls)  # type: ignore[arg-type]
        if field.name not in computed
    }

    def read(row: sa.Row[Any]) -> _Row:
        values = row._mapping
        converted = {name: convert(values[name]) for name, convert in converters.items()}
        return cls(**converted, **{name: build(values) for name, build in computed.items()})

    return read


def _same(value: Any) -> Any:
    return value


def _converter(hint: Any) -> Callable[[Any], Any]:
    """How a stored value becomes a field of this type: an enum from its value, a mapping from
    its JSON (non-finite floats untagged), a tuple element by element, a bool from 0/1 (SQLite),
    a value of a Literal as it is, None as None; anything else is already what it should be."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    if hint is bool:
        return bool
    if origin is Mapping:
        return from_json
    if origin is tuple:
        element = int if args[0] is int else _converter(args[0])
        return lambda value: tuple(map(element, value))
    if origin is Union or origin is types.UnionType:
        options = [a for a in args if a is not type(None)]
        literals = [a for a in options if typing.get_origin(a) is Literal]
        literal = {value for a in literals for value in typing.get_args(a)}
        (other,) = (a for a in options if a not in literals)
        inner = _converter(other)
        return lambda value: value if value is None or value in literal else inner(value)
    return _same


read_run_row = row_reader(RunRow)
read_case_row = row_reader(CaseRow)
read_execution_row = row_reader(ExecutionRow)
read_calibration_row = row_reader(CalibrationRow)
read_stored_measurement = row_reader(StoredMeasurement, measurement=measurement_from_values)
