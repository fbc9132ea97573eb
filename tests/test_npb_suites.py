"""The shipped NPB suites plan the programs, classes and placements they promise."""

from __future__ import annotations

from hpceval.campaign import load_suite, plan_cases

from .test_mpibench_cases import platform

SIX = {"bt", "sp", "lu", "bt-mz", "sp-mz", "lu-mz"}


def planned(suite: str) -> set[tuple[str, str, int, int]]:
    return {
        (str(c.parameters["kernel"]), str(c.parameters["class"]), c.placement.ranks,
         c.placement.threads_per_rank)
        for c in plan_cases(load_suite(suite), platform(cores=4))
    }  # fmt: skip


def test_quick_runs_every_program_at_s_and_w() -> None:
    plan = planned("npb-quick")
    for program in SIX | {"ep", "is", "cg", "mg", "ft"}:
        assert {(program, c) for c in "SW"} <= {(k, c) for k, c, _, _ in plan}, program
    # the MZ programs also as one rank of two threads
    assert {("bt-mz", "S", 1, 2), ("sp-mz", "W", 1, 2), ("bt-mz", "W", 2, 1)} <= plan
    assert {("lu-mz", "S", 1, 2), ("lu-mz", "W", 2, 1)} <= plan


def test_standard_runs_a_and_b() -> None:
    plan = planned("npb-standard")
    for program in SIX:
        assert {(program, c) for c in "AB"} <= {(k, c) for k, c, _, _ in plan}, program
    assert ("bt", "B", 4, 1) in plan and ("sp-mz", "B", 2, 1) in plan


def test_hybrid_compares_mz_with_pure_mpi_on_the_same_cores() -> None:
    plan = planned("npb-hybrid")
    for mz in ("bt-mz", "sp-mz", "lu-mz"):
        # four cores: 4 x 1, 2 x 2, 1 x 4 beside the single-zone program on 4 ranks
        assert {(mz, "A", r, t) for r, t in ((4, 1), (2, 2), (1, 4))} <= plan
        assert (mz.removesuffix("-mz"), "A", 4, 1) in plan
        # two cores: 2 x 1 and 1 x 2
        assert {(mz, "A", 2, 1), (mz, "A", 1, 2)} <= plan
    assert all(r * t in (2, 4) for _, _, r, t in plan)
