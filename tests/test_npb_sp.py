"""hpceval's NPB SP program really built with mpicc and run under mpirun, and its rules.

Class S verifies (all ten official residual and error norms) at 1 rank, at 4 ranks (the
multi-partition with 2 cells per axis and rank, pipelined line solves, face exchanges;
oversubscribed on small machines) and with 2 OpenMP threads; a reference made wrong
fails verification with exit status 3, and a rank count that is not a square is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.npb import (
    NpbOptions,
    memory_per_rank,
    mops_formula,
    official_references,
    rank_rule_error,
)
from hpceval.store import open_store
from hpceval.toolchain import MpiToolchain

from .conftest import requires_mpi, run_suite
from .npb_programs import assert_verification_failed, only, run_program
from .npb_programs import toolchain as toolchain  # the module fixture

pytestmark = [requires_mpi, pytest.mark.mpi]

SP_CLASS_S_NORMS = 10  # xcr1..5 (residual) and xce1..5 (error)


@pytest.fixture(scope="module")
def sp_program(toolchain: MpiToolchain) -> Path:
    # The npb benchmark's own build (cached by source hash, compiler and flags).
    program = get_benchmark("npb").build(
        compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=[]
    )
    return program.executables["sp"]


@pytest.mark.parametrize(("ranks", "threads"), [(1, 1), (4, 1), (1, 2)])
def test_class_s_verifies(
    toolchain: MpiToolchain, sp_program: Path, ranks: int, threads: int
) -> None:
    rc, records, text = run_program(toolchain, sp_program, ranks, threads)
    assert rc == 0, text
    header = only(records, "header")
    assert (header["kernel"], header["nranks"], header["threads"]) == ("sp", ranks, threads)
    assert header["problem"] == {"nx": 12, "ny": 12, "nz": 12, "niter": 100, "dt": 0.015}
    result = only(records, "result")
    assert result["verified"] is True
    quantities = {q["quantity"]: q for q in result["verification"]}
    assert sorted(quantities) == [f"xce{m}" for m in range(1, 6)] + [f"xcr{m}" for m in range(1, 6)]
    assert all(q["passed"] and q["tolerance"] == 1e-8 for q in quantities.values())
    # The official reference values (NPB 3.4 verify.f, class S).
    assert quantities["xcr1"]["reference"] == 2.7470315451339479e-02
    assert quantities["xce5"]["reference"] == 3.4177666183390531e-05
    assert len(quantities) == SP_CLASS_S_NORMS
    # Mop/s from NPB's operation count for a 12^3 grid and 100 steps.
    n3, t = 12.0**3, 12.0
    ops = 100 * (881.174 * n3 - 4683.91 * t**2 + 11484.5 * t - 19272.4)
    assert result["mops_total"] == pytest.approx(ops / result["time_s"] / 1e6, rel=1e-9)
    assert only(records, "end")["status"] == "ok"


def test_wrong_reference_fails_verification(toolchain: MpiToolchain, sp_program: Path) -> None:
    # References off by 1e-6 (100 times the tolerance): the same computation must fail.
    scale = {"HPCEVAL_SP_REFERENCE_SCALE": "1.000001"}
    assert_verification_failed(*run_program(toolchain, sp_program, 4, extra_env=scale))


def test_non_square_rank_count_is_refused(toolchain: MpiToolchain, sp_program: Path) -> None:
    rc, records, text = run_program(toolchain, sp_program, 2)
    assert rc != 0
    assert "sp needs a square number of ranks (1, 4, 9, 16, ...), got 2" in text
    assert any(r["record"] == "error" for r in records)


def test_too_many_ranks_for_the_grid_is_refused(toolchain: MpiToolchain, sp_program: Path) -> None:
    # Class S has 12 points per axis: 16 ranks cut it into cells of 3, 25 ranks into
    # cells of 2 (too small for the one-sided dissipation stencils).
    rc, _, text = run_program(toolchain, sp_program, 25)
    assert rc != 0
    assert "into cells of 2 points; the minimum is 3" in text


def test_rank_rules_are_the_programs() -> None:
    assert rank_rule_error("sp", "S", 1) is None
    assert rank_rule_error("sp", "S", 16) is None  # cells of 3 points
    assert rank_rule_error("sp", "S", 2) == (
        "sp needs a square number of ranks (1, 4, 9, 16, ...), got 2"
    )
    assert rank_rule_error("sp", "S", 25) == "sp class S runs on at most 16 ranks, got 25"
    assert rank_rule_error("sp", "C", 2916) is None  # 162 = 54 cells of 3
    with pytest.raises(ValueError, match="square number of ranks"):
        NpbOptions.model_validate({"kernels": ["sp"], "ranks": [1, 2]})


def test_official_facts() -> None:
    refs = official_references("sp", "A")
    assert sorted(refs) == sorted(
        [f"xcr{m}" for m in range(1, 6)] + [f"xce{m}" for m in range(1, 6)]
    )
    assert refs["xcr1"] == (2.4799822399300195, 1e-8)
    assert refs["xce5"] == (1.3621613399213001e-04, 1e-8)
    for class_name in ("S", "W", "A", "B", "C", "D"):
        assert len(official_references("sp", class_name)) == SP_CLASS_S_NORMS
    n = 102.0  # class B, 400 steps
    ops = 400 * (881.174 * n**3 - 4683.91 * n**2 + 11484.5 * n - 19272.4)
    assert mops_formula("sp", "B", 2.0) == pytest.approx(ops / 2.0 / 1e6)
    # sp.c's arrays for class W on one rank take about 26 MiB (measured peak RSS).
    assert 20 << 20 < memory_per_rank("sp", "W", 1) < 40 << 20
    assert memory_per_rank("sp", "C", 4) < memory_per_rank("sp", "C", 1)


def test_campaign_runs_and_verifies_sp(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "npb.db"))
    try:
        suite = (
            'name = "npb-sp-test"\n[[benchmark]]\nname = "npb"\nkernels = ["sp"]\n'
            'classes = ["S"]\nranks = [1, 4]\nthreads_per_rank = [1]\n'
        )
        _, ms = run_suite(tmp_path, store, suite)
    finally:
        store.close()
    points = {(str(m.parameters["kernel"]), int(m.parameters["ranks"])) for m in ms}
    assert points == {("sp", 1), ("sp", 4)}
    mops = {int(m.parameters["ranks"]): m.value for m in ms if m.metric == "mops_total"}
    assert all(v > 0 for v in mops.values())
