from __future__ import annotations

import math

import numpy as np
import pytest

from hpceval.analysis.frame import Entry, build_frame
from hpceval.analysis.network import fit_hockney, fit_network
from hpceval.model import Measurement

SIZES = np.array([0] + [2**i for i in range(23)], dtype=np.float64)  # 0 B .. 4 MiB


def test_one_line_recovers_alpha_beta_and_n_half() -> None:
    # α = 50 µs, β = 600 MB/s (a paravirtualized 10 GbE NIC, roughly)
    model = fit_hockney(SIZES, 50.0 + SIZES / 600.0)
    (segment,) = model.segments
    assert model.breakpoints == ()
    assert segment.alpha_us == pytest.approx(50.0)
    assert segment.beta_mb_s == pytest.approx(600.0)
    assert segment.n_half_bytes == pytest.approx(30_000.0)
    assert segment.first_size == 0 and segment.last_size == 4 * 2**20
    assert model.rms_residual < 1e-12
    assert segment.predict(1e6) == pytest.approx(50.0 + 1e6 / 600.0)


def test_noisy_line_within_the_resolution_gets_no_breakpoint() -> None:
    rng = np.random.default_rng(0)
    times = (10.0 + SIZES / 1100.0) * rng.normal(1.0, 0.005, len(SIZES))
    model = fit_hockney(SIZES, times)
    assert model.breakpoints == ()
    assert model.segments[0].alpha_us == pytest.approx(10.0, rel=0.02)
    assert model.segments[0].beta_mb_s == pytest.approx(1100.0, rel=0.02)


def test_eager_rendezvous_switch_is_found() -> None:
    # Eager below 64 KiB (α 2 µs, β 3000 MB/s), rendezvous above (α 12 µs, β 5000 MB/s),
    # measured with 2 % noise.
    truth = np.where(SIZES < 65536, 2.0 + SIZES / 3000.0, 12.0 + SIZES / 5000.0)
    rng = np.random.default_rng(42)
    model = fit_hockney(SIZES, truth * rng.normal(1.0, 0.02, len(SIZES)))
    assert model.breakpoints == (65536,)
    small, large = model.segments
    assert small.last_size == 32768 and large.first_size == 65536
    assert small.alpha_us == pytest.approx(2.0, rel=0.05)
    assert small.beta_mb_s == pytest.approx(3000.0, rel=0.1)
    assert large.beta_mb_s == pytest.approx(5000.0, rel=0.05)
    assert large.n_half_bytes == pytest.approx(large.alpha_us * large.beta_mb_s)
    assert model.rms_residual < 0.04
    assert [p.size for p in model.points] == SIZES.astype(int).tolist()


def test_two_breakpoints() -> None:
    truth = np.where(
        SIZES < 4096,
        1.0 + SIZES / 2000.0,
        np.where(SIZES < 262144, 5.0 + SIZES / 4000.0, 30.0 + SIZES / 6000.0),
    )
    model = fit_hockney(SIZES, truth)
    assert model.breakpoints == (4096, 262144)
    assert [s.alpha_us for s in model.segments] == pytest.approx([1.0, 5.0, 30.0])
    assert [s.beta_mb_s for s in model.segments] == pytest.approx([2000.0, 4000.0, 6000.0])
    # Limited to one breakpoint, it still finds one of the two switches.
    assert fit_hockney(SIZES, truth, max_breakpoints=1).breakpoints in ((4096,), (262144,))
    assert fit_hockney(SIZES, truth, max_breakpoints=0).breakpoints == ()


