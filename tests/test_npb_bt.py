"""hpceval's NPB BT program really built with mpicc and run: official verification at class S.

One rank (one cell, no message) and four ranks (the multi-partition: four cells per rank,
face exchanges, pipelined line solves; oversubscribed on a 2-core machine), one rank with two
OpenMP threads; a build whose reference values are deliberately off by 1e-6 must fail the
verification (the check can fail), and a non-square rank count is refused. Through hpceval:
a suite with kernel "bt" gives verified measurements, and a real result whose reference was
altered is rejected against the official values (verification.toml).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks.npb import (
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

# Class S: 12^3 grid, 60 steps (NPB 3.4).
S_POINTS, S_STEPS = 12, 60


@pytest.fixture(scope="module")
def bt(toolchain: MpiToolchain, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_program("bt", toolchain, tmp_path_factory.mktemp("bt-build"))


@pytest.mark.parametrize(("ranks", "threads"), [(1, 1), (4, 1), (1, 2)])
def test_class_s_verifies(toolchain: MpiToolchain, bt: Path, ranks: int, threads: int) -> None:
    rc, records, output = run_program(toolchain, bt, ranks, threads)
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
    cache = tmp_path_factory.mktemp("bt-wrong")
    exe = build_program("bt", toolchain, cache, ("-DBT_REFERENCE_ERROR=1e-6",))
    rc, records, output = run_program(toolchain, exe, 4)
    assert_verification_failed(rc, records, output)


def test_non_square_rank_count_is_refused(toolchain: MpiToolchain, bt: Path) -> None:
    rc, records, output = run_program(toolchain, bt, 2)
    assert rc != 0, output
    errors = [r for r in records if r["record"] == "error"]
    assert errors and "square number of ranks" in errors[0]["message"]
    assert not [r for r in records if r["record"] == "result"]


def test_suite_runs_bt_through_hpceval(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "bt.db"))
    try:
        suite = (
            'name = "npb-bt"\n[[benchmark]]\nname = "npb"\nkernels = ["bt"]\n'
            'classes = ["S"]\nranks = [1, 4]\nthreads_per_rank = [1]\n'
        )
        _, ms = run_suite(tmp_path, store, suite)
    finally:
        store.close()
    mops = {int(m.parameters["ranks"]): m.value for m in ms if m.metric == "mops_total"}
    assert set(mops) == {1, 4} and all(v > 0 for v in mops.values())
    times = {int(m.parameters["ranks"]): m.value for m in ms if m.metric == "time"}
    assert mops[4] == pytest.approx(mops_formula("bt", "S", times[4]), rel=1e-6)


def test_rank_rules_are_the_programs() -> None:
    assert rank_rule_error("bt", "S", 4) is None
    assert "square number of ranks" in (rank_rule_error("bt", "A", 8) or "")
    # 12 points cut into 5 cells leave cells of 2 points: the program refuses it too.
    assert "at most 16 ranks" in (rank_rule_error("bt", "S", 25) or "")


def test_altered_reference_in_a_real_result_is_rejected(toolchain: MpiToolchain, bt: Path) -> None:
    rc, records, output = run_program(toolchain, bt, 1)
    assert rc == 0, output
    assert_altered_reference_rejected("bt", only(records, "result"), "xcr1")
