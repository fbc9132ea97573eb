"""Issue 21: input checks, the contention fit's pieces, selectors, published rings, and a
real SMPI ring under contention."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from hpceval.errors import UserError
from hpceval.simulate.calibrate import (
    BASE_CONFIG,
    REFERENCE_SPEED_FLOPS,
    calibrate_network,
    nominal_spec,
    overhead_settings,
)
from hpceval.simulate.contention import (
    RingFigures,
    bisect,
    fit_contention,
    mpi_family,
    overhead_config,
    selector_config,
)
from hpceval.simulate.profiles import PROFILE_SIZES, profile_names, profile_target
from hpceval.simulate.sanity import check_curve, suspect_points
from hpceval.simulate.sources import Curve, Target

requires_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="SimGrid SMPI (smpicc, smpirun) is not installed",
)


def hockney(alpha_us: float, beta_mb_s: float) -> tuple[float, ...]:
    return tuple(alpha_us + n / beta_mb_s for n in PROFILE_SIZES)


# --------------------------------------------------------------------------- input checks


def test_a_hockney_curve_is_plausible() -> None:
    curve = Curve("inter-node", PROFILE_SIZES, hockney(45.2, 1610), "synthetic", None)
    assert suspect_points(curve) == []
    assert check_curve(curve, what="c", remedy="r") == []


def test_the_busy_host_curve_of_issue_21_is_refused_naming_its_points() -> None:
    # 32 KiB in 58 µs, then 2 MiB in 8 ms (measured on a busy host, issue 21).
    sizes = (0, 1024, 32768, 65536, 2097152)
    times = (1.0, 4.0, 58.0, 110.0, 8000.0)
    curve = Curve("inter-node", sizes, times, "emulated run 3", 3)
    with pytest.raises(UserError) as e:
        check_curve(curve, what="the inter-node PingPong", remedy="hpceval run ...")
    text = str(e.value)
    assert "2 MiB" in text and "bandwidth 262.1 MB/s" in text and "emulated run 3" in text
    assert "re-measure" in text and "--accept-curve" in text and "\n" not in text
    # Accepted (--accept-curve): the same points, as flags.
    flags = check_curve(curve, what="c", remedy="r", refuse=False)
    assert any("2 MiB" in f and "(accepted)" in f for f in flags)


def test_small_noise_is_flagged_not_refused() -> None:
    times = list(hockney(10.0, 1000))
    times[3] *= 1.05  # 4 B 5 % slow: slower than 8 B
    curve = Curve("inter-node", PROFILE_SIZES, tuple(times), "x", None)
    flags = check_curve(curve, what="c", remedy="r")
    assert len(flags) == 1 and "4 B" in flags[0] and "noise?" in flags[0]
    spiky = list(hockney(10.0, 1000))
    spiky[5] = 40.0  # 16 B at 4x its neighbours
    with pytest.raises(UserError, match="16 B"):
        check_curve(Curve("inter-node", PROFILE_SIZES, tuple(spiky), "x", None),
                    what="c", remedy="r")  # fmt: skip


# --------------------------------------------------------------------------- fit pieces


def test_bisect_meets_an_increasing_function_and_stops_at_the_ends() -> None:
    x, value, tried = bisect(lambda s: 1 + 3 * s, 2.5, 0.0, 0.95)
    assert value == pytest.approx(2.5, rel=0.03) and x == pytest.approx(0.5, abs=0.02)
    assert len(tried) <= 10
    assert bisect(lambda s: 1 + s, 10.0, 0.0, 0.95)[0] == 0.95  # beyond: the upper end
    assert bisect(lambda s: 5 + s, 1.0, 0.0, 0.95)[0] == 0.0
    k, _, _ = bisect(lambda k: 100 * k, 25.0, 1 / 64, 64, log=True)
    assert k == pytest.approx(0.25, rel=0.03)


def test_overheads_are_smpi_piecewise_strings() -> None:
    assert overhead_config(0.5e-6) == {
        "smpi/os": "0:5e-07:0", "smpi/ois": "0:5e-07:0", "smpi/or": "0:5e-07:0"}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "family"),
    [("Open MPI", "openmpi"), ("openmpi", "openmpi"), ("MPICH", "mpich"),
     ("Intel(R) MPI", "mpich"), ("MVAPICH2", "mpich"), ("SMPI", None), (None, None)],
)  # fmt: skip
def test_mpi_family_picks_the_selector(name: str | None, family: str | None) -> None:
    assert mpi_family(name) == family
    expected = {"openmpi": "ompi", "mpich": "mpich"}.get(family or "")
    assert selector_config(family) == ({"smpi/coll-selector": expected} if expected else {})


def fake_pingpong(spec, cfg, path, sizes):  # type: ignore[no-untyped-def]
    """SMPI's PingPong model with os/or: os + or + L·lat(n) + (n+16)/(B·bw(n))."""
    from hpceval.simulate.calibrate import factor_at

    from .test_simulate import parse_factors

    lat, bw = parse_factors(cfg["smpi/lat-factor"]), parse_factors(cfg["smpi/bw-factor"])
    o = 2 * float(cfg.get("smpi/os", "0:0:0").split(":")[1])
    if path == "inter-node":
        route = (spec.inter_node_latency_s, spec.inter_node_bandwidth_Bps)
    else:
        route = (spec.loopback.latency_s, spec.loopback.bandwidth_Bps)
    return [1e6 * (o + route[0] * factor_at(lat, n) + (n + 16) / (route[1] * factor_at(bw, n)))
            for n in sizes]  # fmt: skip


