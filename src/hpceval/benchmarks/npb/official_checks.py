"""Physical plausibility of an official NPB output's summary (what `parse_npb_output` read).

An output can be syntactically perfect and still impossible: a time of -1.0 s, a Mop/s of
0.0, a class-A CG that ran -5 iterations. A time printed as 0.00 is below NPB's print
resolution, not nonsense, when the printed Mop/s puts it below 0.005 s: the parser then
takes the time from the Mop/s (`time_below_resolution`). NPB derives Mop/s from the official
operation count of the problem and the time it prints, so the two must agree (to the
rounding of the two printed values); the iterations are fixed by the class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Protocol

from hpceval.benchmarks.npb import mops_formula, problem_size


class NpbReport(Protocol):
    """The figures of a parsed NPB output that are checked here (npb_output.NpbReport has
    them; a Protocol, so that the parser may call the checks without an import cycle)."""

    @property
    def benchmark(self) -> str: ...

    @property
    def npb_class(self) -> str: ...

    @property
    def iterations(self) -> int: ...

    @property
    def time_s(self) -> float: ...

    @property
    def mops_total(self) -> float: ...

    @property
    def mops_per_process(self) -> float | None: ...

    @property
    def mops_per_thread(self) -> float | None: ...

    @property
    def total_processes(self) -> int | None: ...

    @property
    def active_processes(self) -> int | None: ...

    @property
    def compiled_processes(self) -> int | None: ...

    @property
    def total_threads(self) -> int | None: ...

    @property
    def available_threads(self) -> int | None: ...


# Iterations of the pseudo-applications by class (NPB 3.4 and 3.4-MZ setparams; the same
# in 3.3): BT, SP and LU (itmax) and their multi-zone versions.
_APP_ITERATIONS: Final[Mapping[str, Mapping[str, int]]] = {
    "BT": {"S": 60, "W": 200, "A": 200, "B": 200, "C": 200, "D": 250, "E": 250, "F": 250},
    "SP": {"S": 100, "W": 400, "A": 400, "B": 400, "C": 400, "D": 500, "E": 500, "F": 500},
    "LU": {"S": 50, "W": 300, "A": 250, "B": 250, "C": 250, "D": 300, "E": 300, "F": 300},
}
_KERNELS: Final = ("EP", "IS", "CG", "MG", "FT")
# Programs whose official operation count hpceval knows (LU-MZ: not yet).
_COUNTED: Final = (*_KERNELS, "BT", "SP", "LU", "BT-MZ", "SP-MZ")
# NPB prints time and Mop/s with two decimals ("%12.2f"); beyond that rounding, this much
# relative slack (formulas of older versions round a constant differently).
PRINT_HALF_STEP: Final = 0.005
MOPS_SLACK: Final = 0.02
# More processes or threads than any machine has: a count beyond it is garbage.
MAX_COUNT: Final = 10**8


def official_iterations(benchmark: str, npb_class: str) -> int | None:
    """The class's iteration count (None: EP prints none, or the class is not a standard one)."""
    base = benchmark.removesuffix("-MZ")
    if base in _APP_ITERATIONS:
        return _APP_ITERATIONS[base].get(npb_class)
    kernel = base.lower()
    try:
        size = problem_size(kernel, npb_class)
    except KeyError:
        return None
    # Where verification.toml keeps each kernel's iterations in its size entry (IS: always 10).
    position = {"cg": 2, "mg": 1, "ft": 3}.get(kernel)
    if kernel == "is":
        return 10
    return int(size[position]) if position is not None else None


def time_below_resolution(report: NpbReport) -> float | None:
    """The run's time when NPB printed it as 0.00 (below its two-decimal resolution, e.g. a
    class-S CG on a fast core), recovered from the printed Mop/s, which NPB computes from the
    unrounded time: the official operation count over Mop/s. None when the time was printed,
    when the program's count is not known here (LU-MZ, a non-standard class), when Mop/s is
    0 too (a time of exactly 0: nonsense) or when the recovered time is not below the print
    resolution (then the output contradicts itself)."""
    if report.time_s != 0 or not report.mops_total > 0 or report.benchmark not in _COUNTED:
        return None
    try:
        one_second = mops_formula(report.benchmark.lower(), report.npb_class, 1.0)
    except KeyError:
        return None
    seconds = one_second / report.mops_total
    return seconds if 0 < seconds < PRINT_HALF_STEP else None


def implausible(report: NpbReport) -> str | None:
    """Why the report's figures cannot be a real run (None when they can)."""
    if report.time_s <= 0:
        return f"'Time in seconds' is {report.time_s:g}: a run takes a positive time"
    rates = {
        "Mop/s total": report.mops_total,
        "Mop/s/process": report.mops_per_process,
        "Mop/s/thread": report.mops_per_thread,
    }
    for label, rate in rates.items():
        if rate is not None and rate <= 0:
            return f"'{label}' is {rate:g}: a run that did work has a positive rate"
    counts = {
        "Total processes": report.total_processes,
        "Active processes": report.active_processes,
        "Compiled procs": report.compiled_processes,
        "Total threads": report.total_threads,
        "Avail threads": report.available_threads,
    }
    for label, count in counts.items():
        if count is not None and not 1 <= count <= MAX_COUNT:
            return f"'{label}' is {count}, not a number of processes or threads"
    if report.benchmark == "EP":
        if report.iterations != 0:
            return f"'Iterations' is {report.iterations}; EP prints 0"
    else:
        expected = official_iterations(report.benchmark, report.npb_class)
        if expected is not None and report.iterations != expected:
            return (
                f"'Iterations' is {report.iterations}, but {report.benchmark} class "
                f"{report.npb_class} runs {expected}"
            )
        if expected is None and not 1 <= report.iterations <= MAX_COUNT:
            return f"'Iterations' is {report.iterations}"
    return _inconsistent_rate(report)


def _inconsistent_rate(report: NpbReport) -> str | None:
    """A Mop/s that does not follow the program's official operation count over its time
    (kernels, BT/SP/LU, BT-MZ/SP-MZ: the programs hpceval has the count of)."""
    if report.benchmark not in _COUNTED:
        return None
    try:
        expected = mops_formula(report.benchmark.lower(), report.npb_class, report.time_s)
    except KeyError:  # not a standard class: no official count to compare with
        return None
    tolerance = PRINT_HALF_STEP / report.time_s + PRINT_HALF_STEP / report.mops_total + MOPS_SLACK
    if abs(report.mops_total - expected) > tolerance * expected:
        return (
            f"'Mop/s total' is {report.mops_total:g}, but {report.benchmark} class "
            f"{report.npb_class}'s official operation count over {report.time_s:g} s gives "
            f"{expected:.6g}"
        )
    return None
