"""hpceval.simulate: platform files (golden), calibration on synthetic data, the smpi launcher,
profiles, the calibrations table.

SMPI builds of NPB are tested in test_simulate_builds.py, real smpirun executions through
`hpceval simulate` in test_simulate_smpirun.py; other test_simulate_* modules use the helpers
here (parse_factors, fake_simulator, requires_smpi).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from hpceval.config import LauncherConfig, PlatformConfig
from hpceval.errors import UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import Origin, Placement
from hpceval.simulate.calibrate import (
    REFERENCE_SPEED_FLOPS,
    calibrate_network,
    calibrate_speed,
    factor_at,
    factor_string,
    monotone_shape,
    nominal_spec,
    piecewise_fit,
)
from hpceval.simulate.plan import SmpiTools, build_programs, parse_simgrid_version
from hpceval.simulate.platform import LinkSpec, PlatformSpec, placement_for, platform_xml
from hpceval.simulate.profiles import PROFILE_SIZES, load_profile, profile_names, profile_target
from hpceval.simulate.sources import Curve, NetworkPath, SpeedReference, Target
from hpceval.store import SCHEMA_VERSION, open_store
from tests.netns_curves import NOISY_SIZES, NOISY_TIMES
from tests.old_schemas import schema_1_database

DATA = Path(__file__).parent / "data" / "simulate"
requires_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="smpicc/smpirun not installed (Debian package libsimgrid-dev, ./setup.sh deps)",
)


def spec(**kw: object) -> PlatformSpec:
    base: dict[str, object] = {
        "name": "demo",
        "nodes": 4,
        "cores_per_node": 8,
        "speed_flops": 2e9,
        "link": LinkSpec(5e-6, 1.25e9),
        "loopback": LinkSpec(3e-7, 7.5e9),
        "description": "golden test",
    }
    base.update(kw)
    return PlatformSpec(**base)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- platform files


@pytest.mark.parametrize(
    ("golden", "overrides"),
    [
        ("cluster-fatpipe.xml", {}),
        (
            "cluster-shared.xml",
            {"backbone": "shared", "backbone_bandwidth_Bps": 2.5e9, "link_sharing": "shared"},
        ),
        # A node's intra-node messages share its memory copies: the Floyd zone (issue 21).
        ("zone-memory.xml", {"nodes": 2, "memory_copy_Bps": 1.5e10}),
        (
            "zone-memory-shared.xml",
            {"nodes": 2, "memory_copy_Bps": 1.5e10, "backbone": "shared",
             "backbone_bandwidth_Bps": 2.5e9, "link_sharing": "shared"},
        ),
    ],
)
def test_platform_xml_golden(golden: str, overrides: dict[str, object]) -> None:
    assert platform_xml(spec(**overrides)) == (DATA / golden).read_text()


def test_platform_checks_and_placements() -> None:
    with pytest.raises(ValueError, match="shared backbone needs its bandwidth"):
        spec(backbone="shared")
    with pytest.raises(ValueError, match="flat topology only"):
        spec(memory_copy_Bps=1e10, topology="torus", torus_dims=(2, 2))
    with pytest.raises(ValueError, match="not positive"):
        spec(memory_copy_Bps=0.0)
    s = spec()
    assert placement_for(32, 8, s) == Placement(4, 8, 1, "core")
    assert placement_for(1, 8, s) == Placement(1, 1, 1, "core")
    with pytest.raises(UserError, match="need 5 nodes; the simulated platform 'demo' has 4"):
        placement_for(40, 8, s)
    with pytest.raises(UserError, match="more than the 8 cores"):
        placement_for(16, 16, s)


# --------------------------------------------------------------------------- calibration


def test_factor_string_thresholds_hold_each_segment() -> None:
    # SMPI uses a threshold T for n + 16 > T: segment firsts s become s + 15, the first 0.
    text = factor_string([(0, 2.0), (1024, 1.5), (65536, 0.5)])
    assert text == "65551:0.5;1039:1.5;0:2"
    pairs = [(0, 2.0), (1024, 1.5), (65536, 0.5)]
    assert [factor_at(pairs, n) for n in (0, 1023, 1024, 65535, 65536, 10**7)] == [
        2.0, 2.0, 1.5, 1.5, 0.5, 0.5
    ]  # fmt: skip


KNOWN_LAT = [(0, 1.8), (4096, 3.0), (262144, 10.0)]
KNOWN_BW = [(0, 0.4), (4096, 0.7), (262144, 0.9)]
SIZES = PROFILE_SIZES


def smpi_model(
    platform: PlatformSpec,
    lat: Sequence[tuple[int, float]],
    bw: Sequence[tuple[int, float]],
    path: NetworkPath,
    size: int,
) -> float:
    """SMPI's network time of one message, µs (its 16-byte envelope goes through the
    bandwidth term), plus a fixed 0.4 µs the model does not know (SMPI's own overheads), so
    that the calibration has something to iterate on."""
    if path == "inter-node":
        lat_s, bw_bps = platform.inter_node_latency_s, platform.inter_node_bandwidth_Bps
    else:
        lat_s, bw_bps = platform.loopback.latency_s, platform.loopback.bandwidth_Bps
    envelope = size + 16
    return 1e6 * (lat_s * factor_at(lat, size) + envelope / (bw_bps * factor_at(bw, size))) + 0.4


def parse_factors(text: str) -> list[tuple[int, float]]:
    """Back from SMPI's thresholds to segment first sizes."""
    pairs = []
    for part in text.split(";"):
        t, f = part.split(":")
        pairs.append((0 if int(t) == 0 else int(t) - 15, float(f)))
    return sorted(pairs)


def fake_simulator(
    platform: PlatformSpec, cfg: Mapping[str, str], path: NetworkPath, sizes: Sequence[int]
) -> list[float]:
    lat = parse_factors(cfg["smpi/lat-factor"])
    bw = parse_factors(cfg["smpi/bw-factor"])
    return [smpi_model(platform, lat, bw, path, n) for n in sizes]


def test_segments_are_fitted_as_smpi_times_a_message() -> None:
    """α + (n + 16)/β with α ≥ 0 (SMPI's envelope), so that SMPI can reproduce each size;
    a one-size segment of a large message is transfer time, not latency."""
    # Medians measured here (2 ranks, one node, loaded host): not monotonic.
    sizes = [0, 1, 2, 1048576, 2097152, 4194304]
    times = [0.27, 0.45, 0.41, 205.9, 214.0, 710.0]
    segments = piecewise_fit(sizes, times, tolerance=0.05)
    for n, t in zip(sizes, times, strict=True):
        seg = [x for x in segments if x.first_size <= n][-1]
        assert seg.alpha_us >= 0
        assert seg.alpha_us + (n + 16) / seg.beta_mb_s == pytest.approx(t, rel=0.05)
    last = segments[-1]
    assert (last.first_size, last.alpha_us) == (4194304, 0.0)
    assert last.beta_mb_s == pytest.approx((4194304 + 16) / 710.0)


def test_calibration_recovers_known_factors_from_synthetic_measurements() -> None:
    truth = spec(nodes=2)
    inter = tuple(smpi_model(truth, KNOWN_LAT, KNOWN_BW, "inter-node", n) for n in SIZES)
    intra = tuple(smpi_model(truth, KNOWN_LAT, KNOWN_BW, "intra-node", n) for n in SIZES)
    target = Target(
        name="synthetic", source_kind="platform", source="test", cores_per_node=8,
        memory_gb_per_node=None, backbone="fatpipe", backbone_Bps=None,
        curves={
            "inter-node": Curve("inter-node", SIZES, inter, "synthetic", 1),
            "intra-node": Curve("intra-node", SIZES, intra, "synthetic", 1),
        },
    )  # fmt: skip
    start = nominal_spec(target, nodes=2, cores_per_node=8, speed=REFERENCE_SPEED_FLOPS)
    result = calibrate_network(target, start, fake_simulator, tolerance=0.10)
    assert result.converged
    assert result.max_residual <= 0.05  # iterations stop within half the tolerance
    # Recovered effective latency and bandwidth per size range: what the known factors give.
    route_lat = result.spec.inter_node_latency_s
    route_bw = result.spec.inter_node_bandwidth_Bps
    for size in (0, 64, 4096, 65536, 262144, 4194304):
        true_lat = truth.inter_node_latency_s * factor_at(KNOWN_LAT, size)
        true_bw = truth.inter_node_bandwidth_Bps * factor_at(KNOWN_BW, size)
        got_lat = route_lat * factor_at(result.lat_factor, size)
        got_bw = route_bw * factor_at(result.bw_factor, size)
        if size <= 65536 or size == 262144:
            assert got_lat == pytest.approx(true_lat + 0.4e-6, rel=0.05)
        assert got_bw == pytest.approx(true_bw, rel=0.05)
    # The intra-node path gets a loopback fitted under the same (global) factors: its large
    # messages match; its small ones carry the 0.4 µs the factors were not fitted on, which
    # is reported, not hidden.
    intra_residuals = {r.size: r for r in result.residuals if r.path == "intra-node"}
    assert not any(r.calibrated for r in intra_residuals.values())
    assert all(abs(r.residual) < 0.05 for n, r in intra_residuals.items() if n >= 65536)


def test_the_monotone_shape_levels_noise_and_keeps_a_rising_curve() -> None:
    shape = monotone_shape(NOISY_TIMES)
    assert bool(np.all(np.diff(shape) >= 0))
    # Up to 512 B the sizes become a staircase within 3 % (they lay 15 % apart); from 4 KiB
    # up the curve rises and is kept as measured.
    assert max(shape[:11]) / min(shape[:11]) < 1.03
    assert 12.1 < shape[5] < 13.9
    assert list(shape[13:]) == pytest.approx(NOISY_TIMES[13:])
    assert list(monotone_shape(SIZES_RISING)) == pytest.approx(SIZES_RISING)


SIZES_RISING = (1.5, 1.6, 2.0, 4.0, 9.0)


def test_a_noisy_plateau_calibrates_on_its_level() -> None:
    """Aimed at the noisy points themselves, the fit followed their noise (segments from 0,
    32 and 256 B: a simulated curve that rises and falls as one measurement did); aimed at
    the monotone shape, the sizes up to 512 B are one level, each within the tolerance."""
    target = Target(
        name="noisy", source_kind="platform", source="test", cores_per_node=2,
        memory_gb_per_node=None, backbone="fatpipe", backbone_Bps=None,
        curves={"inter-node": Curve("inter-node", NOISY_SIZES, NOISY_TIMES, "emulated", 1)},
    )  # fmt: skip
    start = nominal_spec(target, nodes=2, cores_per_node=2, speed=REFERENCE_SPEED_FLOPS)
    result = calibrate_network(target, start, fake_simulator, tolerance=0.10)
    assert result.converged, result.max_residual
    assert [seg.first_size for seg in result.segments if seg.first_size < 1024] == [0]
    small = [r for r in result.residuals if r.size <= 2048]
    assert max(abs(r.residual) for r in small) <= 0.10


def test_speed_calibration_recovers_a_known_speed() -> None:
    reference = SpeedReference("cg", "A", time_s=2.0, run_id=7)
    work_flop = 3.4e9 * 2.0  # the target's core runs at 3.4 Gflop/s

    def kernel(platform: PlatformSpec, cfg: Mapping[str, str], ref: SpeedReference) -> float:
        return work_flop / platform.speed_flops

    result = calibrate_speed(spec(), {}, reference, kernel)
    assert result.speed_flops == pytest.approx(3.4e9)
    assert result.residual == pytest.approx(0.0, abs=1e-9)
    assert calibrate_speed(spec(), {}, None, kernel).describe().startswith("assumed")


def test_speed_calibration_corrects_a_residual_inside_the_tolerance() -> None:
    """A first replay 9 % off is within the 10 % tolerance but corrected all the same (it
    would be inherited by every projection); the best of the iterations is kept."""
    reference = SpeedReference("cg", "A", time_s=1.0, run_id=7)

    def kernel(platform: PlatformSpec, cfg: Mapping[str, str], ref: SpeedReference) -> float:
        return 1.09e9 / platform.speed_flops

    result = calibrate_speed(spec(), {}, reference, kernel)
    assert result.iterations == 2
    assert result.speed_flops == pytest.approx(1e9 * 1.09)
    assert result.residual == pytest.approx(0.0, abs=1e-9)

    def stubborn(platform: PlatformSpec, cfg: Mapping[str, str], ref: SpeedReference) -> float:
        return 1.07 if platform.speed_flops == 1e9 else 1.08  # noise the speed cannot undo

    kept = calibrate_speed(spec(), {}, reference, stubborn)
    assert kept.iterations == 6 and kept.speed_flops == 1e9
    assert kept.residual == pytest.approx(0.07)


def test_speed_calibration_follows_the_median_replay_not_the_last() -> None:
    """Replays whose work moves +20, -20, +3 % around the true one (as on a shared host):
    correcting on the last replay alone went -33, +29 and -8 % (4 replays, the speed of the
    -8 % one kept); on the median of the replays so far the third replay is within 5 %."""
    reference = SpeedReference("is", "A", time_s=2.0, run_id=7)
    true_work = 1.0e9 * 2.0
    noise = iter([1.20, 0.80, 1.03, 0.95, 1.1, 0.9])
    speeds: list[float] = []

    def kernel(platform: PlatformSpec, cfg: Mapping[str, str], ref: SpeedReference) -> float:
        speeds.append(platform.speed_flops)
        return true_work * next(noise) / platform.speed_flops

    result = calibrate_speed(spec(), {}, reference, kernel)
    assert result.iterations == 3
    assert speeds[1] == pytest.approx(1.2e9) and speeds[2] == pytest.approx(1.0e9)
    assert result.residual == pytest.approx(0.03)


# --------------------------------------------------------------------------- launcher, profiles


def test_smpi_launcher_exact_argv(tmp_path: Path) -> None:
    platform = PlatformConfig(
        name="sim",
        nodes=4,
        cores_per_node=8,
        launcher=LauncherConfig.model_validate(
            {
                "kind": "smpi",
                "mpirun": "smpirun",
                "mpicc": "smpicc",
                "platform_file": "/p/platform.xml",
                "workdir": str(tmp_path),
                "cfg": {"smpi/lat-factor": "0:1.5", "network/TCP-gamma": "0"},
            }
        ),
    )
    launcher = get_launcher_class("smpi")(platform, MpiRuntime("SMPI", "smpirun"))
    assert launcher.origin is Origin.SIMULATED
    command = launcher.command(Placement(2, 3, 1, "core"), ["/bin/prog", "--class", "S"])
    hostfile = tmp_path / "hosts-2x3.txt"
    assert command.argv == (
        "smpirun", "-np", "6", "-platform", "/p/platform.xml", "-hostfile", str(hostfile),
        "--cfg=network/TCP-gamma:0", "--cfg=smpi/lat-factor:0:1.5",
        "/bin/prog", "--class", "S",
    )  # fmt: skip
    assert command.env == {"OMP_NUM_THREADS": "1"}
    assert hostfile.read_text() == "node-0\nnode-0\nnode-0\nnode-1\nnode-1\nnode-1\n"
    with pytest.raises(UserError, match="one thread per rank"):
        launcher.command(Placement(1, 1, 2, "core"), ["/bin/prog"])


def test_profiles_hold_the_published_figures() -> None:
    assert set(profile_names()) >= {
        "ec2-cc1", "ec2-cc2", "bare-metal-10gbe", "magellan-ib", "magellan-tcpoib",
        "magellan-10gbe", "magellan-1gbe", "magellan-10gbe-vm",
    }  # fmt: skip
    for name in profile_names():
        profile, _ = load_profile(name)
        assert profile.source and profile.assumed, name
    cc1, _ = load_profile("ec2-cc1")
    assert cc1.inter_node is not None and cc1.intra_node is not None
    assert (cc1.inter_node.latency, cc1.inter_node.bandwidth_mb_s) == (55, 612.5)  # 4.9 Gbps
    assert cc1.intra_node.bandwidth_mb_s == pytest.approx((60.9 + 62.5) / 2 * 125)
    ib = profile_target("magellan-ib")
    curve = ib.curves["inter-node"]
    assert curve.times_us[0] == 1.73
    assert curve.times_us[-1] == pytest.approx(1.73 + 4194304 / 3750)


def test_profile_without_network_figures_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "half.toml"
    bad.write_text('name = "half"\ndescription = "x"\nsource = "nowhere"\n')
    with pytest.raises(UserError, match=r"half.toml: inter_node: no inter-node figures"):
        profile_target(str(bad))


def test_simgrid_version_parse() -> None:
    assert parse_simgrid_version("SimGrid version 3.32\n") == "3.32"
    assert parse_simgrid_version("smpirun: not found") is None


def test_a_program_that_does_not_build_is_one_line(tmp_path: Path) -> None:
    tools = SmpiTools(smpicc="false", smpirun="smpirun", simgrid_version="0")
    with pytest.raises(UserError, match="mpibench does not build under smpicc"):
        build_programs(["mpibench"], tools)


# --------------------------------------------------------------------------- store


def test_schema_1_database_gains_the_calibrations_table(tmp_path: Path) -> None:
    db = schema_1_database(tmp_path / "old.db")
    with open_store(str(db)) as store:
        assert store.upgraded_from == 1
        row = store.add_calibration(
            key="k", platform_name="p", source_kind="profile", source="s", source_run_ids=[3],
            simgrid_version="3.32", parameters={"a": 1.5},
            residuals=[{"size": 0, "residual": 0.01}],
            max_residual=0.01, tolerance=0.1, iterations=2, converged=True,
        )  # fmt: skip
        assert store.calibrations(key="k") == [row]
        assert row.parameters == {"a": 1.5} and row.source_run_ids == (3,)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version FROM schema_info").fetchall() == [(SCHEMA_VERSION,)]
