"""Issue 21: the links of an emulated cluster shaped by tc tbf, modelled as token buckets (a
SimGrid plugin preloaded into smpirun) instead of factors fitted on the PingPong's steady
state. The plugin is built and run for real; its PingPong is held against the bucket's
closed forms."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from hpceval.cli import app
from hpceval.clusters.netns import NetnsOptions, emulation_facts
from hpceval.errors import UserError
from hpceval.launch.starters.base import StartRequest
from hpceval.launch.starters.smpirun import BUCKET_ENV, SmpirunOptions, SmpirunStarter
from hpceval.model import Environment, Measurement, Origin, Placement
from hpceval.simulate.calibrate import (
    calibrate_network,
    factor_at,
    latency_segments,
    monotone_shape,
    nominal_spec,
)
from hpceval.simulate.plan import SmpiTools, detect_smpi
from hpceval.simulate.platform import LinkSpec, PlatformSpec, platform_xml
from hpceval.simulate.smpi_runs import SmpiCalibrationRunner
from hpceval.simulate.sources import Curve, Target, store_target
from hpceval.simulate.token_bucket import (
    PEAK_ASSUMED_BPS,
    TokenBucket,
    build_plugin,
    emulation_bucket,
)
from hpceval.store import Store, open_store
from tests.netns_curves import BUCKET_TRANSFER_US, NOISY_SIZES, NOISY_TIMES
from tests.test_simulate import parse_factors

DATA = Path(__file__).parent / "data" / "simulate"
requires_plugin = pytest.mark.skipif(
    shutil.which("smpirun") is None or shutil.which("g++") is None,
    reason="smpirun (libsimgrid-dev) or g++ not installed (./setup.sh deps installs both)",
)
GBE = emulation_facts(4, NetnsOptions(link="1GbE"))  # 1 Gbit/s, 250000 B, MTU 1500


def bucket(**kw: Any) -> TokenBucket:
    base: dict[str, Any] = {"line_rate_bit_s": 1e9, "burst_bytes": 250000, "mtu": 1500,
                            "peak_Bps": 2e9, "source": "test", "peak_source": "test"}  # fmt: skip
    return TokenBucket(**{**base, **kw})


def test_rate_and_bucket_are_given_to_the_plugin_in_payload_bytes() -> None:
    b = bucket()
    share = 1448 / 1514  # a full TCP segment (timestamps) in its Ethernet frame
    assert b.payload_rate_Bps == pytest.approx(125e6 * share)
    assert b.payload_burst_bytes == pytest.approx(250000 * share)
    rate, burst, suffixes = b.plugin_spec().split(":")
    assert float(rate) == pytest.approx(b.payload_rate_Bps, rel=1e-8)
    assert float(burst) == pytest.approx(b.payload_burst_bytes, rel=1e-8)
    assert suffixes == "_UP,_DOWN"
    assert TokenBucket.from_dict(b.to_dict()) == b
    for bad in ({"line_rate_bit_s": 0}, {"burst_bytes": math.nan}, {"mtu": 40},
                {"peak_Bps": 1e8}):  # fmt: skip
        with pytest.raises(ValueError, match="token bucket"):
            bucket(**bad)


def test_the_bucket_comes_from_the_stored_emulation_facts() -> None:
    found = emulation_bucket(GBE, "run 3")
    assert found is not None
    assert (found.line_rate_bit_s, found.burst_bytes, found.mtu) == (1e9, 250000, 1500)
    assert found.peak_Bps == PEAK_ASSUMED_BPS and found.peak_source.startswith("assumed")
    assert found.source == "run 3"
    # Facts stored before the MTU was: the default, and the source says it is assumed.
    older = emulation_bucket({k: v for k, v in GBE.items() if k != "mtu"}, "run 1")
    assert older is not None and older.mtu == 1500 and "MTU 1500 assumed" in older.source
    assert emulation_bucket(emulation_facts(4, NetnsOptions(link="none")), "run 2") is None
    assert emulation_bucket(None, "run 2") is None
    with pytest.raises(UserError, match="run 4: the emulation facts name tc tbf without"):
        emulation_bucket({**GBE, "burst_bytes": "lots"}, "run 4")
    with pytest.raises(ValueError, match="token bucket: the peak"):
        replace(found, peak_Bps=1e6)


def test_a_spec_with_a_bucket_round_trips_and_keeps_to_the_flat_switch() -> None:
    spec = PlatformSpec("emu", 2, 1, 1e9, LinkSpec(25e-6, 2e9), LinkSpec(1e-6, 5e9),
                        token_bucket=bucket())  # fmt: skip
    assert PlatformSpec.from_dict(spec.to_dict()) == spec
    assert 'bw="2e+09Bps"' in platform_xml(spec)  # the peak: the plugin drops it
    with pytest.raises(ValueError, match="single switch"):
        replace(spec, link_sharing="shared")
    with pytest.raises(ValueError, match="single switch"):
        replace(spec, topology="torus", torus_dims=(2,))


def start(options: dict[str, Any], ranks: int = 2) -> Any:
    return SmpirunStarter().command(StartRequest(
        placement=Placement(ranks, 1, 1, "core"), program=("./mpibench",),
        implementation="SMPI", executable="smpirun",
        options=SmpirunOptions.model_validate(options)))  # fmt: skip


def test_the_starter_preloads_the_plugin_and_says_so(tmp_path: Path) -> None:
    base = {"platform_file": str(tmp_path / "p.xml"), "workdir": str(tmp_path)}
    plain = start(base)
    assert "LD_PRELOAD" not in plain.env and BUCKET_ENV not in plain.env
    assert not any("weight-S" in a for a in plain.argv)
    shaped = start({**base, "token_bucket": {"plugin": "/lib/tbf.so", "spec": "1.2e8:2.4e5:_UP",
                                             "description": "node links shaped"}})  # fmt: skip
    assert shaped.env["LD_PRELOAD"] == "/lib/tbf.so"
    assert shaped.env[BUCKET_ENV] == "1.2e8:2.4e5:_UP"
    assert "--cfg=network/weight-S:0" in shaped.argv
    assert shaped.argv.index("--cfg=network/weight-S:0") < shaped.argv.index("./mpibench")
    assert any(n.startswith("token-bucket link model") and "node links shaped" in n
               for n in shaped.notes)  # fmt: skip
    for bad in ("1:2:_UP;rm", "-rf:2:_UP", "1:2", "1:2:$(id)"):
        with pytest.raises(ValidationError):
            start({**base, "token_bucket": {"plugin": "/lib/tbf.so", "spec": bad}})


def test_the_calibration_fits_latencies_only_with_a_bucket() -> None:
    """With a bucket the bandwidth factors stay 1: the bucket makes the curve's shape."""
    from hpceval.simulate.sources import Curve, Target

    sizes = (0, 1024, 65536, 262144, 1048576, 2097152, 4194304)

    def bucket_curve(n: float) -> float:  # the PingPong of a bucket: 2 r, then r
        return 10.0 + (n / 240.0 if n <= 478000 else (n - 239000) / 120.0)

    times = tuple(bucket_curve(s) for s in sizes)
    target = Target("emu", "platform", "test", 1, None, "fatpipe", None,
                    {"inter-node": Curve("inter-node", sizes, times, "test", 1)},
                    token_bucket=bucket())  # fmt: skip
    spec = nominal_spec(target, nodes=2, cores_per_node=1, speed=1e9)
    assert spec.token_bucket == bucket() and spec.link.bandwidth_Bps == 2e9

    def exact(_spec: Any, _cfg: Any, _path: Any, s: Any) -> list[float]:
        return [bucket_curve(n) for n in s]

    calibrated = calibrate_network(target, spec, exact)
    assert calibrated.converged
    assert {f for _, f in calibrated.bw_factor} == {1.0}
    assert "smpi/bw-factor" in calibrated.config()
    plain = calibrate_network(replace(target, token_bucket=None),
                              nominal_spec(replace(target, token_bucket=None), nodes=2,
                                           cores_per_node=1, speed=1e9), exact)  # fmt: skip
    assert {f for _, f in plain.bw_factor} != {1.0}


