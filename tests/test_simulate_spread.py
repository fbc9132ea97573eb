"""Issue 21 (measurement noise): a calibration is not asked to come closer to a PingPong size
than the runs pooled into it agree with each other. A size simulated between the lowest and
highest of its runs counts as fitted (Residual.judged); the curve carries each size's range
(Curve.spread_us) from the store, the table marks the sizes this spared, and a refusal
names the range the worst size was outside of."""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from hpceval.cli_simulate import calibration_table
from hpceval.simulate.calibrate import (
    REFERENCE_SPEED_FLOPS,
    Residual,
    calibrate_network,
    calibration_key,
    nominal_spec,
)
from hpceval.simulate.sources import Curve, Target, spread_of, store_target
from hpceval.store import open_store
from tests.netns_curves import ROUNDS_SIZES, ROUNDS_TIMES
from tests.test_simulate import fake_simulator
from tests.test_simulate_pooling import _pingpong, _run, _scaled


def test_a_residual_inside_its_runs_is_judged_fitted() -> None:
    inside = Residual("inter-node", 1024, 6.874, 7.631, True, (6.571, 8.486))
    outside = Residual("inter-node", 1024, 6.874, 8.6, True, (6.571, 8.486))
    alone = Residual("inter-node", 1024, 6.874, 7.631, True)
    assert inside.residual == pytest.approx(0.110, abs=1e-3)
    assert (inside.inside_runs, inside.judged) == (True, 0.0)
    assert (outside.inside_runs, outside.judged) == (False, outside.residual)
    assert (alone.inside_runs, alone.judged) == (False, alone.residual)
    assert inside.to_dict()["judged"] == 0.0 and inside.to_dict()["runs_us"] == (6.571, 8.486)


def _rounds_target(spread: bool) -> Target:
    times = tuple(statistics.median(r) for r in ROUNDS_TIMES)
    ranges = tuple((min(r), max(r)) for r in ROUNDS_TIMES) if spread else ()
    return Target(
        name="rounds", source_kind="platform", source="test", cores_per_node=1,
        memory_gb_per_node=None, backbone="fatpipe", backbone_Bps=None,
        curves={"inter-node": Curve("inter-node", ROUNDS_SIZES, times, "emulated runs 1-3",
                                    3, ranges)},
    )  # fmt: skip


def test_the_runs_spread_lets_a_noisy_curve_calibrate() -> None:
    """The real 3 rounds of 2026-12-04: up to 1 KiB the rounds disagree by up to 30 %. This
    test's simulator fits them better than the bucket plugin did (the refusal there was
    at 10 %), so it asks for 8 %: on the medians alone 32 B and 1 KiB stay 9 % off through 8
    iterations (refused); with the rounds' ranges both lie inside their runs (fitted)."""
    results = {}
    for spread in (False, True):
        target = _rounds_target(spread)
        start = nominal_spec(target, nodes=2, cores_per_node=1, speed=REFERENCE_SPEED_FLOPS)
        results[spread] = calibrate_network(target, start, fake_simulator, tolerance=0.08)
    medians_only, with_runs = results[False], results[True]
    assert not medians_only.converged and medians_only.max_residual > 0.08
    assert medians_only.iterations == 8
    assert with_runs.converged and with_runs.max_residual <= 0.04
    spared = [r for r in with_runs.residuals if abs(r.residual) > 0.04]
    assert spared and all(r.inside_runs and r.judged == 0.0 for r in spared)
    # The large sizes' rounds agree within 2 %: there the medians are held as before.
    large = [r for r in with_runs.residuals if r.size >= 65536]
    assert all(abs(r.judged) == abs(r.residual) or r.inside_runs for r in large)


def test_the_spread_is_part_of_the_calibration_key() -> None:
    assert calibration_key(_rounds_target(True), {}) != calibration_key(_rounds_target(False), {})


def test_the_store_gives_each_size_its_runs_range(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "s.db")) as store:
        _run(store, _scaled(_pingpong(), 1.0))
        _run(store, _scaled(_pingpong(), 1.2))
        one = store_target(store, "emu", pool_runs=1).curves["inter-node"]
        _run(store, _scaled(_pingpong(), 0.9))
        three = store_target(store, "emu").curves["inter-node"]
    assert one.spread_us == ()  # one run: no range to be inside
    at_8 = 30.0 + 8 / 110.0
    low, high = three.spread_us[0] or (0.0, 0.0)
    assert (low, high) == pytest.approx((0.9 * at_8, 1.2 * at_8))
    assert three.times_us[0] == pytest.approx(at_8)
    assert spread_of([[[1.0]], [[2.0]]]) == ()  # no size with two runs
    with pytest.raises(ValueError, match="one range"):
        Curve("inter-node", (0, 8), (1.0, 2.0), "x", 1, ((1.0, 2.0),))


def test_the_table_marks_the_sizes_the_runs_spared() -> None:
    spared = Residual("inter-node", 1024, 6.874, 7.631, True, (6.571, 8.486)).to_dict()
    held = Residual("inter-node", 8, 7.283, 7.123, True, (7.043, 7.942)).to_dict()
    row = SimpleNamespace(id=2, platform_name="netns", simgrid_version="3.32",
                          max_residual=0.022, tolerance=0.10, converged=True, iterations=2,
                          residuals=[held, spared])  # fmt: skip
    console = Console(record=True, width=200, color_system=None)
    console.print(calibration_table(row))
    text = console.export_text()
    assert re.search(r"1024 .* \+11\.0% \*", text) and re.search(r"\b8 .* -2\.2% ", text)
    assert "inside the lowest-highest of the runs pooled: fitted" in " ".join(text.split())
