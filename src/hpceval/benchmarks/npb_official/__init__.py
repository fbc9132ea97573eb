"""`npb-official`: the official NAS Parallel Benchmarks 3.4 (MPI or OpenMP), built from the
sources the user points hpceval at, run like hpceval's own `npb` (same cases, placements,
sweeps), their output read by hpceval.benchmarks.npb.official_output.

The sources (platform `[sources] npb-mpi` / `npb-omp`, or `hpceval run --source`) are copied
into the build cache once per source hash, compiler and flags (never built in the user's
tree); `config/make.def` is written there with the platform's MPI wrappers and hpceval's NPB
flags, and `make KERNEL CLASS=X` builds each program a suite needs. A run counts only with
"Verification = SUCCESSFUL" and a summary that matches the case (class, processes).
Measurements carry the implementation "official/NPB <version printed>".
"""

from __future__ import annotations

import math
import shutil
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar, cast

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import (
    RankSweepOptions,
    rank_placements,
    repeated_case,
    single_run_measurements,
)
from hpceval.benchmarks.npb import (
    NPB_CFLAGS,
    SECONDS_ESTIMATE,
    ClassName,
    Kernel,
    rank_rule_error,
)
from hpceval.benchmarks.npb.official_output import NpbOutputError, NpbReport, parse_npb_output
from hpceval.benchmarks.npb.tables import best_run, kernel_tables
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, official_implementation
from hpceval.sources import private_tree, resolve_source, run_make
from hpceval.units import MOPS, SECOND

if TYPE_CHECKING:
    from rich.table import Table

NAME = "npb-official"
# Source kind per programming model.
SOURCE_OF_VARIANT = {"mpi": "npb-mpi", "omp": "npb-omp"}
# Case options: where the sources are and which kind they are (stored with the case, so a
# resumed run builds the same tree).
SOURCE_OPTION = "source"
SOURCE_KIND_OPTION = "source_kind"
# gfortran >= 10 refuses NPB 3.4's MPI calls with buffers of different types and randi8's
# BOZ constants unless told; NPB's recommended generator is randi8.
GFORTRAN_FLAGS: tuple[str, ...] = ("-fallow-argument-mismatch", "-fallow-invalid-boz")
# gfortran's OpenMP builds (NPB-OMP, NPB-MZ): their threadprivate arrays are thread-local
# data, and gcc 12 at -O3 -march=native (znver3) writes some initial-exec accesses to them as
# `lea var@gottpoff(%rip)`, which binutils 2.40 cannot relax: the link fails ("TLS transition
# from R_X86_64_GOTTPOFF to R_X86_64_TPOFF32 ... failed"). local-exec is the access the
# linker's relaxation gives an executable anyway.
GFORTRAN_OPENMP_FLAGS = "-fopenmp -ftls-model=local-exec"
RAND = "randi8"


class OfficialNpbOptions(RankSweepOptions):
    """The classes, programming model and sweep of an official NPB code's suite entry."""

    classes: list[ClassName] = Field(default_factory=lambda: list[ClassName](["S"]), min_length=1)
    variant: Literal["mpi", "omp"] = "mpi"

    @model_validator(mode="after")
    def _one_process_for_openmp(self) -> OfficialNpbOptions:
        if self.variant == "omp" and self.ranks != [1]:
            raise ValueError("ranks: the OpenMP version runs one process (ranks = [1])")
        return self


OptionsT = TypeVar("OptionsT", bound=OfficialNpbOptions)


class NpbOfficialOptions(OfficialNpbOptions):
    kernels: list[Kernel] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> NpbOfficialOptions:
        for kernel in self.kernels:
            for class_name in self.classes:
                for r in self.ranks:
                    if why := rank_rule_error(kernel, class_name, r):
                        raise ValueError(f"ranks: {why}")
        return self


def fortran_wrapper(mpicc: str) -> str:
    """The MPI Fortran wrapper beside the C one: mpicc -> mpif90, mpicc.mpich -> mpif90.mpich."""
    path = Path(mpicc)
    name = path.name.replace("mpicc", "mpif90", 1)
    return str(path.with_name(name)) if path.parent != Path() else name


