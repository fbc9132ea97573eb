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
is hpceval.export_file's): ids are remapped, platforms and environments reused by content, and a
run is recognised by its uid, so importing it twice adds nothing.

Times are Unix seconds (`time.time()`) stored as floats, everywhere.

This package's public API is what it exports here (`__all__`); its modules are its own:
schema (tables), migrations, dialect (every SQLite/PostgreSQL difference), engine (URLs,
outage handling), samples (stored encodings, series), rows (what reads return), reads,
columns (the bulk read), writes, bundles (portable runs) and importing.
"""

from hpceval.store.bundles import (
    CALIBRATION_SOURCE_RUNS,
    EXECUTION_INDEX,
    ImportAction,
    ImportOutcome,
    InvalidBundle,
    RunBundle,
    calibration_reference,
    check_fields,
    checked_row,
    platform_config_hash,
)
from hpceval.store.columns import MeasurementColumns, MeasurementKind
from hpceval.store.database import Store, open_store
from hpceval.store.engine import (
    DEFAULT_URL,
    StoreUnavailable,
    close_open_stores,
    database_url,
    shown_url,
)
from hpceval.store.rows import (
    CalibrationRow,
    CaseRow,
    DatabaseState,
    ExecutionRow,
    RunRow,
    StoredMeasurement,
    measurement_from_values,
)
from hpceval.store.samples import (
    SeriesFields,
    decode_json_texts,
    decode_samples,
    encode_samples,
    portable_samples,
    samples_from_portable,
)
from hpceval.store.schema import EXECUTION_RUNNING, INDEXED_FACTS, SCHEMA_VERSION, CaseStatus

__all__ = [
    "CALIBRATION_SOURCE_RUNS",
    "DEFAULT_URL",
    "EXECUTION_INDEX",
    "EXECUTION_RUNNING",
    "INDEXED_FACTS",
    "SCHEMA_VERSION",
    "CalibrationRow",
    "CaseRow",
    "CaseStatus",
    "DatabaseState",
    "ExecutionRow",
    "ImportAction",
    "ImportOutcome",
    "InvalidBundle",
    "MeasurementColumns",
    "MeasurementKind",
    "RunBundle",
    "RunRow",
    "SeriesFields",
    "Store",
    "StoreUnavailable",
    "StoredMeasurement",
    "calibration_reference",
    "check_fields",
    "checked_row",
    "close_open_stores",
    "database_url",
    "decode_json_texts",
    "decode_samples",
    "encode_samples",
    "measurement_from_values",
    "open_store",
    "platform_config_hash",
    "portable_samples",
    "samples_from_portable",
    "shown_url",
]
