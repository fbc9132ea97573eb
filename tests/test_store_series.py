"""Schema version 3: samples stored as float64 bytes, measurements grouped in series, and the
migration of a version-2 database (SQLite: a file version 2 wrote; PostgreSQL: a database
taken back to the version-2 layout), which must read back exactly as the same data written today.
"""

from __future__ import annotations

import math
import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hpceval.analysis.loading import load_frame
from hpceval.errors import UserError
from hpceval.model import Measurement, Origin
from hpceval.store import (
    SCHEMA_VERSION,
    StoredMeasurement,
    database_url,
    decode_samples,
    encode_samples,
    open_store,
    portable_samples,
    samples_from_portable,
)
from hpceval.store import migrations as store_migrations
from hpceval.store import samples as store_samples
from tests.old_schemas import schema_2_database
from tests.test_frame_bulk import assert_same_frame, fill_mixed, measurement

pytest_plugins = ["tests.postgres_server"]  # postgres_url, empty_database (a real server)


def test_samples_round_trip_bit_for_bit() -> None:
    samples = (0.1 + 0.2, -0.0, 5e-324, 1.7976931348623157e308, math.inf, -math.inf, 3.0)
    data = encode_samples(samples)
    assert data == struct.pack("<7d", *samples)  # float64 little-endian, one after the other
    assert decode_samples(data) == samples
    assert math.isnan(decode_samples(encode_samples([math.nan]))[0])
    assert decode_samples(b"") == () and encode_samples([]) == b""
    with pytest.raises(ValueError, match="12 bytes is not a whole number of float64 values"):
        decode_samples(b"\0" * 12)


def test_portable_samples_are_tagged_json_and_come_back() -> None:
    data = encode_samples([1.5, math.nan, math.inf])
    carried = portable_samples(data)
    assert carried == [1.5, {"$float": "nan"}, {"$float": "inf"}]
    assert samples_from_portable(carried) == data
    assert samples_from_portable([1, 2]) == encode_samples([1.0, 2.0])  # integers: as floats
    with pytest.raises(ValueError, match="found 'x'"):
        samples_from_portable([1.0, "x"])
    with pytest.raises(ValueError, match="found True"):
        samples_from_portable([True])
    with pytest.raises(ValueError, match="expected a list of numbers"):
        samples_from_portable("1.0")


def kinds_of(measurements: list[StoredMeasurement]) -> set[tuple[Any, ...]]:
    return {
        (m.origin, m.benchmark, m.metric, m.unit, m.statistic, repr(sorted(m.parameters.items())))
        for m in (s.measurement for s in measurements)
    }


