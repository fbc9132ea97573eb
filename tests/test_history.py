"""History and change points: detection on planted series (found at the right run) and on
stationary noise (false alarms near the documented rate), the regression gate, and the
commands on synthetic stored histories and on real runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hpceval.cli import app
from hpceval.history import (
    DEFAULT_ALPHA,
    check_against_history,
    detect,
    load_history,
    ratio_interval,
    series_changes,
    utc,
)
from hpceval.model import Environment, Measurement, Origin, Status
from hpceval.provenance import fingerprint
from hpceval.statistics import describe
from hpceval.store import open_store


def test_a_planted_step_is_found_at_its_run() -> None:
    rng = np.random.default_rng(7)
    series = np.r_[rng.normal(100, 3, 37), rng.normal(112, 3, 63)]
    (change,) = detect(series)
    assert change.index == 37
    assert change.ratio_low < change.ratio < change.ratio_high
    assert change.ratio == pytest.approx(1.12, abs=0.03)
    assert change.p_value <= DEFAULT_ALPHA


def test_two_planted_steps_are_both_found() -> None:
    rng = np.random.default_rng(3)
    series = np.r_[rng.normal(50, 1, 20), rng.normal(45, 1, 20), rng.normal(55, 1, 20)]
    assert [c.index for c in detect(series)] == [20, 40]


def test_stationary_noise_alarms_at_about_alpha() -> None:
    # 300 stationary series of 30 runs, heavy-tailed noise: the permutation test holds its
    # level whatever the distribution. Binomial(300, 0.01): 9 or more happens < 0.1 %.
    rng = np.random.default_rng(11)
    alarms = sum(
        bool(detect(100 + rng.standard_t(3, 30), seed=i, permutations=199)) for i in range(300)
    )
    assert alarms <= 9


def test_constant_and_short_series_have_no_change() -> None:
    assert detect([5.0] * 20) == []
    assert detect([1.0, 2.0, 3.0, 4.0, 5.0]) == []
    with pytest.raises(ValueError, match="non-finite"):
        detect([1.0, float("nan"), 2.0])


def test_ratio_interval_of_a_known_shift() -> None:
    before, after = np.full(10, 100.0), np.full(10, 110.0)
    before[::2], after[::2] = 101.0, 111.0
    ratio, low, high = ratio_interval(before, after)
    assert low < ratio < high and ratio == pytest.approx(110.5 / 100.5, rel=1e-3)


# --------------------------------------------------------------------------- stored histories


def stored_history(
    path: Path, values: list[float], *, kernel_change_at: int | None = None, unit: str = "us"
) -> str:
    """A database of runs of platform `cluster`, one a day, one 8 B ping-pong point each."""
    clock = iter(1_767_225_600.0 + 86400.0 * i for i in range(10 * len(values) + 10))
    db = str(path / "history.db")
    store = open_store(db, clock=lambda: next(clock))
    platform_id = store.add_platform("cluster", {"name": "cluster"})
    rng = np.random.default_rng(5)
    for i, value in enumerate(values):
        kernel = "6.1" if kernel_change_at is None or i < kernel_change_at else "6.6"
        facts = {"os": {"kernel": kernel}, "mpi": {"version": "4.1.4"}}
        env_id = store.add_environment(Environment(facts=facts, fingerprint=fingerprint(facts)))
        case = "mpibench:pingpong:np=2"
        run_id = store.create_run(
            suite_name="p2p",
            suite_config={},
            platform_id=platform_id,
            environment_id=env_id,
            launcher="local",
            cases=[(case, "mpibench", {})],
            hpceval_version="0.1.0",
            git_revision=None,
            origin=Origin.MEASURED,
            host="h",
            pid=1,
        )
        samples = tuple(value * (1 + 0.01 * rng.standard_normal(5)))
        stats = describe(samples)
        m = Measurement(
            benchmark="mpibench",
            metric="latency",
            value=stats.mean,
            unit=unit,
            parameters={"pattern": "pingpong", "size": 8},
            samples=samples,
            statistics=stats,
        )
        store.add_measurement(run_id, None, case, "size=8", m)
        store.set_run_status(run_id, Status.COMPLETED)
    store.close()
    return db


def test_stored_history_finds_the_change_and_the_kernel_that_moved(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    values = list(np.r_[rng.normal(2.0, 0.05, 15), rng.normal(2.6, 0.05, 15)])
    db = stored_history(tmp_path, values, kernel_change_at=15)
    with open_store(db, create=False) as store:
        (series,) = load_history(store, "cluster")
    assert len(series.points) == 30
    (change,) = series_changes([series])
    assert change.change.index == 15 and change.run_id == series.points[15].run_id
    assert change.changed == {"kernel": ("6.1", "6.6")}
    assert change.worse  # latency went up
    assert change.date == utc(series.points[15].started)
    assert change.date.startswith("2026-")

    result = CliRunner().invoke(
        app, ["history", "cluster", "--db", db, "--json", str(tmp_path / "h.json")]
    )
    assert result.exit_code == 0, result.output
    assert "change points" in result.output and "level moved" in result.output
    document = json.loads((tmp_path / "h.json").read_text())
    assert len(document["series"][0]["runs"]) == 30
    (stored_change,) = document["changes"]
    assert stored_change["changed"] == {"kernel": ["6.1", "6.6"]}


def test_gate_fails_a_regressed_newest_run_only(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    steady = list(rng.normal(2.0, 0.04, 20))
    ok_db = stored_history(tmp_path, [*steady, 2.02])
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad_db = stored_history(bad_dir, [*steady, 2.5])
    runner = CliRunner()
    ok = runner.invoke(app, ["check", "--against", "history", "-p", "cluster", "--db", ok_db])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["check", "--against", "history", "-p", "cluster", "--db", bad_db])
    assert bad.exit_code == 1, bad.output
    assert "REGRESSION" in bad.output
    # A worsening below --min-effect passes however significant it is.
    lenient = runner.invoke(
        app,
        ["check", "--against", "history", "-p", "cluster", "--db", bad_db, "--min-effect", "0.5"],
    )
    assert lenient.exit_code == 0, lenient.output


def test_gate_direction_follows_the_unit(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    db = stored_history(tmp_path, [*rng.normal(1000, 10, 12), 1300.0], unit="MB/s")
    with open_store(db, create=False) as store:
        series = load_history(store, "cluster")
    (result,), _ = check_against_history(series)
    assert result.effect < 0 and not result.regressed  # more bandwidth is better


def test_history_errors_name_the_cause(tmp_path: Path) -> None:
    db = stored_history(tmp_path, [1.0, 1.1, 1.0])
    runner = CliRunner()
    unknown = runner.invoke(app, ["history", "nowhere", "--db", db])
    assert unknown.exit_code == 2 and "no completed run of platform 'nowhere'" in unknown.output
    short = runner.invoke(app, ["check", "--against", "history", "-p", "cluster", "--db", db])
    assert short.exit_code == 2 and "nothing to judge yet" in short.output
    wrong = runner.invoke(app, ["check", "--against", "yesterday", "-p", "cluster", "--db", db])
    assert wrong.exit_code == 2


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")
def test_history_of_real_runs(tmp_path: Path) -> None:
    db = str(tmp_path / "real.db")
    runner = CliRunner()
    for _ in range(4):
        result = runner.invoke(app, ["run", "-p", "local", "-s", "smoke", "--db", db])
        assert result.exit_code == 0, result.output
    history = runner.invoke(app, ["history", "local", "--db", db, "--metric", "latency"])
    assert history.exit_code == 0, history.output
    assert "4 runs" in history.output
    gate = runner.invoke(app, ["check", "--against", "history", "-p", "local", "--db", db])
    assert gate.exit_code in (0, 1), gate.output
    assert "newest run against the" in " ".join(gate.output.split())


def test_report_section_shows_the_series_and_its_change(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    values = list(np.r_[rng.normal(3.0, 0.05, 10), rng.normal(2.4, 0.05, 10)])
    db = stored_history(tmp_path, values)
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", "--db", db, "--out", str(out)])
    assert result.exit_code == 0, result.output
    changes = (out / "tables" / "history_changes.csv").read_text().splitlines()
    assert len(changes) == 2 and changes[1].startswith("cluster,")
    assert "History and change points" in (out / "index.html").read_text()
