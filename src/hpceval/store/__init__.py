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
is hpceval.transfer's): ids are remapped, platforms and environments reused by content, and a
run is recognised by its uid, so importing it twice adds nothing.

Times are Unix seconds (`time.time()`) stored as floats, everywhere.
"""

# (During the move: the tables and helpers that transfer.py and analysis/frame.py still read.)
from hpceval.store.bundles import (
    BUNDLE_TABLES,
    CALIBRATION_SOURCE_RUNS,
    EXECUTION_INDEX,
    ImportAction,
    ImportOutcome,
    RunBundle,
    calibration_reference,
    platform_config_hash,
    portable_columns,
)
from hpceval.store.columns import MeasurementColumns, read_workers
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
    ExecutionRow,
    RunRow,
    StoredMeasurement,
    measurement_from_values,
)
from hpceval.store.samples import (
    decode_json_texts,
    decode_samples,
    encode_samples,
    portable_samples,
    samples_from_portable,
)
from hpceval.store.schema import (
    EXECUTION_RUNNING,
    INDEXED_FACTS,
    SCHEMA_VERSION,
    CaseStatus,
    calibrations,
    environments,
    executions,
    measurements,
    platforms,
    run_cases,
    runs,
    schema_info,
)

__all__ = [
    "BUNDLE_TABLES",
    "CALIBRATION_SOURCE_RUNS",
    "DEFAULT_URL",
    "EXECUTION_INDEX",
    "EXECUTION_RUNNING",
    "INDEXED_FACTS",
    "SCHEMA_VERSION",
    "CalibrationRow",
    "CaseRow",
    "CaseStatus",
    "ExecutionRow",
    "ImportAction",
    "ImportOutcome",
    "MeasurementColumns",
    "RunBundle",
    "RunRow",
    "Store",
    "StoreUnavailable",
    "StoredMeasurement",
    "calibration_reference",
    "calibrations",
    "close_open_stores",
    "database_url",
    "decode_json_texts",
    "decode_samples",
    "encode_samples",
    "environments",
    "executions",
    "measurement_from_values",
    "measurements",
    "open_store",
    "platform_config_hash",
    "platforms",
    "portable_columns",
    "portable_samples",
    "read_workers",
    "run_cases",
    "runs",
    "samples_from_portable",
    "schema_info",
    "shown_url",
]