def series_rows(url: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(database_url(url))
    try:
        with engine.connect() as conn:
            return [
                tuple(row)
                for row in conn.execute(sa.text("SELECT id, benchmark, metric FROM series"))
            ]
    finally:
        engine.dispose()


def test_measurements_of_one_kind_share_a_series(empty_database: str) -> None:
    with open_store(empty_database) as store:
        runs = fill_mixed(store)
        count = len(store.measurements())
        distinct = kinds_of(store.measurements())
        # The same kind again, its parameters given in another order: no new series.
        first = store.measurements(runs["bare"])[0].measurement
        reordered = dict(reversed(list(first.parameters.items())))
        again = Measurement(
            benchmark=first.benchmark, metric=first.metric, value=2.0, unit=first.unit,
            parameters=reordered, samples=(2.0,), statistic=first.statistic,
            origin=first.origin,
        )  # fmt: skip
        store.add_measurement(runs["vm-again"], None, "p2p", "again", again)
    rows = series_rows(empty_database)
    assert len(rows) == len(distinct) < count
    # A store opened afresh (no ids in memory) finds the series in the database.
    with open_store(empty_database) as store:
        store.add_measurement(runs["bare"], None, "p2p", "again", again)
        assert store.series_ids([("measured", "fio", "bw", "MB/s", "mean", {"rw": "read"})]) == [
            len(rows) + 1
        ]
    assert len(series_rows(empty_database)) == len(rows) + 1


def test_a_series_added_meanwhile_by_another_writer_is_reused(
    empty_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race: this writer looked the series up before the other one committed it. The
    # insert must skip the existing key (ON CONFLICT DO NOTHING) and read its id back.
    fields = ("measured", "mpibench", "latency", "us", "mean", {"size": 8})
    with open_store(empty_database) as other, open_store(empty_database) as store:
        (existing,) = other.series_ids([fields])
        looked_up = store_samples._known_series
        calls = []

        def first_lookup_misses(conn: sa.Connection, keys: Any) -> dict[str, int]:
            calls.append(keys)
            return {} if len(calls) == 1 else looked_up(conn, keys)

        monkeypatch.setattr(store_samples, "_known_series", first_lookup_misses)
        assert store.series_ids([fields]) == [existing]
        assert len(calls) == 2
    assert len(series_rows(empty_database)) == 1


def stored(measurements: list[StoredMeasurement]) -> list[tuple[Any, ...]]:
    """What a database holds of each measurement, less its ids and write time."""
    return [(m.case_key, m.point_key, m.measurement) for m in measurements]


def same_measurements(left: list[StoredMeasurement], right: list[StoredMeasurement]) -> bool:
    # Measurements hold NaN samples (NaN != NaN): compared through their repr.
    return repr(stored(left)) == repr(stored(right))


def test_a_schema_2_file_is_migrated_and_reads_as_written_today(tmp_path: Path) -> None:
    old = schema_2_database(tmp_path / "old.db")
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT version FROM schema_info").fetchone() == (2,)
        (text,) = conn.execute("SELECT samples FROM measurements ORDER BY id LIMIT 1").fetchone()
        assert isinstance(text, str) and text.startswith("[")  # JSON, as version 2 wrote it
    with open_store(str(tmp_path / "today.db")) as today:
        fill_mixed(today, official=False)
        expected_frame = load_frame(today)
        expected = today.measurements()
    with open_store(str(old)) as migrated:
        assert migrated.upgraded_from == 2
        assert_same_frame(load_frame(migrated), expected_frame)
        assert same_measurements(migrated.measurements(), expected)
        # and it takes new measurements as a database created today does
        run = migrated.runs()[0].id
        migrated.add_measurement(run, None, "npb", "new", measurement("npb", "time", 2.5, "s",
                                                                      (2.5, 2.6)))  # fmt: skip
        assert migrated.measurements(run)[-1].measurement.samples == (2.5, 2.6)
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT version FROM schema_info").fetchone() == (SCHEMA_VERSION,)
        kinds = {row[0] for row in conn.execute("SELECT typeof(samples) FROM measurements")}
        assert kinds == {"blob"}
        unassigned = "SELECT count(*) FROM measurements WHERE series_id IS NULL"
        assert conn.execute(unassigned).fetchone() == (0,)


def back_to_schema_2(url: str) -> None:
    """Take a database written today back to the version-2 layout: samples as JSON text in
    the samples column, no series_id, no series table (what version 2 created), no
    implementation column (version 4's)."""
    engine = sa.create_engine(database_url(url))
    json_type = sa.JSON().compile(dialect=engine.dialect)
    try:
        with engine.begin() as conn:
            rows = conn.execute(sa.text("SELECT id, samples FROM measurements")).all()
            conn.execute(sa.text(f"ALTER TABLE measurements ADD COLUMN samples_json {json_type}"))
            old = sa.table("measurements", sa.column("id"), sa.column("samples_json", sa.JSON))
            for row_id, data in rows:
                conn.execute(
                    sa.update(old).where(old.c.id == row_id)
                    .values(samples_json=portable_samples(bytes(data)))
                )  # fmt: skip
            conn.execute(sa.text("ALTER TABLE measurements DROP COLUMN samples"))
            conn.execute(sa.text("ALTER TABLE measurements RENAME COLUMN samples_json TO samples"))
            conn.execute(sa.text("ALTER TABLE measurements DROP COLUMN series_id"))
            conn.execute(sa.text("ALTER TABLE measurements DROP COLUMN implementation"))
            conn.execute(sa.text("DROP TABLE series"))
            conn.execute(sa.text("UPDATE schema_info SET version = 2"))
    finally:
        engine.dispose()


def test_a_schema_2_postgresql_database_is_migrated(postgres_url: str) -> None:
    # (SQLite cannot drop a column named in a foreign key, so its version-2 layout is not made
    # this way: the SQLite migration is tested on a file version 2 wrote, above.)
    empty_database = postgres_url
    with open_store(empty_database) as store:
        fill_mixed(store, official=False)
        expected_frame = load_frame(store)
        expected = store.measurements()
    back_to_schema_2(empty_database)
    with open_store(empty_database) as migrated:
        assert migrated.upgraded_from == 2
        frame = load_frame(migrated)
        assert_same_frame(frame, expected_frame)
        assert same_measurements(migrated.measurements(), expected)
    assert len(series_rows(empty_database)) == len(kinds_of(expected))


def test_a_failed_migration_leaves_the_version_2_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = schema_2_database(tmp_path / "old.db")

    def broken(values: Any) -> bytes:
        raise ValueError("expected a list of numbers, found 'x'")

    monkeypatch.setattr(store_migrations, "samples_from_portable", broken)
    with pytest.raises(UserError, match="from version 2 to 3 failed"):
        open_store(str(old))
    monkeypatch.undo()
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT version FROM schema_info").fetchone() == (2,)
        kinds = {row[0] for row in conn.execute("SELECT typeof(samples) FROM measurements")}
        assert kinds == {"text"}
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "series" not in tables
    with open_store(str(old)) as migrated:
        assert migrated.upgraded_from == 2
        assert {m.measurement.origin for m in migrated.measurements()} == {
            Origin.MEASURED,
            Origin.SIMULATED,
        }
