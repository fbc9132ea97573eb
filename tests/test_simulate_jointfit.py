"""Issue 21 (jointfit): the bounded joint least-squares fit, its identifiability reading, the
contention model's parameters recovered from synthetic figures, and a real smpirun check that
two concurrent messages cost what the fitted Isend overhead and NIC gap say."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hpceval.simulate.calibrate import (
    BASE_CONFIG,
    REFERENCE_SPEED_FLOPS,
    calibrate_network,
    nominal_spec,
    overhead_settings,
)
from hpceval.simulate.contention import RingFigures, fit_contention, isend_config
from hpceval.simulate.jointfit import fit_jointly, identifiability

from .test_simulate_contention import fake_pingpong, requires_smpi, synthetic_target


def test_identifiability_names_the_figure_that_pins_each_parameter() -> None:
    j = np.array([[1.0, 0.1], [0.5, 4.0]])
    reading = identifiability(["o", "g"], ["natural", "random"], j)
    assert reading.pins == (("o", "natural"), ("g", "random"))
    assert reading.identifiable and reading.condition == pytest.approx(
        np.linalg.cond(j), rel=1e-9)  # fmt: skip
    # The same figures in the other order: the assignment follows the sensitivities.
    swapped = identifiability(["o", "g"], ["random", "natural"], j[::-1])
    assert swapped.pins == (("o", "natural"), ("g", "random"))
    # A parameter no figure moves, and two figures that only see one combination.
    dead = identifiability(["o", "g"], ["a", "b"], np.array([[1.0, 0.0], [2.0, 0.0]]))
    assert dead.unmoved == ("g",) and not dead.identifiable and "NOT identifiable" in (
        dead.describe())  # fmt: skip
    collinear = identifiability(["o", "g"], ["a", "b"], np.array([[1.0, 2.0], [2.0, 4.0]]))
    assert not collinear.identifiable and collinear.condition > 1e3


def test_fit_jointly_recovers_known_parameters_of_a_coupled_law() -> None:
    """Both figures move with both parameters (as both rings move with overhead and gap):
    the known parameters come back, and an unreachable figure leaves the parameter at its
    bound, snapped there."""
    known = (0.3, 0.6)

    def law(x: list[float]) -> list[float]:
        o, g = x
        return [10 + 8 * o + 2 * g, 10 + 2 * o + 30 * g * g]

    fit = fit_jointly(law, law(list(known)), [0.5, 0.5], [0, 0], [1, 1], ["o", "g"],
                      ["natural", "random"])  # fmt: skip
    assert fit.x == pytest.approx(known, abs=2e-3)
    assert max(abs(r) for r in fit.residuals) < 1e-3
    assert fit.identifiability.pins == (("o", "natural"), ("g", "random"))
    # A natural figure below what o = 0 gives: o stays at exactly 0.
    low = fit_jointly(law, [9.0, law([0.0, 0.6])[1]], [0.5, 0.5], [0, 0], [1, 1],
                      ["o", "g"], ["natural", "random"])  # fmt: skip
    assert low.x[0] == 0.0 and low.residuals[0] > 0.05


def test_contention_recovers_isend_gap_nic_and_memory_from_synthetic_rings() -> None:
    """A synthetic platform law with the contention model's structure: the natural ring pays
    one Isend overhead and its two off-node messages' gaps, the random ring most of its 16;
    the random ring's 2 MB bandwidth follows the NIC, the natural ring's the node's memory
    copies (7 intra-node flows per direction). Known parameters are recovered."""
    alpha_us, loopback = 10.0, 4e9
    known = {"ois": 3.0, "gap": 1.5, "k": 0.3, "memory": 9e9}

    def with_overhead(o, g):  # type: ignore[no-untyped-def]
        return {"gap": repr(g)}, (1.0, None)

    def law(cfg, platform, pattern):  # type: ignore[no-untyped-def]
        ois = float(cfg.get("smpi/ois", "0:0:0").split(":")[1]) * 1e6
        g, (k, memory) = float(cfg["gap"]) * 1e6, platform
        wire = alpha_us - g
        messages = 2 if pattern == "natural_ring" else 14
        latency = ois + wire / 2 + messages * g / k / 2
        nic = 1600 * k
        copies = (memory or 1e15) / 1e6 / 7
        bw = 1 / (1 / nic + 1 / copies) if pattern == "natural_ring" else nic * 0.95
        return latency, bw

    def ring(cfg, platform, pattern, wanted):  # type: ignore[no-untyped-def]
        return law(cfg, platform, pattern)

    truth_cfg = {**isend_config(known["ois"] * 1e-6), "gap": repr(known["gap"] * 1e-6)}
    truth = (known["k"], known["memory"])
    nat_lat, nat_bw = law(truth_cfg, truth, "natural_ring")
    rnd_lat, rnd_bw = law(truth_cfg, truth, "random_ring")
    rings = RingFigures(32, 8, 8, 2000000, nat_lat, rnd_lat, nat_bw, rnd_bw, "synthetic")
    c, _, platform, residuals = fit_contention(
        rings, {}, alpha_us, 2 * alpha_us * 1e-6, with_overhead, ring,
        lambda p, k: (p[0] * k, p[1]), share_memory=lambda p, m: (p[0], m),
        loopback_Bps=np.float64(loopback),  # as a fitted loopback comes: numpy's
    )  # fmt: skip
    # Stored as JSON with the calibration (numpy's bools are not JSON).
    json.dumps([c.to_dict(), residuals])
    assert c.isend_overhead_s * 1e6 == pytest.approx(known["ois"], rel=0.05)
    assert c.gap_s * 1e6 == pytest.approx(known["gap"], rel=0.05)
    # The bandwidths by bisection (within 3 % of each figure), the latencies jointly.
    assert c.nic_scale == pytest.approx(known["k"], rel=0.04)
    assert c.memory_copy_Bps == pytest.approx(known["memory"], rel=0.10)
    assert c.overhead_s == 0.0 and platform == (1.0, c.memory_copy_Bps)
    assert all(r["fitted"] and abs(r["residual"]) < 0.03 for r in residuals)
    assert dict(map(tuple, c.fit["latency"]["pins"])) == {
        "Isend overhead share": "natural_ring latency at 8 B",
        "NIC gap share": "random_ring latency at 8 B"}  # fmt: skip
    assert dict(map(tuple, c.fit["bandwidth"]["pins"])) == {
        "ln NIC scale": "random_ring bandwidth at 2000000 B",
        "ln memory copy / loopback": "natural_ring bandwidth at 2000000 B"}  # fmt: skip
    assert not c.flags, c.flags


def test_a_natural_ring_below_the_nic_bound_is_flagged_not_forced() -> None:
    """Memory that never limits (a natural ring as fast as the NIC allows): the node's
    copies stay unshared, and a flag says so."""
    def ring(cfg, platform, pattern, wanted):  # type: ignore[no-untyped-def]
        k, _ = platform
        return (10.0, 1600 * k)

    rings = RingFigures(32, 8, 8, 2000000, 10.0, 10.0, 400.0, 400.0, "synthetic")
    c, *_ = fit_contention(rings, {}, 10.0, 2e-5, lambda o, g: ({}, (1.0, None)), ring,
                           lambda p, k: (p[0] * k, p[1]), share_memory=lambda p, m: (p[0], m),
                           loopback_Bps=4e9)  # fmt: skip
    assert c.memory_copy_Bps is None
    assert any("not limited by the node's memory" in f for f in c.flags)


@requires_smpi
def test_two_concurrent_messages_cost_what_the_fitted_parameters_say(tmp_path: Path) -> None:
    """A real smpirun with the settings a calibration writes for an Isend overhead ois and a
    NIC gap g on a PingPong of start-up α: the PingPong keeps α (blocking calls pay no
    Isend overhead, the gap is part of a lone message's time); a rank posting two messages
    at once through one NIC (a ring of 2 ranks on 2 nodes) pays, per message, α/2 + g/2
    without ois (both messages' wire latency overlaps, their gaps queue), and ois + α/2
    with an ois longer than a message (each Isend waits for the CPU, nothing overlaps)."""
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.smpi_runs import SmpiCalibrationRunner

    target = synthetic_target()
    start = nominal_spec(target, nodes=2, cores_per_node=2, speed=REFERENCE_SPEED_FLOPS)
    network = calibrate_network(target, start, fake_pingpong, tolerance=0.10)
    alpha = network.segments[0].alpha_us
    gap_us = 0.4 * alpha
    settings, spec = overhead_settings(target, network, 0.0, gap_us * 1e-6)
    runner = SmpiCalibrationRunner(detect_smpi(), tmp_path)
    for ois_us, expected in ((0.0, alpha / 2 + gap_us / 2), (2 * alpha, 2 * alpha + alpha / 2)):
        config = {**BASE_CONFIG, **network.config(), **settings, **isend_config(ois_us * 1e-6)}
        pingpong = runner.pingpong(spec, config, "inter-node", [8])[0]
        ring = runner.pattern(spec, config, "natural_ring", 2, 1, [8])[("latency", 8)]
        assert pingpong == pytest.approx(target.curves["inter-node"].times_us[
            target.curves["inter-node"].sizes.index(8)], rel=0.10)  # fmt: skip
        assert math.isfinite(ring) and ring == pytest.approx(expected, rel=0.10), ois_us
