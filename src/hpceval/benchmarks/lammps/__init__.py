"""`lammps`: the classic Lennard-Jones melt (LAMMPS' bench/in.lj) at a chosen size.

hpceval writes the input (an fcc lattice of density 0.8442 in a cube of n lattice cells:
4 n^3 atoms, velocities at T = 3.0, lj/cut 2.5, neighbor skin 0.3 bin, fix nve, a fixed
number of steps) into the build cache and runs `lmp` through the platform's launcher over
MPI ranks (and OpenMP threads through the OMP package where the lmp build has it). LAMMPS'
screen output is its log: a point is produced once the whole run is read and checked (the
loop summary for the right ranks, steps and atoms; finite thermo output up to the last
step; "Total wall time"; no ERROR). Measurements: timesteps/s, atom-steps/s, loop time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.common import (
    RankSweepOptions,
    WholeOutputs,
    packaged_program,
    rank_placements,
    repeated_case,
    single_run_measurements,
)
from hpceval.benchmarks.display import application_headline, application_table
from hpceval.benchmarks.lammps.log import (
    LammpsOutput,
    error_message,
    is_error,
    is_output_end,
    is_output_start,
    log_tail,
    parse_output,
)
from hpceval.build import cache_root
from hpceval.config import Argument, PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue
from hpceval.units import SECOND

if TYPE_CHECKING:
    from rich.table import Table

# Declared in benchmark.toml.
TIMESTEPS_PER_SECOND: Final = "timesteps/s"  # MD steps per second
ATOM_STEPS_PER_SECOND: Final = "atom-steps/s"  # MD steps times atoms per second
LMP = Tool(
    "lmp",
    package="lammps",
    needed_for="the LAMMPS application benchmark (timesteps/s); without it its cases are skipped",
    package_words="LAMMPS (lmp)",
    version_args=("-h",),
    alternatives=("lmp_openmpi", "lmp_mpich"),
)

GENERATOR_VERSION: Final = "1"
# Rough cost of one atom-step of the LJ melt on one core, and lmp's start-up: for the
# progress bar's ETA and the default time limit only.
SECONDS_PER_ATOM_STEP: Final = 1.0e-6
STARTUP_S: Final = 2.0
# Printed rates have 3 decimals or 4 significant digits (55.31 for 55.3094, seen in CI);
# the loop time has 6 significant digits: half a unit of the 4th digit is at most 5e-4.
PRINTED_RATE_ABS: Final = 0.0005
PRINTED_RATE_REL: Final = 5e-4
# Newer versions add atom-step/s with 3 decimals in k/M/G units: at least 3 digits.
PRINTED_ATOM_RATE_REL: Final = 2e-3


class LammpsOptions(RankSweepOptions):
    # Edge of the cubic box in fcc lattice cells: 4 n^3 atoms (n = 20: 32,000 atoms, the
    # size of LAMMPS' own bench/in.lj).
    n: list[int] = Field(default_factory=lambda: [20], min_length=1)
    steps: int = Field(100, ge=1, le=10_000_000)
    lmp: Argument = "lmp"

    @model_validator(mode="after")
    def _check(self) -> LammpsOptions:
        for n in self.n:
            if not 1 <= n <= 1000:
                raise ValueError(f"n: {n} lattice cells is outside 1..1000")
        for r in self.ranks:
            if r < 1:
                raise ValueError(f"ranks: {r} is not a valid rank count")
        for t in self.threads_per_rank:
            if t < 1:
                raise ValueError(f"threads_per_rank: {t} is not a valid thread count")
        return self


def atom_count(n: int) -> int:
    return 4 * n**3


def thermo_interval(steps: int) -> int:
    # A handful of thermo rows whatever the length; LAMMPS prints the last step anyway.
    return max(1, steps // 5)


def melt_input_text(n: int, steps: int) -> str:
    """The input script: LAMMPS' classic 3d Lennard-Jones melt with a size parameter."""
    return (
        f"# hpceval LAMMPS benchmark: 3d Lennard-Jones melt, {n}^3 fcc cells, "
        f"{atom_count(n)} atoms, {steps} steps\n"
        "units           lj\n"
        "atom_style      atomic\n"
        "\n"
        "lattice         fcc 0.8442\n"
        f"region          box block 0 {n} 0 {n} 0 {n}\n"
        "create_box      1 box\n"
        "create_atoms    1 box\n"
        "mass            1 1.0\n"
        "\n"
        "velocity        all create 3.0 87287 loop geom\n"
        "\n"
        "pair_style      lj/cut 2.5\n"
        "pair_coeff      1 1 1.0 1.0 2.5\n"
        "\n"
        "neighbor        0.3 bin\n"
        "neigh_modify    every 20 delay 0 check no\n"
        "\n"
        "fix             1 all nve\n"
        "\n"
        f"thermo          {thermo_interval(steps)}\n"
        f"run             {steps}\n"
    )


