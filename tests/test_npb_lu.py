"""hpceval's NPB LU program really built with mpicc and run: official verification at class S.

One rank (no message), two ranks (a 2 x 1 process grid: the pipelined exchange_1 wavefront
along i) and four ranks (2 x 2: wavefronts along i and j, oversubscribed on a 2-core
machine), one rank with two OpenMP threads (NPB-OMP's pipeline over j-blocks); a build whose
reference values are deliberately off by 1e-6 must fail the verification (the check can
fail), and a count NPB 3.4's process grid refuses (3) is refused with exit 2. Through hpceval:
a suite with kernel "lu" gives verified measurements, and a real result whose reference was
altered is rejected against the official values (verification.toml).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks.npb import (
    lu_process_grid,
    mops_formula,
    rank_rule_error,
)
from hpceval.store import open_store
from hpceval.toolchain import MpiToolchain

from .conftest import requires_mpi, run_suite
from .npb_programs import (
    assert_altered_reference_rejected,
    assert_verification_failed,
    build_program,
    only,
    run_program,
)
from .npb_programs import toolchain as toolchain  # the module fixture

pytestmark = [requires_mpi, pytest.mark.mpi]

# Class S: 12^3 grid, 50 SSOR iterations, dt 0.5 (NPB 3.4).
S_POINTS, S_ITERATIONS = 12, 50


@pytest.fixture(scope="module")
def lu(toolchain: MpiToolchain, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_program("lu", toolchain, tmp_path_factory.mktemp("lu-build"))


@pytest.mark.parametrize(
    ("ranks", "threads", "grid"), [(1, 1, (1, 1)), (2, 1, (2, 1)), (4, 1, (2, 2)), (1, 2, (1, 1))]
)
def test_class_s_verifies(
    toolchain: MpiToolchain, lu: Path, ranks: int, threads: int, grid: tuple[int, int]
) -> None:
    rc, records, output = run_program(toolchain, lu, ranks, threads)
    assert rc == 0, output
    header = only(records, "header")
    assert (header["kernel"], header["class"], header["nranks"], header["threads"]) == (
        "lu", "S", ranks, threads,
    )  # fmt: skip
    assert header["problem"] == {
        "nx": 12, "ny": 12, "nz": 12, "itmax": 50, "dt": 0.5, "px": grid[0], "py": grid[1],
    }  # fmt: skip
    result = only(records, "result")
    assert result["verified"] is True
    quantities = {q["quantity"]: q for q in result["verification"]}
    assert set(quantities) == {f"{kind}{m}" for kind in ("xcr", "xce") for m in range(1, 6)} | {
        "xci"
    }
    # NPB's values (verify.f, class S), which the program must reach to 1e-8.
    assert quantities["xcr1"]["reference"] == 1.6196343210976702e-02
    assert quantities["xce5"]["reference"] == 1.3103347914111294e-03
    assert quantities["xci"]["reference"] == 7.8418928865937083e00
    for q in quantities.values():
        assert q["passed"] is True and q["tolerance"] == 1e-8
        assert abs(q["computed"] - q["reference"]) <= 1e-8 * abs(q["reference"])
    # NPB's operation count: 1e-6 * itmax * (1984.77 n^3 - 10923.3 n^2 + 27770.9 n - 144010) / t.
    n = S_POINTS
    flops = S_ITERATIONS * (1984.77 * n**3 - 10923.3 * n**2 + 27770.9 * n - 144010.0)
    assert result["time_s"] > 0
    assert result["mops_total"] == pytest.approx(1e-6 * flops / result["time_s"], rel=1e-9)
    assert only(records, "end")["status"] == "ok"


def test_wrong_reference_fails_verification(
    toolchain: MpiToolchain, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # References off by 1e-6 (100 times the tolerance): the same computation must fail.
    cache = tmp_path_factory.mktemp("lu-wrong")
    exe = build_program("lu", toolchain, cache, ("-DLU_REFERENCE_ERROR=1e-6",))
    rc, records, output = run_program(toolchain, exe, 2)
    assert_verification_failed(rc, records, output)


def test_disallowed_rank_count_is_refused(toolchain: MpiToolchain, lu: Path) -> None:
    # 3 ranks: NPB 3.4's proc_grid finds no grid (the official LU aborts too).
    rc, records, output = run_program(toolchain, lu, 3)
    assert rc == 2, output
    errors = [r for r in records if r["record"] == "error"]
    assert errors and "lu cannot run on 3 ranks" in errors[0]["message"]
    assert not [r for r in records if r["record"] == "result"]


def test_suite_runs_lu_through_hpceval(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "lu.db"))
    try:
        suite = (
            'name = "npb-lu"\n[[benchmark]]\nname = "npb"\nkernels = ["lu"]\n'
            'classes = ["S"]\nranks = [1, 2]\nthreads_per_rank = [1]\n'
        )
        _, ms = run_suite(tmp_path, store, suite)
    finally:
        store.close()
    mops = {int(m.parameters["ranks"]): m.value for m in ms if m.metric == "mops_total"}
    assert set(mops) == {1, 2} and all(v > 0 for v in mops.values())
    times = {int(m.parameters["ranks"]): m.value for m in ms if m.metric == "time"}
    assert mops[2] == pytest.approx(mops_formula("lu", "S", times[2]), rel=1e-6)


def test_rank_rules_are_npb_34s_process_grid() -> None:
    # Checked against the official NPB 3.4 LU: 6 runs as 3 x 2, 12 as 4 x 3, 3 aborts.
    grids = {n: lu_process_grid(n) for n in range(1, 17)}
    assert {n for n, g in grids.items() if g} == {1, 2, 4, 6, 8, 9, 12, 15, 16}
    assert (grids[2], grids[6], grids[8], grids[12]) == ((2, 1), (3, 2), (4, 2), (4, 3))
    assert rank_rule_error("lu", "S", 4) is None
    assert "lu cannot run on 3 ranks" in (rank_rule_error("lu", "A", 3) or "")
    # 12 points over a 5 x 5 grid leave ranks of 2 points: the program refuses it too.
    assert "fewer than 3 points" in (rank_rule_error("lu", "S", 25) or "")
    assert rank_rule_error("lu", "A", 25) is None


def test_altered_reference_in_a_real_result_is_rejected(toolchain: MpiToolchain, lu: Path) -> None:
    rc, records, output = run_program(toolchain, lu, 1)
    assert rc == 0, output
    assert_altered_reference_rejected("lu", only(records, "result"), "xci")
