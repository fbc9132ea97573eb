"""Databases of earlier schema versions, for the migration tests.

`tests/data/store/schema-2.db` was written by hpceval at schema version 2 (JSON samples, no
series table), filled by tests.test_frame_bulk.fill_mixed: four runs of three platforms (one
simulated, one with an odd name), three benchmarks, parameters of every type, samples with
NaN and infinities, and a measurement stored without samples.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

SCHEMA_2_DB = Path(__file__).parent / "data" / "store" / "schema-2.db"


def schema_2_database(path: Path) -> Path:
    """A copy of the schema-2 database at `path`."""
    shutil.copyfile(SCHEMA_2_DB, path)
    return path


def schema_1_database(path: Path) -> Path:
    """A schema-1 database at `path`: schema 2 without its calibrations table (the only
    change from 1 to 2)."""
    schema_2_database(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE calibrations")
        conn.execute("UPDATE schema_info SET version = 1")
    return path
