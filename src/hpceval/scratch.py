"""Scratch directories of one execution, named by their owner, reclaimed once it is dead.

An execution's scratch (fio's test files, hpcc's run directory, an mdrun directory) is
removed on every exit path it controls; a kill -9 of hpceval is not one. So each scratch
directory carries its owner's host and pid (`PREFIX<host>-<pid>-XXXX`), and the next
execution that makes one in the same place removes those whose owner on this host is gone.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path


def owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def reclaim_scratch(parent: Path, prefix: str) -> list[Path]:
    """Remove the `prefix` scratch directories in `parent` left by dead processes of this
    host (another host's are left alone: its processes cannot be checked from here)."""
    mine = f"{prefix}{socket.gethostname()}-"
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(mine) or not entry.is_dir() or entry.is_symlink():
            continue
        pid = entry.name[len(mine) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not owner_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def make_scratch(parent: Path, prefix: str) -> Path:
    """A new scratch directory in `parent`, named by this process; reclaims dead ones first."""
    reclaim_scratch(parent, prefix)
    owner = f"{prefix}{socket.gethostname()}-{os.getpid()}-"
    return Path(tempfile.mkdtemp(prefix=owner, dir=parent))
