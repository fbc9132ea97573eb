"""Reading MILC's `su3_rmd` output (a pure function of its text) and checking a run.

What su3_rmd prints that we read: `MIMD version V`, `Machine = MPI (portable), with N
nodes`, `ON EACH NODE (RANK) a x b x c x d`, one ` OK converged ... iters= I` (or ` NOT
converged`) line per CG solve, one `PLAQ:\tP_space\tP_time` line per trajectory, then
`RUNNING COMPLETED`, `Time = T seconds` and `total_iters = N` (MILC 7's control.c).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from hpceval.errors import BenchmarkFailure

_VERSION = re.compile(r"^MIMD version (\S+)")
_NODES = re.compile(r"^Machine = .*with (\d+) nodes")
_LOCAL = re.compile(r"^ON EACH NODE \(RANK\) (\d+) x (\d+) x (\d+) x (\d+)")
_CONVERGED = re.compile(r"^\s*(OK|NOT) converged.*iters= *(\d+)")
_PLAQ = re.compile(r"^PLAQ:\s+(\S+)\s+(\S+)")
_TIME = re.compile(r"^Time = (\S+) seconds")
_TOTAL_ITERS = re.compile(r"^total_iters = (\d+)")
# su3_rmd's plaquette is normalised to 3 (the trace of a unit SU(3) matrix).
MAX_PLAQUETTE = 3.0


@dataclass
class MilcOutput:
    version: str | None = None
    nodes: int | None = None
    local: tuple[int, ...] | None = None
    plaquettes: list[tuple[float, float]] = field(default_factory=list)
    solves: int = 0
    not_converged: int = 0
    solve_iterations: int = 0
    completed: bool = False
    time_s: float | None = None
    total_iters: int | None = None
    tail: list[str] = field(default_factory=list)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def parse_milc_output(text: str) -> MilcOutput:
    out = MilcOutput()
    lines = text.splitlines()
    out.tail = [ln for ln in lines if ln.strip()][-3:]
    for line in lines:
        if (m := _VERSION.match(line)) is not None:
            out.version = m.group(1)
        elif (m := _NODES.match(line)) is not None:
            out.nodes = int(m.group(1))
        elif (m := _LOCAL.match(line)) is not None:
            out.local = tuple(int(g) for g in m.groups())
        elif (m := _CONVERGED.match(line)) is not None:
            out.solves += 1
            out.not_converged += m.group(1) == "NOT"
            out.solve_iterations += int(m.group(2))
        elif (m := _PLAQ.match(line)) is not None:
            out.plaquettes.append((_float(m.group(1)), _float(m.group(2))))
        elif line.startswith("RUNNING COMPLETED"):
            out.completed = True
        elif (m := _TIME.match(line)) is not None:
            out.time_s = _float(m.group(1))
        elif (m := _TOTAL_ITERS.match(line)) is not None:
            out.total_iters = int(m.group(1))
    return out


def check_milc_output(out: MilcOutput, *, ranks: int, trajectories: int) -> None:
    """The run is sound: completed on the ranks asked for, every CG solve converged, one
    finite plaquette in (0, 3] per trajectory, a positive time and iteration count."""
    tail = " | ".join(out.tail)
    if not out.completed:
        raise BenchmarkFailure(f"su3_rmd: no 'RUNNING COMPLETED'; output tail: {tail}")
    if out.nodes != ranks:
        raise BenchmarkFailure(f"su3_rmd ran on {out.nodes} ranks, the case asks for {ranks}")
    if out.not_converged:
        raise BenchmarkFailure(
            f"su3_rmd: {out.not_converged} of {out.solves} CG solves did not converge"
        )
    if out.solves == 0:
        raise BenchmarkFailure("su3_rmd: no CG solve reported")
    if len(out.plaquettes) != trajectories:
        raise BenchmarkFailure(
            f"su3_rmd: {len(out.plaquettes)} plaquette lines, {trajectories} trajectories asked"
        )
    for space, time in out.plaquettes:
        if not (0 < space <= MAX_PLAQUETTE and 0 < time <= MAX_PLAQUETTE):
            raise BenchmarkFailure(f"su3_rmd: plaquette {space}, {time} outside (0, 3]")
    if out.time_s is None or not (math.isfinite(out.time_s) and out.time_s > 0):
        raise BenchmarkFailure(f"su3_rmd: no valid 'Time = ' line ({out.time_s})")
    if not out.total_iters:
        raise BenchmarkFailure("su3_rmd: no 'total_iters' count")