def test_latency_segments_split_where_one_latency_cannot_serve() -> None:
    """4 and 8 KiB of the netns curve need 13.3 and 7.4 µs of latency over the transfer the
    plugin gives them: two segments; the small sizes share one; a size whose transfer alone
    is longer than measured gets none."""
    shape = monotone_shape(NOISY_TIMES)
    transfer = np.asarray(BUCKET_TRANSFER_US)
    segments = latency_segments(NOISY_SIZES, shape, transfer, 2e9, tolerance=0.05)
    firsts = [seg.first_size for seg in segments]
    assert firsts[0] == 0 and 8192 in firsts  # 4 and 8 KiB apart
    for n, t, x in zip(NOISY_SIZES, shape, transfer, strict=True):
        seg = [g for g in segments if g.first_size <= n][-1]
        assert seg.alpha_us >= 0 and seg.beta_mb_s == pytest.approx(2000.0)
        if t - x >= 0:  # a latency can serve it: within the tolerance
            assert seg.alpha_us + x == pytest.approx(t, rel=0.05), n


def test_a_shaped_link_calibrates_on_the_plugins_transfer_times() -> None:
    """The measured netns curve against a simulator that gives each size the transfer time
    smpirun's bucket gave it: refused at -16.8 % (4 KiB) when segments were fitted as lines
    whose slope the bucket then replaced; within the tolerance at every size now."""
    target = Target("netns", "platform", "test", 1, None, "fatpipe", None,
                    {"inter-node": Curve("inter-node", NOISY_SIZES, NOISY_TIMES, "emulated", 1)},
                    token_bucket=bucket())  # fmt: skip
    spec = nominal_spec(target, nodes=2, cores_per_node=1, speed=1e9)
    transfer = dict(zip(NOISY_SIZES, BUCKET_TRANSFER_US, strict=True))

    def plugin(platform: Any, cfg: Any, _path: Any, sizes: Any) -> list[float]:
        lat = parse_factors(cfg["smpi/lat-factor"])
        route_us = platform.inter_node_latency_s * 1e6
        return [factor_at(lat, n) * route_us + transfer[n] for n in sizes]

    calibrated = calibrate_network(target, spec, plugin, tolerance=0.10)
    assert calibrated.converged, calibrated.max_residual
    by_size = {r.size: r.residual for r in calibrated.residuals}
    assert abs(by_size[4096]) <= 0.05 and abs(by_size[8192]) <= 0.05


