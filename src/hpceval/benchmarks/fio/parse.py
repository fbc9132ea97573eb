"""fio's `--output-format=json` report -> the figures hpceval keeps (pure functions).

fio (3.x) reports per job group, with `group_reporting` one entry in `jobs` for all
`numjobs` processes: `read`/`write` hold `bw_bytes` (bytes/s), `iops`, `io_bytes`,
`runtime` (ms) and `clat_ns` (completion latency: submission to completion, in ns) with
its `percentile` table keyed "50.000000", "95.000000"...
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpceval.errors import BenchmarkFailure, ImpossibleValue

MIB = 2**20
# The completion-latency percentiles kept, as fio names them in its JSON.
PERCENTILES: Mapping[str, str] = {"p50": "50.000000", "p95": "95.000000", "p99": "99.000000"}


@dataclass(frozen=True)
class FioFigures:
    """One job group's figures for one direction (read or write)."""

    fio_version: str
    direction: str  # "read" | "write"
    bandwidth_mib_s: float  # 2**20 bytes per second
    iops: float
    clat_mean_us: float
    clat_percentiles_us: Mapping[str, float]  # "p50" | "p95" | "p99" -> µs
    io_bytes: int
    total_ios: int
    runtime_ms: int
    job_options: Mapping[str, str]
    details: Mapping[str, Any]


def _number(section: Mapping[str, Any], key: str, where: str) -> float:
    value = section.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BenchmarkFailure(f"fio report: {where}.{key} is {value!r}, not a number")
    return float(value)


def parse_fio_json(text: str, direction: str) -> FioFigures:
    """The figures of the single job group of a fio JSON report, for `direction`.

    Raises BenchmarkFailure when the report is not JSON, holds an error, no I/O in the
    direction asked, or I/O in the other one (a report of another workload).
    """
    if direction not in ("read", "write"):
        raise ValueError(f"direction must be read or write, not {direction!r}")
    start = text.find("{")
    if start < 0:
        raise BenchmarkFailure("fio wrote no JSON report")
    try:
        # fio may print notes before the document; the document is the rest.
        report = json.loads(text[start:])
    except json.JSONDecodeError as e:
        raise BenchmarkFailure(f"fio's JSON report is malformed: {e}") from None
    if not isinstance(report, dict):
        raise BenchmarkFailure("fio's JSON report is not an object")
    jobs = report.get("jobs")
    if not isinstance(jobs, list) or len(jobs) != 1 or not isinstance(jobs[0], dict):
        count = len(jobs) if isinstance(jobs, list) else 0
        raise BenchmarkFailure(
            f"fio report has {count} job groups, expected 1 (group_reporting, one job)"
        )
    job: dict[str, Any] = jobs[0]
    name = str(job.get("jobname", "?"))
    if job.get("error"):
        raise BenchmarkFailure(f"fio job {name} ended with error {job.get('error')}")
    other = "write" if direction == "read" else "read"
    section = job.get(direction)
    if not isinstance(section, dict):
        raise BenchmarkFailure(f"fio report: job {name} has no {direction} section")
    io_bytes = int(_number(section, "io_bytes", direction))
    if io_bytes <= 0:
        raise BenchmarkFailure(f"fio job {name} completed no {direction} I/O")
    other_section = job.get(other)
    if isinstance(other_section, dict) and other_section.get("io_bytes"):
        raise BenchmarkFailure(
            f"fio job {name} also did {other} I/O: not a pure {direction} workload"
        )
    clat = section.get("clat_ns")
    if not isinstance(clat, dict):
        raise BenchmarkFailure(f"fio report: job {name} has no {direction}.clat_ns")
    table = clat.get("percentile")
    if not isinstance(table, dict):
        raise BenchmarkFailure(f"fio report: job {name} has no completion-latency percentiles")
    percentiles: dict[str, float] = {}
    for label, key in PERCENTILES.items():
        if key not in table:
            raise BenchmarkFailure(f"fio report: no {label} ({key}) completion latency")
        percentiles[label] = _number(table, key, f"{direction}.clat_ns.percentile") / 1000.0
    bandwidth = _number(section, "bw_bytes", direction) / MIB
    iops = _number(section, "iops", direction)
    if bandwidth <= 0 or iops <= 0:
        raise BenchmarkFailure(f"fio job {name}: {direction} bandwidth {bandwidth} MiB/s")
    clat_mean = _number(clat, "mean", "clat_ns") / 1000.0
    # An I/O completes in a positive time: a zero or negative latency is a broken report.
    if clat_mean <= 0 or min(percentiles.values()) <= 0:
        raise ImpossibleValue(
            f"fio job {name}: {direction} completion latency mean {clat_mean} µs, "
            f"percentiles {percentiles}"
        )
    details: dict[str, Any] = {
        "bw_min_kib_s": section.get("bw_min"),
        "bw_max_kib_s": section.get("bw_max"),
        "iops_stddev": section.get("iops_stddev"),
        "clat_stddev_us": _number(clat, "stddev", "clat_ns") / 1000.0,
        "clat_max_us": _number(clat, "max", "clat_ns") / 1000.0,
        "usr_cpu": job.get("usr_cpu"),
        "sys_cpu": job.get("sys_cpu"),
        "disk_util": report.get("disk_util", []),
    }
    options = job.get("job options")
    return FioFigures(
        fio_version=str(report.get("fio version", "")),
        direction=direction,
        bandwidth_mib_s=bandwidth,
        iops=iops,
        clat_mean_us=clat_mean,
        clat_percentiles_us=percentiles,
        io_bytes=io_bytes,
        total_ios=int(_number(section, "total_ios", direction)),
        runtime_ms=int(_number(section, "runtime", direction)),
        job_options={str(k): str(v) for k, v in options.items()}
        if isinstance(options, dict)
        else {},
        details=details,
    )
