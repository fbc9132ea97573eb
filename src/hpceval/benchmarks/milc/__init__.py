"""`milc`: the real MILC code's `su3_rmd` (ks_imp_dyn: asqtad R-algorithm dynamical
fermions), built from the MILC sources the user points hpceval at (platform `[sources]
milc`, or `hpceval run --source milc=PATH`: a milc_qcd 7.x tree or its .tar.gz), run on an
input file hpceval writes (docs/lqcd.md).

hpceval ships no MILC code and downloads none. The sources are copied (or unpacked, safely)
into the build cache like the other official codes' (hpceval.sources: keyed by their hash,
the compiler and the make variables) and built there with MILC's own Makefile (`make
su3_rmd MPP=true PRECISION=2 CC=mpicc`) before the run's first case. Two build fixes, both
make variables, no source edit:
`-DOMPI_OMIT_MPI1_COMPAT_DECLS=0` (MILC 7.8's com_mpi.c still calls the MPI-1 error-handler
functions Open MPI 4 no longer declares) and `reunitarize_ks.o` added to the objects
(ks_imp_dyn's Make_template lacks it in MILC 7.8.1).

The input: a fresh (unit) gauge start on the asked lattice, `trajectories` trajectories of
`steps` molecular-dynamics steps, 4+4 flavours at one mass. A point is recorded once the
whole output is read and checked (output.py). Figures: the run's time, time per
trajectory, and CG iterations per second (MILC's total_iters over its Time).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import Field, field_validator, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import (
    RankSweepOptions,
    rank_placements,
    repeated_case,
    single_run_measurements,
)
from hpceval.benchmarks.display import application_headline, application_table
from hpceval.benchmarks.lqcd.decomposition import lattice_label, parse_lattice
from hpceval.benchmarks.lqcd.output import ITERATIONS_PER_SECOND
from hpceval.benchmarks.milc.output import check_milc_output, parse_milc_output
from hpceval.build import BUILD_TIMEOUT_S, cache_root
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue
from hpceval.sources import private_tree, resolve_source
from hpceval.units import SECOND

if TYPE_CHECKING:
    from rich.table import Table

TARGET: Final = "su3_rmd"
APPLICATION: Final = "ks_imp_dyn"
MAKE_VARIABLES: Final = (
    "MPP=true",
    "PRECISION=2",
    "OPT=-O3 -DOMPI_OMIT_MPI1_COMPAT_DECLS=0",
    "MY_OBJECTS=control.o gauge_info.o setup.o update_h.o update_u.o reunitarize_ks.o",
)
SOURCE_KIND: Final = "milc"  # in [sources] and --source (hpceval.sources: its layout)
SOURCE_OPTION: Final = "source"
SECONDS_PER_SITE_STEP = 2e-3  # rough (a loaded 2-core machine), for the ETA and limit only


class MilcOptions(RankSweepOptions):
    lattice: list[str] = Field(default_factory=lambda: ["8"], min_length=1)
    trajectories: int = Field(2, ge=1, le=1000)
    steps: int = Field(4, ge=1, le=1000)  # molecular-dynamics steps per trajectory
    step_size: float = Field(0.02, gt=0, le=1)
    beta: float = Field(7.0, gt=0, le=100)
    mass: float = Field(0.1, gt=0, le=10)
    u0: float = Field(0.8441, gt=0, le=1)
    seed: int = Field(1234, ge=1, le=2**31 - 1)
    make: str = "make"

    @field_validator("lattice")
    @classmethod
    def _lattices(cls, value: list[str]) -> list[str]:
        return [lattice_label(parse_lattice(text)) for text in value]

    @model_validator(mode="before")
    @classmethod
    def _source_moved(cls, data: Any) -> Any:
        if isinstance(data, dict) and "source" in data:
            raise ValueError(
                "source: the MILC sources are given like the other official codes' now: "
                "`milc = PATH` in the platform file's [sources] table, or "
                "`hpceval run --source milc=PATH` (docs/lqcd.md)"
            )
        return data

    @field_validator("threads_per_rank")
    @classmethod
    def _threads(cls, value: list[int]) -> list[int]:
        if value != [1]:
            raise ValueError("threads_per_rank: su3_rmd is built without OpenMP, one per rank")
        return value


MILC_PRIMES: Final = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)
# asqtad's Naik term hops 3 sites: MILC's gathers reach the next rank only, so a local
# extent below 3 deadlocks (measured: 4^4 on 2 ranks, local 2x4x4x4, hangs after the
# warm-ups); even extents, so at least 4.
MIN_LOCAL_EXTENT: Final = 4


def milc_layout(lattice: tuple[int, ...], ranks: int) -> tuple[int, ...]:
    """The local lattice MILC's layout_hyper_prime gives: for each prime factor of the rank
    count, largest first, divide the largest local extent divisible by it (one already
    divided first, else the first such direction). UserError when it cannot, or when a
    local extent would be below MIN_LOCAL_EXTENT."""
    local, divided = list(lattice), [1] * len(lattice)
    done = 1
    while done < ranks:
        prime = next((p for p in reversed(MILC_PRIMES) if (ranks // done) % p == 0), None)
        if prime is None:
            raise UserError(f"milc: {ranks} ranks has a prime factor above 53 (MILC's layout)")
        largest = max((n for n in local if n % prime == 0), default=0)
        candidates = [d for d, n in enumerate(local) if n == largest and largest]
        if not candidates:
            raise UserError(
                f"milc: MILC cannot lay out lattice {lattice_label(lattice)} over {ranks} "
                f"ranks (not enough factors of {prime})"
            )
        again = [d for d in candidates if divided[d] > 1]
        d = (again or candidates)[0]
        local[d] //= prime
        divided[d] *= prime
        done *= prime
    if min(local) < MIN_LOCAL_EXTENT:
        raise UserError(
            f"milc: lattice {lattice_label(lattice)} over {ranks} ranks gives local "
            f"{lattice_label(tuple(local))}; asqtad's 3-site Naik hop needs every local "
            f"extent >= {MIN_LOCAL_EXTENT} (a larger lattice or fewer ranks)"
        )
    return tuple(local)


def build_su3_rmd(source: Path, *, compiler: str, compiler_identity: str, make: str) -> Path:
    """su3_rmd built from the sources (a tree or its .tar.gz) in their private copy in the
    build cache (hpceval.sources), once per source hash, compiler and make variables."""
    tree, _ = private_tree(SOURCE_KIND, source, compiler_identity, [compiler, *MAKE_VARIABLES])
    app = tree / APPLICATION
    exe = app / TARGET
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    shutil.copy(tree / "Makefile", app / "Makefile")
    argv = [make, TARGET, f"CC={compiler}", f"MY_CC={compiler}", *MAKE_VARIABLES]
    try:
        proc = subprocess.run(argv, cwd=app, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchmarkFailure(f"building MILC su3_rmd failed: {e}") from None
    (app / "hpceval-build.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not exe.is_file():
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), "")
        raise BenchmarkFailure(
            f"building MILC su3_rmd in {app} failed: {first or 'see hpceval-build.log'}"
        )
    return exe


def input_file(case: Case) -> str:
    """su3_rmd's parameter file: a fresh start, no lattice saved."""
    o = case.options
    nx, ny, nz, nt = (int(n) for n in o["lattice"])
    lines = [
        "prompt 0", "nflavors1 4", "nflavors2 4",
        f"nx {nx}", f"ny {ny}", f"nz {nz}", f"nt {nt}", f"iseed {int(o['seed'])}", "",
        "warms 0", f"trajecs {int(o['trajectories'])}", "traj_between_meas 1",
        f"beta {float(o['beta'])!r}", f"mass1 {float(o['mass'])!r}",
        f"mass2 {float(o['mass'])!r}", f"u0 {float(o['u0'])!r}",
        f"microcanonical_time_step {float(o['step_size'])!r}",
        f"steps_per_trajectory {int(o['steps'])}", "max_cg_iterations 300",
        "max_cg_restarts 5", "error_per_site .000005", "error_for_propagator .000002",
        "npbp_reps 1", "prec_pbp 1", "fresh", "forget", "",
    ]  # fmt: skip
    return "\n".join(lines)