# --------------------------------------------------------------------------- real smpirun


@pytest.fixture(scope="module")
def tools() -> SmpiTools:
    return detect_smpi()


def pingpong(tools: SmpiTools, tmp: Path, b: TokenBucket | None, sizes: list[int]) -> list[float]:
    """One-way µs per size of mpibench's PingPong across two nodes, factors 1."""
    spec = PlatformSpec("emu", 2, 1, 1e9, LinkSpec(5e-6, 2e9 if b else 125e6 * 1448 / 1514),
                        LinkSpec(1e-6, 5e9), token_bucket=b)  # fmt: skip
    cfg = {"smpi/bw-factor": "0:1", "smpi/lat-factor": "0:1", "network/TCP-gamma": "0"}
    return SmpiCalibrationRunner(tools, tmp).pingpong(spec, cfg, "inter-node", sizes)


@requires_plugin
def test_the_plugin_gives_the_buckets_steady_state(tools: SmpiTools, tmp_path: Path) -> None:
    """Twice the rate up to twice the bucket (each direction refills while the other one's
    message is on the way), (m - b) / r above it; a plain link is its rate throughout."""
    b = bucket()
    rate, burst = b.payload_rate_Bps, b.payload_burst_bytes
    sizes = [65536, 1048576, 4194304]
    shaped = pingpong(tools, tmp_path / "shaped", b, sizes)
    plain = pingpong(tools, tmp_path / "plain", None, sizes)
    wire = 10.0  # µs: two links of 5 µs
    # The link is idle for the latency too: the refill over a round trip pays the message.
    assert shaped[0] == pytest.approx(65536 / (2 * rate) * 1e6, rel=0.05)
    for size, t in zip(sizes[1:], shaped[1:], strict=True):
        assert t == pytest.approx(wire + (size - burst) / rate * 1e6, rel=0.05)
    for size, t in zip(sizes, plain, strict=True):
        assert t == pytest.approx(wire + size / rate * 1e6, rel=0.05)


