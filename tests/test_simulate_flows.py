"""Issue 21 (flows): the flow-dependent NIC bandwidth, the per-message NIC gap, their fit from
mpibench's concurrent pairs or from the rings, and what a real SMPI run makes of them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hpceval.simulate.calibrate import (
    BASE_CONFIG,
    REFERENCE_SPEED_FLOPS,
    calibrate_network,
    factor_at,
    nominal_spec,
    overhead_settings,
)
from hpceval.simulate.contention import Contention, RingFigures, fit_contention
from hpceval.simulate.flows import (
    FlowFigures,
    FlowModel,
    fitted_gap_s,
    flow_model,
    gap_bandwidth_factors,
    nic_scales,
    scale_at,
    store_flows,
)

from .test_simulate import parse_factors
from .test_simulate_contention import add_run, fake_pingpong, requires_smpi, synthetic_target

# 1 GbE-like: the wire bounds the aggregate (k stays 1), a gap of 5 µs per extra message.
WIRE_BOUND = FlowFigures((1, 2, 4), 8, 1048576, (30.0, 35.0, 45.0), (110.0, 55.0, 27.5), "t")


def test_nic_scale_is_the_aggregate_of_the_pairs_over_a_lone_pair() -> None:
    assert nic_scales(WIRE_BOUND) == ((1, 1.0), (2, 1.0), (4, 1.0))
    # A virtual NIC whose aggregate falls with flows, and a link one flow cannot fill.
    vnic = FlowFigures((1, 2, 8), 8, 1048576, (60.0, 70.0, 90.0), (100.0, 30.0, 5.0), "t")
    assert [k for _, k in nic_scales(vnic)] == pytest.approx([1.0, 0.6, 0.4])
    fat = FlowFigures((1, 2), 8, 1048576, (2.0, 2.0), (1000.0, 900.0), "t")
    assert nic_scales(fat)[1][1] == pytest.approx(1.8)


def test_scale_between_and_beyond_the_measured_pairs() -> None:
    scales = ((1, 1.0), (2, 0.6), (8, 0.4))
    assert scale_at(scales, 1) == 1.0
    assert scale_at(scales, 2) == pytest.approx(0.6)
    # log-log between 2 and 8: halfway in log p is the geometric mean.
    assert scale_at(scales, 4) == pytest.approx(math.sqrt(0.6 * 0.4))
    # Beyond 8: the last segment's log-slope, never above the largest k, never below 1/64.
    slope = math.log(0.4 / 0.6) / math.log(4)
    assert scale_at(scales, 16) == pytest.approx(0.4 * 2**slope)
    assert scale_at(((1, 1.0), (2, 1.8)), 64) == pytest.approx(1.8)
    assert scale_at(((1, 1.0), (2, 0.01)), 64) == pytest.approx(1 / 64)
    contention = Contention(0.0, 0.0, "x", flow_scales=scales, nic_scale=0.9, nic_ppn=8)
    assert contention.nic_scale_at(8) == pytest.approx(0.4)  # measured, not the rings' k


def test_gap_is_the_slope_of_latency_over_extra_pairs() -> None:
    assert fitted_gap_s(WIRE_BOUND) == pytest.approx(5e-6)
    faster = FlowFigures((1, 2), 8, 1048576, (30.0, 29.0), (110.0, 55.0), "t")
    assert fitted_gap_s(faster) == 0.0  # noise below the lone pair is no negative gap
    model = flow_model(WIRE_BOUND)
    assert model.gap_s == pytest.approx(5e-6) and "multi_pingpong with 1, 2, 4 pairs" in (
        model.describe())  # fmt: skip
    assert FlowModel.from_dict(model.to_dict()) == model
    assert FlowFigures.from_dict(WIRE_BOUND.to_dict()) == WIRE_BOUND


@pytest.mark.parametrize(
    ("pairs", "lat", "bw", "cause"),
    [((2, 4), (1.0, 2.0), (1.0, 1.0), "1 pair"), ((1,), (1.0,), (1.0,), "larger"),
     ((1, 2), (1.0, -1.0), (1.0, 1.0), "positive"), ((1, 2), (1.0,), (1.0, 1.0), "one latency")],
)  # fmt: skip
def test_bad_flow_figures_are_refused(pairs, lat, bw, cause) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=cause):
        FlowFigures(pairs, 8, 1024, lat, bw, "t")


def test_gap_factors_put_the_gap_in_the_bandwidth_term_at_every_measured_size() -> None:
    B = 1e8
    segments = [(0, 10.0, 1000.0), (16, 3.0, 2000.0), (4096, 0.0, 5000.0)]
    alphas, pairs = gap_bandwidth_factors([0, 1, 2, 4, 8, 16, 4096], segments, 4e-6, B)
    # A segment keeps its start-up less the gap; one whose start-up is below it gives it all.
    assert alphas == pytest.approx([6.0, 0.0, 0.0])
    assert [n for n, _ in pairs] == [0, 1, 2, 4, 8, 16, 4096]
    term = {n: (n + 16) / (f * B) for n, f in pairs}
    for n in (0, 1, 2, 4, 8):
        assert term[n] == pytest.approx(4e-6 + (n + 16) / 1e9)
    assert term[16] == pytest.approx(3e-6 + 32 / 2e9)  # its whole 3 µs start-up
    assert term[4096] == pytest.approx(4112 / 5e9)  # no start-up, no gap: unchanged


def test_overhead_settings_with_a_gap_keep_both_pingpongs() -> None:
    """The gap leaves a lone message's time as it was (the PingPongs within the tolerance)
    and moves into the small sizes' bandwidth factors."""
    target = synthetic_target()
    start = nominal_spec(target, nodes=2, cores_per_node=8, speed=REFERENCE_SPEED_FLOPS)
    network = calibrate_network(target, start, fake_pingpong, tolerance=0.10)
    gap = 0.4 * network.segments[0].alpha_us * 1e-6
    settings, spec = overhead_settings(target, network, 0.2e-6, gap)
    config = {**BASE_CONFIG, **network.config(), **settings}
    for path, curve in target.curves.items():
        simulated = fake_pingpong(spec, config, path, curve.sizes)
        worst = max(abs(s - m) / m for s, m in zip(simulated, curve.times_us, strict=True))
        assert worst <= 0.10, path
    bw = parse_factors(config["smpi/bw-factor"])
    # The 0-byte message's bandwidth term is now the gap (plus its 16-byte envelope).
    term = 16 / (spec.inter_node_bandwidth_Bps * factor_at(bw, 0))
    assert term == pytest.approx(gap, rel=0.05)
    assert "smpi/bw-factor" not in overhead_settings(target, network, 0.2e-6)[0]


