"""hpceval's NPB BT program really built with mpicc and run: official verification at class S.

One rank (one cell, no message) and four ranks (the multi-partition: four cells per rank,
face exchanges, pipelined line solves; oversubscribed on a 2-core machine), one rank with two
OpenMP threads; a build whose reference values are deliberately off by 1e-6 must fail the
verification (the check can fail), and a non-square rank count is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hpceval.benchmarks.npb import HERE, NPB_CFLAGS
from hpceval.build import compile_program
from hpceval.toolchain import MpiToolchain, detect_mpi

from .conftest import requires_mpi

pytestmark = [requires_mpi, pytest.mark.mpi]

RUN_TIMEOUT_S = 300
# Class S: 12^3 grid, 60 steps (NPB 3.4).
S_POINTS, S_STEPS = 12, 60


@pytest.fixture(scope="module")
def toolchain() -> MpiToolchain:
    return detect_mpi()


def build_bt(toolchain: MpiToolchain, cache: Path, extra_flags: tuple[str, ...] = ()) -> Path:
    return compile_program(
        "npb-bt",
        [HERE / "bt.c", HERE / "npb_common.c"],
        depends=[HERE / "npb_common.h"],
        compiler=toolchain.mpicc,
        compiler_identity=toolchain.identity(),
        cflags=[*NPB_CFLAGS, *extra_flags, f"-I{HERE}"],
        ldflags=["-lm"],
        cache=cache,
    )


@pytest.fixture(scope="module")
def bt(toolchain: MpiToolchain, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bt(toolchain, tmp_path_factory.mktemp("bt-build"))


def run_bt(
    toolchain: MpiToolchain, exe: Path, ranks: int, threads: int = 1, class_name: str = "S"
) -> tuple[int, list[dict[str, Any]], str]:
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
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, env=env
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, records, proc.stdout + proc.stderr


def only(records: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [r for r in records if r["record"] == kind]
    assert len(found) == 1, f"expected one {kind} record, got {found}"
    return found[0]


@pytest.mark.parametrize(("ranks", "threads"), [(1, 1), (4, 1), (1, 2)])
def test_class_s_verifies(toolchain: MpiToolchain, bt: Path, ranks: int, threads: int) -> None:
    rc, records, output = run_bt(toolchain, bt, ranks, threads)
    assert rc == 0, output
    header = only(records, "header")
    assert (header["kernel"], header["class"], header["nranks"], header["threads"]) == (
        "bt", "S", ranks, threads,
    )  # fmt: skip
    assert header["problem"] == {"nx": 12, "ny": 12, "nz": 12, "niter": 60, "dt": 0.01}
    result = only(records, "result")
    assert result["verified"] is True
    quantities = {q["quantity"]: q for q in result["verification"]}
    assert set(quantities) == {f"{kind}{m}" for kind in ("xcr", "xce") for m in range(1, 6)}
    # NPB's values (verify.f, class S), which the program must reach to 1e-8.
    assert quantities["xcr1"]["reference"] == 1.7034283709541311e-01
    assert quantities["xce5"]["reference"] == 8.9269630987491446e-04
    for q in quantities.values():
        assert q["passed"] is True and q["tolerance"] == 1e-8
        assert abs(q["computed"] - q["reference"]) <= 1e-8 * abs(q["reference"])
    # NPB's operation count: 1e-6 * niter * (3478.8 n^3 - 17655.7 n^2 + 28023.7 n) / t.
    n = S_POINTS
    flops = S_STEPS * (3478.8 * n**3 - 17655.7 * n**2 + 28023.7 * n)
    assert result["time_s"] > 0
    assert result["mops_total"] == pytest.approx(1e-6 * flops / result["time_s"], rel=1e-9)
    assert only(records, "end")["status"] == "ok"


def test_wrong_reference_fails_verification(
    toolchain: MpiToolchain, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # References off by 1e-6 (100 times the tolerance): the same computation must fail.
    exe = build_bt(toolchain, tmp_path_factory.mktemp("bt-wrong"), ("-DBT_REFERENCE_ERROR=1e-6",))
    rc, records, output = run_bt(toolchain, exe, 4)
    assert rc == 3, output
    result = only(records, "result")
    assert result["verified"] is False
    assert all(q["passed"] is False for q in result["verification"])
    assert all(q["rel_error"] > 1e-8 for q in result["verification"])
    assert only(records, "end")["status"] == "verification_failed"


def test_non_square_rank_count_is_refused(toolchain: MpiToolchain, bt: Path) -> None:
    rc, records, output = run_bt(toolchain, bt, 2)
    assert rc != 0, output
    errors = [r for r in records if r["record"] == "error"]
    assert errors and "square number of ranks" in errors[0]["message"]
    assert not [r for r in records if r["record"] == "result"]
