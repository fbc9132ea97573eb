"""The standard output of an official NPB binary, parsed (pure, no I/O): `parse_npb_output`
reads the summary banner, the `Label = value` lines, the verification lines and the compile
options into an `NpbReport` (see hpceval.importers.npb, which stores them)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from hpceval.benchmarks.npb.official_checks import implausible, time_below_resolution
from hpceval.errors import UserError

# The five kernels hpceval implements itself, then the pseudo-applications users bring too.
SUPPORTED_BENCHMARKS: Final = (
    "EP", "IS", "CG", "MG", "FT", "BT", "SP", "LU", "BT-MZ", "SP-MZ", "LU-MZ",
)  # fmt: skip
VERIFICATION_SUCCESSFUL: Final = "SUCCESSFUL"

# Compile-option keys naming the compiler, most specific first: the MPI wrapper of an MPI
# build (3.4: MPIFC, up to 3.3: MPIF77, C kernels: MPICC), then the plain compilers.
_COMPILER_KEYS: Final = ("MPIFC", "MPIF77", "MPICC", "FC", "F77", "CC")
_FLAGS_KEYS: Final = ("FFLAGS", "CFLAGS")

_HEADER = re.compile(r"NAS Parallel Benchmarks")
# "NAS Parallel Benchmarks 3.2 -- CG Benchmark", "NAS Parallel Benchmarks (NPB3.3-OMP) - CG ..."
_HEADER_VERSION = re.compile(r"NAS Parallel Benchmarks\s*\(?\s*(?:NPB)?\s*(\d+\.\d+(?:\.\d+)?)")
_HEADER_BENCHMARK = re.compile(r"\b([A-Z]{2}(?:-MZ)?)\s+Benchmark\b")
# Fortran programs end the banner with a period, the C ones (IS) do not.
_BANNER = re.compile(r"^\s*([A-Z]{2}(?:-MZ)?)\s+Benchmark\s+Completed\.?\s*$")
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z/. ]*?)\s*=\s*(.*?)\s*$")
_COMPILE_OPTIONS = re.compile(r"^\s*Compile options\s*:\s*$", re.IGNORECASE)
_OPTION = re.compile(r"^\s+([A-Z][A-Z0-9_]*)\s*=\s*(.*?)\s*$")

# Summary labels, lower-cased with single spaces (label spacing differs across NPB versions,
# e.g. "Active processes=" has none) -> NpbReport field.
_SUMMARY_FIELDS: Final[Mapping[str, str]] = {
    "class": "npb_class",
    "size": "size",
    "iterations": "iterations",
    "time in seconds": "time_s",
    "total processes": "total_processes",
    "active processes": "active_processes",
    "active procs": "active_processes",  # NPB 3.4-MPI's spelling
    "compiled procs": "compiled_processes",
    "total threads": "total_threads",
    "avail threads": "available_threads",
    "available threads": "available_threads",
    "mop/s total": "mops_total",
    "mop/s/process": "mops_per_process",
    "mop/s/thread": "mops_per_thread",
    "operation type": "operation_type",
    "verification": "verification",
    "version": "version",
    "compile date": "compile_date",
    "run date": "run_date",
}
# Required summary fields, as NPB labels them (for the error naming what is missing).
_REQUIRED: Final[Mapping[str, str]] = {
    "npb_class": "Class",
    "size": "Size",
    "iterations": "Iterations",
    "time_s": "Time in seconds",
    "mops_total": "Mop/s total",
    "operation_type": "Operation type",
    "verification": "Verification",
}
_INT_FIELDS: Final = frozenset(
    {
        "iterations",
        "total_processes",
        "active_processes",
        "compiled_processes",
        "total_threads",
        "available_threads",
    }
)
_FLOAT_FIELDS: Final = frozenset({"time_s", "mops_total", "mops_per_process", "mops_per_thread"})

# Lines before the banner that report verification (kept as printed): the status lines of
# every benchmark, CG's zeta, MG's L2 norm, FT's checksums, EP's sums, BT/SP/LU/MZ's comparisons.
_VERIFICATION_LINE = re.compile(
    r"verification|^\s*(zeta\b|the correct\b|error is\b|l2 norm\b|t\s*=\s*\d+\s+checksum\b"
    r"|class\s*=|sums\s*=|no\.\s*gaussian pairs\b|s[xy](_err)?\s*=|comparison of\b)",
    re.IGNORECASE,
)
# Named quantities read from those lines; Fortran writes exponents with D (1.5D+02).
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[EeDd][-+]?\d+)?)"
_VERIFICATION_VALUES: Final = (
    (re.compile(rf"^\s*zeta(?:\s+is)?\s+{_NUMBER}\s*$", re.I), ("zeta",)),
    (re.compile(rf"^\s*the correct zeta is\s+{_NUMBER}\s*$", re.I), ("zeta_reference",)),
    (re.compile(rf"^\s*l2 norm(?:\s+is)?\s+{_NUMBER}\s*$", re.I), ("l2_norm",)),
    (re.compile(rf"^\s*the correct l2 norm is\s+{_NUMBER}\s*$", re.I), ("l2_norm_reference",)),
    (re.compile(rf"^\s*error is\s+{_NUMBER}\s*$", re.I), ("error",)),
    (re.compile(rf"^\s*sums\s*=\s*{_NUMBER}\s+{_NUMBER}\s*$", re.I), ("sx", "sy")),
    (re.compile(rf"^\s*no\.\s*gaussian pairs\s*=\s*{_NUMBER}\s*$", re.I), ("gaussian_pairs",)),
)
_COMPARISON = re.compile(r"^\s*comparison of\b", re.IGNORECASE)
_NUMBER_ONLY = re.compile(_NUMBER)
_CHECKSUM = re.compile(rf"^\s*T\s*=\s*(\d+)\s+Checksum\s*=\s*{_NUMBER}\s+{_NUMBER}\s*$", re.I)


class NpbOutputError(UserError, ValueError):
    """A file that is not one complete NPB output; the message names the file and what is wrong."""


@dataclass(frozen=True)
class NpbReport:
    """What one official NPB program printed, as printed (nothing recomputed).

    `mops_per_process` and `mops_per_thread` are the printed "Mop/s/process" and
    "Mop/s/thread" (an output has one or the other); processes and threads are None when the
    output does not print them (OpenMP versions print no processes, MPI versions no threads).
    `verification` is the summary's status word: SUCCESSFUL, UNSUCCESSFUL or NOT PERFORMED.
    """

    source: str
    benchmark: str  # "CG", "BT-MZ"
    npb_class: str
    size: str
    iterations: int
    time_s: float
    mops_total: float
    operation_type: str
    verification: str
    mops_per_process: float | None = None
    mops_per_thread: float | None = None
    total_processes: int | None = None
    active_processes: int | None = None
    compiled_processes: int | None = None
    total_threads: int | None = None
    available_threads: int | None = None
    version: str | None = None
    compile_date: str | None = None
    run_date: str | None = None
    header: str | None = None
    verification_lines: tuple[str, ...] = ()
    verification_values: Mapping[str, float] = field(default_factory=dict)
    # The printed time was 0.00 (below its resolution): time_s is the official operation
    # count over the printed Mop/s (official_checks.time_below_resolution).
    time_from_mops: bool = False
    compile_options: Mapping[str, str] = field(default_factory=dict)
    # Summary lines this parser does not know, kept as printed (label -> value).
    other_fields: Mapping[str, str] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.verification == VERIFICATION_SUCCESSFUL

    @property
    def kernel(self) -> str:
        """The benchmark's name as hpceval spells kernels: "cg", "bt-mz"."""
        return self.benchmark.lower()

    @property
    def programming_model(self) -> str:
        processes = self.total_processes is not None
        threads = self.total_threads is not None
        if processes and threads:
            return "mpi+openmp"
        if processes:
            return "mpi"
        return "openmp" if threads else "serial"

    @property
    def ranks(self) -> int:
        """MPI processes the program ran with (1 for the OpenMP and serial versions)."""
        return self.total_processes or 1

    @property
    def threads_per_rank(self) -> int | float:
        """OpenMP threads per process (1 for pure MPI versions).

        Multi-zone MPI versions print the threads of all processes together; an uneven
        split (NPB-MZ load balancing) gives a fractional mean.
        """
        if self.total_threads is None:
            return 1
        per_rank = self.total_threads / self.ranks
        return int(per_rank) if per_rank.is_integer() else round(per_rank, 2)

    @property
    def compiler(self) -> str | None:
        return next(
            (self.compile_options[k] for k in _COMPILER_KEYS if k in self.compile_options), None
        )

    @property
    def flags(self) -> str | None:
        return next(
            (self.compile_options[k] for k in _FLAGS_KEYS if k in self.compile_options), None
        )


