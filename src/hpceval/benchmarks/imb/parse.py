"""The output of IMB-MPI1 (Intel MPI Benchmarks 2021.x), parsed (pure, no I/O).

    #    Intel(R) MPI Benchmarks 2021.11, MPI-1 part
    ...
    # Benchmarking PingPong
    # #processes = 2
    #---------------------------------------------------
           #bytes #repetitions      t[usec]   Mbytes/sec
                0         1000         0.28         0.00

One block per benchmark: its name, its process count, a column header and one row per
message size. Ping-pong blocks give t[usec] (half the round trip) and Mbytes/sec (10^6
bytes/s: bytes / t); collective blocks t_min, t_max and t_avg [usec].
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from hpceval.errors import BenchmarkFailure

_VERSION = re.compile(r"Intel\(R\) MPI Benchmarks\s+(\d+(?:\.\d+)*)")
_BLOCK = re.compile(r"^#\s*Benchmarking\s+(\S+)\s*$")
_PROCESSES = re.compile(r"^#\s*#processes\s*=\s*(\d+)")


@dataclass(frozen=True)
class ImbBlock:
    benchmark: str  # "PingPong", "Allreduce"
    processes: int
    columns: tuple[str, ...]  # ("#bytes", "#repetitions", "t[usec]", "Mbytes/sec")
    rows: tuple[tuple[float, ...], ...]

    def column(self, name: str) -> int:
        return self.columns.index(name)


@dataclass(frozen=True)
class ImbOutput:
    version: str
    blocks: tuple[ImbBlock, ...]


def parse_imb_output(text: str) -> ImbOutput:
    """Every benchmark block of an IMB-MPI1 output; BenchmarkFailure when it is not one or a
    block fails the sanity check (sizes increasing, times finite and positive)."""
    version = _VERSION.search(text)
    if version is None:
        raise BenchmarkFailure("not an IMB output (no 'Intel(R) MPI Benchmarks' banner)")
    blocks: list[ImbBlock] = []
    name: str | None = None
    processes = 0
    columns: tuple[str, ...] = ()
    rows: list[tuple[float, ...]] = []

    def close() -> None:
        if name is not None:
            blocks.append(_checked(ImbBlock(name, processes, columns, tuple(rows))))

    for line in text.splitlines():
        stripped = line.strip()
        if m := _BLOCK.match(stripped):
            close()
            name, processes, columns, rows = m.group(1), 0, (), []
        elif name is None:
            continue
        elif m := _PROCESSES.match(stripped):
            processes = int(m.group(1))
        elif stripped.startswith("#bytes"):
            columns = tuple(stripped.split())
        elif columns and stripped and not stripped.startswith("#"):
            try:
                rows.append(tuple(float(x) for x in stripped.split()))
            except ValueError:
                raise BenchmarkFailure(f"IMB {name}: {stripped!r} is not a row") from None
    close()
    if not blocks:
        raise BenchmarkFailure("IMB output without a benchmark block")
    return ImbOutput(version.group(1), tuple(blocks))


def _checked(block: ImbBlock) -> ImbBlock:
    what = f"IMB {block.benchmark}"
    if not block.columns or not block.rows or block.processes < 1:
        raise BenchmarkFailure(f"{what}: no table (the run stopped?)")
    if any(len(row) != len(block.columns) for row in block.rows):
        raise BenchmarkFailure(f"{what}: a row does not have the {len(block.columns)} columns")
    sizes = [row[0] for row in block.rows]
    if any(b <= a for a, b in itertools.pairwise(sizes)):
        raise BenchmarkFailure(f"{what}: message sizes are not increasing")
    times = [i for i, c in enumerate(block.columns) if c.startswith("t")]
    for row in block.rows:
        for i in times:
            if not (math.isfinite(row[i]) and row[i] >= 0):
                raise BenchmarkFailure(f"{what}: {row[i]!r} at {row[0]:.0f} B is not a time")
    return block
