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
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import hpceval
from hpceval.benchmarks.common import single_run_measurements
from hpceval.benchmarks.npb.official_output import (
    NpbReport,
    parse_npb_output,
)
from hpceval.errors import UserError
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
# As much of each output as a campaign keeps of a program's stdout.
OUTPUT_TAIL_CHARS: Final = 8192


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
    if report.time_from_mops:
        details["time"] = "printed 0.00 s (below its resolution): the operation count over Mop/s"
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
