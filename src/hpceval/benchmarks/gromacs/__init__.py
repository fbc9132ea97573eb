"""`gromacs`: GROMACS mdrun on a water box generated offline, in ns/day and ms per step.

The system (inputs.py) is a cubic box of 3-site water made by `gmx solvate`, minimised and
turned into a run input by `gmx grompp`, cached per size. Each execution runs `gmx_mpi
mdrun` through the platform's launcher (MPI ranks x OpenMP threads, `-ntomp`), or `gmx
mdrun` with thread-MPI ranks (`-ntmpi`) in one process, for a fixed number of steps with
the counters reset half-way (`-resethway`: set-up and load balancing excluded) and nothing
written but the log. The log is linked to rank 0's standard output, so it streams like any
benchmark output; a point is produced only once the whole log is read and checked: every
step done, every logged energy finite, no error block, the ranks and threads as asked.
"""

from __future__ import annotations

import contextlib
import math
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.common import (
    RankSweepOptions,
    WholeOutputs,
    rank_placements,
    repeated_case,
    single_run_measurements,
)
from hpceval.benchmarks.display import application_headline, application_table
from hpceval.benchmarks.gromacs.inputs import (
    LOG_NAME,
    MIN_BOX_NM,
    SystemSpec,
    prepare_system,
    stage_run_directory,
)
from hpceval.benchmarks.gromacs.log import (
    ERROR_FRAME,
    MdrunLog,
    error_message,
    is_log_end,
    is_log_start,
    parse_md_log,
)
from hpceval.build import cache_root
from hpceval.config import Argument, PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, Placement
from hpceval.units import MILLISECOND

if TYPE_CHECKING:
    from rich.table import Table

NS_PER_DAY: Final = "ns/day"  # declared in benchmark.toml
GMX = Tool(
    "gmx",
    package="gromacs",
    needed_for="the GROMACS application benchmark (ns/day); without it its cases are skipped",
    package_words="GROMACS (gmx)",
    alternatives=("gmx_mpi",),
)

# Rough cost of one atom-step on one core of a current x86 machine, and mdrun's start-up:
# only for the progress bar's ETA and the default time limit (which is generous).
SECONDS_PER_ATOM_STEP = 1.5e-6
STARTUP_S = 3.0
WATER_ATOMS_PER_NM3 = 100.0  # 33.4 molecules of 3 atoms per nm^3 at 1 g/cm^3

MpiKind = Literal["library", "thread"]


class GromacsOptions(RankSweepOptions):
    box_nm: list[float] = Field(default_factory=lambda: [3.0], min_length=1)
    water: Literal["spce", "tip3p", "spc"] = "spce"
    steps: int = Field(1000, ge=20, le=10_000_000)
    # "library": gmx_mpi started by the launcher, one process per rank; "thread": one gmx
    # process with thread-MPI ranks (-ntmpi), on one node.
    mpi: MpiKind = "library"
    gmx: Argument = "gmx"  # input preparation (solvate, grompp) and thread-MPI runs
    gmx_mpi: Argument = "gmx_mpi"  # MPI-library runs

    @model_validator(mode="after")
    def _check(self) -> GromacsOptions:
        for box in self.box_nm:
            if not (math.isfinite(box) and MIN_BOX_NM <= box <= 100):
                raise ValueError(
                    f"box_nm: {box:g} nm is outside {MIN_BOX_NM:g}..100 nm (the 1 nm cut-off "
                    "needs at least 2.5 nm under periodic boundaries)"
                )
        for r in self.ranks:
            if r < 1:
                raise ValueError(f"ranks: {r} is not a valid rank count")
        for t in self.threads_per_rank:
            if t < 1:
                raise ValueError(f"threads_per_rank: {t} is not a valid thread count")
        if self.steps % 2:
            # -resethway resets the counters at steps/2: an even count splits exactly.
            raise ValueError(f"steps: {self.steps} must be even")
        if self.mpi == "thread" and self.ranks_per_node is not None:
            raise ValueError("ranks_per_node: thread-MPI ranks all run in one process")
        return self


def estimated_atoms(box_nm: float) -> int:
    return int(WATER_ATOMS_PER_NM3 * box_nm**3)