def parse_npb_output(text: str, source: str) -> NpbReport:
    """Read one official NPB program's standard output.

    Raises NpbOutputError (a UserError and a ValueError) naming `source` when the text is not
    an NPB output, stops before the summary banner (a crash or a kill), holds several runs,
    or lacks a summary field.
    """
    if "\0" in text:
        raise NpbOutputError(
            "is a binary file (the NPB executable?), not the output of an NPB run", source=source
        )
    lines = text.splitlines()
    banners = [i for i, line in enumerate(lines) if _BANNER.match(line)]
    if not banners:
        raise _no_summary(lines, source)
    if len(banners) > 1:
        raise NpbOutputError(
            f"holds {len(banners)} NPB summaries (lines {', '.join(str(i + 1) for i in banners)});"
            " give one run per file",
            source=source,
        )
    banner = banners[0]
    banner_match = _BANNER.match(lines[banner])
    assert banner_match is not None  # found by the same pattern above
    benchmark = banner_match.group(1)
    if benchmark not in SUPPORTED_BENCHMARKS:
        raise NpbOutputError(
            f"{benchmark} is not a benchmark hpceval imports "
            f"(it imports {', '.join(SUPPORTED_BENCHMARKS)})",
            source=source,
        )
    values, others = _summary(lines, banner + 1, source)
    missing = [label for key, label in _REQUIRED.items() if key not in values]
    if missing:
        raise NpbOutputError(
            f"the {benchmark} summary lacks {', '.join(repr(m) for m in missing)}", source=source
        )
    # The header is optional: a capture may begin after it (only the summary is essential).
    header_index = next((i for i in range(banner) if _HEADER.search(lines[i])), None)
    header = None if header_index is None else lines[header_index].strip()
    if "version" not in values and header is not None:
        version_match = _HEADER_VERSION.search(header)
        if version_match:
            values["version"] = version_match.group(1)
    body = lines[(0 if header_index is None else header_index + 1) : banner]
    report = NpbReport(
        source=source,
        benchmark=benchmark,
        header=header,
        verification_lines=_verification_lines(body),
        verification_values=_verification_values(body),
        compile_options=_compile_options(lines, banner + 1),
        other_fields=others,
        **values,
    )
    if (seconds := time_below_resolution(report)) is not None:
        report = replace(report, time_s=seconds, time_from_mops=True)
    if problem := implausible(report):
        raise NpbOutputError(problem, source=source)
    return report