def test_flat_times_have_no_bandwidth() -> None:
    model = fit_hockney([0, 1, 2, 4, 8], [3.0, 3.0, 3.0, 3.0, 3.0])
    (segment,) = model.segments
    assert segment.alpha_us == pytest.approx(3.0)
    assert math.isinf(segment.beta_mb_s) or segment.beta_mb_s > 1e12
    if math.isinf(segment.beta_mb_s):
        assert segment.n_half_bytes is None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="repeat"):
        fit_hockney([1, 1, 2], [1.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        fit_hockney([1, 2, 4], [1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="at least"):
        fit_hockney([1, 2], [1.0, 2.0])


def test_fit_network_per_platform_and_placement() -> None:
    entries: list[Entry] = []
    for size in SIZES.astype(int).tolist():
        for platform, pair, alpha, beta in (
            ("bare", "intra-node", 0.3, 7600.0),
            ("bare", "inter-node", 10.0, 1100.0),
            ("vm", "inter-node", 55.0, 610.0),
        ):
            t = alpha + size / beta
            samples = (t * 0.98, t * 1.02)  # mean exactly t
            params = {"pattern": "pingpong", "pair": pair, "size": size, "ranks": 2}
            entries.append(
                (platform, 1, Measurement("mpibench", "latency", t, "us", params, samples))
            )
            if size:
                bw = Measurement("mpibench", "bandwidth", size / t, "MB/s", params, (size / t,))
                entries.append((platform, 1, bw))
        # Another pattern, not fitted by default.
        entries.append(
            ("bare", 1, Measurement("mpibench", "time", 5.0, "us", {"pattern": "bcast", "size": 8}))
        )
    fits = fit_network(build_frame(entries))
    found = {(f.platform, str(f.placement["pair"])): f for f in fits}
    assert set(found) == {
        ("bare", "intra-node"),
        ("bare", "inter-node"),
        ("vm", "inter-node"),
    }
    vm = found[("vm", "inter-node")]
    assert vm.alpha_us == pytest.approx(55.0)
    assert vm.beta_mb_s == pytest.approx(610.0)
    assert vm.n_half_bytes == pytest.approx(55.0 * 610.0)
    assert vm.placement == {"pair": "inter-node", "pattern": "pingpong", "ranks": 2}
    assert vm.metric == "latency"
    assert vm.predict(1000) == pytest.approx(55.0 + 1000 / 610.0)
    assert found[("bare", "intra-node")].alpha_us == pytest.approx(0.3)
    assert fit_network(build_frame(entries), patterns=["pingping"]) == ()


def _series(platform: str, times: np.ndarray, run: int = 1, **params: int | str) -> list[Entry]:
    return [
        (platform, run, Measurement("mpibench", "latency", float(t), "us",
                                    {"pattern": "pingpong", "size": int(n), **params},
                                    (float(t) * 0.999, float(t), float(t) * 1.001)))
        for n, t in zip(SIZES, times, strict=True)
    ]  # fmt: skip


def test_segments_with_their_ranges_and_the_half_bandwidth_size_of_the_curve() -> None:
    # An inter-node link: eager below 64 KiB (α 30 µs, β 100 MB/s), then a rendezvous line
    # whose own intercept is negative (α -40 µs, β 117 MB/s): no n½ = α·β for the last
    # segment, but the curve reaches half of 117 MB/s at a size the first segment gives:
    # n / (30 + n/100) = 58.5  =>  n = 30 / (2/117 - 1/100) = 4,179 B.
    truth = np.where(SIZES < 65536, 30.0 + SIZES / 100.0, -40.0 + SIZES / 117.0)
    frame = build_frame(_series("cloud", truth, pair="inter-node"))
    (fit,) = fit_network(frame)
    assert fit.breakpoints == (65536,)
    assert fit.segments[-1].n_half_bytes is None
    assert fit.n_half_bytes == pytest.approx(30 / (2 / 117 - 1 / 100), rel=0.02)
    rows = fit.segment_rows()
    assert [(r["segment"], r["first_size"], r["last_size"]) for r in rows] == [
        (1, 0, 32768),
        (2, 65536, 4 * 2**20),
    ]
    assert rows[0]["alpha_us"] == pytest.approx(30.0, rel=0.01)
    assert rows[1]["beta_mb_s"] == pytest.approx(117.0, rel=0.01)
    assert fit.warning == ""
    assert fit.runs == (1,) and fit.summary_row()["runs"] == "1"


def test_a_poor_fit_is_flagged_and_names_its_runs() -> None:
    # A shaper's staircase: no line (nor three) follows it within 10 %.
    rng = np.random.default_rng(1)
    times = (20.0 + SIZES / 100.0) * rng.choice([0.5, 1.0, 2.0], len(SIZES))
    frame = build_frame([*_series("emu", times, run=4), *_series("emu", times, run=7)])
    (fit,) = fit_network(frame)
    assert fit.rms_residual > 0.10
    assert fit.warning.startswith("poor fit: rms residual")
    assert fit.runs == (4, 7)
    assert fit.summary_row()["warning"] == fit.warning