@register
class Gromacs(Benchmark[GromacsOptions]):
    name = "gromacs"
    description = "GROMACS mdrun on a generated water box (PME): ns/day and time per step"
    points_per_execution = 1
    Options = GromacsOptions
    tools = (GMX,)

    def __init__(self) -> None:
        # The log lines of the execution under way, per case: parse_line sees one line at a
        # time, but a point needs the whole log (its checks span it).
        self._logs = WholeOutputs()

    def required_programs(self, options: GromacsOptions) -> list[tuple[Tool, str]]:
        # Inputs are prepared with gmx; MPI-library runs start gmx_mpi.
        needed = [options.gmx] if options.mpi == "thread" else [options.gmx, options.gmx_mpi]
        return [(GMX, program) for program in needed]

    def cases(
        self, options: GromacsOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        cases = []
        for box in options.box_nm:
            for ranks in options.ranks:
                for threads in options.threads_per_rank:
                    for placement in self._placements(options, ranks, threads, platform):
                        atoms = estimated_atoms(box)
                        estimate = STARTUP_S + SECONDS_PER_ATOM_STEP * atoms * options.steps / (
                            ranks * threads
                        )
                        params: dict[str, ParamValue] = {
                            "system": "water",
                            "water": options.water,
                            "box_nm": box,
                            "steps": options.steps,
                            "mpi": "thread-MPI" if options.mpi == "thread" else "MPI",
                        }
                        if options.mpi == "thread":
                            # One process runs them all: the ranks are mdrun's threads.
                            params.update(
                                ranks=ranks, ranks_per_node=ranks, threads_per_rank=threads
                            )
                        key_parts = [
                            f"water={options.water}", f"box={box:g}nm", f"steps={options.steps}",
                            f"np={ranks}", f"omp={threads}",
                            "tmpi" if options.mpi == "thread" else "mpi",
                        ]  # fmt: skip
                        cases.append(repeated_case(
                            self.name, key_parts, placement, params,
                            repeat=options.repeat, run_estimate_s=estimate,
                            explicit_limit_s=options.time_limit_s,
                            options={
                                "mpi": options.mpi,
                                "ranks": ranks,
                                "threads": threads,
                                "gmx": options.gmx,
                                "gmx_mpi": options.gmx_mpi,
                            },
                        ))  # fmt: skip
        return cases

    @staticmethod
    def _placements(
        opts: GromacsOptions, ranks: int, threads: int, platform: PlatformConfig
    ) -> list[Placement]:
        if opts.mpi == "thread":
            # One process with every thread-MPI rank's threads: it needs ranks x threads cores.
            return [Placement(1, 1, ranks * threads, opts.binding)]
        return rank_placements(ranks, threads, opts.ranks_per_node, opts.binding, platform)

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        # Nothing to compile: the Debian package's mdrun is the program under test.
        gmx_mpi = shutil.which("gmx_mpi")
        gmx = shutil.which("gmx")
        found = gmx_mpi or gmx
        if found is None:
            raise UserError("gmx_mpi not found on PATH; install Debian package gromacs")
        executables = {n: Path(p) for n, p in (("gmx", gmx), ("gmx_mpi", gmx_mpi)) if p}
        return Program(Path(found), "GROMACS (Debian package)", (), executables)

    def system_spec(self, case: Case) -> SystemSpec:
        p = case.parameters
        return SystemSpec(str(p["water"]), float(p["box_nm"]), int(p["steps"]))

    @contextlib.contextmanager
    def staged(self, case: Case, points: Sequence[str]) -> Iterator[Case]:
        """The cached input (prepared now if needed) and a run directory of this execution."""
        system = prepare_system(self.system_spec(case), str(case.options.get("gmx", "gmx")))
        run_dir = stage_run_directory(cache_root() / "gromacs" / "runs")
        try:
            yield replace(
                case,
                options={
                    **case.options,
                    "tpr": str(system.tpr),
                    "run_dir": str(run_dir),
                    "atoms": system.atoms,
                },
            )
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        options = case.options
        if "tpr" not in options or "run_dir" not in options:
            raise BenchmarkFailure("the GROMACS input was not staged for this execution")
        threads = str(options["threads"])
        common = [
            "-nobackup", "mdrun", "-s", str(options["tpr"]),
            "-deffnm", str(Path(str(options["run_dir"])) / LOG_NAME),
            # Exclude set-up and load balancing from the timing; write nothing but the log.
            "-resethway", "-noconfout", "-cpt", "-1",
        ]  # fmt: skip
        if options["mpi"] == "thread":
            # The launcher exports OMP_NUM_THREADS = all the process's threads; mdrun wants it
            # equal to -ntomp (threads per thread-MPI rank) or refuses to start. And its
            # OMP_PROC_BIND/OMP_PLACES pin the main thread to the first core, which every
            # thread-MPI rank then inherits: measured here, 2 ranks on 2 cores ran 12x
            # slower (1.2 against 15 ns/day, 1530 atoms). mdrun places its own threads.
            return [
                "env", "-u", "OMP_PROC_BIND", "-u", "OMP_PLACES",
                f"OMP_NUM_THREADS={threads}", str(options["gmx"]), *common,
                "-ntmpi", str(options["ranks"]), "-ntomp", threads,
            ]  # fmt: skip
        return [str(options["gmx_mpi"]), *common, "-ntomp", threads]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        lines = self._logs.add(case.key, line, starts=is_log_start(line))
        if ERROR_FRAME.match(line) and (message := error_message(lines)) is not None:
            # The closing frame of mdrun's error block: the execution has failed.
            self._logs.discard(case.key)
            raise BenchmarkFailure(f"gmx mdrun: {message}")
        if not is_log_end(line):
            return None
        self._logs.discard(case.key)
        log = parse_md_log("\n".join(lines))
        check_log(log, case)
        return point_measurements(log, case)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        self._logs.discard(case.key)
        check_log(parse_md_log(stdout), case)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return application_headline(measurements, "ns_per_day", "ns/day")

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return application_table(
            measurements,
            benchmark=self.name,
            title="GROMACS",
            figures=(("ns_per_day", "ns/day"), ("time_per_step", "ms/step")),
            size_keys=("box_nm", "atoms", "steps", "mpi"),
        )


def failure(message: str, log: MdrunLog) -> BenchmarkFailure:
    tail = " | ".join(log.tail)
    return BenchmarkFailure(f"{message}; log tail: {tail}" if tail else message)


def expected_layout(case: Case) -> tuple[int, int, str]:
    """(ranks, OpenMP threads per rank, rank kind) the execution was asked to run."""
    options = case.options
    if "ranks" in options and "threads" in options:
        kind = "thread-MPI" if options.get("mpi") == "thread" else "MPI"
        return int(options["ranks"]), int(options["threads"]), kind
    return case.placement.ranks, case.placement.threads_per_rank, "MPI"


def check_log(log: MdrunLog, case: Case) -> None:
    """The run is sound: finished, every step, finite energies, the layout asked for."""
    if log.error is not None:
        raise BenchmarkFailure(f"gmx mdrun: {log.error}")
    if not log.finished:
        raise failure("the mdrun log ends before 'Finished mdrun'", log)
    steps = int(case.parameters["steps"])
    if log.nsteps != steps:
        raise failure(f"the run input has nsteps {log.nsteps}, the case asks for {steps}", log)
    if log.last_step != steps:
        raise failure(f"mdrun stopped at step {log.last_step} of {steps}", log)
    if not log.energies:
        raise failure("the mdrun log has no energies", log)
    for frame in log.energies:
        bad = [name for name, value in frame.values.items() if not math.isfinite(value)]
        if bad:
            at = "the averages" if frame.step is None else f"step {frame.step}"
            raise failure(f"non-finite energies at {at}: {', '.join(bad)}", log)
    ranks, threads, kind = expected_layout(case)
    if (log.ranks, log.omp_threads, log.rank_kind) != (ranks, threads, kind):
        raise failure(
            f"mdrun used {log.ranks} {log.rank_kind} ranks x {log.omp_threads} OpenMP threads, "
            f"the case asks for {ranks} {kind} ranks x {threads}",
            log,
        )
    atoms = case.options.get("atoms")
    if atoms is not None and log.atoms != atoms:
        raise failure(f"mdrun simulated {log.atoms} atoms, the input has {atoms}", log)
    for name, value in (("ns/day", log.ns_per_day), ("dt", log.dt_ps)):
        if value is None or not (math.isfinite(value) and value > 0):
            raise failure(f"the mdrun log has no valid {name}", log)


def point_measurements(log: MdrunLog, case: Case) -> ParsedPoint:
    """ns/day as mdrun reports it, and the wall time per step it implies (ms)."""
    assert log.ns_per_day is not None and log.dt_ps is not None  # check_log passed
    # ns/day = timed steps x dt / wall time: one step takes dt x 86400 s/day / (ns/day),
    # in ms when dt is in ps. Derived from ns/day, which mdrun prints with more digits
    # than the wall time of a short run.
    ms_per_step = log.dt_ps * 86400.0 / log.ns_per_day
    params: dict[str, ParamValue] = {
        **case.placement.as_parameters(),
        **case.parameters,
        "atoms": log.atoms or 0,
        "gromacs_version": log.version or "unknown",
    }
    details = {
        "wall_s": log.wall_s,
        "core_s": log.core_s,
        "cpu_percent": log.cpu_percent,
        "hours_per_ns": log.hours_per_ns,
        "timed_steps": log.timed_steps,
        "dt_ps": log.dt_ps,
        "separate_pme_ranks": log.pme_ranks or 0,
    }
    (point,) = case.points
    rows = (
        ("ns_per_day", log.ns_per_day, NS_PER_DAY),
        ("time_per_step", ms_per_step, MILLISECOND),
    )
    return ParsedPoint(point, single_run_measurements("gromacs", rows, params, details))
