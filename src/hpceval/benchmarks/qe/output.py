"""Reading the output of Quantum ESPRESSO's pw.x and ld1.x: pure functions, tested on outputs
captured from real runs (tests/data/qe/).

What the benchmark needs from pw.x: the version, the MPI processes and OpenMP threads it ran
with, the atoms, whether the SCF converged and in how many iterations, the final total energy
(the line marked "!"), the wall times of its timing report (PWSCF, electrons, the FFT and the
parallel FFT's data exchanges), "JOB DONE." and any error block. From ld1.x's test mode: the
all-electron and pseudo excitation energies of each test configuration (the pseudopotential's
transferability).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_VERSION = re.compile(r"^\s*Program PWSCF v\.(\S+) starts on")
_PARALLEL = re.compile(r"^\s*Parallel version \(([^)]*)\), running on\s+(\d+) processor")
_MPI_PROCESSES = re.compile(r"^\s*Number of MPI processes:\s+(\d+)")
_THREADS = re.compile(r"^\s*Threads/MPI process:\s+(\d+)")
_ATOMS = re.compile(r"^\s*number of atoms/cell\s*=\s*(\d+)")
_KPOINTS = re.compile(r"^\s*number of k points=\s*(\d+)")
_ITERATION = re.compile(r"^\s*iteration #\s*(\d+)")
_FINAL_ENERGY = re.compile(r"^!\s+total energy\s+=\s+(\S+) Ry")
_CONVERGED = re.compile(r"^\s*convergence has been achieved in\s+(\d+) iterations")
_NOT_CONVERGED = re.compile(r"^\s*convergence NOT achieved after\s+(\d+) iterations")
# "     fftw         :      0.10s CPU      1.51s WALL (    2000 calls)"; times longer than a
# minute are printed "1m34.39s", longer than an hour "1h 2m" (QE's clock format).
_TIMING = re.compile(
    r"^\s*(\S.*?)\s*:\s+(?P<cpu>[\dhm. ]+s?) CPU\s+(?P<wall>[\dhm. ]+s?) WALL"
    r"(?:\s*\(\s*(?P<calls>\d+) calls\))?\s*$"
)
_CLOCK = re.compile(
    r"^(?:(?P<d>\d+)d)?\s*(?:(?P<h>\d+)h)?\s*(?:(?P<m>\d+)m)?\s*(?:(?P<s>\d+(?:\.\d*)?)s)?$"
)
_JOB_DONE = re.compile(r"^\s*JOB DONE\.")
_ERROR_FRAME = re.compile(r"^\s*%{20,}\s*$")
_ERROR_ROUTINE = re.compile(r"^\s*Error in routine\s+(\S+)\s*\((-?\d+)\):")

# The routines of pw.x's timing report that are the 3-D FFT's computation and its
# all-to-all data exchange between processes ("Parallel routines" in QE 6.x).
FFT_ROUTINES = ("fftw", "ffts", "fft")
EXCHANGE_ROUTINES = ("fft_scatt_xy", "fft_scatt_yz", "fft_scatter", "ALLTOALL")


def is_output_start(line: str) -> bool:
    return _VERSION.match(line) is not None


def is_output_end(line: str) -> bool:
    return _JOB_DONE.match(line) is not None


def is_error_frame(line: str) -> bool:
    return _ERROR_FRAME.match(line) is not None


def clock_seconds(text: str) -> float | None:
    """QE's printed time ("1.51s", "1m34.39s", "2h13m", "1d 3h") in seconds."""
    m = _CLOCK.match(text.strip())
    if m is None or not any(m.group(g) for g in "dhms"):
        return None
    return (
        int(m.group("d") or 0) * 86400
        + int(m.group("h") or 0) * 3600
        + int(m.group("m") or 0) * 60
        + float(m.group("s") or 0.0)
    )


@dataclass(frozen=True)
class Timing:
    cpu_s: float
    wall_s: float
    calls: int | None


@dataclass(frozen=True)
class PwOutput:
    version: str | None = None
    parallel: str | None = None  # "MPI" or "MPI & OpenMP"
    processes: int | None = None
    threads_per_process: int = 1
    atoms: int | None = None
    k_points: int | None = None
    iterations_started: int = 0
    converged_iterations: int | None = None
    not_converged_after: int | None = None
    total_energy_ry: float | None = None
    timings: dict[str, Timing] = field(default_factory=dict)
    job_done: bool = False
    error: str | None = None
    tail: tuple[str, ...] = ()

    @property
    def openmp(self) -> bool:
        return self.parallel is not None and "OpenMP" in self.parallel

    def wall(self, routine: str) -> float | None:
        timing = self.timings.get(routine)
        return timing.wall_s if timing is not None else None

    def wall_sum(self, routines: Sequence[str]) -> float:
        return sum(t.wall_s for name, t in self.timings.items() if name in routines)


