"""`qe`: Quantum ESPRESSO pw.x, a plane-wave DFT code of PARATEC's class, on bulk silicon.

hpceval generates the pseudopotential with QE's own ld1.x (tested for transferability,
inputs.py) and the SCF input of the chosen system (the 2-atom primitive cell, or N^3 cubic
cells of 8 atoms), and runs pw.x through the platform's launcher over MPI ranks (and OpenMP
threads where the pw.x build has them). Its standard output is read whole: a point exists
only once the SCF has converged, "JOB DONE." is printed, the processes and threads are the
case's, and the total energy agrees with the first verified run of the same input on this
machine at any rank count (ENERGY_TOLERANCE_RY_PER_ATOM). Measurements: wall time of the
run and per SCF iteration; the shares of the 3-D FFT and of its all-to-all exchange in the
wall time (from pw.x's timing report) are kept in the details.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
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
from hpceval.benchmarks.qe.inputs import SiliconSystem, silicon_pseudopotential
from hpceval.benchmarks.qe.output import (
    EXCHANGE_ROUTINES,
    FFT_ROUTINES,
    PwOutput,
    is_error_frame,
    is_output_end,
    is_output_start,
    parse_pw_output,
)
from hpceval.benchmarks.qe.tables import qe_headline, qe_table
from hpceval.build import cache_root
from hpceval.config import Argument, PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue
from hpceval.scratch import make_scratch
from hpceval.units import SECOND

if TYPE_CHECKING:
    from rich.table import Table

PW = Tool(
    "pw.x",
    package="quantum-espresso",
    needed_for="the Quantum ESPRESSO plane-wave DFT benchmark (pw.x); without it its cases "
    "are skipped",
    package_words="Quantum ESPRESSO (pw.x, ld1.x)",
    version_args=None,
)
# Two runs of the same input at different rank counts sum in a different order: their
# total energies differ by far less than the SCF threshold (measured here: < 1e-8 Ry).
ENERGY_TOLERANCE_RY_PER_ATOM: Final = 2e-6
# Valence total energy per atom of diamond Si with an LDA norm-conserving potential is
# about -7.9 Ry; outside this window the run computed something else.
PLAUSIBLE_ENERGY_PER_ATOM_RY: Final = (-9.0, -7.0)
# For the progress bar's ETA and the default time limit only: pw.x's start-up, and a rough
# cost per atom^2 x k-point of the SCF on one core here.
STARTUP_S: Final = 2.0
SECONDS_PER_ATOM2_KPOINT: Final = 0.01


class QeOptions(RankSweepOptions):
    system: list[str] = Field(default_factory=lambda: ["si-primitive"], min_length=1)
    ecutwfc_ry: float = Field(24.0, ge=10.0, le=200.0)  # plane-wave cut-off (Ry)
    pw: Argument = "pw.x"
    ld1: Argument = "ld1.x"

    @model_validator(mode="after")
    def _check(self) -> QeOptions:
        for name in self.system:
            SiliconSystem.parse(name)
        for r in self.ranks:
            if r < 1:
                raise ValueError(f"ranks: {r} is not a valid rank count")
        for t in self.threads_per_rank:
            if t < 1:
                raise ValueError(f"threads_per_rank: {t} is not a valid thread count")
        return self


@functools.cache
def pw_build(pw: str) -> tuple[str, bool]:
    """(version, has OpenMP) of a pw.x, from the header it prints before reading its input."""
    with tempfile.TemporaryDirectory(prefix="hpceval-pw-probe-") as directory:
        try:
            proc = subprocess.run(
                [pw], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                timeout=60, check=False, cwd=directory,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return "unknown", False
    out = parse_pw_output(proc.stdout)
    return out.version or "unknown", out.openmp


@functools.cache
def linked_blas(pw: str) -> str:
    """The BLAS library pw.x runs with (Debian's alternatives may give the reference BLAS,
    several times slower than OpenBLAS in QE's dense algebra): its resolved path."""
    path = shutil.which(pw)
    if path is None:
        return "unknown"
    try:
        proc = subprocess.run(
            ["ldd", "--", path], capture_output=True, text=True, timeout=30, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for line in proc.stdout.splitlines():
        name, _, rest = line.strip().partition(" => ")
        if name.startswith("libblas.so") or name.startswith("libopenblas"):
            return os.path.realpath(rest.split(" (")[0]) if rest else name
    return "unknown"


@register
class QuantumEspresso(Benchmark[QeOptions]):
    name = "qe"
    description = "Quantum ESPRESSO pw.x SCF of bulk silicon (plane waves, 3-D FFTs): s per run"
    points_per_execution = 1
    Options = QeOptions
    tools = (PW,)

    def __init__(self) -> None:
        self._outputs = WholeOutputs()

    def required_programs(self, options: QeOptions) -> list[tuple[Tool, str]]:
        return [(PW, options.pw), (PW, options.ld1)]

    def cases(self, options: QeOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        if any(t > 1 for t in options.threads_per_rank) and shutil.which(options.pw):
            version, openmp = pw_build(options.pw)
            if not openmp:
                # Extra threads would sit idle: refuse rather than record a "threaded" figure.
                raise UserError(
                    f"threads_per_rank: {options.pw} (QE {version}) is built without OpenMP, "
                    "so it runs one thread per rank; use threads_per_rank = [1]"
                )
        cases = []
        for name in options.system:
            system = SiliconSystem.parse(name)
            for ranks in options.ranks:
                for threads in options.threads_per_rank:
                    for placement in rank_placements(
                        ranks, threads, options.ranks_per_node, options.binding, platform
                    ):
                        cost = SECONDS_PER_ATOM2_KPOINT * system.atoms**2 * system.k_mesh**3
                        params: dict[str, ParamValue] = {
                            "system": name,
                            "atoms": system.atoms,
                            "ecutwfc_ry": options.ecutwfc_ry,
                        }
                        key_parts = [name, f"ecut={options.ecutwfc_ry:g}", f"np={ranks}"]
                        cases.append(repeated_case(
                            self.name, key_parts, placement, params,
                            repeat=options.repeat,
                            run_estimate_s=STARTUP_S + cost / (ranks * threads),
                            explicit_limit_s=options.time_limit_s,
                            options={"pw": options.pw, "ld1": options.ld1},
                        ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        return packaged_program("pw.x", "quantum-espresso", "Quantum ESPRESSO")

    @contextlib.contextmanager
    def staged(self, case: Case, points: Sequence[str]) -> Iterator[Case]:
        """The cached pseudopotential and a run directory with this execution's input."""
        cache = cache_root()
        pseudo = silicon_pseudopotential(str(case.options.get("ld1", "ld1.x")), cache)
        parent = cache / "qe" / "runs"
        try:
            parent.mkdir(parents=True, exist_ok=True)
            run_dir = make_scratch(parent, "run-")
        except OSError as e:
            raise BenchmarkFailure(f"cannot make a pw.x run directory in {parent}: {e}") from e
        try:
            system = SiliconSystem.parse(str(case.parameters["system"]))
            text = system.input_text(
                float(case.parameters["ecutwfc_ry"]), pseudo.directory, run_dir / "out"
            )
            (run_dir / "scf.in").write_text(text)
            yield replace(
                case,
                options={
                    **case.options,
                    "run_dir": str(run_dir),
                    "input_digest": hashlib.sha256(
                        (pseudo.digest + "\0" + _portable(text, pseudo.directory, run_dir)).encode()
                    ).hexdigest()[:16],
                    "pseudo_errors_ry": list(pseudo.transferability_errors_ry),
                    "ld1_version": pseudo.ld1_version,
                    "blas_library": linked_blas(str(case.options.get("pw", "pw.x"))),
                },
            )
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        run_dir = case.options.get("run_dir")
        if run_dir is None:
            raise BenchmarkFailure("the pw.x input was not staged for this execution")
        # pw.x writes its CRASH file into its working directory: the run directory.
        pw = str(case.options.get("pw", "pw.x"))
        return ["env", "-C", str(run_dir), pw, "-in", str(Path(str(run_dir)) / "scf.in")]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        lines = self._outputs.add(case.key, line, starts=is_output_start(line))
        if is_error_frame(line):
            error = parse_pw_output("\n".join(lines)).error
            if error is not None:
                self._outputs.discard(case.key)
                raise BenchmarkFailure(f"pw.x: {error}")
            return None
        if not is_output_end(line):
            return None
        self._outputs.discard(case.key)
        output = parse_pw_output("\n".join(lines))
        check_output(output, case)
        return point_measurements(output, case)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        self._outputs.discard(case.key)
        check_output(parse_pw_output(stdout), case)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return qe_headline(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return qe_table(measurements)


def _portable(text: str, pseudo_dir: Path, run_dir: Path) -> str:
    """The input without its per-execution paths: what makes two runs the same calculation."""
    return text.replace(str(run_dir), "RUN").replace(str(pseudo_dir), "PSEUDO")


def failure(message: str, out: PwOutput) -> BenchmarkFailure:
    tail = " | ".join(out.tail)
    return BenchmarkFailure(f"{message}; output tail: {tail}" if tail else message)


def check_output(out: PwOutput, case: Case) -> None:
    """The run is sound: converged, finished, the layout asked for, a plausible energy that
    agrees with the other rank counts'."""
    if out.error is not None:
        raise failure(f"pw.x: {out.error}", out)
    if out.not_converged_after is not None:
        raise failure(f"the SCF did not converge in {out.not_converged_after} iterations", out)
    if out.converged_iterations is None or out.converged_iterations < 1:
        raise failure("the pw.x output has no 'convergence has been achieved' line", out)
    if not out.job_done:
        raise failure("the pw.x output ends before 'JOB DONE.'", out)
    ranks, threads = case.placement.ranks, case.placement.threads_per_rank
    if out.processes != ranks:
        raise failure(f"pw.x ran on {out.processes} processes, the case asks for {ranks}", out)
    if threads > 1 and not out.openmp:
        raise failure(f"pw.x has no OpenMP: it cannot run {threads} threads per rank", out)
    if out.openmp and out.threads_per_process != threads:
        raise failure(
            f"pw.x ran {out.threads_per_process} threads per process, expected {threads}", out
        )
    atoms = int(case.parameters["atoms"])
    if out.atoms != atoms:
        raise failure(f"pw.x computed {out.atoms} atoms, the input has {atoms}", out)
    energy = out.total_energy_ry
    if energy is None or not math.isfinite(energy):
        raise failure("the pw.x output has no final total energy ('!' line)", out)
    low, high = PLAUSIBLE_ENERGY_PER_ATOM_RY
    if not low <= energy / atoms <= high:
        raise failure(
            f"total energy {energy / atoms:.5f} Ry per atom is outside {low:g}..{high:g} Ry "
            "(diamond silicon)",
            out,
        )
    for routine in ("PWSCF", "electrons"):
        wall = out.wall(routine)
        if wall is None or not (math.isfinite(wall) and wall > 0):
            raise failure(f"pw.x's timing report has no valid {routine} wall time", out)
    check_energy_agreement(energy, case)


def check_energy_agreement(energy_ry: float, case: Case) -> None:
    """The total energy equals that of the first verified run of the same calculation (any
    rank count) recorded on this machine; the first one records it."""
    digest = case.options.get("input_digest")
    if digest is None:  # not staged (an imported or re-read output): nothing to hold it to
        return
    directory = cache_root() / "qe" / "energies"
    path = directory / f"{digest}.json"
    atoms = int(case.parameters["atoms"])
    here = {
        "total_energy_ry": energy_ry,
        "ranks": case.placement.ranks,
        "threads_per_rank": case.placement.threads_per_rank,
    }
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        recorded = None
    if isinstance(recorded, dict) and isinstance(recorded.get("total_energy_ry"), float):
        reference = recorded["total_energy_ry"]
        if abs(energy_ry - reference) > ENERGY_TOLERANCE_RY_PER_ATOM * atoms:
            raise BenchmarkFailure(
                f"total energy {energy_ry:.8f} Ry differs from {reference:.8f} Ry of the same "
                f"input at {recorded.get('ranks')} rank(s) x {recorded.get('threads_per_rank')} "
                f"thread(s) by more than {ENERGY_TOLERANCE_RY_PER_ATOM * atoms:.1e} Ry"
            )
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".energy.", dir=directory)
        with os.fdopen(fd, "w") as f:
            json.dump(here, f)
        os.replace(tmp, path)
    except OSError as e:
        raise BenchmarkFailure(f"cannot record the reference energy in {directory}: {e}") from e


_SHARE_DIGITS: Final = 4


def point_measurements(out: PwOutput, case: Case) -> ParsedPoint:
    """Wall time of the run and per SCF iteration; FFT and exchange shares in the details."""
    wall, electrons = out.wall("PWSCF"), out.wall("electrons")
    iterations = out.converged_iterations
    assert wall is not None and electrons is not None and iterations  # check_output passed
    energy = out.total_energy_ry
    assert energy is not None
    atoms = int(case.parameters["atoms"])
    params: dict[str, ParamValue] = {
        **case.placement.as_parameters(),
        **case.parameters,
        "qe_version": out.version or "unknown",
    }
    pwscf = out.timings["PWSCF"]
    details = {
        "scf_iterations": iterations,
        "total_energy_ry": energy,
        "energy_per_atom_ry": energy / atoms,
        "k_points": out.k_points,
        "cpu_s": pwscf.cpu_s,
        "electrons_wall_s": electrons,
        # The 3-D FFTs (serial parts) and their all-to-all exchanges between processes, as
        # shares of the run's wall time: PARATEC's communication is the FFT's transposes.
        "fft_share": round(out.wall_sum(FFT_ROUTINES) / wall, _SHARE_DIGITS),
        "fft_exchange_share": round(out.wall_sum(EXCHANGE_ROUTINES) / wall, _SHARE_DIGITS),
        "pseudopotential_errors_ry": case.options.get("pseudo_errors_ry"),
        "ld1_version": case.options.get("ld1_version"),
        "blas_library": case.options.get("blas_library"),
    }
    (point,) = case.points
    rows = (
        ("wall_time", wall, SECOND),
        ("scf_iteration_time", electrons / iterations, SECOND),
    )
    return ParsedPoint(point, single_run_measurements("qe", rows, params, details))
