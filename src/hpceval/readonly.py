"""SQLite files that cannot be written: opened read-only by the commands that only read
(`runs`, `show`, `compare`, `report`...), and named as read-only when a command must write.

A database on a read-only medium (a mount of archived results, an immutable file) is still
a record to look at: opening it for writing fails in SQLite ("unable to open database
file": it cannot create its write-ahead log) and says nothing of why.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL


def on_read_only_file_system(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_only_reason(path: Path) -> str | None:
    """Why `path` (an existing SQLite file) cannot be written, or None if nothing says so."""
    if on_read_only_file_system(path):
        return f"it is on a read-only file system ({path.parent})"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(path.parent, os.W_OK):
        return f"its directory {path.parent} is read-only"
    return None


def read_only_url(path: Path) -> URL:
    """An SQLite URL that opens `path` read-only (mode=ro: no journal, no lock file written).

    On a read-only file system SQLite cannot create the -shm file a WAL database needs even
    to read; nothing can change the file there, so it is opened as immutable."""
    query = {"mode": "ro", "uri": "true"}
    if on_read_only_file_system(path):
        query["immutable"] = "1"
    return URL.create("sqlite", database=f"file:{path.absolute()}", query=query)