def synthetic_target(rings: RingFigures | None = None) -> Target:
    return Target(
        name="synthetic", source_kind="profile", source="test", cores_per_node=8,
        memory_gb_per_node=None, backbone="fatpipe", backbone_Bps=None,
        curves={
            "inter-node": Curve("inter-node", PROFILE_SIZES, hockney(12.6, 1609), "x", None),
            "intra-node": Curve("intra-node", PROFILE_SIZES, hockney(2.0, 7700), "x", None),
        },
        rings=rings,
    )  # fmt: skip


def test_the_isend_overhead_keeps_both_pingpongs_and_is_recovered() -> None:
    """A ring whose per-message latency is one Isend overhead + half the wire (a synthetic
    law, as SMPI gives for a rank posting two messages): the fitted overhead is the one that
    produced the target, os = or stay 0, and the PingPongs do not move."""
    target = synthetic_target()
    start = nominal_spec(target, nodes=2, cores_per_node=8, speed=REFERENCE_SPEED_FLOPS)
    network = calibrate_network(target, start, fake_pingpong, tolerance=0.10)
    alpha = network.segments[0].alpha_us
    cap = 2 * alpha * 1e-6  # as the runner bounds it

    def ring(cfg, platform, pattern, wanted):  # type: ignore[no-untyped-def]
        ois = float(cfg["smpi/ois"].split(":")[1]) * 1e6
        return (ois + alpha / 2, 100.0)

    known_ois = 0.3 * alpha
    # One rank per node: the Isend overhead alone is fitted (no gap, scale or memory).
    rings = RingFigures(32, 1, 8, 2000000, known_ois + alpha / 2, 1.0, 1.0, 1.0, "synthetic")
    contention, config, spec, residuals = fit_contention(
        rings, {**BASE_CONFIG, **network.config()}, alpha, cap,
        lambda o, g: overhead_settings(target, network, o, g), ring, lambda p, k: p,
    )  # fmt: skip
    assert contention.isend_overhead_s * 1e6 == pytest.approx(known_ois, rel=0.01)
    assert contention.overhead_s == 0.0 and config["smpi/os"] == config["smpi/or"] == "0:0:0"
    # natural latency (Isend overhead) is fitted, the rest are checks at one rank per node.
    assert [r["fitted"] for r in residuals] == [True, False, False, False]
    assert [tuple(p) for p in contention.fit["latency"]["pins"]] == [
        ("Isend overhead share", "natural_ring latency at 8 B")]  # fmt: skip
    for path, curve in target.curves.items():
        simulated = fake_pingpong(spec, config, path, curve.sizes)
        worst = max(abs(s - m) / m for s, m in zip(simulated, curve.times_us, strict=True))
        assert worst <= 0.10, path
    # A target beyond the bound stops there, and says so.
    rings = RingFigures(32, 1, 8, 2000000, 100 * alpha, 1.0, 1.0, 1.0, "synthetic")
    bounded, *_ = fit_contention(rings, {**BASE_CONFIG, **network.config()}, alpha, cap,
                                 lambda o, g: overhead_settings(target, network, o, g), ring,
                                 lambda p, k: p)  # fmt: skip
    assert bounded.isend_overhead_s == pytest.approx(cap)
    assert any("at its bound" in f for f in bounded.flags)
    assert any("natural_ring latency at 8 B" in f for f in bounded.flags)


