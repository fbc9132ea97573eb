"""`hpceval import npb FILE…`: the standard output of official NPB binaries, into the store.

Official NAS Parallel Benchmarks programs (the NPB 3.x MPI versions such as `cg.C.x` or
`cg.C.16`, the OpenMP versions built from NPB3.x-OMP, the multi-zone BT-MZ/SP-MZ/LU-MZ) print
a header, progress and verification lines, then a summary banner ("CG Benchmark Completed.")
followed by `Label = value` lines and the compile options. `parse_npb_output` reads one such
output into an `NpbReport` (pure, no I/O); `import_npb` validates a set of files, then stores
them as one run of suite "import:npb". A run whose verification did not succeed is stored as a
failed execution and never as a measurement: a benchmark that does not verify is not a number.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import hpceval
from hpceval.benchmarks.common import single_run_measurements
from hpceval.errors import UserError
from hpceval.importers.npb_checks import implausible
from hpceval.model import (
    Environment,
    ExecutionRecord,
    ExecutionStatus,
    Measurement,
    Origin,
    ParamValue,
    Status,
)
from hpceval.provenance import fingerprint
from hpceval.store import CaseStatus, Store
from hpceval.units import MOPS, SECOND

SUITE_NAME: Final = "import:npb"
LAUNCHER_NAME: Final = "import"
# The five kernels hpceval implements itself, then the pseudo-applications users bring too.
SUPPORTED_BENCHMARKS: Final = (
    "EP", "IS", "CG", "MG", "FT", "BT", "SP", "LU", "BT-MZ", "SP-MZ", "LU-MZ",
)  # fmt: skip
VERIFICATION_SUCCESSFUL: Final = "SUCCESSFUL"
# As much of each output as a campaign keeps of a program's stdout.
OUTPUT_TAIL_CHARS: Final = 8192

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


# --------------------------------------------------------------------------------------------
# Import


@dataclass(frozen=True)
class _Parsed:
    path: Path
    text: str
    report: NpbReport
    case_key: str


def import_npb(
    store: Store,
    files: Sequence[Path],
    *,
    platform_name: str,
    note: str | None = None,
    clock: Callable[[], float] = time.time,
) -> int:
    """Store the outputs of official NPB runs as one completed run; returns its id.

    Every file is read and parsed before anything is written: one that cannot be used aborts
    the import with a UserError naming it. Each file becomes a case with one execution; a run
    that verified gives the measurements time, mops_total and mops_per_process, one that did
    not is a failed execution ("verification UNSUCCESSFUL") with no measurement.
    """
    if not files:
        raise UserError("no NPB output files to import")
    parsed = _parse_all(files)
    platform_id = store.add_platform(platform_name, {"name": platform_name, "imported": True})
    environment = _environment([p.report for p in parsed])
    environment_id = store.add_environment(environment)
    run_id = store.create_run(
        suite_name=SUITE_NAME,
        suite_config={"name": SUITE_NAME, "files": [str(p.path) for p in parsed]},
        platform_id=platform_id,
        environment_id=environment_id,
        launcher=LAUNCHER_NAME,
        cases=[(p.case_key, _benchmark_name(p.report), _case_description(p)) for p in parsed],
        hpceval_version=hpceval.__version__,
        git_revision=None,
        origin=Origin.MEASURED,
        host=socket.gethostname(),
        pid=os.getpid(),
        note=note,
    )
    try:
        for item in parsed:
            _store_execution(store, run_id, item, clock)
    except BaseException:
        # An import cannot be resumed: a half-written one is failed, not interrupted. The
        # original error is what the user must see, even if the store refuses this update too.
        with contextlib.suppress(Exception):
            store.set_run_status(run_id, Status.FAILED, ended=clock())
        raise
    store.set_run_status(run_id, Status.COMPLETED, ended=clock())
    return run_id


def _parse_all(files: Sequence[Path]) -> list[_Parsed]:
    parsed: list[_Parsed] = []
    used_keys: set[str] = set()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UserError(f"cannot read it ({exc.strerror or exc})", source=str(path)) from None
        report = parse_npb_output(text, str(path))
        case_key = _case_key(path, report)
        # The same file name from two directories: number the later ones.
        candidate, copy = case_key, 1
        while candidate in used_keys:
            copy += 1
            candidate = f"{case_key}#{copy}"
        used_keys.add(candidate)
        parsed.append(_Parsed(path, text, report, candidate))
    return parsed


def _case_key(path: Path, report: NpbReport) -> str:
    return (
        f"{path.name}:{report.kernel}.{report.npb_class}"
        f":np={report.ranks}:threads={report.threads_per_rank}"
    )


def _benchmark_name(report: NpbReport) -> str:
    # The same name as hpceval's own kernels, so official and in-house results compare.
    return "npb"


def _source(report: NpbReport) -> str:
    return f"official NPB {report.version}" if report.version else "official NPB"


def _parameters(path: Path, report: NpbReport) -> dict[str, ParamValue]:
    return {
        "kernel": report.kernel,
        "class": report.npb_class,
        "ranks": report.ranks,
        "threads_per_rank": report.threads_per_rank,
        "source": _source(report),
        "file": path.name,
    }


def _case_description(item: _Parsed) -> dict[str, Any]:
    return {
        "importer": "npb",
        "file": str(item.path),
        "parameters": _parameters(item.path, item.report),
    }


def _details(report: NpbReport) -> dict[str, Any]:
    details: dict[str, Any] = {
        "npb_version": report.version,
        "compiler": report.compiler,
        "flags": report.flags,
        "compile_options": dict(report.compile_options),
        "compile_date": report.compile_date,
        "run_date": report.run_date,
        "programming_model": report.programming_model,
        "size": report.size,
        "iterations": report.iterations,
        "operation_type": report.operation_type,
        "verification": report.verification,
        "verification_values": dict(report.verification_values),
    }
    optional = {
        "active_processes": report.active_processes,
        "compiled_processes": report.compiled_processes,
        "total_threads": report.total_threads,
        "mops_per_thread": report.mops_per_thread,
    }
    details.update({key: value for key, value in optional.items() if value is not None})
    return details


def _mops_per_process(report: NpbReport) -> float:
    """Mop/s per MPI process, as hpceval's own kernels report it (per rank, not per thread)."""
    if report.mops_per_process is not None:
        return report.mops_per_process
    return report.mops_total / report.ranks


