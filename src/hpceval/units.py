"""The controlled vocabulary of units.

Every Measurement carries one of these; a unit outside the vocabulary is a bug, not a
free-text label (PerfKitBenchmarker's "GB for a bandwidth" is what this prevents).
Conventions follow docs/methodology: 1 MB = 10**6 bytes, latency in microseconds.
"""

from __future__ import annotations

from typing import Final

MICROSECOND: Final = "us"
MILLISECOND: Final = "ms"  # an MD code's time per step
SECOND: Final = "s"
MEGABYTE_PER_SECOND: Final = "MB/s"  # 10**6 bytes per second
MEBIBYTE_PER_SECOND: Final = "MiB/s"  # 2**20 bytes per second (fio reports these)
MOPS: Final = "Mop/s"
GFLOPS: Final = "GFLOP/s"
IOPS: Final = "IOPS"
GUPS: Final = "GUP/s"  # 10**9 updates per second (HPCC RandomAccess)
NS_PER_DAY: Final = "ns/day"
TIMESTEPS_PER_SECOND: Final = "timesteps/s"  # LAMMPS' rate of MD steps
ATOM_STEPS_PER_SECOND: Final = "atom-steps/s"  # MD steps times atoms per second
RATIO: Final = "ratio"
COUNT: Final = "count"

UNITS: Final[frozenset[str]] = frozenset(
    {
        MICROSECOND,
        MILLISECOND,
        SECOND,
        MEGABYTE_PER_SECOND,
        MEBIBYTE_PER_SECOND,
        MOPS,
        GFLOPS,
        IOPS,
        GUPS,
        NS_PER_DAY,
        TIMESTEPS_PER_SECOND,
        ATOM_STEPS_PER_SECOND,
        RATIO,
        COUNT,
    }
)

# Whether a larger value of a metric in this unit is better (used by show/analysis).
HIGHER_IS_BETTER: Final[dict[str, bool]] = {
    MICROSECOND: False,
    MILLISECOND: False,
    SECOND: False,
    MEGABYTE_PER_SECOND: True,
    MEBIBYTE_PER_SECOND: True,
    MOPS: True,
    GFLOPS: True,
    IOPS: True,
    GUPS: True,
    NS_PER_DAY: True,
    TIMESTEPS_PER_SECOND: True,
    ATOM_STEPS_PER_SECOND: True,
    RATIO: True,
    COUNT: True,
}


def check_unit(unit: str) -> str:
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is not in hpceval's vocabulary {sorted(UNITS)}")
    return unit
