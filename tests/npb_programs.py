"""Building and running one of hpceval's NPB C programs directly, and the checks the tests of
BT, SP and LU share (the `toolchain` fixture comes from here too)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hpceval.benchmarks import Case, get_benchmark
from hpceval.benchmarks.npb import NPB_CFLAGS, compile_npb_program
from hpceval.errors import BenchmarkFailure
from hpceval.model import Placement
from hpceval.toolchain import MpiToolchain, detect_mpi

RUN_TIMEOUT_S = 300


def build_program(
    program: str, toolchain: MpiToolchain, cache: Path, extra_flags: tuple[str, ...] = ()
) -> Path:
    return compile_npb_program(
        program,
        compiler=toolchain.mpicc,
        compiler_identity=toolchain.identity(),
        cflags=[*NPB_CFLAGS, *extra_flags],
        cache=cache,
    )


def run_program(
    toolchain: MpiToolchain,
    exe: Path,
    ranks: int,
    threads: int = 1,
    class_name: str = "S",
    extra_args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> tuple[int, list[dict[str, Any]], str]:
    """Exit status, the JSON records on stdout and the whole output of one mpirun."""
    root = toolchain.run_as_root() if os.geteuid() == 0 else None
    argv = [
        toolchain.mpirun,
        *(root.mpirun_args if root else ()),
        "--oversubscribe",
        "-np",
        str(ranks),
        str(exe),
        "--class",
        class_name,
        *extra_args,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), **(extra_env or {})}
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, env=env
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, records, proc.stdout + proc.stderr


def only(records: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [r for r in records if r["record"] == kind]
    assert len(found) == 1, f"expected one {kind} record, got {found}"
    return found[0]


def assert_verification_failed(rc: int, records: list[dict[str, Any]], output: str) -> None:
    """A run whose every reference was put off by more than the tolerance: exit 3, no pass."""
    assert rc == 3, output
    result = only(records, "result")
    assert result["verified"] is False
    assert all(q["passed"] is False for q in result["verification"])
    assert all(q["rel_error"] > 1e-8 for q in result["verification"])
    assert only(records, "end")["status"] == "verification_failed"


def assert_altered_reference_rejected(program: str, result: dict[str, Any], quantity: str) -> None:
    """hpceval accepts a real one-rank class-S result, and refuses it once the program's
    reference for `quantity` is not NPB's (even though the program says it passed)."""
    case = Case(
        key=f"npb/{program}/S/np=1",
        benchmark="npb",
        placement=Placement(nodes=1, ranks_per_node=1, threads_per_rank=1),
        parameters={"kernel": program, "class": "S"},
        points=("rep=1",),
        time_limit_s=60.0,
    )
    bench = get_benchmark("npb")
    assert bench.parse_line(json.dumps(result), case) is not None
    wrong = json.loads(json.dumps(result))
    index = next(i for i, q in enumerate(wrong["verification"]) if q["quantity"] == quantity)
    wrong["verification"][index]["reference"] *= 1.001
    wrong["verification"][index]["computed"] = wrong["verification"][index]["reference"]
    with pytest.raises(BenchmarkFailure, match=rf"reference for {quantity} .* is not the official"):
        bench.parse_line(json.dumps(wrong), case)


@pytest.fixture(scope="module")
def toolchain() -> MpiToolchain:
    return detect_mpi()
