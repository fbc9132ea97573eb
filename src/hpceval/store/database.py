"""The Store, and open_store."""

from __future__ import annotations

import time
from collections.abc import Callable

import sqlalchemy as sa

from hpceval.errors import UserError
from hpceval.readonly import opened_read_only, read_only_reason, read_only_url
from hpceval.store.columns import (
    ColumnReads,
)
from hpceval.store.dialect import dialect_of
from hpceval.store.engine import (
    database_url,
    first_line,
    shown_url,
)
from hpceval.store.importing import (
    Transfers,
)
from hpceval.store.migrations import (
    prepare_schema,
)
from hpceval.store.reads import Reads
from hpceval.store.studies import Studies
from hpceval.store.writes import Writes


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
    file system, immutable, no write permission) is opened read-only, and can still be read.
    A file that can be written is opened as usual: SQLite then removes its write-ahead log
    on closing. A command that writes is refused, naming why, before SQLite opens the file.
    """
    url = database_url(url_or_path)
    shown = shown_url(url)
    dialect = dialect_of(url)
    source = dialect.error_source(url, shown)
    path = dialect.database_file(url)
    if path is not None:
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
        engine = dialect.create_engine(url)
    except ImportError:
        raise UserError(
            "PostgreSQL needs psycopg: pip install 'hpceval[postgres]'", source=shown
        ) from None
    try:
        upgraded_from = prepare_schema(engine, shown, create=create, clock=clock)
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        cause = first_line(exc.orig or exc)
        if path is not None and (why := read_only_reason(path)):
            cause = f"read-only: {why} ({cause}); commands that only read it work"
        raise UserError(cause, source=source) from None
    except BaseException:
        engine.dispose()
        raise
    store = Store(engine, shown, clock=clock)
    store.upgraded_from = upgraded_from
    store.read_only = opened_read_only(engine)
    return store


class Store(Reads, ColumnReads, Writes, Transfers, Studies):
    """A results database. Every method runs, and commits, its own transaction.

    One Store per process: after a fork, the child must open its own.
    """
