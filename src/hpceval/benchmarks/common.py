"""What the benchmark modules share: tool lookup, placements, case keys and repeated cases,
default time limits, and single-run measurements."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from hpceval.benchmarks.base import Case, Program, Tool
from hpceval.config import PlatformConfig, StrictModel
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, Placement
from hpceval.statistics import describe

Binding = Literal["core", "socket", "numa", "hwthread", "none"]


MAX_REPEAT = 100  # repetitions of a case: a suite's `repeat`, `hpceval simulate --repeat`


class RankSweepOptions(StrictModel):
    """The placement sweep and repetitions that NPB, GROMACS and LAMMPS suites share."""

    ranks: list[int] = Field(default_factory=lambda: [1], min_length=1)
    ranks_per_node: list[int] | None = None
    threads_per_rank: list[int] = Field(default_factory=lambda: [1], min_length=1)
    binding: Binding = "core"
    repeat: int = Field(1, ge=1, le=MAX_REPEAT)
    time_limit_s: float | None = Field(None, gt=0)


def require_tool(tool: Tool, program: str | None = None) -> str:
    """The path of the tool's program (or `program`, its name in the suite) for an
    execution's argv; BenchmarkFailure if it is missing."""
    path = shutil.which(program or tool.program)
    if path is None:
        raise BenchmarkFailure(tool.missing_reason(program))
    return path


def packaged_program(program: str, package: str, label: str) -> Program:
    """`build` of an application the Debian package supplies: nothing to compile, the program
    found on PATH is the one under test (UserError naming the package where it is missing)."""
    path = shutil.which(program)
    if path is None:
        raise UserError(f"{program} not found on PATH; install Debian package {package}")
    return Program(Path(path), f"{label} (Debian package)", (), {program: Path(path)})


def rank_placements(
    ranks: int,
    threads: int,
    ranks_per_node: list[int] | None,
    binding: Binding,
    platform: PlatformConfig,
) -> list[Placement]:
    """Placements of `ranks` x `threads` on the platform: one per entry of an explicit
    ranks_per_node sweep, or the platform's default placement (the fewest nodes that an
    even split fits, PlatformConfig.default_placement)."""
    if ranks_per_node:
        # A per-node count that does not divide `ranks` is left out of the sweep (the
        # planner notes it); a sweep where none does is an error. Placements needing more
        # nodes than the platform has are returned: the planner skips them with a note.
        fitting = [ppn for ppn in ranks_per_node if ranks % ppn == 0]
        if not fitting:
            listed = ", ".join(map(str, ranks_per_node))
            raise UserError(f"ranks {ranks} is not a multiple of ranks_per_node {listed}")
        return [Placement(ranks // ppn, ppn, threads, binding) for ppn in fitting]
    return [platform.default_placement(ranks, threads, binding)]


def case_key(
    benchmark: str, parts: Sequence[str], placement: Placement, qualifiers: Sequence[str] = ()
) -> str:
    """A case's stable key (--resume finds cases by it): the benchmark, its own parts, the
    placement, `qualifiers` (e.g. a rank pair), the binding."""
    return ":".join(
        [benchmark, *parts, placement.label(), *qualifiers, f"bind={placement.binding}"]
    )


def time_limit(
    explicit: float | None, estimate_s: float, *, floor_s: float, factor: float
) -> float:
    """The suite's time limit, else a generous one: `factor` x the estimate, at least `floor_s`."""
    return explicit or max(floor_s, factor * estimate_s)


def repetition_key(rep: int) -> str:
    """The point of the `rep`-th repetition (from 1) of a case that measures one run per point."""
    return f"rep={rep}"


def repeated_case(
    benchmark: str,
    key_parts: Sequence[str],
    placement: Placement,
    parameters: Mapping[str, ParamValue],
    *,
    repeat: int,
    run_estimate_s: float,
    explicit_limit_s: float | None,
    options: Mapping[str, Any],
    limit_floor_s: float = 120.0,
    limit_factor: float = 10.0,
) -> Case:
    """A case of `repeat` points "rep=1".."rep=N", one program run each (`run_estimate_s`):
    keyed by `key_parts` and the placement (case_key), limited to the suite's time limit
    for one run, else `limit_factor` x the estimate, at least `limit_floor_s` (time_limit)."""
    return Case(
        key=case_key(benchmark, key_parts, placement),
        benchmark=benchmark,
        placement=placement,
        parameters=parameters,
        points=tuple(repetition_key(i + 1) for i in range(repeat)),
        time_limit_s=time_limit(
            explicit_limit_s, run_estimate_s, floor_s=limit_floor_s, factor=limit_factor
        ),
        options=options,
        estimate_s=run_estimate_s * repeat,
    )


class WholeOutputs:
    """The output lines of the executions under way, per case, for a program whose point can
    only be read from its whole output (`parse_line` sees one line at a time)."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def add(self, case_key: str, line: str, *, starts: bool) -> list[str]:
        """Add one line (`starts`: it begins a new output) and return the output so far."""
        if starts:
            self._lines[case_key] = []
        lines = self._lines.setdefault(case_key, [])
        lines.append(line.rstrip("\n"))
        return lines

    def discard(self, case_key: str) -> None:
        """Forget a case's output: it is complete, failed, or its execution is over."""
        self._lines.pop(case_key, None)


def single_run_measurements(
    benchmark: str,
    rows: Iterable[tuple[str, float, str]],
    parameters: Mapping[str, ParamValue],
    details: Mapping[str, Any],
) -> tuple[Measurement, ...]:
    """One measurement per (metric, value, unit) row, each the one sample of a single run."""
    return tuple(
        Measurement(
            benchmark=benchmark,
            metric=metric,
            value=value,
            unit=unit,
            parameters=parameters,
            samples=(value,),
            statistics=describe([value]),
            statistic="single run",
            details=details,
        )
        for metric, value, unit in rows
    )