# --------------------------------------------------------------------------- profiles


def test_magellan_profiles_carry_the_published_rings_and_an_mpi() -> None:
    ib = profile_target("magellan-ib")
    assert ib.rings is not None
    assert (ib.rings.ranks, ib.rings.ppn, ib.rings.small, ib.rings.large) == (32, 8, 8, 2000000)
    assert ib.rings.natural_latency_us == 1.50204
    assert ib.rings.random_bandwidth_mb_s == pytest.approx(409.803)
    assert ib.mpi_family == "openmpi" and ib.mpi_source.startswith("assumed")
    assert profile_target("ec2-cc1").mpi_family == "openmpi"
    for name in profile_names():
        target = profile_target(name)
        for curve in target.curves.values():
            check_curve(curve, what=name, remedy="-")  # every shipped curve is plausible


def test_rings_that_do_not_span_two_nodes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 nodes"):
        RingFigures(8, 8, 8, 2000000, 1.0, 1.0, 1.0, 1.0, "x")
    text = (Path(__file__).parents[1] / "src/hpceval/data/profiles/magellan-ib.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("ppn = 8", "ppn = 32"))
    with pytest.raises(UserError, match="rings"):
        profile_target(str(bad))


# --------------------------------------------------------------------------- real smpirun


@requires_smpi
def test_smpi_ring_shares_the_nic_and_pays_overheads(tmp_path: Path) -> None:
    """On a real SMPI run, 4 nodes x 4 ranks: the random ring's ranks share their node's link
    (bandwidth per process well under the PingPong's), and per-message overheads raise the
    ring latency while the PingPong keeps os + wire + or."""
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.platform import LinkSpec, PlatformSpec
    from hpceval.simulate.runner import SmpiCalibrationRunner

    runner = SmpiCalibrationRunner(detect_smpi(), tmp_path)
    spec = PlatformSpec("t", 4, 4, 1e9, LinkSpec(0.5e-6, 1e9), LinkSpec(1e-7, 8e9))
    plain = {**BASE_CONFIG, "smpi/lat-factor": "0:1", "smpi/bw-factor": "0:1"}
    pingpong = runner.pingpong(spec, plain, "inter-node", [8, 4194304])
    ring = runner.pattern(spec, plain, "random_ring", 16, 4, [8, 4194304])
    pingpong_mb_s = 4194304 / pingpong[1]
    assert pingpong_mb_s == pytest.approx(1000, rel=0.05)
    assert ring[("bandwidth", 4194304)] < 0.5 * pingpong_mb_s
    with_o = {**plain, **overhead_config(1e-6)}
    assert runner.pingpong(spec, with_o, "inter-node", [8])[0] == pytest.approx(
        pingpong[0] + 2.0, rel=0.05)  # fmt: skip
    natural = runner.pattern(spec, plain, "natural_ring", 16, 4, [8])[("latency", 8)]
    natural_o = runner.pattern(spec, with_o, "natural_ring", 16, 4, [8])[("latency", 8)]
    assert natural_o > natural + 1.0 and math.isfinite(natural_o)


def test_nic_scale_is_fitted_on_the_random_ring_and_follows_the_ranks_per_node() -> None:
    """Random-ring bandwidth proportional to the node links' scale (a synthetic law): the
    fitted scale is the one that gives the target, 1 at one rank per node, log-linear."""
    rings = RingFigures(32, 8, 8, 2000000, 1.0, 1.0, 1.0, 200.0, "synthetic")

    def ring(cfg, platform, pattern, wanted):  # type: ignore[no-untyped-def]
        return (1.0, 800.0 * platform)

    contention, _, platform, residuals = fit_contention(
        rings, {}, 10.0, 5e-6, lambda o, g: ({}, 1.0), ring, lambda p, k: p * k)  # fmt: skip
    assert platform == 1.0  # the calibrated platform stays at scale 1 (one rank per node)
    assert contention.nic_scale == pytest.approx(0.25, rel=0.03) and contention.nic_ppn == 8
    assert contention.nic_scale_at(1) == 1.0
    assert contention.nic_scale_at(8) == pytest.approx(contention.nic_scale)
    assert contention.nic_scale_at(2) == pytest.approx(contention.nic_scale ** (1 / 3))
    random_bw = next(r for r in residuals if r["path"] == "random_ring"
                     and r["metric"] == "bandwidth")  # fmt: skip
    assert random_bw["fitted"] and abs(random_bw["residual"]) <= 0.03
    # Faster than a lone flow's links allow: scale 1, flagged.
    fast = RingFigures(32, 8, 8, 2000000, 1.0, 1.0, 1.0, 5000.0, "synthetic")
    c, *_ = fit_contention(fast, {}, 10.0, 5e-6, lambda o, g: ({}, 1.0), ring, lambda p, k: p * k)
    assert c.nic_scale == 1.0 and any("not modelled" in f for f in c.flags)


def test_a_shared_backbone_is_fitted_on_rings_at_one_rank_per_node() -> None:
    """An emulated cluster's host (--host-share): its rings at one rank per node share no NIC,
    every flow crosses the backbone, so the random ring's bandwidth fits the backbone (a
    synthetic law: bandwidth proportional to the backbone's width)."""
    rings = RingFigures(4, 1, 8, 1048576, 1.0, 1.0, 290.0, 300.0, "synthetic")

    def ring(cfg, platform, pattern, wanted):  # type: ignore[no-untyped-def]
        return (1.0, 100.0 * platform)

    def fit(figures: RingFigures, widen: object) -> tuple[Any, Any, Any]:
        contention, _, platform, residuals = fit_contention(
            figures, {}, 10.0, 5e-6, lambda o, g: ({}, 1.0), ring, lambda p, k: p * k,
            scale_backbone=widen, backbone_Bps=2.5e8)  # type: ignore[arg-type]  # fmt: skip
        return contention, platform, residuals

    contention, platform, residuals = fit(rings, lambda p, x: p * x)
    assert contention.backbone_Bps == pytest.approx(3 * 2.5e8, rel=0.03)
    assert platform == pytest.approx(3.0, rel=0.03)  # the calibrated platform has it
    assert "(the shared backbone)" in contention.fitted_on
    assert contention.nic_scale == 1.0  # no NIC is shared at one rank per node
    fitted = {(r["path"], r["metric"]): r["fitted"] for r in residuals}
    assert fitted[("random_ring", "bandwidth")] and not fitted[("natural_ring", "bandwidth")]
    natural_bw = next(r for r in residuals if (r["path"], r["metric"]) == (
        "natural_ring", "bandwidth"))  # fmt: skip
    assert natural_bw["residual"] == pytest.approx(300 / 290 - 1, abs=0.03)  # a check
    # Without a backbone to widen (a fat pipe, a profile), nothing is fitted on bandwidth.
    plain, platform, _ = fit(rings, None)
    assert plain.backbone_Bps is None and platform == 1.0
    # A ring the range cannot reach stops at its end and says so.
    far = RingFigures(4, 1, 8, 1048576, 1.0, 1.0, 1e6, 1e6, "synthetic")
    beyond, *_ = fit(far, lambda p, x: p * x)
    assert beyond.backbone_Bps == pytest.approx(64 * 2.5e8)
    assert any("not reached with the backbone" in f for f in beyond.flags)


# --------------------------------------------------------------------------- topology


def test_fat_tree_and_torus_platform_files() -> None:
    from hpceval.simulate.platform import LinkSpec, PlatformSpec, platform_xml

    base = dict(name="t", nodes=6, cores_per_node=2, speed_flops=1e9,
                link=LinkSpec(1e-6, 1e9), loopback=LinkSpec(1e-7, 8e9))  # fmt: skip
    fat = PlatformSpec(**base, topology="fat_tree", leaf_nodes=4, oversubscription=2.0,  # type: ignore[arg-type]
                       topology_source="test")  # fmt: skip
    xml = platform_xml(fat)
    # 6 nodes padded to 2 leaves of 4; 4 / 2 = 2 up-links per leaf; no backbone.
    assert 'radical="0-7"' in xml and 'topology="FAT_TREE"' in xml
    assert 'topo_parameters="2;4,2;1,2;1,1"' in xml and "bb_bw" not in xml
    assert fat.describe_topology() == (
        "two-level fat tree, 4 nodes per leaf, 2:1 oversubscribed (test)")  # fmt: skip
    torus = PlatformSpec(**base, topology="torus", torus_dims=(2, 4))  # type: ignore[arg-type]
    assert 'topology="TORUS"' in platform_xml(torus) and 'topo_parameters="2,4"' in platform_xml(
        torus)  # fmt: skip
    assert PlatformSpec.from_dict(torus.to_dict()) == torus
    with pytest.raises(ValueError, match="whole up-links"):
        PlatformSpec(**base, topology="fat_tree", leaf_nodes=4, oversubscription=3.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="does not hold 6 nodes"):
        PlatformSpec(**base, topology="torus", torus_dims=(2, 2))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "fields"),
    [("flat", {"topology": "flat"}),
     ("fat_tree:16:4", {"topology": "fat_tree", "leaf_nodes": 16, "oversubscription": 4.0}),
     ("torus:4x4x2", {"topology": "torus", "torus_dims": (4, 4, 2)})],
)  # fmt: skip
def test_topology_option(text: str, fields: dict[str, object]) -> None:
    from hpceval.simulate.plan import parse_topology

    parsed = parse_topology(text)
    assert {k: v for k, v in parsed.items() if k != "topology_source"} == fields
    assert parsed["topology_source"] == f"--topology {text}"


