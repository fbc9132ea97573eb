"""compare by workload: placement modes, points without counterpart and their reasons, the
placement notation (issue 23 items 1 and 7)."""

from __future__ import annotations

import pytest

from hpceval.analysis.categories import Category
from hpceval.analysis.compare import compare
from hpceval.analysis.frame import build_frame
from hpceval.analysis.matching import PlacementMode
from hpceval.campaign import load_platform
from hpceval.errors import UserError
from hpceval.labels import placement_label
from hpceval.model import Measurement, Origin


def measurement(mean: float, *, benchmark: str, metric: str, unit: str, **p: object) -> Measurement:
    samples = (mean * 0.98, mean, mean * 1.02)
    return Measurement(
        benchmark=benchmark,
        metric=metric,
        value=mean,
        unit=unit,
        parameters={str(k): v for k, v in p.items()},  # type: ignore[misc]
        samples=samples,
        origin=Origin.MEASURED,
    )


def pingpong(mean: float, nodes: int, per_node: int, pair: str) -> Measurement:
    return measurement(
        mean, benchmark="mpibench", metric="latency", unit="us", pattern="pingpong", size=8,
        ranks=2, nodes=nodes, ranks_per_node=per_node, threads_per_rank=1, binding="core",
        pair=pair, oversubscribed=False,
    )  # fmt: skip


def npb(mean: float, ranks: int, nodes: int, per_node: int, over: bool) -> Measurement:
    return measurement(
        mean, benchmark="npb", metric="time", unit="s", kernel="cg", **{"class": "A"},
        ranks=ranks, nodes=nodes, ranks_per_node=per_node, threads_per_rank=1,
        binding="core", oversubscribed=over,
    )  # fmt: skip


@pytest.fixture
def study() -> object:
    """local (one node) against a 4-node emulated cluster measured at several placements:
    the inter-node ping-pong 30x slower, shared memory on one of its nodes as fast; NPB
    4 ranks 3x slower spread over 4 nodes, 1.1x on one node."""
    return build_frame(
        [
            ("local", 1, pingpong(1.0, 1, 2, "intra-node")),
            ("local", 1, npb(2.0, 4, 1, 4, True)),
            ("local", 1, npb(3.0, 2, 1, 2, False)),
            ("cloud", 2, pingpong(30.0, 2, 1, "inter-node")),
            ("cloud", 2, pingpong(1.0, 1, 2, "intra-node")),
            ("cloud", 2, npb(6.0, 4, 4, 1, True)),
            ("cloud", 2, npb(2.2, 4, 1, 4, True)),
            ("cloud", 2, npb(4.0, 4, 2, 2, True)),
        ]
    )


def configs() -> dict[str, object]:
    return {"local": load_platform("local").config, "cloud": load_platform("netns-4x1-1gbe").config}


def rows(result: object) -> dict[tuple[str, int], tuple[float, str, str]]:
    table = result.table  # type: ignore[attr-defined]
    return {
        (str(r["benchmark"]), int(r["ranks"])): (
            round(float(r["ratio"]), 3),
            str(r["placement"]),
            str(r["baseline_placement"]),
        )
        for r in table.to_dict("records")
    }


def test_default_mode_pairs_each_platform_as_a_user_would_run_it(study: object) -> None:
    result = compare(study, "local", platform_configs=configs())  # type: ignore[arg-type]
    assert result.placement_mode is PlacementMode.DEFAULT
    got = rows(result)
    # The cluster's default is one rank per node: the network is in every comparison.
    assert got[("mpibench", 2)] == (
        30.0,
        "2 nodes × 1 rank × 1 thread, inter-node",
        "1 node × 2 ranks × 1 thread, intra-node",
    )
    assert got[("npb", 4)] == (
        3.0,
        "4 nodes × 1 rank × 1 thread, inter-node, oversubscribed",
        "1 node × 4 ranks × 1 thread, intra-node, oversubscribed",
    )
    inter = result.summary("cloud", Category.INTER_NODE)
    assert inter is not None and inter.points == 1 and inter.slowdown == pytest.approx(30.0)
    compute = result.summary("cloud", Category.COMPUTE)
    assert compute is not None and compute.slowdown == pytest.approx(3.0)
    # NPB at 2 ranks: measured on local only; the reason is given, not just counted.
    listed = result.unmatched_points.to_dict("records")
    assert [(r["side"], r["benchmark"], r["reason"]) for r in listed] == [
        ("baseline", "npb", "not measured on this platform")
    ]
    assert "ranks=2" in listed[0]["workload"] and result.baseline_only == {"cloud": 1}


