"""What differs between the databases a Store runs on, in one place: one Dialect per kind.

SQLite (a file beside the user) and PostgreSQL (a server shared by a team) run the same
SQLAlchemy Core statements; this module holds everything else: how an engine is set up, how
a schema is created safely by two processes at once, an insert that skips existing keys, a
snapshot read, a server-side cursor, and what a database's file is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine

from hpceval.readonly import opened_read_only

# How long an SQLite writer waits for another process's write transaction before giving up.
# Transactions here last milliseconds; the margin covers a slow disk or a WAL checkpoint.
SQLITE_BUSY_TIMEOUT_S: Final = 30.0

# Engine execution option read by the SQLite "begin" hook (see SQLite.create_engine).
SQLITE_BEGIN_OPTION: Final = "hpceval_sqlite_begin"

# Any constant works: it only has to be the same for every hpceval opening a PostgreSQL database.
_POSTGRES_SCHEMA_LOCK_KEY: Final = 0x6870636576616C  # "hpceval"


class Dialect:
    """What one kind of database needs done its own way (SQLAlchemy's dialect name: `name`)."""

    name: ClassVar[str]

    def create_engine(self, url: URL) -> Engine:
        return sa.create_engine(url)

    def database_file(self, url: URL) -> Path | None:
        """The file that holds the database, if it is one (not a server, not in memory)."""
        return None

    def error_source(self, url: URL, shown: str) -> str:
        """What an error about the database names: the URL as users write it."""
        return shown

    def reopenable(self, url: URL) -> bool:
        """Whether another connection sees this database (forked readers open their own)."""
        return True

    def lock_schema(self, conn: Connection) -> None:
        """Hold, until the transaction ends, the right to create or migrate the schema."""

    def insert_skipping_existing(self, table: sa.Table, key: str) -> Any:
        """An INSERT into `table` that skips rows whose `key` exists (ON CONFLICT DO NOTHING)."""
        raise NotImplementedError

    def require_not_null(self, conn: Connection, table: str, columns: tuple[str, ...]) -> None:
        """Make columns added by a migration NOT NULL, where the database can."""

    def begin_snapshot(self, conn: Connection) -> None:
        """Make `conn`'s next transaction see one state of the database throughout."""

    def bulk_cursor(self, driver_connection: Any) -> Any:
        """The driver's cursor for reading many rows in slices."""
        return driver_connection.cursor()

    def compact(self, engine: Engine) -> None:
        """Leave the database whole in its file (nothing beside it), where it is a file."""


class SQLite(Dialect):
    name = "sqlite"

    def create_engine(self, url: URL) -> Engine:
        """WAL, foreign keys, and explicit BEGIN so that writers take the lock up front.

        WAL lets `hpceval show` read while a campaign writes, and two campaigns write in turn
        (each waiting up to SQLITE_BUSY_TIMEOUT_S). A deferred transaction that reads before it
        writes can fail at once with "database is locked" when another process committed in
        between; write transactions therefore BEGIN IMMEDIATE. synchronous stays FULL: a commit
        survives a power cut, not only a killed process. WAL needs a local filesystem (not NFS).
        """
        engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Python's sqlite3 would otherwise issue its own BEGIN (always deferred).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA foreign_keys = ON")
                if not opened_read_only(engine):  # setting WAL mode would be a write
                    cursor.execute("PRAGMA journal_mode = WAL")
            finally:
                cursor.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine

    def database_file(self, url: URL) -> Path | None:
        if url.database and url.database != ":memory:":
            return Path(url.database)
        return None

    def error_source(self, url: URL, shown: str) -> str:
        # Errors about an SQLite database name its file, as the user typed it.
        return url.database or shown

    def reopenable(self, url: URL) -> bool:
        database = url.database or ""
        return database not in ("", ":memory:") and "mode=memory" not in str(url)

    def lock_schema(self, conn: Connection) -> None:
        pass  # a write transaction holds the database's lock from its BEGIN IMMEDIATE

    def insert_skipping_existing(self, table: sa.Table, key: str) -> Any:
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=[key])

    def require_not_null(self, conn: Connection, table: str, columns: tuple[str, ...]) -> None:
        pass  # SQLite cannot add NOT NULL to a column; hpceval never writes a NULL there

    def begin_snapshot(self, conn: Connection) -> None:
        pass  # (WAL): a transaction's reads all see the state of its first read

    def compact(self, engine: Engine) -> None:
        """Fold the write-ahead log into the file and leave WAL mode, so that the file alone
        holds everything (to be copied elsewhere). open_store turns WAL on again."""
        engine.dispose()  # a pooled connection would keep the log open
        with engine.connect() as conn:
            raw: Any = conn.connection.driver_connection
            raw.execute("PRAGMA journal_mode = DELETE")
        engine.dispose()


class PostgreSQL(Dialect):
    name = "postgresql"

    def lock_schema(self, conn: Connection) -> None:
        # Two processes opening a fresh database at once would both create the schema.
        conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _POSTGRES_SCHEMA_LOCK_KEY}
        )

    def insert_skipping_existing(self, table: sa.Table, key: str) -> Any:
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=[key])

    def require_not_null(self, conn: Connection, table: str, columns: tuple[str, ...]) -> None:
        clauses = ", ".join(f"ALTER COLUMN {column} SET NOT NULL" for column in columns)
        conn.execute(sa.text(f"ALTER TABLE {table} {clauses}"))

    def begin_snapshot(self, conn: Connection) -> None:
        conn.execution_options(isolation_level="REPEATABLE READ")

    def bulk_cursor(self, driver_connection: Any) -> Any:
        # A server-side cursor: the rows come in slices, not all at once into memory.
        return driver_connection.cursor(name="hpceval_bulk_read")


_DIALECTS: Final[dict[str, Dialect]] = {d.name: d for d in (SQLite(), PostgreSQL())}


def dialect_of(where: URL | Connection | Engine) -> Dialect:
    """The Dialect of a database URL (as database_url gives it), connection or engine."""
    name = where.get_backend_name() if isinstance(where, URL) else where.dialect.name
    return _DIALECTS[name]
