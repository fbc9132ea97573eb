"""The benchmark interface.

A benchmark is one folder (a package under hpceval/benchmarks, or a plug-in registered under
the `hpceval.benchmarks` entry point group) holding everything hpceval asks about it:

- `Options`, the pydantic model of its suite options, validated once when the suite is
  loaded (`parse_options`) and passed typed to `cases` and `unavailable`;
- its category and what the analysis needs, declared in `benchmark.toml` beside the code
  (hpceval.catalog: read by compare and the report without importing the benchmark);
- `tools`, the external programs it needs (`Tool`: read by `doctor`, by the skip logic and
  checked against scripts/packages.txt);
- `cases`, `build`, `command`, `parse_line`, `verify` (and `staged`, `collect`): it turns a
  suite entry into cases, builds its program, gives the program's argv for a case, parses
  the program's output into Measurements (a pure function, tested on captured outputs), and
  verifies the run. Exit status 0 is not success: `verify` must pass before the execution
  counts as good;
- `headline` and `tables`, how `hpceval run` and `hpceval show` present its measurements.
"""

from __future__ import annotations

import contextlib
import shutil
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from hpceval.benchmarks import display
from hpceval.catalog import BenchmarkCategory, Declaration, declaration
from hpceval.config import PlatformConfig
from hpceval.model import Measurement, ParamValue, Placement

if TYPE_CHECKING:
    from rich.table import Table


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


@dataclass(frozen=True)
class Tool:
    """An external program a benchmark runs: looked up on PATH by `doctor` and before a run
    (a missing one skips the benchmark's cases), installed from a Debian package that
    scripts/packages.txt lists.

    `version_args` is None for a program that must not be started just to ask its version
    (hpcc runs the whole benchmark). `linked_library`: a library whose path `doctor` shows
    (`ldd`), when the figures depend on which one is linked (hpcc's BLAS).
    """

    program: str
    package: str  # the Debian package
    needed_for: str  # what doctor says it is for
    package_words: str  # what to install on another OS, in words
    version_args: tuple[str, ...] | None = ("--version",)
    alternatives: tuple[str, ...] = ()  # other names of the program, tried after `program`
    linked_library: str | None = None

    @property
    def programs(self) -> tuple[str, ...]:
        return (self.program, *self.alternatives)

    def missing_reason(self, program: str | None = None) -> str:
        """The one-line reason (with its remedy) a case is skipped when the tool is missing."""
        return (
            f"{program or self.program} not found on PATH; install Debian package "
            f"{self.package} (./setup.sh deps)"
        )


OptionsT = TypeVar("OptionsT", bound=BaseModel)


class Benchmark(ABC, Generic[OptionsT]):
    name: ClassVar[str]
    description: ClassVar[str]
    # The model of the suite options (a StrictModel: unknown keys are refused).
    Options: type[OptionsT]
    # The external programs the benchmark runs (none for those hpceval compiles).
    tools: ClassVar[tuple[Tool, ...]] = ()
    # How many points one execution measures: None = all the case's points in one run of
    # the program (mpibench: one size per point); 1 = a run per point (NPB repetitions).
    points_per_execution: ClassVar[int | None] = None
    # True for an official code built from the sources its cases name (build_for_cases):
    # `hpceval build` has nothing to build for it without a suite.
    built_from_user_sources: ClassVar[bool] = False
    # True for a Java program on MPJ Express: its cases run through the platform's Java
    # launcher (hpceval.mpj.java_platform), beside the C cases of the same suite.
    runs_on_mpj: ClassVar[bool] = False

    def parse_options(self, options: Mapping[str, Any]) -> OptionsT:
        """A suite entry's options, typed; pydantic.ValidationError / ValueError naming the
        bad field. Called when the suite is loaded, and for the stored options of a resumed
        run."""
        return self.Options.model_validate(dict(options))

    @property
    def declaration(self) -> Declaration:
        found = declaration(self.name)
        if found is None:
            raise RuntimeError(f"benchmark {self.name!r} has no benchmark.toml beside its code")
        return found

    @property
    def category(self) -> BenchmarkCategory:
        return self.declaration.category

    @abstractmethod
    def cases(self, options: OptionsT, platform: PlatformConfig, entry_index: int) -> list[Case]:
        """Expand one suite entry on a platform into cases (UserError on impossible ones)."""

    @abstractmethod
    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        """Compile (or fetch from the build cache) the benchmark's program."""

    def build_for_cases(
        self,
        cases: Sequence[Case],
        *,
        compiler: str,
        compiler_identity: str,
        cflags: Sequence[str],
    ) -> Program:
        """Build what `cases` (this benchmark's cases of a run) need. Default: `build`; a
        benchmark whose programs depend on the cases (an official code: one program per
        kernel and class, from the sources the cases name) builds only those."""
        return self.build(compiler=compiler, compiler_identity=compiler_identity, cflags=cflags)

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

    def required_programs(self, options: OptionsT) -> list[tuple[Tool, str]]:
        """The (tool, program name) pairs a suite entry runs; default: every tool under its
        own name. A benchmark whose options rename a program (`lmp = "lmp_mpich"`) says so."""
        return [(tool, tool.program) for tool in self.tools]

    def unavailable(self, options: OptionsT, platform: PlatformConfig) -> str | None:
        """Why this suite entry cannot run here (its tool is missing), or None if it can.

        A one-line reason with the remedy ("fio not found on PATH; install Debian package
        fio (./setup.sh deps)"). The campaign then records every case of the entry as a
        skipped execution with this reason, measures nothing for it and goes on;
        `hpceval run --resume` asks again and runs the cases once the tool is there. `build`
        is not called for a benchmark whose every case is skipped. Must be cheap (a PATH
        lookup), and must not raise for a missing tool. Default: the first program of
        `required_programs` not on PATH.
        """
        for tool, program in self.required_programs(options):
            if shutil.which(program) is None:
                return tool.missing_reason(program)
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

    def headline(self, measurements: Sequence[Measurement]) -> str:
        """The figure a user looks for first in one case's measurements (`hpceval run`'s
        summary). Default: the best value of each metric."""
        return display.generic_headline(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        """`hpceval show`'s tables of this benchmark's measurements in a run. Default: one
        row per metric and parameters, best of the repetitions."""
        return display.generic_tables(self.name, measurements)
