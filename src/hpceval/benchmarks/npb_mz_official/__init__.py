"""`npb-mz-official`: the official NPB 3.4 multi-zone benchmarks BT-MZ, SP-MZ and LU-MZ
(MPI + OpenMP, or OpenMP), built from the sources the user points hpceval at (platform
`[sources] npb-mz-mpi` / `npb-mz-omp`, or `hpceval run --source`), as `npb-official` builds
NPB 3.4: a private copy in the build cache, config/make.def with the platform's wrappers and
hpceval's NPB flags (OpenMP on: the multi-zone codes are hybrid), `make bt-mz CLASS=X`.
A run counts only with "Verification = SUCCESSFUL" on the case's class and process count;
threads per rank come from the placement (OMP_NUM_THREADS). Measurements carry the
implementation "official/NPB-MZ <version printed>".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import RankSweepOptions, rank_placements, repeated_case
from hpceval.benchmarks.npb import NPB_CFLAGS, SECONDS_ESTIMATE, ClassName
from hpceval.benchmarks.npb.tables import best_run, kernel_tables
from hpceval.benchmarks.npb_official import (
    GFORTRAN_FLAGS,
    RAND,
    SOURCE_KIND_OPTION,
    SOURCE_OPTION,
    build_official,
    check_report,
    executable_key,
    fortran_wrapper,
    parse_output,
    report_measurements,
)
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.model import Measurement, official_implementation
from hpceval.sources import resolve_source

if TYPE_CHECKING:
    from rich.table import Table

NAME = "npb-mz-official"
MultiZone = Literal["bt-mz", "sp-mz", "lu-mz"]
SOURCE_OF_VARIANT = {"mpi": "npb-mz-mpi", "omp": "npb-mz-omp"}
# Class A of BT-MZ takes about as long as NPB's BT class A.
ESTIMATE_FACTOR = 5.0


class NpbMzOfficialOptions(RankSweepOptions):
    benchmarks: list[MultiZone] = Field(min_length=1)
    classes: list[ClassName] = Field(default_factory=lambda: list[ClassName](["S"]), min_length=1)
    variant: Literal["mpi", "omp"] = "mpi"


def make_def_mz(variant: str, *, mpicc: str, flags: Sequence[str]) -> str:
    """NPB-MZ's config/make.def (FC/CC: the MPI wrappers, or gfortran/gcc), OpenMP on."""
    cflags = " ".join(f for f in flags if f != "-std=c11")
    fflags = " ".join([*(f for f in flags if f != "-std=c11"), *GFORTRAN_FLAGS])
    fc, cc = (fortran_wrapper(mpicc), mpicc) if variant == "mpi" else ("gfortran", "gcc")
    return (
        f"FC = {fc}\nFLINK = $(FC)\nF_LIB =\nF_INC =\nFFLAGS = {fflags} -fopenmp\n"
        f"FLINKFLAGS = $(FFLAGS)\nCC = {cc}\nCLINK = $(CC)\nC_LIB = -lm\nC_INC =\n"
        f"CFLAGS = {cflags} -fopenmp\nCLINKFLAGS = $(CFLAGS)\nUCC = gcc\nBINDIR = ../bin\n"
        f"RAND = {RAND}\nWTIME = wtime.c\n"
    )


@register
class NpbMzOfficial(Benchmark[NpbMzOfficialOptions]):
    name = NAME
    description = "The official NPB 3.4 multi-zone BT-MZ, SP-MZ, LU-MZ, from the user's sources"
    points_per_execution = 1
    Options = NpbMzOfficialOptions

    def cases(
        self, options: NpbMzOfficialOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        kind = SOURCE_OF_VARIANT[options.variant]
        source = resolve_source(kind, platform.sources)
        if options.variant == "omp" and options.ranks != [1]:
            raise UserError("npb-mz-official: the OpenMP version runs one process (ranks = [1])")
        cases = []
        for bench in options.benchmarks:
            for class_name in options.classes:
                for ranks in options.ranks:
                    for threads in options.threads_per_rank:
                        for placement in rank_placements(
                            ranks, threads, options.ranks_per_node, options.binding, platform
                        ):
                            estimate = (
                                SECONDS_ESTIMATE[class_name]
                                * ESTIMATE_FACTOR
                                / max(1, ranks * threads)
                            )
                            cases.append(repeated_case(
                                self.name, [bench, class_name, f"np={ranks}", options.variant],
                                placement, {"kernel": bench, "class": class_name},
                                repeat=options.repeat, run_estimate_s=estimate,
                                explicit_limit_s=options.time_limit_s,
                                options={SOURCE_OPTION: str(source), SOURCE_KIND_OPTION: kind},
                            ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        raise UserError("npb-mz-official is built for its cases (build_for_cases)")

    def build_for_cases(
        self, cases: Sequence[Case], *, compiler: str, compiler_identity: str, cflags: Sequence[str]
    ) -> Program:
        flags = (*NPB_CFLAGS, *(f for f in cflags if not f.startswith("-O")))
        variant_of = {kind: variant for variant, kind in SOURCE_OF_VARIANT.items()}
        executables = build_official(
            cases,
            compiler=compiler,
            compiler_identity=compiler_identity,
            flags=flags,
            make_def_of=lambda kind: make_def_mz(variant_of[kind], mpicc=compiler, flags=flags),
        )
        first = next(iter(executables.values()), Path())
        return Program(first.parent, compiler, tuple(flags), executables)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        key = executable_key(str(case.parameters["kernel"]), str(case.parameters["class"]))
        return [str(program.executables[f"{case.options[SOURCE_KIND_OPTION]}:{key}"])]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        return None  # the summary is read from the whole output (collect)

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        report = parse_output(stdout, case)
        implementation = official_implementation(f"NPB-MZ {report.version or '?'}")
        measured = tuple(
            replace(m, implementation=implementation)
            for m in report_measurements(report, case, NAME)
        )
        return [ParsedPoint(point, measured)]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        check_report(parse_output(stdout, case), case)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return best_run(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return kernel_tables(measurements, ("bt-mz", "sp-mz", "lu-mz"), NAME)
