"""The per-message cost of an emulated cluster's host (--host-share): a gap paid on the shared
backbone that stands for the host's cores, fitted on the natural ring's latency in place of
a private Isend overhead (hpceval.simulate.contention.fit_contention, cost_on_backbone)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from hpceval.simulate.calibrate import BASE_CONFIG
from hpceval.simulate.contention import RingFigures, fit_contention, isend_config
from hpceval.simulate.factors import SMPI_ENVELOPE_BYTES

requires_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="SimGrid SMPI (smpicc, smpirun) is not installed",
)

RINGS = RingFigures(4, 1, 8, 1048576, 31.0, 33.0, 290.0, 300.0, "synthetic")


def ring(cfg: dict[str, str], platform: float, pattern: str, wanted: Any) -> tuple[float, float]:
    """A synthetic law: latency 10 µs + 3 x the gap + 2 x the Isend overhead; bandwidth
    proportional to the backbone's width (the platform stands for it)."""
    gap_us = float(cfg.get("gap_us", "0"))
    isend_us = float(cfg.get("smpi/ois", "0:0:0").split(":")[1]) * 1e6
    return (10.0 + 3.0 * gap_us + 2.0 * isend_us, 100.0 * platform)


def fit(cost_on_backbone: bool, widen: Any = lambda p, x: p * x) -> tuple[Any, dict[str, str]]:
    contention, config, _, _ = fit_contention(
        RINGS, {}, 10.0, 20e-6, lambda o, g: ({"gap_us": f"{g * 1e6:.9g}"}, 1.0), ring,
        lambda p, k: p, scale_backbone=widen, backbone_Bps=2.5e8,
        cost_on_backbone=cost_on_backbone,
    )  # fmt: skip
    return contention, config


def test_the_hosts_cost_is_a_gap_on_the_backbone_fitted_on_the_natural_ring() -> None:
    contention, config = fit(True)
    # 31 µs = 10 + 3 x gap: a gap of 7 µs, no Isend overhead.
    assert contention.host_gap
    assert contention.gap_s == pytest.approx(7e-6, rel=0.01)
    assert contention.isend_overhead_s == 0.0 and contention.overhead_share == 0.0
    assert config["smpi/ois"] == isend_config(0.0)["smpi/ois"]
    assert "the host's per-message cost: a gap on the shared backbone" in contention.fitted_on
    assert list(contention.fit["latency"]["parameters"]) == ["host gap share"]
    assert contention.backbone_Bps == pytest.approx(3 * 2.5e8, rel=0.03)  # fitted first


def test_without_the_share_or_a_backbone_the_isend_overhead_is_fitted() -> None:
    for contention, _ in (fit(False), fit(True, widen=None)):
        # 31 µs = 10 + 2 x Isend overhead: 10.5 µs, no gap.
        assert not contention.host_gap and contention.gap_s == 0.0
        assert contention.isend_overhead_s == pytest.approx(10.5e-6, rel=0.01)
        assert list(contention.fit["latency"]["parameters"]) == ["Isend overhead share"]


def test_a_gap_the_start_up_cannot_hold_is_bounded_and_flagged() -> None:
    far = RingFigures(4, 1, 8, 1048576, 500.0, 500.0, 290.0, 300.0, "synthetic")
    contention, *_ = fit_contention(
        far, {}, 10.0, 20e-6, lambda o, g: ({"gap_us": f"{g * 1e6:.9g}"}, 1.0), ring,
        lambda p, k: p, scale_backbone=lambda p, x: p * x, backbone_Bps=2.5e8,
        cost_on_backbone=True,
    )  # fmt: skip
    assert contention.gap_s == pytest.approx(0.95 * 10e-6)
    assert any("host gap at its bound" in f for f in contention.flags)


@requires_smpi
def test_on_smpi_concurrent_messages_share_the_gap_not_the_isend_overhead(
    tmp_path: Path,
) -> None:
    """Real smpirun, one rank per node, a shared backbone as wide as two node links: the
    natural ring's 8 B latency doubles from 4 to 8 ranks (twice the messages at once on the
    backbone) with the cost as a gap, and stays put with the same cost as Isend overhead
    (measured: lone PingPong 12.0 us; gap 22.1 and 43.2 us; Isend 11.0 and 11.1 us)."""
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.platform import LinkSpec, PlatformSpec
    from hpceval.simulate.runner import SmpiCalibrationRunner

    runner = SmpiCalibrationRunner(detect_smpi(), tmp_path)
    link_Bps, cost_s = 1e9, 10e-6
    spec = PlatformSpec("t", 8, 1, 1e9, LinkSpec(1e-6, link_Bps), LinkSpec(1e-7, 8e9),
                        backbone="shared", backbone_bandwidth_Bps=2 * link_Bps)  # fmt: skip
    # An 8 B message's bandwidth term made `cost_s` long at a lone flow's link bandwidth.
    factor = (8 + SMPI_ENVELOPE_BYTES) / (link_Bps * cost_s)
    gap = {**BASE_CONFIG, "smpi/lat-factor": "0:1", "smpi/bw-factor": f"0:{factor:.9g}"}
    isend = {**BASE_CONFIG, "smpi/lat-factor": "0:1", "smpi/bw-factor": "0:1",
             **isend_config(cost_s)}  # fmt: skip

    def latency(cfg: dict[str, str], ranks: int) -> float:
        return runner.pattern(spec, cfg, "natural_ring", ranks, 1, [8])[("latency", 8)]

    lone = runner.pingpong(spec, gap, "inter-node", [8])[0]
    assert lone == pytest.approx(1e6 * (2 * 1e-6 + cost_s), rel=0.15)  # wire + one gap
    gap_4, gap_8 = latency(gap, 4), latency(gap, 8)
    isend_4, isend_8 = latency(isend, 4), latency(isend, 8)
    # 8 messages at once at 4 ranks (two per rank), 16 at 8: each gets 1/4, then 1/8 of the
    # backbone, so its gap takes 4, then 8 x as long (the latency is half an iteration).
    assert gap_4 == pytest.approx(1e6 * 4 * cost_s / 2, rel=0.15), gap_4
    assert gap_8 == pytest.approx(2 * gap_4, rel=0.1), (gap_4, gap_8)
    assert isend_8 == pytest.approx(isend_4, rel=0.05), (isend_4, isend_8)


def test_the_calibration_says_the_gap_is_the_hosts() -> None:
    from types import SimpleNamespace

    from hpceval.cli_simulate import contention_lines

    contention, _ = fit(True)
    text = "\n".join(contention_lines(SimpleNamespace(
        parameters={"contention": contention.to_dict()}, residuals=[])))  # fmt: skip
    assert "host: every message costs 7 µs of the host's shared cores" in text
    assert "NIC serialisation" not in text
    # A stored calibration of before this field reads as a NIC's gap.
    old = {k: v for k, v in contention.to_dict().items() if k != "host_gap"}
    assert not type(contention).from_dict(old).host_gap