def write_input(n: int, steps: int, cache: Path | None = None) -> Path:
    """The input script in the build cache (shared with remote nodes like the programs)."""
    text = melt_input_text(n, steps)
    digest = hashlib.sha256((GENERATOR_VERSION + "\0" + text).encode()).hexdigest()[:16]
    directory = (cache or cache_root()) / "lammps"
    path = directory / f"in.melt-n{n}-{steps}-{digest}"
    if path.is_file() and path.read_text() == text:
        return path
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".in.melt.", dir=directory)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise BenchmarkFailure(f"cannot write the LAMMPS input in {directory}: {e}") from e
    return path


@functools.cache
def installed_packages(lmp: str) -> frozenset[str]:
    """The packages an lmp build has (the 'Installed packages:' section of `lmp -h`)."""
    try:
        proc = subprocess.run(
            [lmp, "-h"], capture_output=True, text=True, timeout=60, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    m = re.search(r"^Installed packages:\s*\n(.*?)\n\s*\n", proc.stdout + "\n\n", re.S | re.M)
    return frozenset(m.group(1).split()) if m else frozenset()


@register
class Lammps(Benchmark[LammpsOptions]):
    name = "lammps"
    description = "LAMMPS Lennard-Jones melt (in.melt) of 4 n^3 atoms: timesteps/s, atom-steps/s"
    points_per_execution = 1
    Options = LammpsOptions
    tools = (LMP,)

    def __init__(self) -> None:
        # The output lines of the execution under way, per case: a point needs all of them.
        self._outputs = WholeOutputs()

    def required_programs(self, options: LammpsOptions) -> list[tuple[Tool, str]]:
        return [(LMP, options.lmp)]

    def cases(
        self, options: LammpsOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        threaded = any(t > 1 for t in options.threads_per_rank)
        if (
            threaded
            and shutil.which(options.lmp)
            and "OPENMP" not in installed_packages(options.lmp)
        ):
            # Without the OMP package extra threads would sit idle: refuse rather than
            # record a "threaded" figure that is not.
            raise UserError(
                f"threads_per_rank: {options.lmp} has no OPENMP package (see `{options.lmp} -h`), "
                "so it runs one thread per rank; use threads_per_rank = [1]"
            )
        cases = []
        for n in options.n:
            atoms = atom_count(n)
            for ranks in options.ranks:
                for threads in options.threads_per_rank:
                    for placement in rank_placements(
                        ranks, threads, options.ranks_per_node, options.binding, platform
                    ):
                        estimate = STARTUP_S + SECONDS_PER_ATOM_STEP * atoms * options.steps / (
                            ranks * threads
                        )
                        params: dict[str, ParamValue] = {
                            "system": "lj-melt",
                            "n": n,
                            "atoms": atoms,
                            "steps": options.steps,
                        }
                        key_parts = [f"n={n}", f"steps={options.steps}", f"np={ranks}"]
                        cases.append(repeated_case(
                            self.name, key_parts, placement, params,
                            repeat=options.repeat, run_estimate_s=estimate,
                            explicit_limit_s=options.time_limit_s, options={"lmp": options.lmp},
                        ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        return packaged_program("lmp", "lammps", "LAMMPS")

    @contextlib.contextmanager
    def staged(self, case: Case, points: Sequence[str]) -> Iterator[Case]:
        path = write_input(int(case.parameters["n"]), int(case.parameters["steps"]))
        yield replace(case, options={**case.options, "input": str(path)})

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        if "input" in case.options:
            path = str(case.options["input"])
        else:  # a campaign that does not stage: the cached input is written here
            path = str(write_input(int(case.parameters["n"]), int(case.parameters["steps"])))
        argv = [str(case.options.get("lmp", "lmp")), "-in", path, "-log", "none", "-nocite"]
        threads = case.placement.threads_per_rank
        if threads > 1:
            argv += ["-sf", "omp", "-pk", "omp", str(threads)]
        return argv

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        lines = self._outputs.add(case.key, line, starts=is_output_start(line))
        if is_error(line):
            self._outputs.discard(case.key)
            raise failure(f"lmp: {error_message(lines)}", log_tail(lines[:-1]))
        if not is_output_end(line):
            return None
        self._outputs.discard(case.key)
        output = parse_output("\n".join(lines))
        check_output(output, case)
        return point_measurements(output, case)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        self._outputs.discard(case.key)
        check_output(parse_output(stdout), case)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return application_headline(measurements, "timesteps_per_second", "timesteps/s")

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return application_table(
            measurements,
            benchmark=self.name,
            title="LAMMPS",
            figures=(
                ("timesteps_per_second", "timesteps/s"),
                ("atom_steps_per_second", "atom-steps/s"),
            ),
            size_keys=("n", "atoms", "steps"),
        )


def failure(message: str, tail: Sequence[str]) -> BenchmarkFailure:
    text = " | ".join(tail)
    return BenchmarkFailure(f"{message}; log tail: {text}" if text else message)


def check_output(out: LammpsOutput, case: Case) -> None:
    """The run is sound: no ERROR, the loop summary as asked, finite thermo to the end."""
    if out.error is not None:
        raise failure(f"lmp: {out.error}", out.tail)
    if out.loop_time_s is None:
        raise failure("the LAMMPS output has no 'Loop time' line", out.tail)
    if out.total_wall_s is None:
        raise failure("the LAMMPS output ends before 'Total wall time'", out.tail)
    steps, atoms = int(case.parameters["steps"]), int(case.parameters["atoms"])
    ranks, threads = case.placement.ranks, case.placement.threads_per_rank
    if (out.procs, out.steps, out.atoms) != (ranks, steps, atoms):
        raise failure(
            f"LAMMPS ran {out.steps} steps of {out.atoms} atoms on {out.procs} procs, the case "
            f"asks for {steps} steps of {atoms} atoms on {ranks}",
            out.tail,
        )
    if out.created_atoms != atoms:
        raise failure(f"LAMMPS created {out.created_atoms} atoms, expected {atoms}", out.tail)
    if out.omp_threads is not None and out.omp_threads != threads:
        raise failure(f"LAMMPS ran {out.omp_threads} OpenMP threads, expected {threads}", out.tail)
    if not (math.isfinite(out.loop_time_s) and out.loop_time_s > 0):
        raise failure(f"nonsense loop time {out.loop_time_s!r} s", out.tail)
    if not out.thermo or not out.thermo[-1].rows:
        raise failure("the LAMMPS output has no thermo table", out.tail)
    for table in out.thermo:
        for row in table.rows:
            bad = [c for c, v in zip(table.columns, row, strict=True) if not math.isfinite(v)]
            if bad:
                raise failure(
                    f"non-finite thermo output at step {row[0]:g}: {', '.join(bad)}", out.tail
                )
    last = out.thermo[-1].rows[-1][0]
    if last != steps:
        raise failure(f"the thermo output ends at step {last:g}, not {steps}", out.tail)
    rate = steps / out.loop_time_s
    if out.timesteps_per_s is not None and not math.isclose(
        out.timesteps_per_s, rate, rel_tol=PRINTED_RATE_REL, abs_tol=PRINTED_RATE_ABS
    ):
        raise failure(
            f"LAMMPS reports {out.timesteps_per_s} timesteps/s, its loop time gives {rate:.6g}",
            out.tail,
        )
    atom_rate = rate * atoms
    if out.atom_steps_per_s is not None and not math.isclose(
        out.atom_steps_per_s, atom_rate, rel_tol=PRINTED_ATOM_RATE_REL
    ):
        raise failure(
            f"LAMMPS reports {out.atom_steps_per_s:.6g} atom-step/s, its loop time gives "
            f"{atom_rate:.6g}",
            out.tail,
        )


def point_measurements(out: LammpsOutput, case: Case) -> ParsedPoint:
    """Rates from the loop time (more digits than the printed rates, which are checked)."""
    assert out.loop_time_s is not None and out.steps is not None and out.atoms is not None
    rate = out.steps / out.loop_time_s
    params: dict[str, ParamValue] = {
        **case.placement.as_parameters(),
        **case.parameters,
        "lammps_version": out.version or "unknown",
    }
    details = {
        "tau_per_day": out.tau_per_day,
        "printed_timesteps_per_s": out.timesteps_per_s,
        "printed_atom_steps_per_s": out.atom_steps_per_s,
        "total_wall_s": out.total_wall_s,
    }
    (point,) = case.points
    rows = (
        ("timesteps_per_second", rate, TIMESTEPS_PER_SECOND),
        ("atom_steps_per_second", rate * out.atoms, ATOM_STEPS_PER_SECOND),
        ("loop_time", out.loop_time_s, SECOND),
    )
    return ParsedPoint(point, single_run_measurements("lammps", rows, params, details))
