"""The controlled vocabulary of units.

Every Measurement carries one of these; a unit outside the vocabulary is a bug, not a
free-text label (PerfKitBenchmarker's "GB for a bandwidth" is what this prevents).
Conventions follow docs/methodology.md: 1 MB = 10**6 bytes, latency in microseconds.

The units every kind of benchmark uses are here; a unit only one benchmark reports (ns/day,
GUP/s) is declared in that benchmark's `benchmark.toml` (hpceval.catalog), with which
direction is better, so that adding a benchmark touches only its folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from hpceval.catalog import LazyMapping, declarations

MICROSECOND: Final = "us"
MILLISECOND: Final = "ms"  # an MD code's time per step
SECOND: Final = "s"
MEGABYTE_PER_SECOND: Final = "MB/s"  # 10**6 bytes per second
MEBIBYTE_PER_SECOND: Final = "MiB/s"  # 2**20 bytes per second (fio reports these)
MOPS: Final = "Mop/s"
GFLOPS: Final = "GFLOP/s"
RATIO: Final = "ratio"
COUNT: Final = "count"

# unit -> whether a larger value is better (used by show/analysis).
GENERAL_UNITS: Final[Mapping[str, bool]] = {
    MICROSECOND: False,
    MILLISECOND: False,
    SECOND: False,
    MEGABYTE_PER_SECOND: True,
    MEBIBYTE_PER_SECOND: True,
    MOPS: True,
    GFLOPS: True,
    RATIO: True,
    COUNT: True,
}


def _vocabulary() -> Mapping[str, bool]:
    units = dict(GENERAL_UNITS)
    for declared in declarations().values():
        for unit, higher in declared.units.items():
            if units.setdefault(unit, higher) != higher:
                raise ValueError(
                    f"{declared.source}: units.{unit}: the opposite direction of the vocabulary's"
                )
    return units


# Whether a larger value of a metric in this unit is better, for every unit of the vocabulary.
HIGHER_IS_BETTER: Final[Mapping[str, bool]] = LazyMapping(_vocabulary)


def check_unit(unit: str) -> str:
    if unit not in HIGHER_IS_BETTER:
        raise ValueError(f"unit {unit!r} is not in hpceval's vocabulary {sorted(HIGHER_IS_BETTER)}")
    return unit


def format_bytes(count: float | None, *, exact: bool = False) -> str:
    """A byte count with a binary prefix: 0 -> "0 B", 49152 -> "48 KiB", 4194304 -> "4 MiB",
    25232932864 -> "23.5 GiB" (one decimal unless exact); None -> "?". `exact`: only a prefix
    that divides the count (a message size: 2000000 -> "2000000 B", 1536 -> "1536 B")."""
    if count is None:
        return "?"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB" or (exact and value % 1024):
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
