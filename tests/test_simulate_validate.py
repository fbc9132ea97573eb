"""`hpceval simulate --validate`: each projected figure against the measured runs pooled —
the median over the runs (each run the median of its samples), their spread, and whether
the projection lies inside it; the calibration's inputs pooled the same way; `--pool-runs`
keeps the latest N."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from hpceval.cli_simulate import parse_pool_runs, validation_table
from hpceval.errors import UserError
from hpceval.model import Measurement, Origin
from hpceval.simulate.validate import measured_figures, validate_run
from hpceval.store import Store, open_store
from tests.cli_helpers import invoke, one_line_error
from tests.test_simulate_contention import add_run

RING = {"pattern": "natural_ring", "ranks": 4, "nodes": 4, "ranks_per_node": 1}


def _latency(us: float, spread: float, origin: Origin, pattern: str = "natural_ring",
             size: int = 8) -> tuple[str, Measurement]:  # fmt: skip
    # Samples around `us`, whose median is `us`: a run's figure is the median of its samples.
    return ("mpibench-ring", Measurement(
        "mpibench", "latency", us * 1.5, "us", {**RING, "pattern": pattern, "size": size},
        (us - spread, us, us + spread), origin=origin))  # fmt: skip


def _three_rounds_and_a_projection(store: Store) -> tuple[list[int], int]:
    """Three emulated rounds (run medians 30, 36, 33 µs at 8 B; 50, 52, 51 at 64 B), then a
    projection of 34 µs (inside 30-36) and 60 µs (outside 50-52)."""
    rounds = [add_run(store, "emu", Origin.EMULATED, [
        _latency(small, 2.0, Origin.EMULATED), _latency(large, 1.0, Origin.EMULATED, size=64)])
        for small, large in ((30.0, 50.0), (36.0, 52.0), (33.0, 51.0))]  # fmt: skip
    projection = add_run(store, "emu", Origin.SIMULATED, [
        _latency(34.0, 0.0, Origin.SIMULATED), _latency(60.0, 0.0, Origin.SIMULATED, size=64),
        _latency(10.0, 0.0, Origin.SIMULATED, size=1024)])  # fmt: skip
    return rounds, projection


def test_each_figure_is_the_median_over_the_runs_with_their_spread(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "v.db")) as store:
        rounds, projection = _three_rounds_and_a_projection(store)
        checks, missing = validate_run(store, projection)
    assert missing == 1  # 1 KiB: nobody measured it
    large, small = checks  # sorted by figure: "size 64" before "size 8"
    assert (small.measured, small.low, small.high, small.runs) == (33.0, 30.0, 36.0, 3)
    assert small.run_values == (30.0, 36.0, 33.0)  # oldest run first
    assert small.error == pytest.approx(1 / 33) and small.inside_spread is True
    assert (large.measured, large.low, large.high) == (51.0, 50.0, 52.0)
    assert large.error == pytest.approx(9 / 51) and large.inside_spread is False
    assert small.source == "emulated runs " + ", ".join(map(str, rounds))


def test_the_latest_runs_only(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "v.db")) as store:
        rounds, projection = _three_rounds_and_a_projection(store)
        (_, latest), _ = validate_run(store, projection, pool_runs=1)
        (_, two), _ = validate_run(store, projection, pool_runs=2)
        with pytest.raises(UserError, match="0 is not a positive count"):
            measured_figures(store, "emu", pool_runs=0)
    # One run: its median, and no spread to be inside.
    assert (latest.measured, latest.runs, latest.inside_spread) == (33.0, 1, None)
    assert latest.source == f"emulated run {rounds[-1]}"
    assert (two.measured, two.low, two.high) == (34.5, 33.0, 36.0)
    assert two.inside_spread is True


def test_a_run_that_measured_a_figure_twice_pools_its_samples(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "v.db")) as store:
        twice = [_latency(30.0, 1.0, Origin.EMULATED), _latency(40.0, 1.0, Origin.EMULATED)]
        add_run(store, "emu", Origin.EMULATED, twice)
        figures = measured_figures(store, "emu")
    (ref,) = figures.values()
    # Samples 29, 30, 31, 39, 40, 41: the run's median is 35.
    assert ref.run_values == (35.0,) and ref.value == 35.0


def test_more_than_four_runs_are_named_by_count_and_range(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "v.db")) as store:
        ids = [add_run(store, "emu", Origin.EMULATED, [_latency(30.0 + i, 1.0, Origin.EMULATED)])
               for i in range(5)]  # fmt: skip
        (ref,) = measured_figures(store, "emu").values()
    assert ref.source == f"5 emulated runs, {ids[0]} to {ids[-1]}" and ref.value == 32.0


def _render(table: object) -> str:
    console = Console(record=True, width=250, color_system=None)
    console.print(table)
    return " ".join(console.export_text().split())


def test_the_table_says_how_many_projections_lie_inside_the_spread(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "v.db")) as store:
        _, projection = _three_rounds_and_a_projection(store)
        # A stored name that looks like markup is shown as it is.
        add_run(store, "emu", Origin.EMULATED, [_latency(5.0, 1.0, Origin.EMULATED, "[red]x")])
        add_run(store, "emu", Origin.SIMULATED, [_latency(5.0, 0.0, Origin.SIMULATED, "[red]x")])
        text = _render(validation_table(store, projection, None))
        latest = _render(validation_table(store, projection, None, pool_runs=1))
        marked = _render(validation_table(store, projection + 2, None))
    assert f"validation of run {projection}: 2 figures held against measurements" in text
    assert "1 of 2 inside the run-to-run spread; 1 without a measured counterpart" in text
    assert "30-36 us over 3 runs: inside" in text and "50-52 us over 3 runs: outside" in text
    assert "inside the run-to-run spread" not in latest and "1 run" in latest
    assert "pattern [red]x" in marked


def _npb_time(seconds: float, origin: Origin) -> tuple[str, Measurement]:
    params = {"kernel": "mg", "class": "A", "ranks": 4, "nodes": 4}
    return ("npb-mg", Measurement("npb", "time", seconds, "s", params, (seconds,),
                                  origin=origin))  # fmt: skip


def test_a_projection_replayed_three_times_is_held_by_its_median(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "v.db")) as store:
        for seconds in (1.0, 1.2, 1.1):
            add_run(store, "emu", Origin.EMULATED, [_npb_time(seconds, Origin.EMULATED)])
        # Three replays (hpceval simulate --repeat 3): one measurement each, same parameters.
        projection = add_run(store, "emu", Origin.SIMULATED, [
            _npb_time(s, Origin.SIMULATED) for s in (0.8, 1.32, 0.99)])
        (check,), missing = validate_run(store, projection)
        text = _render(validation_table(store, projection, None))
        single = add_run(store, "emu", Origin.SIMULATED, [_npb_time(0.9, Origin.SIMULATED)])
        (alone,), _ = validate_run(store, single)
    # One figure, not three: the replays' median against the rounds' median.
    assert missing == 0 and (check.measured, check.projected) == (1.1, 0.99)
    assert check.replays == (0.8, 1.32, 0.99)
    low, high = check.replay_errors or (0.0, 0.0)
    assert low == pytest.approx(0.8 / 1.1 - 1) and high == pytest.approx(1.32 / 1.1 - 1)
    assert "0.99 s (median of 3 replays, 0.8-1.32, -27.3% to +20.0%)" in text
    assert alone.replays == () and alone.replay_errors is None


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", "--validate", "²", "", "[b]1"])
def test_a_bad_count_of_runs_is_refused(text: str) -> None:
    with pytest.raises(UserError, match=r"--pool-runs: .* is not all or a positive count"):
        parse_pool_runs(text)


def test_counts_of_runs_accepted() -> None:
    assert parse_pool_runs("all") is None and parse_pool_runs("ALL") is None
    assert parse_pool_runs("3") == 3


def test_the_cli_refuses_a_bad_count_before_anything_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    common = ["simulate", "--profile", "ec2-cc1", "--bench", "mpibench", "--pattern",
              "allreduce", "--ranks", "4", "--db", str(db)]  # fmt: skip
    one_line_error(invoke(*common, "--validate", "--pool-runs", "-3"),
                   "--pool-runs: '-3' is not all or a positive count of runs")
    one_line_error(invoke(*common, "--pool-runs", "[red]2"),
                   "--pool-runs: '[red]2' is not all or a positive count of runs")
    one_line_error(invoke(*common, "--pool-runs", "2"),
                   "--pool-runs: a profile has no stored runs; it applies to --platform")
    assert not db.exists()


@pytest.mark.skipif(
    shutil.which("smpirun") is None, reason="smpirun (libsimgrid-dev) not installed (./setup.sh "
    "deps installs it)")  # fmt: skip
def test_simulate_calibrates_and_validates_on_the_median_of_three_rounds(tmp_path: Path) -> None:
    """The PingPong captured across netns-4x1-1gbe, stored as three emulated rounds (times
    as captured, x0.8, then x1.2): calibrated on the median over the rounds (the captured
    curve), the projection lies inside the rounds' spread at every size and within the
    calibration's 10 % of the median; with `--pool-runs 1`, another calibration, on the
    latest round (x1.2), and validated against that round alone."""
    from tests.test_simulate_token_bucket import DATA, GBE, store_emulated

    curve = json.loads((DATA / "netns-4x1-1gbe-pingpong.json").read_text())
    db = tmp_path / "emu.db"
    with open_store(str(db)) as store:
        for scale in (1.0, 0.8, 1.2):
            store_emulated(store, {**curve, "times_us": [t * scale for t in curve["times_us"]]},
                           GBE)  # fmt: skip
    # The bucket left to the factors: a curve scaled x0.8 is faster than the bucket's rate.
    args = ["simulate", "--platform", "emu", "--bench", "mpibench", "--pattern", "pingpong",
            "--ranks", "2", "--ppn", "1", "--sizes", "8,64KiB,1MiB", "--accept-curve",
            "--no-token-bucket", "--validate", "--db", str(db)]  # fmt: skip
    pooled = invoke(*args)
    assert pooled.exit_code == 0, pooled.output
    text = " ".join(pooled.output.split())
    assert "3 figures held against measurements" in text
    assert "3 of 3 inside the run-to-run spread" in text, text
    assert text.count("over 3 runs: inside") == 3 and "emulated runs 1, 2, 3" in text
    latest = invoke(*args, "--pool-runs", "1")
    assert latest.exit_code == 0, latest.output
    text = " ".join(latest.output.split())
    assert "reused calibration" not in text and "emulated run 3" in text
    assert "inside the run-to-run spread" not in text and text.count("1 run") == 3
    with open_store(str(db)) as store:
        first, second = sorted(store.calibrations(), key=lambda c: c.id)
        assert first.source_run_ids == (1, 2, 3) and second.source_run_ids == (3,)
        runs = sorted(r.id for r in store.runs() if r.origin is Origin.SIMULATED)
        (pooled_checks, _), (latest_checks, _) = (validate_run(store, runs[0]),
                                                  validate_run(store, runs[1], pool_runs=1))
    by_size = dict(zip(curve["sizes"], curve["times_us"], strict=True))
    for p, q, size in zip(pooled_checks, latest_checks, (1048576, 65536, 8), strict=True):
        assert p.measured == pytest.approx(by_size[size])  # the median of x1, x0.8, x1.2
        assert q.measured == pytest.approx(1.2 * by_size[size])
        assert abs(p.error) <= 0.10 and abs(q.error) <= 0.10
        assert q.projected == pytest.approx(1.2 * p.projected, rel=0.1)