def make_def(variant: str, *, mpicc: str, flags: Sequence[str]) -> str:
    """NPB's config/make.def: the platform's wrappers, hpceval's NPB flags, randi8."""
    cflags = " ".join(f for f in flags if f not in ("-fopenmp", "-std=c11"))
    fflags = " ".join([*(f for f in flags if f not in ("-std=c11", "-fopenmp")), *GFORTRAN_FLAGS])
    if variant == "omp":
        # The OpenMP NPB is not an MPI program: plain gfortran / gcc with OpenMP.
        return (
            "FC = gfortran\nFLINK = $(FC)\nF_LIB =\nF_INC =\n"
            f"FFLAGS = {fflags} {GFORTRAN_OPENMP_FLAGS}\n"
            "FLINKFLAGS = $(FFLAGS)\nCC = gcc\nCLINK = $(CC)\nC_LIB = -lm\nC_INC =\n"
            f"CFLAGS = {cflags} -fopenmp\nCLINKFLAGS = $(CFLAGS)\nUCC = gcc\n"
            f"BINDIR = ../bin\nRAND = {RAND}\nWTIME = wtime.c\n"
        )
    return (
        f"MPIFC = {fortran_wrapper(mpicc)}\nFLINK = $(MPIFC)\nFMPI_LIB =\nFMPI_INC =\n"
        f"FFLAGS = {fflags}\nFLINKFLAGS = $(FFLAGS)\nMPICC = {mpicc}\nCLINK = $(MPICC)\n"
        f"CMPI_LIB =\nCMPI_INC =\nCFLAGS = {cflags}\nCLINKFLAGS = $(CFLAGS)\nCC = gcc\n"
        f"BINDIR = ../bin\nCONVERTFLAG = -DFORTRAN_REC_SIZE=1\nRAND = {RAND}\n"
    )


def executable_key(kernel: str, class_name: str) -> str:
    return f"{kernel}.{class_name}"


def build_official(
    cases: Sequence[Case],
    *,
    compiler: str,
    compiler_identity: str,
    flags: Sequence[str],
    make_def_of: Callable[[str], str],
) -> dict[str, Path]:
    """Build (or find built) every program the cases run: {"npb-mpi:cg.A": path}.
    `make_def_of(kind)` is the config/make.def written into the private tree of a kind."""
    built: dict[str, Path] = {}
    wanted: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for case in cases:
        given = (str(case.options[SOURCE_KIND_OPTION]), str(case.options[SOURCE_OPTION]))
        wanted.setdefault(given, set()).add(
            (str(case.parameters["kernel"]), str(case.parameters["class"]))
        )
    for (kind, source_text), programs in sorted(wanted.items()):
        # mpif90 calls gfortran (OMPI_FC, MPICH's default): the compiler must be there.
        if shutil.which("gfortran") is None:
            raise UserError(
                "gfortran not found: building the official NPB needs a Fortran compiler "
                "(Debian package gfortran, ./setup.sh deps)"
            )
        source = resolve_source(kind, {kind: source_text})
        tree, _ = private_tree(kind, source, compiler_identity, flags)
        (tree / "config" / "make.def").write_text(make_def_of(kind))
        (tree / "bin").mkdir(exist_ok=True)
        for kernel, class_name in sorted(programs):
            exe = tree / "bin" / f"{kernel}.{class_name}.x"
            if not exe.is_file():
                run_make(
                    tree,
                    [kernel, f"CLASS={class_name}"],
                    env={"OMPI_FC": "gfortran"},
                    what=f"official NPB {kernel.upper()} class {class_name} ({kind})",
                )
            if not exe.is_file():
                raise UserError(
                    f"building official NPB {kernel.upper()} class {class_name}: make "
                    f"succeeded but left no bin/{exe.name} in {tree}"
                )
            built[f"{kind}:{executable_key(kernel, class_name)}"] = exe
    return built


TIME_FROM_MOPS = "printed 0.00 s (below its resolution): the operation count over Mop/s"


def check_report(report: NpbReport, case: Case) -> None:
    """The summary is this case's run, and it verified."""
    kernel, class_name = str(case.parameters["kernel"]), str(case.parameters["class"])
    what = f"official {kernel.upper()} class {class_name}"
    if report.kernel != kernel or report.npb_class != class_name:
        raise BenchmarkFailure(f"{what}: the output is {report.benchmark} class {report.npb_class}")
    if not report.verified:
        raise BenchmarkFailure(f"{what} failed verification: Verification = {report.verification}")
    ranks = case.placement.ranks
    if report.total_processes is not None and report.total_processes != ranks:
        raise BenchmarkFailure(
            f"{what}: ran on {report.total_processes} processes, the case has {ranks}"
        )
    if not (math.isfinite(report.time_s) and report.time_s > 0 and report.mops_total > 0):
        raise BenchmarkFailure(f"{what}: nonsense timing {report.time_s!r} s")


