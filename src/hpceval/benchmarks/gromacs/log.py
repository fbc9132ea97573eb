"""Reading an mdrun log (md.log): pure functions, tested on logs captured from real runs.

What a benchmark needs from the log: the GROMACS version, the system's atom count and run
parameters, the ranks and threads mdrun really used, the energies it logged (all finite),
the last step it reached, the performance summary (ns/day, hour/ns, wall time), that it
finished, and the message of an error block if mdrun stopped on one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_VERSION = re.compile(r":-\) GROMACS - gmx mdrun, (\S+) \(-:")
_VERSION_LINE = re.compile(r"^GROMACS version:\s+(\S+)")
_ATOMS = re.compile(r"^There are:\s+(\d+) Atoms")
_PARAMETER = re.compile(r"^\s+(nsteps|dt)\s+=\s+(\S+)\s*$")
_RANKS = re.compile(r"^Using (\d+) MPI (process|processes|thread|threads)\s*$")
_THREADS = re.compile(r"^Using (\d+) OpenMP threads?")
_PME_RANKS = re.compile(r"^Using (\d+) separate PME ranks")
_RESET = re.compile(r"^step (\d+): resetting all time and cycle counters")
_TIME = re.compile(r"^\s+Time:\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
_PERFORMANCE = re.compile(r"^Performance:\s+(\S+)\s+(\S+)\s*$")
_STEP_HEADER = re.compile(r"^\s+Step\s+Time\s*$")
_FINISHED = re.compile(r"^Finished mdrun on rank 0")
# mdrun's error blocks are framed by lines of dashes and start with the program's name.
ERROR_FRAME = re.compile(r"^-{40,}\s*$")
_ERROR_START = re.compile(r"^Program:\s+gmx")
_ERROR_HEADER = ("Program:", "Source file:", "Function:", "MPI rank:")
_ERROR_TRAILER = ("For more information", "website at")
ENERGY_FIELD_WIDTH = 15


def is_log_start(line: str) -> bool:
    """The first line of an mdrun log (a new execution's output begins)."""
    return _VERSION.search(line) is not None


def is_log_end(line: str) -> bool:
    return _FINISHED.match(line) is not None


@dataclass(frozen=True)
class EnergyFrame:
    """The energies mdrun logged at one step (or the run's averages: step None)."""

    step: int | None
    values: dict[str, float]


@dataclass(frozen=True)
class MdrunLog:
    version: str | None = None
    atoms: int | None = None
    nsteps: int | None = None
    dt_ps: float | None = None
    ranks: int | None = None
    rank_kind: str | None = None  # "MPI" (an MPI library) or "thread-MPI"
    omp_threads: int | None = None
    pme_ranks: int | None = None
    reset_step: int | None = None
    last_step: int | None = None
    energies: tuple[EnergyFrame, ...] = ()
    core_s: float | None = None
    wall_s: float | None = None
    cpu_percent: float | None = None
    ns_per_day: float | None = None
    hours_per_ns: float | None = None
    finished: bool = False
    error: str | None = None
    tail: tuple[str, ...] = field(default=())

    @property
    def timed_steps(self) -> int | None:
        """Steps inside the timed window: from the counter reset of -resethway to the last.

        Both ends count (mdrun computes steps 0..nsteps): the captured logs' ns/day equal
        101 steps of 2 fs over the wall time for a reset at step 100 of 200.
        """
        if self.nsteps is None:
            return None
        return self.nsteps - (self.reset_step or 0) + 1


def _number(text: str) -> float:
    # mdrun prints non-finite energies as nan/-nan/inf: float() reads them all.
    return float(text)


def _energy_block(lines: Sequence[str], start: int) -> tuple[dict[str, float], int]:
    """The name -> value pairs of an `Energies (kJ/mol)` block; returns the next index."""
    values: dict[str, float] = {}
    i = start
    while i + 1 < len(lines) and lines[i].strip():
        names, numbers = lines[i], lines[i + 1]
        fields = [
            names[j : j + ENERGY_FIELD_WIDTH].strip()
            for j in range(0, len(names.rstrip()), ENERGY_FIELD_WIDTH)
        ]
        tokens = numbers.split()
        if len(fields) != len(tokens):
            break
        for name, token in zip(fields, tokens, strict=True):
            try:
                values[name] = _number(token)
            except ValueError:
                values[name] = math.nan
        i += 2
    return values, i


def error_message(lines: Sequence[str]) -> str | None:
    """The message of the first error block ('Fatal error: There is no domain ...')."""
    for i, line in enumerate(lines):
        if not _ERROR_START.match(line):
            continue
        message: list[str] = []
        for follow in lines[i + 1 :]:
            text = follow.strip()
            if ERROR_FRAME.match(follow) or text.startswith(_ERROR_TRAILER):
                break
            if text and not text.startswith(_ERROR_HEADER):
                message.append(text)
        return " ".join(message) or "mdrun stopped on an error without a message"
    return None


def log_tail(lines: Sequence[str], count: int = 6) -> tuple[str, ...]:
    return tuple(ln.strip() for ln in lines if ln.strip())[-count:]


def parse_md_log(text: str) -> MdrunLog:
    """Everything the benchmark reads from an mdrun log (missing facts stay None)."""
    lines = text.splitlines()
    found: dict[str, object] = {}
    energies: list[EnergyFrame] = []
    step: int | None = None
    last_step: int | None = None
    averages = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if "version" not in found and (m := _VERSION.search(line) or _VERSION_LINE.match(line)):
            found["version"] = m.group(1)
        elif m := _ATOMS.match(line):
            found["atoms"] = int(m.group(1))
        elif (m := _PARAMETER.match(line)) and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
        elif m := _RANKS.match(line):
            found["ranks"] = int(m.group(1))
            found["rank_kind"] = "thread-MPI" if m.group(2).startswith("thread") else "MPI"
        elif m := _THREADS.match(line):
            found["omp_threads"] = int(m.group(1))
        elif m := _PME_RANKS.match(line):
            found["pme_ranks"] = int(m.group(1))
        elif m := _RESET.match(line):
            found["reset_step"] = int(m.group(1))
        elif _STEP_HEADER.match(line) and i + 1 < len(lines):
            try:
                step = int(lines[i + 1].split()[0])
            except (IndexError, ValueError):
                step = None
            else:
                last_step = step
            i += 2
            continue
        elif "A V E R A G E S" in line:
            averages = True
        elif line.strip() == "Energies (kJ/mol)":
            values, i = _energy_block(lines, i + 1)
            energies.append(EnergyFrame(None if averages else step, values))
            continue
        elif m := _TIME.match(line):
            found["time"] = m.groups()
        elif m := _PERFORMANCE.match(line):
            found["performance"] = m.groups()
        elif _FINISHED.match(line):
            found["finished"] = True
        i += 1

    def number(value: object) -> float | None:
        try:
            return float(str(value))
        except ValueError:
            return None

    time_fields = found.get("time")
    perf = found.get("performance")
    core_s = wall_s = cpu = nsday = hns = None
    if isinstance(time_fields, tuple):
        core_s, wall_s, cpu = (number(v) for v in time_fields)
    if isinstance(perf, tuple):
        nsday, hns = (number(v) for v in perf)
    nsteps = found.get("nsteps")
    dt = found.get("dt")
    return MdrunLog(
        version=str(found["version"]) if "version" in found else None,
        atoms=_int(found.get("atoms")),
        nsteps=_int(nsteps) if nsteps is not None else None,
        dt_ps=number(dt) if dt is not None else None,
        ranks=_int(found.get("ranks")),
        rank_kind=str(found["rank_kind"]) if "rank_kind" in found else None,
        omp_threads=_int(found.get("omp_threads")),
        pme_ranks=_int(found.get("pme_ranks")),
        reset_step=_int(found.get("reset_step")),
        last_step=last_step,
        energies=tuple(energies),
        core_s=core_s,
        wall_s=wall_s,
        cpu_percent=cpu,
        ns_per_day=nsday,
        hours_per_ns=hns,
        finished=bool(found.get("finished")),
        error=error_message(lines),
        tail=log_tail(lines),
    )


def _int(value: object) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        return None
