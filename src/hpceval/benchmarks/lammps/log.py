"""Reading LAMMPS' screen output (the same text as log.lammps): pure functions, tested on
outputs captured from real runs.

What a benchmark needs: the LAMMPS version, the atoms created, the thermo table (every value
finite, the last row at the last step), the "Loop time of T on P procs for S steps with A
atoms" line, the Performance line (tau/day, timesteps/s and, in newer versions, atom-step/s),
the MPI tasks x OpenMP threads it ran with, the closing "Total wall time", and any ERROR.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

_VERSION = re.compile(r"^LAMMPS \((.+)\)\s*$")
_CREATED = re.compile(r"^\s*Created (\d+) atoms")
_LOOP = re.compile(r"^Loop time of (\S+) on (\d+) procs for (\d+) steps with (\d+) atoms")
_PERFORMANCE = re.compile(r"^Performance:(.*)$")
_RATE = re.compile(r"(\S+) (tau/day|ns/day|hours/ns|timesteps/s|([kMG]?)atom-step/s)")
_TASKS = re.compile(r"% CPU use with (\d+) MPI tasks x (\d+) OpenMP threads")
_WALL = re.compile(r"^Total wall time: (\d+):(\d\d):(\d\d)")
_ERROR = re.compile(r"^ERROR(?: on proc \d+)?: ")
_PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def is_output_start(line: str) -> bool:
    return _VERSION.match(line) is not None


def is_output_end(line: str) -> bool:
    return _WALL.match(line) is not None


def is_error(line: str) -> bool:
    return _ERROR.match(line) is not None


@dataclass(frozen=True)
class ThermoTable:
    columns: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class LammpsOutput:
    version: str | None = None
    created_atoms: int | None = None
    thermo: tuple[ThermoTable, ...] = ()
    loop_time_s: float | None = None
    procs: int | None = None
    steps: int | None = None
    atoms: int | None = None
    timesteps_per_s: float | None = None  # as printed (3 decimals)
    atom_steps_per_s: float | None = None  # as printed, newer LAMMPS only
    tau_per_day: float | None = None
    mpi_tasks: int | None = None
    omp_threads: int | None = None
    total_wall_s: int | None = None
    error: str | None = None
    tail: tuple[str, ...] = ()


def _float(token: str) -> float:
    try:
        return float(token)
    except ValueError:
        return math.nan


def log_tail(lines: Sequence[str], count: int = 6) -> tuple[str, ...]:
    return tuple(ln.strip() for ln in lines if ln.strip())[-count:]


def error_message(lines: Sequence[str]) -> str | None:
    """The first ERROR line (and the 'Last command' LAMMPS prints after it)."""
    for i, line in enumerate(lines):
        if is_error(line):
            message = line.strip()
            if i + 1 < len(lines) and lines[i + 1].startswith("Last command:"):
                message += f" ({lines[i + 1].strip()})"
            return message
    return None


def parse_output(text: str) -> LammpsOutput:
    """Everything the benchmark reads from LAMMPS' output (missing facts stay None)."""
    lines = text.splitlines()
    found: dict[str, object] = {}
    tables: list[ThermoTable] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        words = line.split()
        if "version" not in found and (m := _VERSION.match(line)):
            found["version"] = m.group(1)
        elif m := _CREATED.match(line):
            found["created_atoms"] = int(m.group(1))
        elif words and words[0] == "Step" and len(words) > 1:
            # The thermo table: numeric rows until the loop summary (or anything else).
            rows = []
            i += 1
            while i < len(lines):
                if lines[i].startswith("WARNING"):
                    # LAMMPS interleaves warnings with the rows; they do not end the table.
                    i += 1
                    continue
                cells = lines[i].split()
                if len(cells) != len(words) or not _looks_numeric(cells[0]):
                    break
                rows.append(tuple(_float(c) for c in cells))
                i += 1
            tables.append(ThermoTable(tuple(words), tuple(rows)))
            continue
        elif m := _LOOP.match(line):
            found["loop"] = m.groups()
        elif m := _PERFORMANCE.match(line):
            for value, unit, prefix in _RATE.findall(m.group(1)):
                if unit == "timesteps/s":
                    found["timesteps_per_s"] = _float(value)
                elif unit == "tau/day":
                    found["tau_per_day"] = _float(value)
                elif unit.endswith("atom-step/s"):
                    found["atom_steps_per_s"] = _float(value) * _PREFIX[prefix]
        elif m := _TASKS.search(line):
            found["tasks"] = (int(m.group(1)), int(m.group(2)))
        elif m := _WALL.match(line):
            h, mi, s = (int(g) for g in m.groups())
            found["wall"] = 3600 * h + 60 * mi + s
        i += 1

    loop = found.get("loop")
    tasks = found.get("tasks")

    def opt_float(key: str) -> float | None:
        value = found.get(key)
        return value if isinstance(value, float) else None

    return LammpsOutput(
        version=str(found["version"]) if "version" in found else None,
        created_atoms=_opt_int(found.get("created_atoms")),
        thermo=tuple(tables),
        loop_time_s=_float(loop[0]) if isinstance(loop, tuple) else None,
        procs=int(loop[1]) if isinstance(loop, tuple) else None,
        steps=int(loop[2]) if isinstance(loop, tuple) else None,
        atoms=int(loop[3]) if isinstance(loop, tuple) else None,
        timesteps_per_s=opt_float("timesteps_per_s"),
        atom_steps_per_s=opt_float("atom_steps_per_s"),
        tau_per_day=opt_float("tau_per_day"),
        mpi_tasks=tasks[0] if isinstance(tasks, tuple) else None,
        omp_threads=tasks[1] if isinstance(tasks, tuple) else None,
        total_wall_s=_opt_int(found.get("wall")),
        error=error_message(lines),
        tail=log_tail(lines),
    )


def _looks_numeric(token: str) -> bool:
    return re.fullmatch(r"-?\d+", token) is not None


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) else None
