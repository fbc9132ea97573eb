"""Reading and checking the lattice-QCD mini-application's output (pure functions).

A point exists only when the run verified: the CG converged, the residual recomputed by
applying M^+ M as (2m - D)(2m + D) is within `TRUE_RESIDUAL_FACTOR` of the tolerance, the
program ran on the grid the case planned, and its own counts of halo bytes and global sums
equal what the decomposition implies (hpceval.benchmarks.lqcd.decomposition).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from hpceval.benchmarks import records
from hpceval.benchmarks.base import Case, ParsedPoint
from hpceval.benchmarks.common import single_run_measurements
from hpceval.benchmarks.lqcd.decomposition import (
    ALLREDUCES_PER_ITERATION,
    FLOPS_PER_EVEN_SITE,
    Decomposition,
)
from hpceval.errors import BenchmarkFailure
from hpceval.model import ParamValue
from hpceval.units import GFLOPS, SECOND

PROGRAM: Final = "lqcd"
PROTOCOL_VERSION: Final = "1.0"
ITERATIONS_PER_SECOND: Final = "iterations/s"  # declared in benchmark.toml
BYTES_PER_ITERATION: Final = "bytes/iteration"
ALLREDUCES_PER_ITERATION_UNIT: Final = "allreduces/iteration"
SHARE: Final = "share of time"
# The recursive residual drifts from the true one by rounding; 10x the tolerance is loose
# for that and far below what a wrong operator or a lost halo gives (order 1).
TRUE_RESIDUAL_FACTOR: Final = 10.0


def decoded_records(stdout: str) -> list[dict[str, Any]]:
    found = (records.decode_record(line, PROGRAM) for line in stdout.splitlines())
    decoded = [r for r in found if r is not None]
    for r in decoded:
        if r.get("record") == "error":
            raise BenchmarkFailure(f"lqcd: {r.get('message')}")
    return decoded


def one(decoded: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any]:
    found = [r for r in decoded if r.get("record") == kind]
    if len(found) != 1:
        raise BenchmarkFailure(f"lqcd: expected one {kind} record, got {len(found)}")
    return found[0]


def check_header(header: Mapping[str, Any], case: Case) -> Decomposition:
    records.check_program_header(header, PROGRAM, PROTOCOL_VERSION, case.placement)
    lattice = tuple(int(n) for n in case.options["lattice"])
    grid = tuple(int(n) for n in case.options["grid"])
    for name, expected in (("lattice", lattice), ("grid", grid)):
        got = tuple(header.get(name) or ())
        if got != expected:
            raise BenchmarkFailure(
                f"lqcd header says {name} {list(got)}, expected {list(expected)}"
            )
    if header.get("flops_per_even_site") != FLOPS_PER_EVEN_SITE:
        raise BenchmarkFailure(
            f"lqcd counts {header.get('flops_per_even_site')} flops per even site, "
            f"hpceval {FLOPS_PER_EVEN_SITE}"
        )
    return Decomposition((lattice[0], lattice[1], lattice[2], lattice[3]),
                         (grid[0], grid[1], grid[2], grid[3]))  # fmt: skip


def check_result(result: Mapping[str, Any], decomposition: Decomposition, tol: float) -> int:
    """The verification; returns the iteration count."""
    iterations = int(result.get("iterations", 0))
    if result.get("converged") is not True or iterations < 1:
        raise BenchmarkFailure(
            f"lqcd: the CG did not converge in {iterations} iterations "
            f"(residual {result.get('recursive_residual')})"
        )
    recursive = float(result.get("recursive_residual", math.inf))
    true = float(result.get("true_residual", math.inf))
    if not recursive <= tol:
        raise BenchmarkFailure(f"lqcd: recursive residual {recursive:.3e} above tolerance {tol:g}")
    if not true <= TRUE_RESIDUAL_FACTOR * tol:
        raise BenchmarkFailure(
            f"lqcd: |b - M^+M x| / |b| recomputed = {true:.3e}, above {TRUE_RESIDUAL_FACTOR:g} x "
            f"the tolerance {tol:g}: the solution does not solve the system"
        )
    if result.get("global_sites") != decomposition.global_volume:
        raise BenchmarkFailure(
            f"lqcd: {result.get('global_sites')} sites, expected {decomposition.global_volume}"
        )
    expected_bytes = decomposition.halo_bytes_per_iteration() * iterations
    if result.get("halo_bytes") != expected_bytes:
        raise BenchmarkFailure(
            f"lqcd: sent {result.get('halo_bytes')} halo bytes in {iterations} iterations; the "
            f"grid {list(decomposition.grid)} implies {expected_bytes}"
        )
    expected_sums = ALLREDUCES_PER_ITERATION * iterations
    for key in ("allreduces", "allreduces_max_rank"):
        if result.get(key) != expected_sums:
            raise BenchmarkFailure(
                f"lqcd: {key} {result.get(key)} in {iterations} iterations, "
                f"expected {expected_sums}"
            )
    for key in ("solution_norm2", "solution_checksum", "cg_time_s", "comm_time_s"):
        value = result.get(key)
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise BenchmarkFailure(f"lqcd: {key} is {value!r}")
    if not float(result["cg_time_s"]) > 0:
        raise BenchmarkFailure("lqcd: the CG took no time")
    return iterations


def parse_output(stdout: str, case: Case, point: str) -> ParsedPoint:
    """The measurements of one whole run (BenchmarkFailure unless it verified)."""
    decoded = decoded_records(stdout)
    decomposition = check_header(one(decoded, "header"), case)
    result = one(decoded, "result")
    iterations = check_result(result, decomposition, float(case.options["tol"]))
    end = one(decoded, "end")
    if end.get("status") != "ok":
        raise BenchmarkFailure("lqcd: the output has no successful end record")
    cg_time = float(result["cg_time_s"])
    rate = iterations / cg_time
    gflops = decomposition.flops_per_iteration() * rate / 1e9
    params: dict[str, ParamValue] = {**case.placement.as_parameters(), **case.parameters}
    details = {
        "iterations": iterations,
        "true_residual": result["true_residual"],
        "recursive_residual": result["recursive_residual"],
        "solution_norm2": result["solution_norm2"],
        "solution_checksum": result["solution_checksum"],
        "comm_time_s": result["comm_time_s"],
        # CPU seconds of all ranks in the CG (busy-waiting included): on a shared machine
        # the wall time also measures the scheduler; flops per CPU second do not.
        "cg_cpu_s": result.get("cg_cpu_s"),
        "gflops_per_cpu_s": (
            decomposition.flops_per_iteration() * iterations / float(result["cg_cpu_s"]) / 1e9
            if isinstance(result.get("cg_cpu_s"), int | float) and result["cg_cpu_s"] > 0
            else None
        ),
        "halo_bytes_per_rank_per_iteration": decomposition.halo_bytes_per_rank(),
        "halo_bytes_max_rank": result.get("halo_bytes_max_rank"),
        "message_partners": decomposition.neighbours(),
        "flops_per_iteration": decomposition.flops_per_iteration(),
        "flops_per_even_site": FLOPS_PER_EVEN_SITE,
    }
    rows = (
        ("cg_rate", rate, ITERATIONS_PER_SECOND),
        ("gflops", gflops, GFLOPS),
        ("cg_time", cg_time, SECOND),
        ("halo_bytes", float(result["halo_bytes"]) / iterations, BYTES_PER_ITERATION),
        ("allreduces", float(result["allreduces"]) / iterations, ALLREDUCES_PER_ITERATION_UNIT),
        ("comm_share", float(result.get("comm_share", 0.0)), SHARE),
    )
    return ParsedPoint(point, single_run_measurements(PROGRAM, rows, params, details))