def test_the_gap_is_fitted_on_the_random_ring_without_pairs() -> None:
    """A synthetic law: ring latency = 10 µs + 2 overheads, + 7 gaps on the random ring
    (7 messages queue per NIC): the joint fit finds no overhead and the gap."""
    rings = RingFigures(32, 8, 8, 2000000, 10.0, 24.0, 1.0, 1.0, "synthetic")
    def with_overhead(o, g):  # type: ignore[no-untyped-def]
        return {"gap": str(g), "o": str(o)}, 1.0

    def ring(cfg, platform, pattern, wanted):  # type: ignore[no-untyped-def]
        g, o = float(cfg.get("gap", 0)) * 1e6, float(cfg.get("o", 0)) * 1e6
        return (10.0 + 2 * o + (7 * g if pattern == "random_ring" else 0.0), 1.0)

    c, _, _, residuals = fit_contention(rings, {}, 10.0, 5e-6, with_overhead, ring,
                                        lambda p, k: p)  # fmt: skip
    assert c.gap_s * 1e6 == pytest.approx(2.0, abs=0.05) and c.overhead_s < 0.05e-6
    lat = next(r for r in residuals if r["path"] == "random_ring" and r["metric"] == "latency")
    assert lat["fitted"] and abs(lat["residual"]) <= 0.03
    # Measured pairs: their gap and scales are used as they are, the random ring is a check.
    flows = flow_model(WIRE_BOUND)
    c2, _, _, residuals = fit_contention(rings, {}, 10.0, 5e-6, with_overhead, ring,
                                         lambda p, k: p, flows)  # fmt: skip
    assert c2.gap_s == pytest.approx(5e-6) and c2.flow_scales == flows.scales
    assert c2.nic_scale == pytest.approx(1.0)
    assert not any(r["fitted"] for r in residuals if r["path"] == "random_ring")
    assert "multi_pingpong" in c2.fitted_on
    # A stored contention of an older calibration (no gap, no scales) still loads.
    old = {k: v for k, v in c.to_dict().items() if k not in ("gap_s", "flow_scales")}
    assert Contention.from_dict(old).gap_s == 0.0
    assert Contention.from_dict(c2.to_dict()) == c2


