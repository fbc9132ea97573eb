"""Issue 21, item 3: an emulated cluster whose nodes share this host's cores is calibrated at
the share its projected ranks get (`--host-share`), and `--validate` then holds the projection
against the figures measured on shared cores (and only then)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hpceval.errors import UserError
from hpceval.model import Measurement, Origin
from hpceval.simulate.sources import store_target
from hpceval.simulate.validate import measured_figures
from hpceval.store import Store, open_store

from .store_helpers import add_run
from .test_simulate_contention import requires_smpi

SIZES = (8, 1024, 65536, 1048576)


def _run(store: Store, cores: int, points: list[tuple[str, Measurement]]) -> int:
    return add_run(store, points, {"mpi": {"implementation": "Open MPI"}, "cpu": {"cores": cores}},
                   platform_config={"name": "emu", "cores_per_node": 1})  # fmt: skip


def _latency(pattern: str, size: int, us: float, **params: Any) -> Measurement:
    return Measurement("mpibench", "latency", us, "us",
                       {"pattern": pattern, "size": size, **params}, (us, us * 1.02, us * 0.99),
                       origin=Origin.EMULATED)  # fmt: skip


def _points() -> list[tuple[str, Measurement]]:
    """A PingPong on 2 cores of their own, 2 pairs on 4 nodes sharing 2 cores (twice as slow
    at small sizes), a single-rank CG and an oversubscribed 4-rank ring."""
    out: list[tuple[str, Measurement]] = []
    for size in SIZES:
        wire = size / 110.0
        out.append(("pp", _latency("pingpong", size, 30.0 + wire, ranks=2, nodes=2,
                                   pair="inter-node")))  # fmt: skip
        out.append(("mp", _latency("multi_pingpong", size, 60.0 + wire, ranks=4, nodes=4,
                                   pairs=2, oversubscribed=True)))  # fmt: skip
        per_pair = size / (60.0 + wire)  # MB/s
        out.append(("mp", Measurement("mpibench", "bandwidth", per_pair, "MB/s",
                                      {"pattern": "multi_pingpong", "size": size, "ranks": 4,
                                       "nodes": 4, "pairs": 2, "oversubscribed": True},
                                      (per_pair,), origin=Origin.EMULATED)))  # fmt: skip
    out.append(("cg", Measurement("npb", "time", 5.0, "s",
                                  {"kernel": "cg", "class": "A", "ranks": 1, "nodes": 1},
                                  (5.0,), origin=Origin.EMULATED)))  # fmt: skip
    out.append(("ring", _latency("natural_ring", 8, 90.0, ranks=4, nodes=4,
                                 oversubscribed=True)))  # fmt: skip
    return out


def test_the_share_takes_the_pairs_curve_and_the_core_share(tmp_path: Path) -> None:
    from hpceval.simulate.sources import FATPIPE_ASSUMED

    with open_store(str(tmp_path / "h.db")) as store:
        run = _run(store, 2, _points())
        plain = store_target(store, "emu")
        shared = store_target(store, "emu", share_ranks=4)
    # The fat pipe is no longer assumed once the share makes the backbone shared.
    assert FATPIPE_ASSUMED in plain.assumed and FATPIPE_ASSUMED not in shared.assumed
    assert shared.backbone == "shared"
    assert plain.curves["inter-node"].times_us[0] == pytest.approx(30.0 + 8 / 110.0)
    curve = shared.curves["inter-node"]
    assert curve.sizes == SIZES
    assert curve.times_us == pytest.approx(tuple(60.0 + s / 110.0 for s in SIZES))
    assert f"run {run}, mpibench multi_pingpong, 2 pairs" in curve.origin
    # 4 busy ranks on 2 cores: half a core each, so the single-rank time counts double.
    assert plain.speeds[("cg", "A")].time_s == 5.0
    assert shared.speeds[("cg", "A")].time_s == pytest.approx(10.0)
    assert any("0.5 of a core each" in a for a in shared.assumed)
    assert shared.rings is None and shared.flows is None
    # Every emulated transfer runs on the shared cores: the 2 pairs' aggregate bounds them all.
    assert plain.backbone == "fatpipe" and shared.backbone == "shared"
    assert shared.backbone_Bps == pytest.approx(2 * 1048576 / (60.0 + 1048576 / 110.0) * 1e6)
    assert any("shared backbone" in a for a in shared.assumed)


def _rings(bandwidth_mb_s: float, ranks: int = 4) -> list[tuple[str, Measurement]]:
    """Both rings, oversubscribed, one rank per node: 8 B latency and 1 MiB bandwidth."""
    out: list[tuple[str, Measurement]] = []
    for pattern, latency in (("natural_ring", 100.0), ("random_ring", 104.0)):
        params = {"ranks": ranks, "nodes": ranks, "oversubscribed": True}
        out.append(("rings", _latency(pattern, 8, latency, **params)))
        out.append(("rings", Measurement(
            "mpibench", "bandwidth", bandwidth_mb_s, "MB/s",
            {"pattern": pattern, "size": 1048576, **params}, (bandwidth_mb_s,),
            origin=Origin.EMULATED)))  # fmt: skip
    return out


@pytest.mark.parametrize(("ring_mb_s", "from_rings"), [(80.0, True), (10.0, False)])
def test_rings_at_the_share_are_the_contention_input_and_can_widen_the_backbone(
    tmp_path: Path, ring_mb_s: float, from_rings: bool
) -> None:
    pairs_Bps = 2 * 1048576 / (60.0 + 1048576 / 110.0) * 1e6  # 2 pairs: 218.6 MB/s
    with open_store(str(tmp_path / "h.db")) as store:
        others = [point for point in _points() if point[0] != "ring"]
        run = _run(store, 2, [*others, *_rings(ring_mb_s), *_rings(500.0, ranks=8)])
        plain = store_target(store, "emu")
        shared = store_target(store, "emu", share_ranks=4)
    # Rings measured on shared cores never reach a plain calibration ...
    assert plain.rings is None
    # ... and a share's only at its own rank count (the 8-rank rings are another share).
    rings = shared.rings
    assert rings is not None and (rings.ranks, rings.ppn) == (4, 1)
    assert (rings.small, rings.large) == (8, 1048576)
    assert rings.natural_latency_us == pytest.approx(100.0)
    assert rings.random_latency_us == pytest.approx(104.0)
    assert rings.origin == f"emulated run {run}"
    # The messages' cost is paid on the host's cores: a gap on the shared backbone.
    assert shared.cores_shared and not plain.cores_shared
    assert any("per-message cost on the host's cores fitted on the rings" in a
               and "a gap that concurrent messages share" in a for a in shared.assumed)  # fmt: skip
    # The backbone: what the busiest pattern at the share moved through the host. A ring
    # rank puts out its bandwidth (n to each neighbour per iteration of 2 latencies).
    expected = 4 * ring_mb_s * 1e6 if from_rings else pairs_Bps
    assert shared.backbone_Bps == pytest.approx(expected)
    said = "rings' bandwidth" if from_rings else "2 pairs x their bandwidth"
    assert any(said in a for a in shared.assumed if "backbone" in a)


@pytest.mark.parametrize(
    ("cores", "ranks", "points", "cause"),
    [
        (2, 2, None, "2 ranks fit on the host's 2 cores"),
        (4, 4, None, "4 ranks fit on the host's 4 cores"),
        (2, 8, None, "no concurrent pairs at 8 ranks"),
        (0, 4, None, "core count"),
        (2, 4, "no-pairs", "no concurrent pairs at 4 ranks"),
    ],
)
def test_a_share_that_cannot_be_taken_is_one_line(
    tmp_path: Path, cores: int, ranks: int, points: str | None, cause: str
) -> None:
    kept = [p for p in _points() if points != "no-pairs" or p[0] != "mp"]
    with open_store(str(tmp_path / "h.db")) as store:
        _run(store, cores, kept)
        with pytest.raises(UserError, match=cause):
            store_target(store, "emu", share_ranks=ranks)


def test_oversubscribed_figures_are_validated_only_at_the_same_share(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "h.db")) as store:
        _run(store, 2, _points())
        plain = measured_figures(store, "emu")
        shared = measured_figures(store, "emu", oversubscribed=True)
    ring = ("mpibench", "latency", "natural_ring", 8, 4, None, 4)
    assert ring not in plain and ring in shared
    assert shared[ring].value == pytest.approx(90.0)


def test_host_share_is_refused_for_a_profile_and_several_rank_counts() -> None:
    from hpceval.simulate.plan import Request, resolve_target

    with pytest.raises(UserError, match="applies to --platform"):
        resolve_target(None, None, "magellan-1gbe",
                       Request(bench="mpibench", pattern="natural_ring", ranks=(32,),
                               host_share=True))  # fmt: skip
    with pytest.raises(UserError, match="one rank count"):
        resolve_target(object(), "emu", None,  # type: ignore[arg-type]
                       Request(bench="mpibench", pattern="natural_ring", ranks=(2, 4),
                               host_share=True))  # fmt: skip


def _scaled(points: list[tuple[str, Measurement]], k: float) -> list[tuple[str, Measurement]]:
    return [(case, replace(m, value=m.value * k, samples=tuple(s * k for s in m.samples)))
            for case, m in points]  # fmt: skip


def test_every_calibration_input_is_the_median_over_the_rounds(tmp_path: Path) -> None:
    """Three rounds, every figure x1, x0.5 and x2: the PingPong curve, the single-rank NPB
    time, the pairs at the share, the rings and the backbone they set are the x1 round's (the
    median over the rounds), said to come from all three; the latest 2 (`--pool-runs 2`):
    x1.25; the latest alone: x2."""
    base = [p for p in _points() if p[0] != "ring"] + _rings(80.0)
    with open_store(str(tmp_path / "h.db")) as store:
        ids = [_run(store, 2, _scaled(base, k)) for k in (1.0, 0.5, 2.0)]
        plain = store_target(store, "emu")
        shared = store_target(store, "emu", share_ranks=4)
        two = store_target(store, "emu", share_ranks=4, pool_runs=2)
        one = store_target(store, "emu", pool_runs=1)
        with pytest.raises(UserError, match="runs to pool: 0 is not a positive count"):
            store_target(store, "emu", pool_runs=0)
    every = "emulated runs " + ", ".join(map(str, ids))
    pingpong = plain.curves["inter-node"]
    assert pingpong.times_us == pytest.approx(tuple(30.0 + s / 110.0 for s in SIZES))
    assert pingpong.origin == every and plain.run_ids == tuple(ids)
    cg = plain.speeds[("cg", "A")]
    assert (cg.time_s, cg.run_id, cg.run_ids) == (pytest.approx(5.0), ids[-1], tuple(ids))
    pairs = shared.curves["inter-node"]
    assert pairs.times_us == pytest.approx(tuple(60.0 + s / 110.0 for s in SIZES))
    assert pairs.origin.startswith(every + ", mpibench multi_pingpong")
    assert shared.rings is not None and shared.rings.origin == every
    assert shared.rings.natural_latency_us == pytest.approx(100.0)
    assert shared.backbone_Bps == pytest.approx(4 * 80.0e6)  # the rings' 4 x 80 MB/s
    assert shared.speeds[("cg", "A")].time_s == pytest.approx(10.0)  # 5 s / half a core
    assert two.curves["inter-node"].times_us == pytest.approx(
        tuple(1.25 * (60.0 + s / 110.0) for s in SIZES))  # fmt: skip
    assert two.backbone_Bps == pytest.approx(4 * 100.0e6)
    assert two.rings is not None and two.rings.origin == f"emulated runs {ids[1]}, {ids[2]}"
    assert one.curves["inter-node"].times_us == pytest.approx(
        tuple(2.0 * (30.0 + s / 110.0) for s in SIZES))  # fmt: skip
    assert one.curves["inter-node"].origin == f"emulated run {ids[-1]}"
    assert one.speeds[("cg", "A")].time_s == pytest.approx(10.0) and one.run_ids == (ids[-1],)


# ------------------------------------------------ the backbone fitted on the random ring


def _calibrated(link_Bps: float, backbone_Bps: float):  # type: ignore[no-untyped-def]
    from hpceval.simulate.platform import LinkSpec, PlatformSpec

    return PlatformSpec("t", 4, 1, 1e9, LinkSpec(10e-6, link_Bps), LinkSpec(1e-7, 8e9),
                        backbone="shared", backbone_bandwidth_Bps=backbone_Bps)  # fmt: skip


def test_a_wider_backbone_keeps_a_lone_flow_at_its_calibrated_bandwidth() -> None:
    """The PingPong's factors were fitted on min(node link, backbone): widening the backbone
    must not widen that, narrowing it does (the ring asks for less than a lone flow)."""
    from hpceval.simulate.runner import widened_backbone

    calibrated = _calibrated(620e6, 356e6)
    wide = widened_backbone(calibrated, calibrated, 2.3)
    assert wide.link.bandwidth_Bps == 356e6 and wide.link.latency_s == 10e-6
    assert wide.backbone_bandwidth_Bps == pytest.approx(2.3 * 356e6)
    assert wide.inter_node_bandwidth_Bps == calibrated.inter_node_bandwidth_Bps
    narrow = widened_backbone(calibrated, calibrated, 0.5)
    assert narrow.inter_node_bandwidth_Bps == pytest.approx(178e6)
    # Node links narrower than the backbone bound a lone flow already: kept as they are.
    slim = _calibrated(100e6, 356e6)
    assert widened_backbone(slim, slim, 4.0).link == slim.link


@requires_smpi
def test_smpi_a_lone_flow_keeps_its_time_and_many_flows_gain_from_the_backbone(
    tmp_path: Path,
) -> None:
    """Real smpiruns at 1 MiB with a bandwidth factor of 0.45: the PingPong on the backbone
    widened 2.3x as the fit does takes about what it took on the calibrated platform (widening the
    backbone alone made it 1.7x faster: 620 / 356 MB/s); the random ring of 4 ranks, all
    flows through the backbone, is faster (the backbone limits it)."""
    from hpceval.simulate.calibrate import BASE_CONFIG
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.runner import SmpiCalibrationRunner, widened_backbone

    runner = SmpiCalibrationRunner(detect_smpi(), tmp_path)
    config = {**BASE_CONFIG, "smpi/lat-factor": "0:1", "smpi/bw-factor": "0:0.45"}
    calibrated = _calibrated(620e6, 356e6)
    wide = widened_backbone(calibrated, calibrated, 2.3)
    naive = replace(calibrated, backbone_bandwidth_Bps=2.3 * 356e6)
    mib = 1048576

    def pingpong(spec):  # type: ignore[no-untyped-def]
        return runner.pattern(spec, config, "pingpong", 2, 1, [mib])[("latency", mib)]

    def ring(spec):  # type: ignore[no-untyped-def]
        return runner.pattern(spec, config, "random_ring", 4, 1, [mib])[("bandwidth", mib)]

    lone = pingpong(calibrated)
    # 4.7 % faster: on the calibrated platform the messages going back (rendezvous,
    # acknowledgements) shared the backbone's one direction with the data; the node links
    # are full duplex (3-9 % in the fitted calibration of netns-4x1-1gbe, 2026-12-03).
    assert pingpong(wide) == pytest.approx(lone, rel=0.08)
    assert pingpong(wide) <= lone
    assert lone / pingpong(naive) == pytest.approx(620 / 356, rel=0.1)
    assert ring(wide) > 1.3 * ring(calibrated)
