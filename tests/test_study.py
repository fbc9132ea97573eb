"""Study recipes (hpceval.study): validation of bad files, scaling down, question answering on
a synthetic store, report rendering, and a tiny recipe run end to end on local."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import hpceval
from hpceval.cli import app
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import Store, open_store
from hpceval.study.answers import answer, ratio_ci
from hpceval.study.published import published
from hpceval.study.recipe import Question, Recipe, Table, load_recipe, study_names, unavailable
from hpceval.study.report import render_report
from hpceval.study.scale import Capacity, scale_entry
from tests.conftest import have_mpi, write

runner = CliRunner()

TINY = """
name = "tiny"
title = "A tiny study"
source = "test"
reference = "none"
description = "ping-pong at two sizes"

[[part]]
name = "p2p"
title = "ping-pong"
[[part.benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, 65536]
ranks = [2, 64]
budget_s = 0.05
warmup_s = 0.01
min_samples = 3

[[part]]
name = "later"
title = "a benchmark hpceval lacks"
[[part.benchmark]]
name = "no-such-benchmark"

[[question]]
id = "size-costs"
text = "Does a 64 KiB message take longer than an 8 B one?"
quantity = "ping-pong latency at 64 KiB over 8 B"
of = { benchmark = "mpibench", metric = "latency", where = { pattern = "pingpong", size = 65536 } }
versus = { benchmark = "mpibench", metric = "latency", where = { pattern = "pingpong", size = 8 } }
yes_above = 1.0

[[table]]
title = "latency"
select = { benchmark = "mpibench", metric = "latency" }
by = ["size"]
"""


# --------------------------------------------------------------------------- validation


def test_every_shipped_recipe_and_the_published_figures_load() -> None:
    assert set(study_names()) == {"ec2-cc", "magellan", "csc", "aist"}
    for name in study_names():
        recipe = load_recipe(name).config
        assert recipe.question and recipe.table
        for q in recipe.question:
            assert q.published is None or published().ratio_value(q.published) is not None
        for t in recipe.table:
            assert t.published is None or published().find_figure(t.published) is not None
    # A published ratio is computed from the quoted figures: 61.6953 / 12.6114.
    value, cite = published().ratio_value("magellan-vm-vs-bare-10gbe-latency") or (0, "")
    assert value == pytest.approx(61.6953 / 12.6114) and "PMBS'11" in cite


@pytest.mark.parametrize(
    ("change", "field", "cause"),
    [
        (('title = "ping-pong"', 'title = "p"\ntitel = "x"'), "part[0].titel", "unknown field"),
        (
            ('patterns = ["pingpong"]', 'patterns = ["pingpnog"]'),
            "part[0].benchmark[0].patterns[0]",
            "natural_ring",
        ),
        (
            ("yes_above = 1.0", "yes_above = 1.0\nyes_below = 2.0"),
            "question[0].yes_below",
            "not both",
        ),
        (('name = "p2p"', 'name = "P2P part"'), "part[0].name", "pattern"),
    ],
)
def test_a_bad_recipe_names_file_and_field(
    tmp_path: Path, change: tuple[str, str], field: str, cause: str
) -> None:
    path = write(tmp_path / "bad.toml", TINY.replace(*change, 1))
    with pytest.raises(ConfigError) as info:
        load_recipe(str(path))
    assert info.value.source == str(path) and info.value.field == field
    assert cause in str(info.value)


def test_a_pending_part_tolerates_options_its_benchmark_does_not_take_yet(tmp_path: Path) -> None:
    pending = TINY.replace(
        'name = "no-such-benchmark"', 'name = "mpibench"\npatterns = ["not-yet"]'
    ).replace('title = "a benchmark hpceval lacks"', 'title = "later"\npending = "issue 99"')
    recipe = load_recipe(str(write(tmp_path / "p.toml", pending))).config
    assert unavailable(recipe) == {"later": ["mpibench: waits for issue 99"]}
    strict = pending.replace('pending = "issue 99"', "")
    with pytest.raises(ConfigError, match=r"part\[1\]\.benchmark\[0\]\.patterns"):
        load_recipe(str(write(tmp_path / "s.toml", strict)))


def test_a_missing_benchmark_is_listed_not_an_error(tmp_path: Path) -> None:
    recipe = load_recipe(str(write(tmp_path / "t.toml", TINY))).config
    assert unavailable(recipe) == {
        "later": ["benchmark 'no-such-benchmark' is not in this hpceval"]
    }


# --------------------------------------------------------------------------- scaling


def _platform(**fields: object) -> PlatformConfig:
    return PlatformConfig.model_validate({"name": "p", "nodes": 2, "cores_per_node": 4, **fields})


def test_ranks_placements_and_threads_are_cut_to_the_platform() -> None:
    platform = _platform()
    capacity = Capacity(nodes=2, cores_per_node=4, memory_per_node=None)
    scaled = scale_entry(
        {
            "name": "npb",
            "kernels": ["ep"],
            "ranks": [1, 2, 4, 8, 16],
            "ranks_per_node": [1, 8],
            "threads_per_rank": [1, 2, 8],
        },
        capacity,
        platform,
        smallest=False,
    )
    assert scaled.options is not None
    assert scaled.options["ranks"] == [1, 2, 4, 8]
    assert scaled.options["ranks_per_node"] == [1]
    assert scaled.options["threads_per_rank"] == [1, 2]
    assert any(
        "ranks [1, 2, 4, 8, 16] -> [1, 2, 4, 8] (8 ranks available)" in n for n in scaled.notes
    )
    # The user's cap, and an entry none of whose rank counts fit.
    capped = Capacity(nodes=2, cores_per_node=4, memory_per_node=None, max_ranks=2)
    nothing = scale_entry(
        {"name": "mpibench", "patterns": ["alltoall"], "ranks": [16, 32]},
        capped,
        platform,
        smallest=False,
    )
    assert nothing.options is None and "(2 ranks available)" in nothing.notes[0]


def test_smallest_applies_the_entrys_own_overrides_and_says_so() -> None:
    options = {
        "name": "npb",
        "kernels": ["ep"],
        "classes": ["C"],
        "ranks": [1],
        "smallest": {"classes": ["S"]},
    }
    capacity = Capacity(nodes=1, cores_per_node=2, memory_per_node=None)
    scaled = scale_entry(options, capacity, _platform(nodes=1), smallest=True)
    assert scaled.options == {"name": "npb", "kernels": ["ep"], "classes": ["S"], "ranks": [1]}
    assert scaled.notes == ["npb: classes ['C'] -> ['S'] (smallest sizes asked)"]
    full = scale_entry(options, capacity, _platform(nodes=1), smallest=False)
    assert full.options is not None and full.options["classes"] == ["C"] and not full.notes


def test_message_sizes_are_cut_to_the_memory_of_a_node() -> None:
    capacity = Capacity(nodes=1, cores_per_node=2, memory_per_node=2**30)  # 1 GiB
    # 1 GiB / (4 buffers x 2 cores) = 128 MiB: the largest message kept.
    ranged = scale_entry(
        {"name": "mpibench", "patterns": ["pingpong"], "sizes": "8..1GiB"},
        capacity,
        _platform(nodes=1),
        smallest=False,
    )
    assert ranged.options is not None and ranged.options["sizes"] == f"8..{2**27}"
    listed = scale_entry(
        {"name": "mpibench", "patterns": ["pingpong"], "sizes": [8, "64MiB", "1GiB"]},
        capacity,
        _platform(nodes=1),
        smallest=False,
    )
    assert listed.options is not None and listed.options["sizes"] == [8, "64MiB"]
    assert "up to 134217728 B" in listed.notes[0]


def test_npb_classes_step_down_to_what_the_memory_holds() -> None:
    platform = _platform(nodes=1, cores_per_node=2, memory_gb_per_node=0.5)
    capacity = Capacity.of(platform)
    scaled = scale_entry(
        {"name": "npb", "kernels": ["ft"], "classes": ["C"], "ranks": [1]},
        capacity,
        platform,
        smallest=False,
    )
    assert scaled.options is not None
    assert scaled.options["classes"] in (["A"], ["W"], ["S"])
    assert scaled.notes[0].startswith("npb: classes ['C'] -> ['B'] (ft class C")


def test_fio_files_shrink_to_the_free_disk(tmp_path: Path) -> None:
    capacity = Capacity(nodes=1, cores_per_node=2, memory_per_node=None)
    scaled = scale_entry(
        {"name": "fio", "directory": str(tmp_path), "size": "1000000GiB", "numjobs": 8},
        capacity,
        _platform(nodes=1),
        smallest=False,
    )
    assert scaled.options is not None
    size_mib = int(scaled.options["size"].removesuffix("MiB"))
    assert 4 <= size_mib * 8 * 2**20 <= 0.5 * __import__("shutil").disk_usage(tmp_path).free
    assert "x 8 jobs ->" in scaled.notes[0]


# --------------------------------------------------------------------------- answers


def _synthetic_store(path: Path, latencies: dict[str, list[float]]) -> tuple[Store, dict[str, int]]:
    store = open_store(str(path))
    env = store.add_environment(Environment(facts={}, fingerprint="e"))
    runs = {}
    for platform, samples in latencies.items():
        run_id = store.create_run(
            suite_name="s",
            suite_config={},
            platform_id=store.add_platform(platform, {}),
            environment_id=env,
            launcher="local",
            cases=[("k", "mpibench", {})],
            hpceval_version=hpceval.__version__,
            git_revision=None,
            origin=Origin.MEASURED,
            host="h",
            pid=1,
        )
        m = Measurement(
            "mpibench",
            "latency",
            float(np.mean(samples)),
            "us",
            {"pattern": "pingpong", "size": 8, "pair": "inter-node"},
            samples=tuple(samples),
        )
        store.add_measurement(run_id, None, "k", "size=8", m)
        runs[platform] = run_id
    return store, runs


QUESTION = Question.model_validate(
    {
        "id": "net",
        "text": "Is the network the main overhead?",
        "quantity": "inter-node latency",
        "of": {
            "benchmark": "mpibench",
            "metric": "latency",
            "where": {"pattern": "pingpong", "size": 8},
        },
        "yes_above": 2.0,
        "published": "magellan-vm-vs-bare-10gbe-latency",
    }
)


def test_a_question_is_answered_with_its_interval(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    store, runs = _synthetic_store(
        tmp_path / "r.db",
        {
            "bare": list(10 + rng.normal(0, 0.2, 30)),
            "vm": list(52 + rng.normal(0, 1.0, 30)),
            "same": list(10.5 + rng.normal(0, 3.0, 30)),
        },
    )
    answers = {a.platform: a for a in answer(store, QUESTION, runs, "bare")}
    vm = answers["vm"]
    assert vm.verdict == "yes" and vm.low is not None and vm.high is not None
    assert vm.low < 5.2 < vm.high and vm.high - vm.low < 0.5
    assert vm.text.startswith("Yes: inter-node latency 5.2")
    assert "published 4.89×" in vm.text
    assert answers["same"].verdict == "no"  # about 1x: the interval lies below 2
    store.close()


def test_too_little_data_is_not_answered_with_the_reason(tmp_path: Path) -> None:
    store, runs = _synthetic_store(tmp_path / "r.db", {"bare": [10.0], "vm": [50.0, 51.0]})
    (only,) = answer(store, QUESTION, runs, "bare")
    assert only.verdict == "not answered" and "too few samples" in only.text
    (alone,) = answer(store, QUESTION, {"bare": runs["bare"]}, "bare")
    assert alone.text.startswith("not answered: only the baseline")
    other = QUESTION.model_copy(
        update={"of": QUESTION.of.model_copy(update={"benchmark": "no-such-benchmark"})}
    )
    (missing,) = answer(store, other, runs, "bare")
    assert "benchmark 'no-such-benchmark' is not in this hpceval yet" in missing.text
    store.close()


def test_a_ratio_interval_straddling_the_threshold_is_inconclusive(tmp_path: Path) -> None:
    ratio, low, high = ratio_ci(np.array([1.0, 3.0, 2.0, 4.0]), np.array([1.0, 1.2, 0.9, 1.1]))
    assert low < ratio < high and low < 2.0 < high


# --------------------------------------------------------------------------- report


def test_the_report_overlays_published_figures_and_answers(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    store, runs = _synthetic_store(
        tmp_path / "r.db",
        {"bare": list(10 + rng.normal(0, 0.2, 20)), "vm": list(50 + rng.normal(0, 1, 20))},
    )
    recipe = Recipe.model_validate(
        {
            "name": "syn",
            "title": "Synthetic",
            "source": "Magellan",
            "reference": "ref",
            "description": "d",
            "part": [{"name": "p", "title": "t", "benchmark": [{"name": "mpibench"}]}],
            "question": [QUESTION.model_dump()],
            "table": [
                Table.model_validate(
                    {
                        "title": "latency at 8 B",
                        "by": ["pattern", "pair"],
                        "select": {
                            "benchmark": "mpibench",
                            "metric": "latency",
                            "where": {"size": 8},
                        },
                        "published": "magellan-hpcc-latency",
                    }
                ).model_dump()
            ],
        }
    )
    study_id = store.create_study("syn", {}, "bare", {"platforms": ["bare", "vm"]})
    for platform, run_id in runs.items():
        store.add_study_run(study_id, run_id, platform, [f"{platform}: scaled down"])
    store.set_study_status(study_id, "completed")
    text = render_report(store, store.study(study_id), recipe)
    assert "- bare: bare: scaled down" in text
    row = next(line for line in text.splitlines() if line.startswith("| pingpong | inter-node"))
    assert "10 us" in row.replace("10.0", "10").replace("9.9", "10") or " us |" in row
    assert "| 61.7 us |" in row and "| 12.61 us |" in row  # published, beside the user's
    assert "**Is the network the main overhead?** (vm) Yes: inter-node latency 5" in text
    store.close()


# --------------------------------------------------------------------------- end to end


@pytest.mark.mpi
@pytest.mark.skipif(not have_mpi(), reason="needs mpicc and mpirun")
def test_a_tiny_recipe_runs_on_local_and_reports(tmp_path: Path) -> None:
    recipe = write(tmp_path / "tiny.toml", TINY)
    db = str(tmp_path / "r.db")
    result = runner.invoke(app, ["study", "run", str(recipe), "-p", "local", "--db", db])
    assert result.exit_code == 0, result.output
    assert "benchmark 'no-such-benchmark' is not in this hpceval; left out" in result.output
    assert "ranks [2, 64] -> [2]" in result.output
    with open_store(db) as store:
        (study,) = store.studies("tiny")
        assert study.status == "completed" and study.baseline == "local"
        (link,) = store.study_runs(study.id)
        assert link.platform == "local" and any("ranks [2, 64]" in n for n in link.notes)
        assert {sm.measurement.parameters["size"] for sm in store.measurements(link.run_id)} == {
            8,
            65536,
        }
    report = runner.invoke(app, ["study", "report", str(recipe), "--db", db])
    assert report.exit_code == 0, report.output
    assert "**Does a 64 KiB message take longer than an 8 B one?** (local)" in report.output
    assert "- tables and figures: median (median of samples" in report.output
    mean = runner.invoke(app, ["study", "report", str(recipe), "--db", db, "--statistic", "mean"])
    assert mean.exit_code == 0 and "- tables and figures: mean (mean of samples" in mean.output
    bad_statistic = runner.invoke(app, ["study", "report", str(recipe), "--db", db,
                                        "--statistic", "mode"])  # fmt: skip
    assert bad_statistic.exit_code == 2 and "--statistic 'mode'" in bad_statistic.output
    # Nothing is left to resume, and a baseline that is not among the platforms is refused.
    resumed = runner.invoke(app, ["study", "run", str(recipe), "--resume", "--db", db])
    assert resumed.exit_code == 2 and "no unfinished study run of 'tiny'" in resumed.output
    bad = runner.invoke(
        app, ["study", "run", str(recipe), "-p", "local", "--baseline", "x", "--db", db]
    )
    assert bad.exit_code == 2 and "--baseline 'x' is not one of" in bad.output


def test_a_schema_4_database_gains_the_study_tables(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    open_store(str(path)).close()
    with sqlite3.connect(path) as conn:  # back to version 4: no study tables
        conn.execute("DROP TABLE study_runs")
        conn.execute("DROP TABLE studies")
        conn.execute("UPDATE schema_info SET version = 4")
    with open_store(str(path)) as store:
        assert store.upgraded_from == 4
        study_id = store.create_study("x", {}, "local", {"platforms": ["local"]})
        assert [s.id for s in store.studies("x")] == [study_id]


@pytest.mark.mpi
@pytest.mark.skipif(not have_mpi(), reason="needs mpicc and mpirun")
def test_an_interrupted_study_resumes_its_run(tmp_path: Path) -> None:
    recipe = write(tmp_path / "tiny.toml", TINY)
    db = str(tmp_path / "r.db")
    assert runner.invoke(app, ["study", "run", str(recipe), "--db", db]).exit_code == 0
    with open_store(db) as store:
        (study,) = store.studies("tiny")
        (link,) = store.study_runs(study.id)
        # As if killed half-way: one point's measurements gone, the run and study interrupted.
        with sqlite3.connect(tmp_path / "r.db") as conn:
            conn.execute("DELETE FROM measurements WHERE point_key LIKE '%65536%'")
            conn.execute("UPDATE run_cases SET status = 'pending'")
            conn.execute("UPDATE runs SET status = 'interrupted'")
            conn.execute("UPDATE studies SET status = 'interrupted'")
    result = runner.invoke(app, ["study", "run", str(recipe), "--resume", "--db", db])
    assert result.exit_code == 0, result.output
    assert f"resuming study {study.id}" in result.output and "1 points left" in result.output
    with open_store(db) as store:
        assert store.study(study.id).status == "completed"
        sizes = {sm.measurement.parameters["size"] for sm in store.measurements(link.run_id)}
        assert sizes == {8, 65536}