def test_pairs_are_read_from_the_store(tmp_path: Path) -> None:
    from hpceval.model import Measurement, Origin
    from hpceval.store import open_store

    points = []
    for pairs, lat, bw in ((1, 30.0, 110.0), (2, 35.0, 55.0)):
        for metric, size, value, unit in (("latency", 8, lat, "us"),
                                          ("latency", 1048576, 1.0, "us"),
                                          ("bandwidth", 1048576, bw, "MB/s")):  # fmt: skip
            params = {"pattern": "multi_pingpong", "pairs": pairs, "size": size,
                      "ranks": 2 * pairs, "nodes": 2, "ranks_per_node": pairs}  # fmt: skip
            m = Measurement("mpibench", metric, value, unit, params, (value,),
                            origin=Origin.EMULATED)  # fmt: skip
            points.append((f"mp{pairs}", m))
    with open_store(str(tmp_path / "f.db")) as store:
        run = add_run(store, "emu", Origin.EMULATED, points)
        runs = {r.id: r for r in store.runs()}
        flows = store_flows(store, runs)
        assert flows == FlowFigures((1, 2), 8, 1048576, (30.0, 35.0), (110.0, 55.0),
                                    f"emulated run {run}")  # fmt: skip
        # One pair count only: nothing to fit on.
        add_run(store, "emu", Origin.EMULATED, points[:3])
        runs = {r.id: r for r in store.runs()}
        assert store_flows(store, runs) == flows  # the latest run with 1 and more pairs


@requires_smpi
def test_smpi_serialises_concurrent_messages_through_the_nic_gap(tmp_path: Path) -> None:
    """A real smpirun: with the gap in the small sizes' bandwidth factors, one pair keeps its
    latency and two pairs through the same NIC pay one more gap each way; without the gap,
    two pairs are as fast as one (SMPI's latency is a pure delay)."""
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.platform import LinkSpec, PlatformSpec
    from hpceval.simulate.runner import SmpiCalibrationRunner

    runner = SmpiCalibrationRunner(detect_smpi(), tmp_path)
    spec = PlatformSpec("t", 2, 4, 1e9, LinkSpec(5e-6, 1.25e8), LinkSpec(1e-7, 8e9))
    plain = {**BASE_CONFIG, "smpi/lat-factor": "0:1", "smpi/bw-factor": "0:1"}
    gap = 4e-6
    wire = 10e-6 - gap  # the same 10 µs start-up: wire latency + the gap
    alphas, bw = gap_bandwidth_factors([0, 8], [(0, 10.0, math.inf)], gap, 1.25e8)
    assert alphas == pytest.approx([wire * 1e6])
    from hpceval.simulate.calibrate import factor_string

    gapped = {**plain, "smpi/lat-factor": f"0:{wire / 10e-6:.9g}",
              "smpi/bw-factor": factor_string([*bw, (1024, 1.0)])}  # fmt: skip

    def latency(cfg, pairs):  # type: ignore[no-untyped-def]
        return runner.pattern(spec, cfg, "multi_pingpong", 2 * pairs, pairs, [8])[("latency", 8)]

    one, two = latency(plain, 1), latency(plain, 2)
    assert two == pytest.approx(one, rel=0.05)
    one_g, two_g = latency(gapped, 1), latency(gapped, 2)
    assert one_g == pytest.approx(one, rel=0.1)
    assert two_g - one_g == pytest.approx(gap * 1e6, rel=0.25)


def test_calibrations_id_shows_the_gap_the_scales_and_the_pairs() -> None:
    from types import SimpleNamespace

    from hpceval.cli_simulate import contention_lines

    contention = Contention(0.0, 0.0, "emulated run 1: pairs", gap_s=36e-6,
                            flow_scales=((1, 1.0), (2, 1.01)))  # fmt: skip
    row = SimpleNamespace(parameters={"contention": contention.to_dict()}, residuals=[
        {"path": "multi_pingpong", "metric": "latency", "size": 8, "ranks": 4, "pairs": 2,
         "measured": 65.5, "simulated": 92.2, "residual": 0.407, "fitted": True}])  # fmt: skip
    text = "\n".join(contention_lines(row))
    assert "NIC serialisation gap 36 µs per message" in text
    assert "k(1)=1, k(2)=1.01" in text
    assert "multi_pingpong latency at 8 B, 4 ranks (2 pairs): measured 65.5 µs" in text
