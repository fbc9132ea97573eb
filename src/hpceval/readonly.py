"""SQLite files that cannot be written: opened read-only by the commands that only read
(`runs`, `show`, `compare`, `report`...), and named as read-only when a command must write.

A database on a read-only medium (a mount of archived results, an immutable file) is still
a record to look at: opening it for writing fails in SQLite ("unable to open database
file": it cannot create its write-ahead log) and says nothing of why.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
from pathlib import Path

from sqlalchemy.engine import URL, Engine


def on_read_only_file_system(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# linux/fs.h: _IOR('f', 1, long); the kernel reads and writes an int.
FS_IOC_GETFLAGS = 0x80086601
FS_IMMUTABLE_FL = 0x10


def is_immutable(path: Path) -> bool:
    """`chattr +i`: not even root may write it (os.access says root may)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            flags = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
        finally:
            os.close(fd)
        return bool(struct.unpack("i", flags[:4])[0] & FS_IMMUTABLE_FL)
    return False


def read_only_reason(path: Path) -> str | None:
    """Why `path` (an existing SQLite file) cannot be written, or None if nothing says so."""
    if on_read_only_file_system(path):
        return f"it is on a read-only file system ({path.parent})"
    if is_immutable(path):
        return "the file is immutable (chattr +i)"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(path.parent, os.W_OK):
        return f"its directory {path.parent} is read-only"
    return None


def opened_read_only(engine: Engine) -> bool:
    """An SQLite engine made from read_only_url (mode=ro)."""
    return engine.url.query.get("mode") == "ro"


def read_only_url(path: Path) -> URL:
    """An SQLite URL that opens `path` read-only (mode=ro: no journal, no lock file written).

    On a read-only file system SQLite cannot create the -shm file a WAL database needs even
    to read, and next to an immutable file it would leave one behind; nothing can change the
    file in either case, so it is opened as immutable."""
    query = {"mode": "ro", "uri": "true"}
    if on_read_only_file_system(path) or is_immutable(path):
        query["immutable"] = "1"
    return URL.create("sqlite", database=f"file:{path.absolute()}", query=query)