def _error_message(lines: Sequence[str], start: int) -> str:
    """ "readpp (1): file … not found" from the error block that starts at `start`."""
    routine = _ERROR_ROUTINE.match(lines[start])
    text = []
    for line in lines[start + 1 :]:
        if is_error_frame(line):
            break
        if line.strip():
            text.append(line.strip())
    where = f"{routine.group(1)} ({routine.group(2)})" if routine else "pw.x"
    return f"{where}: {' '.join(text)}" if text else where


def parse_pw_output(text: str) -> PwOutput:
    """Everything the benchmark reads from one pw.x standard output."""
    lines = text.splitlines()
    values: dict[str, object] = {}
    timings: dict[str, Timing] = {}
    iterations = 0
    error = None
    for index, line in enumerate(lines):
        if m := _VERSION.match(line):
            values["version"] = m.group(1)
        elif m := _PARALLEL.match(line):
            values["parallel"] = m.group(1)
            values["processes"] = int(m.group(2))
        elif m := _MPI_PROCESSES.match(line):
            values["processes"] = int(m.group(1))
        elif m := _THREADS.match(line):
            values["threads_per_process"] = int(m.group(1))
        elif m := _ATOMS.match(line):
            values["atoms"] = int(m.group(1))
        elif m := _KPOINTS.match(line):
            values["k_points"] = int(m.group(1))
        elif m := _ITERATION.match(line):
            iterations = max(iterations, int(m.group(1)))
        elif m := _FINAL_ENERGY.match(line):
            values["total_energy_ry"] = _float(m.group(1))
        elif m := _CONVERGED.match(line):
            values["converged_iterations"] = int(m.group(1))
        elif m := _NOT_CONVERGED.match(line):
            values["not_converged_after"] = int(m.group(1))
        elif m := _TIMING.match(line):
            cpu, wall = clock_seconds(m.group("cpu")), clock_seconds(m.group("wall"))
            if cpu is not None and wall is not None:
                calls = m.group("calls")
                timings[m.group(1).strip()] = Timing(cpu, wall, int(calls) if calls else None)
        elif _JOB_DONE.match(line):
            values["job_done"] = True
        elif _ERROR_ROUTINE.match(line) and error is None:
            error = _error_message(lines, index)
    tail = tuple(ln.strip() for ln in lines[-6:] if ln.strip())
    return PwOutput(
        iterations_started=iterations, timings=timings, error=error, tail=tail,
        **values,  # type: ignore[arg-type]
    )  # fmt: skip


def _float(text: str) -> float | None:
    try:
        return float(text.replace("D", "E").replace("d", "e"))
    except ValueError:
        return None


# ld1.x test mode: "dEtot_ae =       0.496095 Ry" then
# "dEtot_ps =       0.495815 Ry,   Delta E=       0.000280 Ry".
_DETOT_AE = re.compile(r"^\s*dEtot_ae\s*=\s*(\S+) Ry")
_DETOT_PS = re.compile(r"^\s*dEtot_ps\s*=\s*(\S+) Ry,\s*Delta E=\s*(\S+) Ry")
_LD1_ERROR = re.compile(r"^\s*Error in routine\s+(\S+)")


@dataclass(frozen=True)
class TransferabilityTest:
    """One test configuration: its excitation energy all-electron and with the pseudopotential."""

    ae_ry: float
    ps_ry: float
    delta_ry: float


def parse_ld1_tests(text: str) -> tuple[list[TransferabilityTest], str | None]:
    """The excitation energies of ld1.x's test configurations (all but the first, which is
    the reference), and its error, if any."""
    tests: list[TransferabilityTest] = []
    ae: float | None = None
    error = None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if m := _DETOT_AE.match(line):
            ae = _float(m.group(1))
        elif (m := _DETOT_PS.match(line)) and ae is not None:
            ps, delta = _float(m.group(1)), _float(m.group(2))
            if ps is not None and delta is not None:
                tests.append(TransferabilityTest(ae, ps, delta))
            ae = None
        elif _LD1_ERROR.match(line) and error is None:
            error = _error_message(lines, index)
    return tests, error