def _no_summary(lines: Sequence[str], source: str) -> NpbOutputError:
    """The error for an output without a summary banner: not NPB at all, or cut short."""
    header = next((line for line in lines if _HEADER.search(line)), None)
    if header is None:
        return NpbOutputError(
            "not an NPB output (no 'NAS Parallel Benchmarks' header, "
            "no 'Benchmark Completed' summary)",
            source=source,
        )
    name = _benchmark_in_header(header)
    banner = f"'{name} Benchmark Completed'" if name else "'... Benchmark Completed'"
    return NpbOutputError(
        f"truncated: the output stops before the summary banner ({banner}); the run did not finish",
        source=source,
    )


def _benchmark_in_header(header: str) -> str | None:
    match = _HEADER_BENCHMARK.search(header)
    return match.group(1) if match else None


def _summary(
    lines: Sequence[str], start: int, source: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The `Label = value` block after the banner: NPB prints it without blank lines."""
    values: dict[str, Any] = {}
    others: dict[str, str] = {}
    for line in lines[start:]:
        if not line.strip():
            if values:
                break
            continue
        match = _FIELD.match(line)
        if match is None:
            break
        label, raw = match.group(1), match.group(2)
        key = _SUMMARY_FIELDS.get(" ".join(label.lower().split()))
        if key is None:
            others[label.strip()] = raw
        elif key in _INT_FIELDS:
            values[key] = _int(label, raw, source)
        elif key in _FLOAT_FIELDS:
            values[key] = _float(label, raw, source)
        else:
            values[key] = " ".join(raw.split()) if key == "verification" else raw
    return values, others


def _int(label: str, raw: str, source: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise _not_a_number(label, raw, source) from None


def _float(label: str, raw: str, source: str) -> float:
    try:
        value = _fortran_float(raw)
    except ValueError:
        raise _not_a_number(label, raw, source) from None
    if not math.isfinite(value):
        raise NpbOutputError(f"'{label.strip()}' is {raw!r}, not a finite number", source=source)
    return value


def _not_a_number(label: str, raw: str, source: str) -> NpbOutputError:
    # Fortran prints a value too wide for its field as asterisks.
    why = " (a Fortran field overflow)" if raw and set(raw) == {"*"} else ""
    return NpbOutputError(f"'{label.strip()}' is {raw!r}{why}, not a number", source=source)


def _compile_options(lines: Sequence[str], start: int) -> dict[str, str]:
    """The `    KEY = value` lines under "Compile options:", in the order printed."""
    begin = next((i for i in range(start, len(lines)) if _COMPILE_OPTIONS.match(lines[i])), None)
    options: dict[str, str] = {}
    if begin is None:
        return options
    for line in lines[begin + 1 :]:
        match = _OPTION.match(line)
        if match is None:
            break
        options[match.group(1)] = match.group(2)
    return options


def _verification_lines(body: Sequence[str]) -> tuple[str, ...]:
    """The verification lines before the banner, as printed, with the rows of comparison tables
    (BT/SP/LU print "Comparison of ..." then one row of numbers per quantity)."""
    kept: list[str] = []
    in_table = False
    for line in body:
        if _VERIFICATION_LINE.search(line):
            kept.append(line.strip())
            in_table = bool(_COMPARISON.match(line))
        elif in_table and _is_numeric_row(line):
            kept.append(line.strip())
        else:
            in_table = False
    return tuple(kept)


def _is_numeric_row(line: str) -> bool:
    tokens = line.split()
    return bool(tokens) and all(_NUMBER_ONLY.fullmatch(token) for token in tokens)


def _verification_values(body: Sequence[str]) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in body:
        checksum = _CHECKSUM.match(line)
        if checksum:
            step = int(checksum.group(1))
            values[f"checksum_{step}_real"] = _fortran_float(checksum.group(2))
            values[f"checksum_{step}_imag"] = _fortran_float(checksum.group(3))
            continue
        for pattern, names in _VERIFICATION_VALUES:
            match = pattern.match(line)
            if match:
                for name, number in zip(names, match.groups(), strict=True):
                    values[name] = _fortran_float(number)
                break
    return values


def _fortran_float(number: str) -> float:
    return float(number.replace("D", "E").replace("d", "e"))