def report_measurements(
    report: NpbReport, case: Case, benchmark: str = NAME, implementation_name: str = "NPB"
) -> tuple[Measurement, ...]:
    check_report(report, case)
    # (The parser has checked the Mop/s against NPB's operation count over the time.)
    params: dict[str, ParamValue] = {**case.parameters, **case.placement.as_parameters()}
    details = {
        "verification": list(report.verification_lines),
        "compile_options": dict(report.compile_options),
        "version": report.version,
        **({"time": TIME_FROM_MOPS} if report.time_from_mops else {}),
    }
    rows = (
        ("time", report.time_s, SECOND),
        ("mops_total", report.mops_total, MOPS),
        ("mops_per_process", report.mops_total / case.placement.ranks, MOPS),
    )
    implementation = official_implementation(f"{implementation_name} {report.version or '?'}")
    return tuple(
        replace(m, implementation=implementation)
        for m in single_run_measurements(benchmark, rows, params, details)
    )


def parse_output(stdout: str, case: Case) -> NpbReport:
    try:
        return parse_npb_output(stdout, f"official {case.parameters['kernel']} output")
    except NpbOutputError as e:
        raise BenchmarkFailure(str(e)) from None


class OfficialNpbBenchmark(Benchmark[OptionsT]):
    """What the official NPB codes (`npb-official`, `npb-mz-official`) share: cases from
    the programs and classes of an entry, the build in the private tree, the whole-output
    parse and its checks. A subclass names its source kinds, its programs and the make.def
    it writes."""

    points_per_execution = 1
    built_from_user_sources = True
    # variant ("mpi", "omp") -> source kind; the programs in table order; the name the
    # implementation carries ("NPB" -> "official/NPB 3.4.2"); run time relative to NPB's
    # kernels of the same class (the progress bar's estimate).
    source_of_variant: ClassVar[Mapping[str, str]]
    program_order: ClassVar[tuple[str, ...]]
    implementation_name: ClassVar[str]
    estimate_factor: ClassVar[float] = 2.0

    @abstractmethod
    def programs(self, options: OptionsT) -> list[str]:
        """The programs (kernels, multi-zone benchmarks) a suite entry names."""

    @abstractmethod
    def make_def(self, variant: str, *, mpicc: str, flags: Sequence[str]) -> str:
        """The config/make.def written into the private tree of a variant."""

    def cases(self, options: OptionsT, platform: PlatformConfig, entry_index: int) -> list[Case]:
        sweep = cast(OfficialNpbOptions, options)
        kind = self.source_of_variant[sweep.variant]
        source = resolve_source(kind, platform.sources)
        cases = []
        for program in self.programs(options):
            for class_name in sweep.classes:
                for ranks in sweep.ranks:
                    for threads in sweep.threads_per_rank:
                        for placement in rank_placements(
                            ranks, threads, sweep.ranks_per_node, sweep.binding, platform
                        ):
                            estimate = (
                                SECONDS_ESTIMATE[class_name]
                                * self.estimate_factor
                                / max(1, ranks * threads)
                            )
                            cases.append(repeated_case(
                                self.name, [program, class_name, f"np={ranks}", sweep.variant],
                                placement, {"kernel": program, "class": class_name},
                                repeat=sweep.repeat, run_estimate_s=estimate,
                                explicit_limit_s=sweep.time_limit_s,
                                options={SOURCE_OPTION: str(source), SOURCE_KIND_OPTION: kind},
                            ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        raise UserError(f"{self.name} is built for its cases (build_for_cases)")

    def build_for_cases(
        self, cases: Sequence[Case], *, compiler: str, compiler_identity: str, cflags: Sequence[str]
    ) -> Program:
        # The same flags as hpceval's own NPB kernels (NPB_CFLAGS), the platform's -O aside.
        flags = (*NPB_CFLAGS, *(f for f in cflags if not f.startswith("-O")))
        variant_of = {kind: variant for variant, kind in self.source_of_variant.items()}
        executables = build_official(
            cases,
            compiler=compiler,
            compiler_identity=compiler_identity,
            flags=flags,
            make_def_of=lambda kind: self.make_def(variant_of[kind], mpicc=compiler, flags=flags),
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
        measured = report_measurements(report, case, self.name, self.implementation_name)
        return [ParsedPoint(point, measured)]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        check_report(parse_output(stdout, case), case)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return best_run(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return kernel_tables(measurements, self.program_order, self.name)


@register
class NpbOfficial(OfficialNpbBenchmark[NpbOfficialOptions]):
    name = NAME
    description = "The official NPB 3.4 (MPI or OpenMP), built from the user's sources"
    Options = NpbOfficialOptions
    source_of_variant = SOURCE_OF_VARIANT
    program_order = ("ep", "is", "cg", "mg", "ft", "bt", "sp", "lu")
    implementation_name = "NPB"

    def programs(self, options: NpbOfficialOptions) -> list[str]:
        return list(options.kernels)

    def make_def(self, variant: str, *, mpicc: str, flags: Sequence[str]) -> str:
        return make_def(variant, mpicc=mpicc, flags=flags)
