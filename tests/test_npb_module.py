"""The npb benchmark module: rules, memory refusal, verification cross-checks (pure)."""

from __future__ import annotations

import json
import math

import pytest

from hpceval.benchmarks.base import Case
from hpceval.benchmarks.npb import (
    Npb,
    NpbOptions,
    memory_per_rank,
    mops_formula,
    official_references,
    rank_rule_error,
    reference,
)
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Placement

from .conftest import entry_cases

BENCH = Npb()


def platform(memory_gb: float | None = None, nodes: int = 1) -> PlatformConfig:
    return PlatformConfig.model_validate(
        {"name": "t", "nodes": nodes, "cores_per_node": 2, "memory_gb_per_node": memory_gb}
    )


def test_rank_rules() -> None:
    assert rank_rule_error("ep", "S", 3) is None
    assert rank_rule_error("ep", "S", 257) is not None  # 256 batches of 2^16 pairs
    assert rank_rule_error("is", "D", 1) == "is class D needs at least 2 ranks"
    assert rank_rule_error("cg", "S", 4) is None
    assert rank_rule_error("cg", "S", 3) == "cg needs a power-of-two number of ranks, got 3"
    assert rank_rule_error("ft", "S", 128) is not None  # S is 64^3: at most 64 ranks
    assert rank_rule_error("ft", "S", 64) is None
    with pytest.raises(ValueError, match="power-of-two"):
        NpbOptions.model_validate({"kernels": ["is"], "ranks": [6]})


def test_memory_estimate_splits_over_ranks() -> None:
    for kernel in ("is", "cg", "mg", "ft"):
        # 2 -> 8 ranks: about a quarter per rank (IS on one rank has no receive buffer).
        two, eight = memory_per_rank(kernel, "C", 2), memory_per_rank(kernel, "C", 8)
        assert 3 < two / eight < 5, kernel
    # Class C runs within 24 GiB at 1 rank (the requirement for this machine).
    assert all(memory_per_rank(k, "C", 1) < 24 * 2**30 for k in ("ep", "is", "cg", "mg", "ft"))


def test_not_enough_memory_is_refused_before_starting() -> None:
    with pytest.raises(
        UserError, match=r"ft class C on 1 ranks needs about .* GB per node, the node has 1\.0 GB"
    ):
        entry_cases(BENCH, {"kernels": ["ft"], "classes": ["C"], "ranks": [1]}, platform(1.0))


def test_cases_are_repetitions_one_run_each() -> None:
    (case,) = entry_cases(
        BENCH,
        {"kernels": ["cg"], "classes": ["S"], "ranks": [2], "threads_per_rank": [2], "repeat": 3},
        platform(),
    )
    assert case.points == ("rep=1", "rep=2", "rep=3")
    assert BENCH.points_per_execution == 1
    assert case.placement == Placement(1, 2, 2, "core")
    assert case.key == "npb:cg:S:np=2:1x2x2:bind=core"


def test_mops_formulas_match_the_official_definitions() -> None:
    # CG class S: na=1400, nonzer=7, niter=15.
    ops = 2 * 15 * 1400 * (3 + 7 * 8 + 25 * (5 + 7 * 8) + 3)
    assert mops_formula("cg", "S", 2.0) == pytest.approx(ops / 2.0 / 1e6)
    assert mops_formula("ep", "A", 1.0) == pytest.approx(2**29 / 1e6)
    assert mops_formula("mg", "A", 1.0) == pytest.approx(58e-6 * 4 * 256**3)
    assert mops_formula("is", "W", 1.0) == pytest.approx(10 * 2**20 / 1e6)
    n = 64**3
    assert mops_formula("ft", "S", 1.0) == pytest.approx(
        1e-6 * n * (14.8157 + 7.19641 * math.log(n) + (5.23518 + 7.21113 * math.log(n)) * 6)
    )


def test_official_references_cover_every_class() -> None:
    for class_name in ("S", "W", "A", "B", "C", "D"):
        assert set(official_references("cg", class_name)) == {"zeta"}
        ft = official_references("ft", class_name)
        assert len(ft) == 2 * int(reference()["ft"]["size"][class_name][3])


def _case(kernel: str = "cg", class_name: str = "S") -> Case:
    return Case(
        f"npb:{kernel}",
        "npb",
        Placement(1, 2),
        {"kernel": kernel, "class": class_name},
        ("rep=1",),
        60,
    )


def _result(
    computed: float, reference_value: float, *, verified: bool = True, mops: float | None = None
) -> str:
    t = 0.5
    return json.dumps(
        {
            "record": "result", "kernel": "cg", "class": "S", "nranks": 2, "threads": 1,
            "time_s": t,
            "mops_total": mops_formula("cg", "S", t) if mops is None else mops,
            "mops_per_process": 1.0, "iterations": 15, "verified": verified,
            "verification": [{
                "quantity": "zeta", "computed": computed, "reference": reference_value,
                "rel_error": abs(computed - reference_value) / reference_value,
                "tolerance": 1e-10, "passed": verified,
            }],
        }
    )  # fmt: skip


ZETA_S = 8.5971775078648


def test_a_verified_result_gives_time_and_mops() -> None:
    point = BENCH.parse_line(_result(ZETA_S, ZETA_S), _case())
    assert point is not None and point.point_key == "rep=1"
    by_metric = {m.metric: m for m in point.measurements}
    assert by_metric["time"].value == 0.5 and by_metric["time"].unit == "s"
    assert by_metric["mops_total"].unit == "Mop/s"
    assert by_metric["mops_per_process"].value == pytest.approx(by_metric["mops_total"].value / 2)


def test_failed_verification_is_a_failure_with_values_side_by_side() -> None:
    with pytest.raises(
        BenchmarkFailure, match=r"failed verification: zeta: computed 8\.6, reference 8\.597"
    ):
        BENCH.parse_line(_result(8.6, ZETA_S, verified=False), _case())


def test_program_claiming_success_is_still_checked() -> None:
    # A program that says "verified" with a wrong value, or a wrong reference, is caught.
    with pytest.raises(BenchmarkFailure, match=r"is not the official 8\.597"):
        BENCH.parse_line(_result(8.6, 8.6, verified=True), _case())
    with pytest.raises(BenchmarkFailure, match=r"failed verification: zeta: computed 8\.6"):
        BENCH.parse_line(_result(8.6, ZETA_S, verified=True), _case())
    with pytest.raises(BenchmarkFailure, match="does not follow the official operation count"):
        BENCH.parse_line(_result(ZETA_S, ZETA_S, mops=1.0), _case())