@pytest.mark.parametrize("text", ["fat_tree:16:3", "fat_tree:0:1", "ring", "torus:4x0", "x;rm"])
def test_bad_topology_is_one_line(text: str) -> None:
    from hpceval.simulate.plan import parse_topology

    with pytest.raises(UserError, match="--topology"):
        parse_topology(text)


@requires_smpi
def test_an_oversubscribed_fat_tree_slows_the_random_ring(tmp_path: Path) -> None:
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.platform import LinkSpec, PlatformSpec
    from hpceval.simulate.runner import SmpiCalibrationRunner

    runner = SmpiCalibrationRunner(detect_smpi(), tmp_path)
    plain = {**BASE_CONFIG, "smpi/lat-factor": "0:1", "smpi/bw-factor": "0:1"}
    bandwidth = {}
    for ratio in (1.0, 4.0):
        spec = PlatformSpec("t", 8, 1, 1e9, LinkSpec(1e-6, 1e9), LinkSpec(1e-7, 8e9),
                            topology="fat_tree", leaf_nodes=4, oversubscription=ratio)  # fmt: skip
        ring = runner.pattern(spec, plain, "random_ring", 8, 1, [1048576])
        bandwidth[ratio] = ring[("bandwidth", 1048576)]
    assert bandwidth[4.0] < 0.8 * bandwidth[1.0]


