"""Schema versions of the results store: refused newer and unmigrated older databases,
upgrades in order and in one transaction, on SQLite files and a real PostgreSQL server.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from hpceval.errors import UserError
from hpceval.store import SCHEMA_VERSION, database_url, open_store
from hpceval.store import migrations as store_migrations
from tests.old_schemas import schema_1_database
from tests.test_store import database as database  # the fixture
from tests.test_store import db_path as db_path  # the fixture
from tests.test_store import latency, new_run

pytest_plugins = ["tests.postgres_server"]  # the postgres_url fixture (a real server)


def set_schema_version(path: Path, version: int) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_info SET version = ?", (version,))


def test_newer_schema_version_is_refused(db_path: Path) -> None:
    open_store(str(db_path)).close()
    set_schema_version(db_path, SCHEMA_VERSION + 1)
    expected = (
        f"sqlite:///{db_path}: schema version {SCHEMA_VERSION + 1} is newer than this hpceval"
        f" supports ({SCHEMA_VERSION}); upgrade hpceval"
    )
    with pytest.raises(UserError) as caught:
        open_store(str(db_path))
    assert str(caught.value) == expected


def test_older_schema_version_without_migration_is_refused(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(str(db_path)).close()
    set_schema_version(db_path, SCHEMA_VERSION - 1)
    monkeypatch.delitem(store_migrations.MIGRATIONS, SCHEMA_VERSION - 1, raising=False)
    with pytest.raises(UserError, match=f"schema version {SCHEMA_VERSION - 1} is older"):
        open_store(str(db_path))


def test_version_1_database_gains_the_calibrations_table(db_path: Path) -> None:
    # A real schema-1 database (see tests/old_schemas.py): migrated to 2, then to 3.
    schema_1_database(db_path)
    with sqlite3.connect(db_path) as conn:
        runs_before = conn.execute("SELECT count(*) FROM runs").fetchone()
    with open_store(str(db_path)) as store:
        assert store.upgraded_from == 1
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT version FROM schema_info").fetchall() == [(SCHEMA_VERSION,)]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert {"calibrations", "series"} <= tables
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == runs_before == (4,)


def test_older_schema_version_is_migrated_in_order(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(str(db_path)).close()
    set_schema_version(db_path, SCHEMA_VERSION - 1)
    applied: list[int] = []
    monkeypatch.setitem(
        store_migrations.MIGRATIONS, SCHEMA_VERSION - 1, lambda conn: applied.append(1)
    )
    open_store(str(db_path)).close()
    assert applied == [1]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT version FROM schema_info").fetchall() == [(SCHEMA_VERSION,)]


# --- schema upgrades, on SQLite and PostgreSQL -------------------------------------------------
# A synthetic future: this hpceval is made to expect schema version CURRENT + 2, with two
# registered migrations, and meets a database of the current version (so, older).


def schema_version_of(url: str) -> int:
    engine = sa.create_engine(database_url(url))
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT version FROM schema_info")).scalar_one())
    finally:
        engine.dispose()


def run_columns(url: str) -> list[str]:
    engine = sa.create_engine(database_url(url))
    try:
        return [column["name"] for column in sa.inspect(engine).get_columns("runs")]
    finally:
        engine.dispose()


def add_site_column(conn: sa.Connection) -> None:
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN site TEXT"))
    conn.execute(sa.text("UPDATE runs SET site = 'site-' || host"))


def test_an_older_database_is_upgraded_in_order_in_one_transaction(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(database) as old:
        run_id = new_run(old)
        old.add_measurement(run_id, None, "pingpong/2x1", "size=8", latency(2.5))
        assert old.upgraded_from is None
    applied: list[int] = []

    def second(conn: sa.Connection) -> None:
        # Sees the first step's work: both run in the same transaction, in order.
        sites = conn.execute(sa.text("SELECT site FROM runs")).scalars().all()
        applied.append(2)
        assert sites == ["site-node1"]
        conn.execute(sa.text("CREATE INDEX ix_runs_site ON runs (site)"))

    monkeypatch.setattr(store_migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 2)
    monkeypatch.setitem(
        store_migrations.MIGRATIONS,
        SCHEMA_VERSION,
        lambda conn: (applied.append(1), add_site_column(conn)),
    )
    monkeypatch.setitem(store_migrations.MIGRATIONS, SCHEMA_VERSION + 1, second)
    with open_store(database) as upgraded:
        assert upgraded.upgraded_from == SCHEMA_VERSION
        assert upgraded.measurements(run_id)[0].measurement == latency(2.5)  # data kept
    assert applied == [1, 2]
    assert schema_version_of(database) == SCHEMA_VERSION + 2
    assert "site" in run_columns(database)
    with open_store(database) as again:  # already upgraded: nothing runs twice
        assert again.upgraded_from is None
    assert applied == [1, 2]


def test_a_failing_upgrade_leaves_the_database_as_it_was(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(database).close()

    def broken(conn: sa.Connection) -> None:
        raise RuntimeError("cannot convert the samples\nsecond line")

    monkeypatch.setattr(store_migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 2)
    monkeypatch.setitem(store_migrations.MIGRATIONS, SCHEMA_VERSION, add_site_column)
    monkeypatch.setitem(store_migrations.MIGRATIONS, SCHEMA_VERSION + 1, broken)
    with pytest.raises(UserError) as caught:
        open_store(database)
    assert str(caught.value).endswith(
        f": upgrading the schema from version {SCHEMA_VERSION + 1} to {SCHEMA_VERSION + 2} "
        f"failed (cannot convert the samples); the database was left unchanged at version "
        f"{SCHEMA_VERSION}"
    )
    # The first step's new column was rolled back with everything else.
    assert "site" not in run_columns(database)
    assert schema_version_of(database) == SCHEMA_VERSION


def test_an_older_database_without_migration_or_a_newer_one_is_refused(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(database).close()
    monkeypatch.setattr(store_migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(UserError, match=f"no migration from version {SCHEMA_VERSION}; open it"):
        open_store(database)
    monkeypatch.setattr(store_migrations, "SCHEMA_VERSION", SCHEMA_VERSION - 1)
    with pytest.raises(UserError, match=f"schema version {SCHEMA_VERSION} is newer than"):
        open_store(database)
    assert schema_version_of(database) == SCHEMA_VERSION
