"""How many forked worker processes a parallel step may use."""

from __future__ import annotations

import multiprocessing
import os

from hpceval.errors import UserError


def fork_workers(variable: str) -> int:
    """$`variable` (a number of workers), else the CPUs this process may run on; 1 where
    there is no fork (the workers inherit their input from the parent's memory)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if given := os.environ.get(variable, "").strip():
        try:
            return max(1, int(given))
        except ValueError:
            raise UserError(f"${variable}: {given!r} is not a number of workers") from None
    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
