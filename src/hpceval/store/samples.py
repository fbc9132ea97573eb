"""How values are stored: samples as float64 bytes, JSON with non-finite floats tagged, and
series (what a measurement measures) by key.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hpceval.store.dialect import dialect_of
from hpceval.store.schema import (
    series,
)

# JSON has no NaN or infinities (PostgreSQL's json type rejects Python's extension), so a
# non-finite float is written as {"$float": "nan" | "inf" | "-inf"} and turned back on reading.
_NON_FINITE_FLOAT_KEY: Final = "$float"

SAMPLE_DTYPE: Final = np.dtype("<f8")  # how samples are stored (see encode_samples)

# Keys per `IN (...)` list when series are looked up.
_SERIES_LOOKUP_SLICE: Final = 500

# What a series is: (origin, benchmark, metric, unit, statistic, parameters as to_json
# encodes them).
SeriesFields = tuple[str, str, str, str, str, Any]


def encode_samples(samples: Sequence[float] | npt.NDArray[np.float64]) -> bytes:
    """The stored form of samples: float64 little-endian, one after the other."""
    return np.asarray(samples, dtype=SAMPLE_DTYPE).tobytes()


def decode_samples(data: bytes | memoryview) -> tuple[float, ...]:
    """The samples of their stored form (see encode_samples)."""
    if len(data) % SAMPLE_DTYPE.itemsize:
        raise ValueError(f"samples: {len(data)} bytes is not a whole number of float64 values")
    return tuple(np.frombuffer(data, dtype=SAMPLE_DTYPE).tolist())


def portable_samples(data: bytes | memoryview) -> list[Any]:
    """Stored samples as a RunBundle carries them: a JSON list (non-finite values tagged)."""
    encoded: list[Any] = to_json(list(decode_samples(data)))
    return encoded


def samples_from_portable(value: Any) -> bytes:
    """The stored form of a bundle's samples (a JSON list of numbers, non-finite tagged); a
    ValueError names what is not a number."""
    if not isinstance(value, list):
        raise ValueError(f"expected a list of numbers, not {value!r}")
    floats = []
    for item in from_json(value):
        if not isinstance(item, int | float) or isinstance(item, bool):
            raise ValueError(f"expected a list of numbers, found {item!r}")
        floats.append(float(item))
    return encode_samples(floats)


def series_key(fields: SeriesFields) -> str:
    """sha256 of the canonical JSON of a series' fields: the same series in any database."""
    return hashlib.sha256(canonical_json(list(fields)).encode()).hexdigest()


def series_of(values: Mapping[str, Any]) -> SeriesFields:
    """The series of a measurements row (its values as stored or as a bundle carries them)."""
    return (values["origin"], values["benchmark"], values["metric"], values["unit"],
            values["statistic"], values["parameters"])  # fmt: skip


def series_ids_of(conn: Connection, wanted: Mapping[str, SeriesFields]) -> dict[str, int]:
    """The id of each series (by key), added to the series table where it is not there.

    Safe against another writer adding the same series at the same time: the insert skips
    keys that exist (ON CONFLICT DO NOTHING, on both dialects), then every id is read back.
    """
    found = _known_series(conn, list(wanted))
    missing = [key for key in wanted if key not in found]
    if missing:
        columns = ("origin", "benchmark", "metric", "unit", "statistic", "parameters")
        conn.execute(
            dialect_of(conn).insert_skipping_existing(series, "key"),
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


def to_json(value: Any) -> Any:
    """`value` with tuples as lists and non-finite floats tagged (see _NON_FINITE_FLOAT_KEY)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {_NON_FINITE_FLOAT_KEY: repr(value)}
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    return value


def from_json(value: Any) -> Any:
    """The inverse of to_json."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get(_NON_FINITE_FLOAT_KEY), str):
            return float(value[_NON_FINITE_FLOAT_KEY])
        return {key: from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_json(item) for item in value]
    return value


def decode_json_texts(texts: Sequence[str], *, tagged: bool = False) -> list[Any]:
    """The values of many stored JSON texts (as written by this module), decoded in one pass.

    One parse of the texts joined into a JSON array (orjson), instead of a parse per text;
    non-finite floats come back as floats (see _NON_FINITE_FLOAT_KEY), or as their tags
    (the values as to_json encoded them) with `tagged`.
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
        values = [from_json(value) for value in values]
    return values


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
