"""Creating the schema in an empty database, upgrading an older one, refusing anything else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from hpceval.errors import UserError
from hpceval.store.dialect import dialect_of
from hpceval.store.engine import (
    first_line,
    write_engine,
)
from hpceval.store.samples import (
    decode_json_texts,
    samples_from_portable,
    series_ids_of,
    series_key,
)
from hpceval.store.schema import (
    SCHEMA_VERSION,
    calibrations,
    metadata,
    schema_info,
    series,
    studies,
    study_runs,
)

# Upgrades of an older schema: MIGRATIONS[n] turns a version-n database into version n + 1.
# They run in order, in the transaction that opens the database.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}


def _add_calibrations_table(conn: Connection) -> None:
    """Schema 1 -> 2: the calibrations table (nothing else changed)."""
    calibrations.create(conn, checkfirst=True)


MIGRATIONS[1] = _add_calibrations_table

# Measurements converted per slice by the schema 2 -> 3 migration.
_MIGRATION_SLICE: Final = 20_000


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
        ids = series_ids_of(conn, dict(zip(keys, fields, strict=True)))
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
    dialect_of(conn).require_not_null(conn, "measurements", ("samples", "series_id"))


MIGRATIONS[2] = _series_and_binary_samples


def _measurement_implementation(conn: Connection) -> None:
    """Schema 3 -> 4: each measurement's implementation; every earlier one is hpceval's own."""
    conn.execute(sa.text("ALTER TABLE measurements ADD COLUMN implementation TEXT "
                         "NOT NULL DEFAULT 'hpceval'"))  # fmt: skip


MIGRATIONS[3] = _measurement_implementation


def _add_study_tables(conn: Connection) -> None:
    """Schema 4 -> 5: the studies and study_runs tables (nothing else changed)."""
    studies.create(conn, checkfirst=True)
    study_runs.create(conn, checkfirst=True)


MIGRATIONS[4] = _add_study_tables


def prepare_schema(
    engine: Engine, url: str, *, create: bool, clock: Callable[[], float]
) -> int | None:
    """Create the schema in an empty database, migrate an older one, refuse anything else.

    Returns the version an older database had before it was migrated (None if it was not).
    Migrations run in order in one transaction with the version bump: a failure leaves the
    database exactly as it was.
    """
    with write_engine(engine).begin() as conn:
        dialect_of(conn).lock_schema(conn)
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
                    f"({first_line(exc)}); the database was left unchanged at version {version}",
                    source=url,
                ) from exc
        if version != SCHEMA_VERSION:
            conn.execute(schema_info.update().values(version=SCHEMA_VERSION))
        missing = sorted(set(metadata.tables) - set(sa.inspect(conn).get_table_names()))
        if missing:
            raise UserError(f"damaged hpceval database: missing tables {missing}", source=url)
        return version if version != SCHEMA_VERSION else None
