from __future__ import annotations

import pytest

from hpceval.analysis.frame import Entry, build_frame
from hpceval.analysis.scaling import placement_sweeps, scaling
from hpceval.model import Measurement


def npb(
    seconds: float,
    *,
    ranks: int,
    nodes: int | None = None,
    threads: int = 1,
    kernel: str = "cg",
    metric: str = "time",
) -> Measurement:
    params: dict[str, int | float | str | bool] = {
        "kernel": kernel,
        "class": "B",
        "ranks": ranks,
        "threads_per_rank": threads,
    }
    if nodes is not None:
        params.update(nodes=nodes, ranks_per_node=ranks // nodes, binding="core")
    unit = "s" if metric == "time" else "Mop/s"
    return Measurement("npb", metric, seconds, unit, params, (seconds,))


def amdahl(cores: int, serial: float = 0.1, t1: float = 100.0) -> float:
    return t1 * (serial + (1 - serial) / cores)


def test_known_speedup_curve_and_knee() -> None:
    # Amdahl's law with a 10 % serial part: S(p) = 1 / (0.1 + 0.9/p).
    entries: list[Entry] = [
        ("c", 1, npb(amdahl(p), ranks=p, nodes=max(1, p // 8))) for p in (1, 2, 4, 8, 16, 32)
    ]
    (curve,) = scaling(build_frame(entries))
    assert curve.problem == {"class": "B", "kernel": "cg"}
    assert curve.reference.cores == 1
    assert [p.cores for p in curve.points] == [1, 2, 4, 8, 16, 32]
    for p in curve.points:
        expected = 1 / (0.1 + 0.9 / p.cores)
        assert p.speedup == pytest.approx(expected)
        assert p.efficiency == pytest.approx(expected / p.cores)
    # Efficiency: 1, 0.909, 0.769, 0.588, 0.4, 0.244: it drops below 0.5 at 16 cores.
    assert curve.knee is not None and curve.knee.cores == 16
    assert curve.knee_reason == "efficiency 0.40 < 0.5"
    assert curve.scales_to == 8
    (lenient,) = scaling(build_frame(entries), threshold=0.2)
    assert lenient.knee is None and lenient.scales_to == 32


def test_knee_where_speedup_stops_increasing_and_reference_above_one_core() -> None:
    times = {4: 40.0, 8: 21.0, 16: 12.0, 32: 12.5}
    entries: list[Entry] = [("c", 1, npb(t, ranks=p)) for p, t in times.items()]
    # Efficiency at 32 cores is 0.4: above this threshold, the speedup's fall is the knee.
    (curve,) = scaling(build_frame(entries), threshold=0.3)
    assert curve.reference.cores == 4
    by_cores = {p.cores: p for p in curve.points}
    assert by_cores[16].speedup == pytest.approx(40 / 12)
    assert by_cores[16].ideal_speedup == 4
    assert by_cores[16].efficiency == pytest.approx(40 / 12 / 4)
    assert curve.knee is not None and curve.knee.cores == 32
    assert "not above" in curve.knee_reason
    assert curve.scales_to == 16


def test_higher_is_better_metric_and_separate_curves() -> None:
    entries: list[Entry] = []
    for p, mops in ((1, 100.0), (2, 190.0), (4, 360.0)):
        entries.append(("a", 1, npb(mops, ranks=p, metric="mops_total")))
        entries.append(("a", 1, npb(mops, ranks=p, metric="mops_total", kernel="mg")))
        entries.append(("b", 2, npb(mops / 2, ranks=p, metric="mops_total")))
    curves = scaling(build_frame(entries), metric="mops_total")
    assert [(c.platform, c.problem["kernel"]) for c in curves] == [
        ("a", "cg"),
        ("a", "mg"),
        ("b", "cg"),
    ]
    assert [p.speedup for p in curves[0].points] == pytest.approx([1.0, 1.9, 3.6])


def test_best_placement_per_core_count_and_placement_sweep() -> None:
    entries: list[Entry] = [
        ("c", 1, npb(80.0, ranks=1, nodes=1)),
        # 8 cores, three ways: full node (1x8x1), one rank per node (8x1x1), hybrid (4x1x2)
        ("c", 1, npb(20.0, ranks=8, nodes=1)),
        ("c", 1, npb(16.0, ranks=8, nodes=8)),
        ("c", 1, npb(25.0, ranks=4, nodes=4, threads=2)),
    ]
    frame = build_frame(entries)
    (curve,) = scaling(frame)
    best8 = curve.points[1]
    assert (
        best8.label() == "8 nodes × 1 rank × 1 thread, inter-node"
        and best8.speedup == pytest.approx(5.0)
    )
    (sweep,) = placement_sweeps(frame)
    assert sweep.cores == 8
    assert sweep.full_node.label() == "1 node × 8 ranks × 1 thread, intra-node"
    gains = {c.point.label(): c.gain for c in sweep.choices}
    assert gains == pytest.approx(
        {
            "1 node × 8 ranks × 1 thread, intra-node": 1.0,
            "8 nodes × 1 rank × 1 thread, inter-node": 20 / 16,
            "4 nodes × 1 rank × 2 threads, inter-node": 20 / 25,
        }
    )
    assert sweep.best.point.label() == "8 nodes × 1 rank × 1 thread, inter-node"
    assert sweep.best.extra_nodes == 8
    assert [c.full_node for c in sweep.choices] == [False, True, False]


def test_oversubscribed_points_belong_to_the_curve_and_simulations_overlay() -> None:
    """Issue 23: 2 and 4 ranks on 2 cores are one curve (the 4-rank point marked
    oversubscribed), and a simulated run of the same problem, recorded not oversubscribed,
    is the same problem (drawn in the same panel), not a problem of its own."""
    from hpceval.campaign import load_platform
    from hpceval.model import Origin

    def run(seconds: float, ranks: int, nodes: int, over: bool, origin: Origin) -> Measurement:
        params: dict[str, int | float | str | bool] = {
            "kernel": "cg", "class": "A", "ranks": ranks, "nodes": nodes,
            "ranks_per_node": ranks // nodes, "threads_per_rank": 1, "binding": "core",
            "oversubscribed": over,
        }  # fmt: skip
        return Measurement("npb", "time", seconds, "s", params, (seconds,), origin=origin)

    entries: list[Entry] = [
        ("cloud", 1, run(10.0, 2, 2, False, Origin.EMULATED)),
        ("cloud", 1, run(6.0, 2, 1, False, Origin.EMULATED)),
        ("cloud", 1, run(8.0, 4, 4, True, Origin.EMULATED)),
        ("cloud", 1, run(4.0, 4, 1, True, Origin.EMULATED)),
        ("cloud", 2, run(9.0, 2, 2, False, Origin.SIMULATED)),
        ("cloud", 2, run(5.0, 4, 4, False, Origin.SIMULATED)),
    ]
    frame = build_frame(entries)
    emulated, simulated = sorted(scaling(frame), key=lambda c: c.origin.value)
    assert emulated.problem == simulated.problem == {"class": "A", "kernel": "cg"}
    # Best placement per core count without a platform file: one node.
    assert [(p.cores, p.value, p.oversubscribed) for p in emulated.points] == [
        (2, 6.0, False),
        (4, 4.0, True),
    ]
    # With the platform file, each core count at its default placement (one rank per node).
    configs = {"cloud": load_platform("netns-4x1-1gbe").config}
    emulated, _ = sorted(scaling(frame, platform_configs=configs), key=lambda c: c.origin.value)
    assert [(p.cores, p.value) for p in emulated.points] == [(2, 10.0), (4, 8.0)]
    assert emulated.points[1].label() == "4 nodes × 1 rank × 1 thread, inter-node, oversubscribed"
