"""hpceval's NPB-MZ programs (BT-MZ, SP-MZ) really built with mpicc and run under mpirun.

Class S verifies (the ten official per-zone norm sums) at 1 and 2 ranks with 1 and 2
OpenMP threads per rank, and at 4 ranks (one zone each); the header's zone mesh and load
balance are the Python side's (multizone.py, NPB-MZ's zone_setup and map_zones); more ranks
than zones are refused with a one-line error, as the option checks refuse them; a wrong
reference fails verification; the npb benchmark runs them in a campaign with threads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks.npb import (
    NpbOptions,
    memory_per_rank,
    mops_formula,
    multizone,
    official_references,
    rank_rule_error,
    reference,
)
from hpceval.store import open_store
from hpceval.toolchain import MpiToolchain

from .conftest import requires_mpi, run_suite
from .npb_programs import assert_verification_failed, build_program, run_program
from .npb_programs import only as record
from .npb_programs import toolchain as toolchain  # the module fixture

pytestmark = [requires_mpi, pytest.mark.mpi]

PROGRAMS = ("bt-mz", "sp-mz")


@pytest.fixture(scope="module")
def programs(toolchain: MpiToolchain, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cache = tmp_path_factory.mktemp("npb-mz-build")
    return {p: build_program(p, toolchain, cache) for p in PROGRAMS}


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize(("ranks", "threads"), [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)])
def test_class_s_verifies(
    toolchain: MpiToolchain, programs: dict[str, Path], program: str, ranks: int, threads: int
) -> None:
    rc, records, text = run_program(toolchain, programs[program], ranks, threads)
    assert rc == 0, text
    header = record(records, "header")
    assert (header["kernel"], header["nranks"], header["threads"]) == (program, ranks, threads)
    mesh = multizone.mesh(reference(), program, "S")
    sizes = mesh.sizes()
    problem = header["problem"]
    assert (problem["gx"], problem["gy"], problem["gz"]) == (24, 24, 6)
    assert (problem["x_zones"], problem["y_zones"]) == (2, 2)
    assert tuple(problem["largest_zone"]) == max(sizes, key=lambda s: s[0] * s[1] * s[2])
    assert problem["load_imbalance"] == pytest.approx(multizone.load_imbalance(mesh, ranks))
    result = record(records, "result")
    assert result["verified"] is True
    quantities = {q["quantity"]: q for q in result["verification"]}
    official = official_references(program, "S")
    assert sorted(quantities) == sorted(official)
    for name, (ref, tol) in official.items():
        assert quantities[name]["reference"] == ref
        assert quantities[name]["passed"] and tol == 1e-8
    assert result["mops_total"] == pytest.approx(mops_formula(program, "S", result["time_s"]))
    assert record(records, "end")["status"] == "ok"


def test_zone_meshes_are_npb_mz() -> None:
    # BT-MZ class S: 24 points cut in 2 with ratio 3 (x_end = 6.45 -> 6, 24.45 -> 24).
    assert multizone.mesh(reference(), "bt-mz", "S").sizes() == [
        (6, 6, 6), (18, 6, 6), (6, 18, 6), (18, 18, 6),
    ]  # fmt: skip
    a = multizone.mesh(reference(), "bt-mz", "A")
    xs = sorted({s[0] for s in a.sizes()})
    assert sum(xs) == 128 and xs[-1] / xs[0] == pytest.approx(4.5, rel=0.15)
    sp_b = multizone.mesh(reference(), "sp-mz", "B")
    assert set(sp_b.sizes()) == {(38, 26, 17)} and sp_b.zones == 64
    # Two ranks share BT-MZ's uneven zones within 1 % (bin packing), SP-MZ's exactly.
    assert multizone.load_imbalance(multizone.mesh(reference(), "bt-mz", "W"), 2) < 1.01
    assert multizone.load_imbalance(sp_b, 2) == 1.0


@pytest.mark.parametrize("program", PROGRAMS)
def test_more_ranks_than_zones_is_refused(
    toolchain: MpiToolchain, programs: dict[str, Path], program: str
) -> None:
    rc, records, text = run_program(toolchain, programs[program], 5)
    assert rc == 2, text
    message = f"{program} class S has 4 zones: needs at most 4 ranks, got 5"
    assert message in text
    assert rank_rule_error(program, "S", 5) == message
    assert any(r["record"] == "error" for r in records)
    with pytest.raises(ValueError, match="has 4 zones"):
        NpbOptions.model_validate({"kernels": [program], "classes": ["S"], "ranks": [5]})
    assert rank_rule_error(program, "C", 256) is None


def test_wrong_reference_fails_verification(toolchain: MpiToolchain, tmp_path: Path) -> None:
    exe = build_program("bt-mz", toolchain, tmp_path, ("-DBT_REFERENCE_ERROR=1e-6",))
    rc, records, text = run_program(toolchain, exe, 2)
    assert_verification_failed(rc, records, text)


def test_memory_estimate_follows_the_busiest_rank() -> None:
    one = memory_per_rank("bt-mz", "A", 1)
    assert memory_per_rank("bt-mz", "A", 2) < 0.6 * one
    # bt_mz.c class W on one rank peaks near 38 MiB (measured RSS).
    assert 25 << 20 < memory_per_rank("bt-mz", "W", 1) < 60 << 20


def test_campaign_runs_hybrid_placements(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "npb.db"))
    try:
        suite = (
            'name = "npb-mz-test"\n[[benchmark]]\nname = "npb"\nkernels = ["bt-mz", "sp-mz"]\n'
            'classes = ["S"]\nranks = [1, 2]\nthreads_per_rank = [1, 2]\n'
        )
        _, ms = run_suite(tmp_path, store, suite)
    finally:
        store.close()
    points = {
        (str(m.parameters["kernel"]), int(m.parameters["ranks"]),
         int(m.parameters["threads_per_rank"]))
        for m in ms
    }  # fmt: skip
    assert points == {(p, r, t) for p in PROGRAMS for r in (1, 2) for t in (1, 2)}