def _measurements(path: Path, report: NpbReport) -> list[Measurement]:
    parameters = _parameters(path, report)
    details = _details(report)
    values = (
        ("time", report.time_s, SECOND),
        ("mops_total", report.mops_total, MOPS),
        ("mops_per_process", _mops_per_process(report), MOPS),
    )
    # As hpceval's own NPB runs store them: each value the one sample of a single run.
    return list(single_run_measurements(_benchmark_name(report), values, parameters, details))


def _store_execution(store: Store, run_id: int, item: _Parsed, clock: Callable[[], float]) -> None:
    benchmark = _benchmark_name(item.report)
    argv = ("import", str(item.path))
    started = clock()
    execution_id = store.start_execution(run_id, item.case_key, benchmark, argv, {}, started)
    verified = item.report.verified
    store.finish_execution(
        execution_id,
        ExecutionRecord(
            case_key=item.case_key,
            benchmark=benchmark,
            argv=argv,
            env={},
            status=ExecutionStatus.OK if verified else ExecutionStatus.FAILED,
            exit_code=None,  # the imported program's exit status is not in its output
            started=started,
            ended=clock(),
            stdout_tail=item.text[-OUTPUT_TAIL_CHARS:],
            error="" if verified else f"verification {item.report.verification}",
        ),
    )
    if not verified:
        store.set_case_status(run_id, item.case_key, CaseStatus.FAILED)
        return
    point_key = f"class={item.report.npb_class}"
    for measurement in _measurements(item.path, item.report):
        store.add_measurement(run_id, execution_id, item.case_key, point_key, measurement)
    store.set_case_status(run_id, item.case_key, CaseStatus.DONE)


def _environment(reports: Sequence[NpbReport]) -> Environment:
    """What the outputs say about how the programs were built, one entry per distinct build."""
    builds: dict[str, dict[str, Any]] = {}
    for report in reports:
        build = {
            "npb_version": report.version,
            "compiler": report.compiler,
            "flags": report.flags,
            "compile_date": report.compile_date,
            "compile_options": dict(report.compile_options),
        }
        builds[json.dumps(build, sort_keys=True)] = build
    facts: dict[str, Any] = {
        "origin": "imported outputs of official NPB programs",
        "npb": {"builds": [builds[key] for key in sorted(builds)]},
    }
    return Environment(facts=facts, fingerprint=fingerprint(facts))