def test_best_mode_takes_each_platforms_best_placement(study: object) -> None:
    result = compare(study, "local", placement="best", platform_configs=configs())  # type: ignore[arg-type]
    got = rows(result)
    assert got[("mpibench", 2)][:2] == (1.0, "1 node × 2 ranks × 1 thread, intra-node")
    assert got[("npb", 4)][0] == pytest.approx(1.1)


def test_same_mode_is_like_for_like_and_says_why_points_are_left(study: object) -> None:
    result = compare(study, "local", placement="same")  # type: ignore[arg-type]
    got = rows(result)
    assert got[("mpibench", 2)][0] == 1.0 and got[("npb", 4)][0] == pytest.approx(1.1)
    reasons = {(r["placement"], r["reason"]) for r in result.unmatched_points.to_dict("records")}
    assert (
        "2 nodes × 1 rank × 1 thread, inter-node",
        "local measured it only at 1 node × 2 ranks × 1 thread, intra-node",
    ) in reasons
    assert result.unmatched == {"cloud": 3}


def test_a_default_placement_never_measured_is_listed(study: object) -> None:
    frame = build_frame(
        [("local", 1, npb(2.0, 4, 1, 4, True)), ("cloud", 2, npb(2.2, 4, 1, 4, True))]
    )
    result = compare(frame, "local", platform_configs=configs())
    assert result.table.empty
    (row,) = result.unmatched_points.to_dict("records")
    assert row["platform"] == "cloud" and row["reason"] == (
        "its default placement (4 nodes × 1 rank × 1 thread, inter-node) was not measured "
        "(measured: 1 node × 4 ranks × 1 thread, intra-node, oversubscribed)"
    )


def test_unknown_mode_is_a_user_error(study: object) -> None:
    with pytest.raises(UserError, match=r"--placement 'nearest': use one of default, best"):
        compare(study, "local", placement="nearest")  # type: ignore[arg-type]


def test_placement_notation() -> None:
    assert (
        placement_label({"nodes": 4, "ranks_per_node": 1, "threads_per_rank": 1, "binding": "core"})
        == "4 nodes × 1 rank × 1 thread, inter-node"
    )
    assert placement_label(
        {"nodes": 1, "ranks_per_node": 4, "threads_per_rank": 2, "binding": "none",
         "oversubscribed": True}
    ) == "1 node × 4 ranks × 2 threads, intra-node, unbound, oversubscribed"  # fmt: skip
    assert placement_label({"ranks": 8}) == "8 ranks × 1 thread"
    assert placement_label({"size": 8}) == ""


def test_show_keeps_placements_of_one_rank_count_apart() -> None:
    """`show`'s collective table has a column per placement, not one per rank count."""
    from rich.console import Console

    from hpceval.benchmarks.mpibench.tables import collective_tables

    def allreduce(t: float, nodes: int, per_node: int, over: bool) -> Measurement:
        return measurement(
            t, benchmark="mpibench", metric="time", unit="us", pattern="allreduce", size=8,
            ranks=nodes * per_node, nodes=nodes, ranks_per_node=per_node, threads_per_rank=1,
            binding="core", oversubscribed=over,
        )  # fmt: skip

    (table,) = collective_tables(
        [allreduce(50.0, 4, 1, True), allreduce(5.0, 1, 4, True), allreduce(3.0, 1, 2, False)]
    )
    console = Console(width=300, record=True)
    console.print(table)
    text = console.export_text()
    for label in (
        "1 node × 2 ranks × 1 thread, intra-node",
        "1 node × 4 ranks × 1 thread, intra-node, oversubscribed",
        "4 nodes × 1 rank × 1 thread, inter-node, oversubscribed",
    ):
        assert label in text, text
    # Each value under its own placement (3 µs on 2 ranks, 50 µs on 4 nodes).
    row = next(line for line in text.splitlines() if line.startswith("│  8 B"))
    assert [cell.split()[0] for cell in row.split("│")[2:-1]] == ["3", "5", "50.0"]
