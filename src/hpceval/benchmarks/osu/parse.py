"""The output of one OSU micro-benchmark program (5.x, 6.x, 7.x), parsed (pure, no I/O).

    # OSU MPI Latency Test v7.2
    # Datatype: MPI_CHAR.                       (7.x)
    # Size          Latency (us)
    0                       0.25
    ...

The title line names the test and the version, the `# Size ...` line the columns; each
data row is a message size and the figures of that size (the first figure is the one OSU
reports: latency in µs, or bandwidth in MB/s = 10^6 bytes/s).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from hpceval.errors import BenchmarkFailure

_TITLE = re.compile(r"^#\s*OSU (?:MPI(?:-\S+)? )?(.+?) Test v(\d+(?:\.\d+)*)\s*$")
_COLUMNS = re.compile(r"^#\s*Size\s+(.+?)\s*$")
_ROW = re.compile(r"^\s*(\d+)\s+(\S+)(?:\s+.*)?$")


@dataclass(frozen=True)
class OsuTable:
    test: str  # "Latency", "Bandwidth", "Allreduce Latency"
    version: str  # "7.2"
    column: str  # "Latency (us)", "Bandwidth (MB/s)", "Avg Latency(us)"
    rows: tuple[tuple[int, float], ...]  # (size in bytes, figure)

    @property
    def is_bandwidth(self) -> bool:
        return "MB/s" in self.column


def parse_osu_output(text: str) -> OsuTable:
    """The table of an OSU program's output; BenchmarkFailure when it is not one, or fails
    the sanity check (sizes increasing, figures finite and positive)."""
    title = column = None
    rows: list[tuple[int, float]] = []
    for line in text.splitlines():
        if title is None and (m := _TITLE.match(line.strip())):
            title = m
            continue
        if (m := _COLUMNS.match(line.strip())) and title is not None:
            column = m.group(1)
            continue
        if column is not None and (m := _ROW.match(line)):
            try:
                value = float(m.group(2))
            except ValueError:
                raise BenchmarkFailure(f"OSU output: {line.strip()!r} is not a row") from None
            rows.append((int(m.group(1)), value))
    if title is None:
        raise BenchmarkFailure(
            "not an OSU micro-benchmark output (no '# OSU MPI ... Test vX' line)"
        )
    if column is None or not rows:
        raise BenchmarkFailure(f"OSU {title.group(1)}: no table of sizes in the output")
    sizes = [s for s, _ in rows]
    if any(b <= a for a, b in itertools.pairwise(sizes)):
        raise BenchmarkFailure(f"OSU {title.group(1)}: message sizes are not increasing")
    for size, value in rows:
        if not (math.isfinite(value) and value > 0):
            raise BenchmarkFailure(f"OSU {title.group(1)}: {value!r} at {size} B is not a figure")
    return OsuTable(title.group(1), title.group(2), column, tuple(rows))