@requires_plugin
def test_a_bad_bucket_is_one_line_from_the_plugin(tools: SmpiTools, tmp_path: Path) -> None:
    plugin = build_plugin(tools.simgrid_version)
    assert build_plugin(tools.simgrid_version) == plugin  # cached
    xml = tmp_path / "p.xml"
    xml.write_text(platform_xml(PlatformSpec("emu", 2, 1, 1e9, LinkSpec(5e-6, 1e8),
                                             LinkSpec(1e-6, 5e9))))  # fmt: skip
    (tmp_path / "hosts").write_text("node-0\nnode-1\n")
    for spec, why in (("fast", "not RATE:BURST:SUFFIX"),
                      ("1e6:0:_UP", "must be positive"),
                      ("1e6:1e5:_NOWHERE", "no link of the platform ends with"),
                      ("1e9:1e5:_UP", "is slower than the bucket's rate")):  # fmt: skip
        done = subprocess.run(
            [tools.smpirun, "-np", "2", "-platform", str(xml), "-hostfile",
             str(tmp_path / "hosts"), "--cfg=network/weight-S:0", "/bin/true"],
            env={"PATH": "/usr/bin:/bin", "LD_PRELOAD": str(plugin), BUCKET_ENV: spec},
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("token bucket:")]
        assert why in line and spec in line


def store_emulated(store: Store, curve: dict[str, Any], emulation: dict[str, Any]) -> None:
    import hpceval

    env = store.add_environment(Environment(
        facts={"mpi": {"implementation": "Open MPI"}, "cpu": {"cores": 2},
               "emulation": emulation}, fingerprint=json.dumps(emulation)))  # fmt: skip
    run = store.create_run(
        suite_name="s", suite_config={},
        platform_id=store.add_platform("emu", {"name": "emu", "cores_per_node": 1}),
        environment_id=env, launcher="netns", cases=[("pp", "mpibench", {})],
        hpceval_version=hpceval.__version__, git_revision=None, origin=Origin.EMULATED,
        host="h", pid=1, note=None,
    )  # fmt: skip
    for i, (size, us) in enumerate(zip(curve["sizes"], curve["times_us"], strict=True)):
        store.add_measurement(run, None, "pp", f"p{i}", Measurement(
            "mpibench", "latency", us, "us", {"pattern": "pingpong", "size": size, "ranks": 2,
                                             "nodes": 2, "pair": "inter-node"},
            (us,), origin=Origin.EMULATED))  # fmt: skip