@register
class Milc(Benchmark[MilcOptions]):
    name = "milc"
    description = "MILC su3_rmd (asqtad RMD) built from the user's MILC sources: time, CG it/s"
    points_per_execution = 1
    built_from_user_sources = True
    Options = MilcOptions

    def cases(self, options: MilcOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        source = resolve_source(SOURCE_KIND, platform.sources)
        cases = []
        for text in options.lattice:
            lattice = parse_lattice(text)
            for ranks in options.ranks:
                milc_layout(lattice, ranks)  # UserError when MILC cannot run it
                sites = 1
                for n in lattice:
                    sites *= n
                estimate = (
                    5.0
                    + SECONDS_PER_SITE_STEP * sites * options.steps * (options.trajectories) / ranks
                )
                for placement in rank_placements(
                    ranks, 1, options.ranks_per_node, options.binding, platform
                ):
                    params: dict[str, ParamValue] = {
                        "lattice": lattice_label(lattice), "trajectories": options.trajectories,
                        "steps": options.steps, "mass": options.mass, "beta": options.beta,
                    }  # fmt: skip
                    key = [f"lattice={lattice_label(lattice)}", f"traj={options.trajectories}",
                           f"steps={options.steps}", f"mass={options.mass:g}",
                           f"beta={options.beta:g}", f"seed={options.seed}"]  # fmt: skip
                    cases.append(repeated_case(
                        self.name, key, placement, params, repeat=options.repeat,
                        run_estimate_s=estimate, explicit_limit_s=options.time_limit_s,
                        options={
                            SOURCE_OPTION: str(source), "make": options.make,
                            "lattice": list(lattice), "trajectories": options.trajectories,
                            "steps": options.steps, "step_size": options.step_size,
                            "beta": options.beta, "mass": options.mass, "u0": options.u0,
                            "seed": options.seed,
                        },
                    ))  # fmt: skip
        return cases

    def unavailable(self, options: MilcOptions, platform: PlatformConfig) -> str | None:
        if shutil.which(options.make) is None:
            return f"{options.make} not found on PATH; install Debian package make"
        return None

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        raise UserError("milc is built for its cases (build_for_cases)")

    def build_for_cases(
        self, cases: Sequence[Case], *, compiler: str, compiler_identity: str, cflags: Sequence[str]
    ) -> Program:
        # MILC's own optimisation flags (MAKE_VARIABLES), not the platform's cflags.
        if shutil.which(compiler) is None:
            raise BenchmarkFailure(f"{compiler} not found: install an MPI (libopenmpi-dev)")
        executables: dict[str, Path] = {}
        for text, make in sorted({(str(c.options[SOURCE_OPTION]), str(c.options["make"]))
                                  for c in cases}):  # fmt: skip
            source = resolve_source(SOURCE_KIND, {SOURCE_KIND: text})
            executables[text] = build_su3_rmd(
                source, compiler=compiler, compiler_identity=compiler_identity, make=make
            )
        first = next(iter(executables.values()), Path(TARGET))
        return Program(first, compiler, (), executables)

    @contextlib.contextmanager
    def staged(self, case: Case, points: Sequence[str]) -> Iterator[Case]:
        runs = cache_root() / "milc" / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="su3_rmd-", dir=runs))
        try:
            (run_dir / "input").write_text(input_file(case))
            yield replace(case, options={**case.options, "input": str(run_dir / "input")})
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        if "input" not in case.options:
            raise BenchmarkFailure("milc: no input file was written for this execution")
        exe = program.executables[str(case.options[SOURCE_OPTION])]
        return [str(exe), str(case.options["input"])]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        return None  # the checks span the whole output: collect

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        return [milc_point(stdout, case, point)]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        out = parse_milc_output(stdout)
        check_milc_output(out, ranks=case.placement.ranks,
                          trajectories=int(case.options["trajectories"]))  # fmt: skip

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return application_headline(measurements, "cg_rate", "CG iterations/s")

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return application_table(
            measurements, benchmark=self.name, title="MILC su3_rmd",
            figures=(("cg_rate", "CG it/s"), ("time_per_trajectory", "s/trajectory")),
            size_keys=("lattice", "trajectories", "steps"),
        )  # fmt: skip


def milc_point(stdout: str, case: Case, point: str) -> ParsedPoint:
    out = parse_milc_output(stdout)
    trajectories = int(case.options["trajectories"])
    check_milc_output(out, ranks=case.placement.ranks, trajectories=trajectories)
    assert out.time_s is not None and out.total_iters is not None  # checked
    params: dict[str, ParamValue] = {
        **case.placement.as_parameters(), **case.parameters,
        "milc_version": out.version or "unknown",
    }  # fmt: skip
    details = {
        "plaquettes": [list(p) for p in out.plaquettes],
        "total_iters": out.total_iters,
        "solves": out.solves,
        "local_lattice": list(out.local or ()),
    }
    rows = (
        ("cg_rate", out.total_iters / out.time_s, ITERATIONS_PER_SECOND),
        ("time", out.time_s, SECOND),
        ("time_per_trajectory", out.time_s / trajectories, SECOND),
    )
    return ParsedPoint(point, single_run_measurements("milc", rows, params, details))