# --------------------------------------------------------------------------- stored runs


def add_run(store, platform, origin, measurements):  # type: ignore[no-untyped-def]
    from .store_helpers import add_run as add

    return add(store, measurements, {"mpi": {"implementation": "Open MPI"}}, platform=platform,
               origin=origin, launcher="local")  # fmt: skip


def ring_points(origin, scale):  # type: ignore[no-untyped-def]
    from hpceval.model import Measurement

    out = []
    for pattern, lat, bw in (("natural_ring", 30.0, 90.0), ("random_ring", 40.0, 60.0)):
        for metric, size, value, unit in (("latency", 8, lat, "us"),
                                          ("bandwidth", 1048576, bw, "MB/s")):  # fmt: skip
            params = {"pattern": pattern, "size": size, "ranks": 8, "nodes": 4,
                      "ranks_per_node": 2}  # fmt: skip
            v = value * scale
            out.append((f"mpibench-{pattern}",
                        Measurement("mpibench", metric, v, unit, params, (v, v * 1.01, v * 0.99),
                                    origin=origin)))  # fmt: skip
    return out


def test_rings_and_mpi_are_read_from_the_store_and_projections_validated(tmp_path: Path) -> None:
    from hpceval.model import Measurement, Origin
    from hpceval.simulate.sources import store_rings, store_target
    from hpceval.simulate.validate import published_rings, validate_run
    from hpceval.store import open_store

    with open_store(str(tmp_path / "v.db")) as store:
        pingpong = [
            ("mpibench-p2p", Measurement(
                "mpibench", "latency", 20.0 + n / 110.0, "us",
                {"pattern": "pingpong", "pair": "inter-node", "size": n, "ranks": 2,
                 "nodes": 2, "ranks_per_node": 1}, origin=Origin.EMULATED))
            for n in (0, 1024, 65536, 1048576)
        ]  # fmt: skip
        measured = add_run(store, "emu", Origin.EMULATED, pingpong + ring_points(
            Origin.EMULATED, 1.0))  # fmt: skip
        target = store_target(store, "emu")
        assert target.mpi_family == "openmpi" and "Open MPI" in target.mpi_source
        rings = target.rings
        assert rings is not None and (rings.ranks, rings.ppn, rings.small, rings.large) == (
            8, 2, 8, 1048576)  # fmt: skip
        assert (rings.natural_latency_us, rings.random_bandwidth_mb_s) == (30.0, 60.0)
        assert rings.origin == f"emulated run {measured}"
        runs = {r.id: r for r in store.runs()}
        assert store_rings(store, runs) == rings
        # A projection 10 % high on every ring figure, plus one figure nobody measured.
        extra = Measurement("mpibench", "time", 5.0, "us",
                            {"pattern": "alltoall", "size": 8, "ranks": 8, "nodes": 4},
                            origin=Origin.SIMULATED)  # fmt: skip
        points = [*ring_points(Origin.SIMULATED, 1.1), ("mpibench-a2a", extra)]
        simulated = add_run(store, "emu", Origin.SIMULATED, points)
        checks, missing = validate_run(store, simulated)
        assert len(checks) == 4 and missing == 1
        assert all(c.error == pytest.approx(0.10) for c in checks)
        assert all(c.source == f"emulated run {measured}" for c in checks)
        with pytest.raises(UserError, match="not a simulated run"):
            validate_run(store, measured)
        # Against published figures (a profile): the rings' keys.
        published = published_rings(rings)
        checks, missing = validate_run(store, simulated, published)
        assert len(checks) == 4 and missing == 1


@requires_smpi
def test_bad_topology_on_the_command_line_stores_nothing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hpceval.cli import app
    from hpceval.store import open_store

    db = tmp_path / "sim.db"
    open_store(str(db)).close()
    for topology, message in (("fat_tree:8:3", "whole up-links"),
                              ("torus:2x2", "does not hold 8 nodes")):  # fmt: skip
        result = CliRunner().invoke(app, [
            "simulate", "--profile", "ec2-cc1", "--bench", "mpibench", "--pattern", "pingpong",
            "--ranks", "64", "--topology", topology, "--db", str(db)])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split())
    with open_store(str(db)) as store:
        assert store.runs() == [] and store.calibrations() == []