@requires_plugin
def test_simulate_calibrates_the_measured_netns_curve_with_the_bucket(tmp_path: Path) -> None:
    """The PingPong measured across netns-4x1-1gbe (captured: tests/data/simulate), its
    bucket read from the run's emulation facts: calibrated within 10 % with bandwidth
    factors 1, the run's note and the output saying so; without the bucket (or with another
    peak) another calibration. Its fall from 240 to 126 MB/s above the bucket is not flagged:
    it is the bucket's."""
    curve = json.loads((DATA / "netns-4x1-1gbe-pingpong.json").read_text())
    db = tmp_path / "emu.db"
    with open_store(str(db)) as store:
        store_emulated(store, curve, GBE)
        target = store_target(store, "emu")
    assert target.token_bucket is not None and target.token_bucket.burst_bytes == 250000
    args = ["simulate", "--platform", "emu", "--bench", "mpibench", "--pattern", "pingpong",
            "--ranks", "2", "--ppn", "1", "--sizes", "8,64KiB,1MiB", "--db", str(db),
            # 0 and 1 B took 10 us, 2 B 9 us (timer noise): flagged, not refused.
            "--accept-curve"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "node links shaped as tc tbf: 1 Gbit/s, 250000 B bucket, MTU 1500" in text
    with open_store(str(db)) as store:
        (calibration,) = store.calibrations()
        assert calibration.converged and calibration.max_residual <= 0.10
        assert not any("bandwidth" in f for f in calibration.parameters["input_flags"])
        assert calibration.parameters["smpi_config"]["smpi/bw-factor"] == "0:1" or all(
            float(p.split(":")[1]) == 1.0
            for p in calibration.parameters["smpi_config"]["smpi/bw-factor"].split(";"))
        assert any("a shaped link runs at 2000 MB/s" in a
                   for a in calibration.parameters["assumed"])  # fmt: skip
        (run,) = [r for r in store.runs() if r.origin is Origin.SIMULATED]
        assert "token-bucket link model" in (run.note or "")
    for extra in (["--no-token-bucket"], ["--bucket-peak-gbps", "8"]):
        again = CliRunner().invoke(app, [*args, *extra])
        assert again.exit_code == 0, again.output
        assert "reused calibration" not in again.output
    with open_store(str(db)) as store:
        assert len(store.calibrations()) == 3
    refused = CliRunner().invoke(app, [*args, "--bucket-peak-gbps", "0.5"])
    assert refused.exit_code != 0
    assert "--bucket-peak-gbps: token bucket: the peak" in " ".join(refused.output.split())


def test_the_request_chooses_how_the_bucket_is_modelled() -> None:
    from hpceval.simulate.plan import Request, token_bucket_choice
    from hpceval.simulate.sources import Curve, Target

    curve = Curve("inter-node", (0, 1024, 65536), (10.0, 14.0, 280.0), "test", 1)
    shaped = bucket(peak_source="assumed: x")
    target = Target("emu", "platform", "test", 1, None, "fatpipe", None,
                    {"inter-node": curve}, token_bucket=shaped)  # fmt: skip
    ask = Request(bench="mpibench", ranks=(2,), pattern="pingpong")
    kept = token_bucket_choice(target, ask)
    assert kept.token_bucket == target.token_bucket
    assert any("a shaped link runs at 2000 MB/s" in a for a in kept.assumed)
    faster = token_bucket_choice(target, replace(ask, bucket_peak_Bps=5e9))
    assert faster.token_bucket is not None and faster.token_bucket.peak_Bps == 5e9
    assert not any("a shaped link runs at" in a for a in faster.assumed)
    for request, why in ((replace(ask, token_bucket=False), "--no-token-bucket: node links "),
                         (replace(ask, ranks=(4,), host_share=True), "--host-share (the ")):
        off = token_bucket_choice(target, request)
        assert off.token_bucket is None
        assert any(a.startswith(why) and "factors fitted on the curve alone" in a
                   for a in off.assumed)  # fmt: skip
    with pytest.raises(UserError, match="--topology: a token bucket shapes"):
        token_bucket_choice(replace(target, topology={"topology": "torus"}), ask)
    with pytest.raises(UserError, match="--bucket-peak-gbps: the links of 'emu' are not shaped"):
        token_bucket_choice(replace(target, token_bucket=None), replace(ask, bucket_peak_Bps=1e9))
