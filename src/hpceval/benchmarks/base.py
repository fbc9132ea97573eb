"""The benchmark interface.

A benchmark module turns a suite's `[[benchmark]]` table into cases, builds its program,
gives the program's argv for a case, parses the program's output into Measurements (a pure
function, tested on captured outputs), and verifies the run. Exit status 0 is not success:
`verify` must pass before the execution counts as good.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hpceval.config import PlatformConfig
from hpceval.model import Measurement, ParamValue, Placement


@dataclass(frozen=True)
class Case:
    """One execution to run: a benchmark configuration on a placement, covering some points.

    `key` is stable across invocations (it is how --resume finds what is left);
    `points` are the keys of the measurement points the case produces (e.g. "size=1024").
    """

    key: str
    benchmark: str
    placement: Placement
    parameters: Mapping[str, ParamValue]
    points: tuple[str, ...]
    time_limit_s: float
    options: Mapping[str, Any] = field(default_factory=dict)
    # Rough seconds the case takes; weights the progress bar's ETA.
    estimate_s: float = 1.0
    # The options of the suite entry the case comes from (set by the campaign's planning and
    # stored with the case): `Benchmark.unavailable` is asked again with them on --resume.
    entry_options: Mapping[str, Any] = field(default_factory=dict)

    def description(self) -> dict[str, Any]:
        return {
            "parameters": dict(self.parameters),
            "placement": self.placement.as_parameters(),
            "points": list(self.points),
            "time_limit_s": self.time_limit_s,
            "options": dict(self.options),
        }


@dataclass(frozen=True)
class ParsedPoint:
    """The measurements of one completed point of a case."""

    point_key: str
    measurements: tuple[Measurement, ...]


@dataclass(frozen=True)
class Program:
    """A built executable (or several, by name) and how it was built (provenance)."""

    path: Path
    compiler: str
    cflags: tuple[str, ...]
    executables: Mapping[str, Path] = field(default_factory=dict)


class Benchmark(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # How many points one execution measures: None = all the case's points in one run of
    # the program (mpibench: one size per point); 1 = a run per point (NPB repetitions).
    points_per_execution: ClassVar[int | None] = None

    @abstractmethod
    def validate_options(self, options: Mapping[str, Any]) -> None:
        """Raise pydantic.ValidationError / ValueError naming the bad field."""

    @abstractmethod
    def cases(
        self, options: Mapping[str, Any], platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        """Expand one suite entry on a platform into cases (UserError on impossible ones)."""

    @abstractmethod
    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        """Compile (or fetch from the build cache) the benchmark's program."""

    @abstractmethod
    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        """The program's argv (without launcher) measuring only `points` of `case`."""

    @abstractmethod
    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        """Parse one line of the program's stdout; None for lines that hold no point.

        Raises BenchmarkFailure when the line is an error report or fails its sanity check.
        """

    @abstractmethod
    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        """Check a finished execution's whole output; raise BenchmarkFailure if not sound."""

    def unavailable(self, options: Mapping[str, Any], platform: PlatformConfig) -> str | None:
        """Why this suite entry cannot run here (its tool is missing), or None if it can.

        A one-line reason with the remedy ("fio not found on PATH; install Debian package
        fio (./setup.sh deps)"). The campaign then records every case of the entry as a
        skipped execution with this reason, measures nothing for it and goes on;
        `hpceval run --resume` asks again and runs the cases once the tool is there. `build`
        is not called for a benchmark whose every case is skipped. Must be cheap (a PATH
        lookup), and must not raise for a missing tool.
        """
        return None

    def staged(self, case: Case, points: Sequence[str]) -> AbstractContextManager[Case]:
        """Set up what one execution needs, and remove it afterwards on every exit path.

        Entered just before the execution's command is built and left once its output has
        been parsed, also after a failure, a time-out or an interruption. Yields the case to
        run (it may carry, in `options`, a per-execution working directory made here). Raise
        BenchmarkFailure when it cannot be set up: the execution is then a failure.
        Default: nothing to set up.
        """
        return contextlib.nullcontext(case)

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        """Points that can only be read once the program has exited successfully: an output
        file in the staged directory, a JSON document on stdout. Called after exit status 0
        and before `verify`, inside `staged`; raises BenchmarkFailure. Default: none (the
        points stream through `parse_line`).
        """
        return []

    def parse(self, stdout: str, case: Case) -> list[ParsedPoint]:
        """All points of a complete output (pure; used by tests and importers)."""
        out = []
        for line in stdout.splitlines():
            parsed = self.parse_line(line, case)
            if parsed is not None:
                out.append(parsed)
        return out
