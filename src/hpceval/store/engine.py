"""What every part of a Store shares: the database URL as users write it, the engine and its
write transactions, and the outage handling of every method (the set-up of each kind of
database is hpceval.store.dialect's)."""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable
from typing import Concatenate, Final, ParamSpec, Self, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from hpceval.errors import UserError
from hpceval.store.dialect import SQLITE_BEGIN_OPTION

DEFAULT_URL: Final = "sqlite:///hpceval.db"

# The engines of this process's Stores not closed yet (see close_open_stores). Weak: a Store
# dropped without close() keeps its engine, and so its connections, alive until the garbage
# collector finds the cycle they sit in; until then this set still reaches it.
_OPEN_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


class StoreUnavailable(UserError):
    """The database went away or cannot be written (server stopped, connection lost, disk full,
    SQLite locked beyond its busy timeout). What was committed before stays committed."""


_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S", bound="StoreBase")


def outage_is_a_user_error(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """A lost connection or an unusable database ends the command with one line, not a traceback.

    Only operational failures: an IntegrityError or a ProgrammingError is a bug and propagates.
    """

    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sa.exc.DBAPIError as exc:
            lost = exc.connection_invalidated or isinstance(
                exc, sa.exc.OperationalError | sa.exc.InterfaceError
            )
            if not lost:
                raise
            raise StoreUnavailable(
                f"the results database is unavailable ({first_line(exc.orig or exc)}); "
                "what was committed before is kept",
                source=self.url,
            ) from None

    functools.update_wrapper(wrapper, method)
    return wrapper


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


class StoreBase:
    """What every part of a Store holds: its engine, its writer, its clock."""

    def __init__(self, engine: Engine, url: str, *, clock: Callable[[], float] = time.time):
        self.url = url
        # The schema version this database had before open_store migrated it (None: it did not).
        self.upgraded_from: int | None = None
        self.read_only = False  # an SQLite file opened read-only: writes fail
        self._engine = engine
        self._writer = write_engine(engine)
        self._clock = clock
        # Series ids by key, once committed (series rows are never changed or deleted).
        self._series: dict[str, int] = {}
        _OPEN_ENGINES.add(engine)

    def close(self) -> None:
        self._engine.dispose()
        _OPEN_ENGINES.discard(self._engine)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- helpers --------------------------------------------------------------------------

    def _no_run(self, run_id: int) -> UserError:
        return UserError(f"no run with id {run_id} in {self.url}")


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def write_engine(engine: Engine) -> Engine:
    """`engine` (same pool) for write transactions: on SQLite they lock at BEGIN."""
    return engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
