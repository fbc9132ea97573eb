"""A small study against the PostgreSQL server the test suite starts (tests/postgres_server.py):
the studies and study_runs tables, an interrupted study resumed, and its report."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from hpceval.cli import app
from hpceval.store import open_store

from .conftest import have_mpi, write
from .test_study import TINY

pytest_plugins = ["tests.postgres_server"]  # postgres_server, postgres_url: a real server

runner = CliRunner()


@pytest.mark.mpi
@pytest.mark.skipif(not have_mpi(), reason="needs mpicc and mpirun")
def test_a_study_runs_resumes_and_reports_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    recipe = write(tmp_path / "tiny.toml", TINY)
    result = runner.invoke(app, ["study", "run", str(recipe), "-p", "local", "--db", postgres_url])
    assert result.exit_code == 0, result.output
    with open_store(postgres_url) as store:
        (study,) = store.studies("tiny")
        (link,) = store.study_runs(study.id)
        assert study.status == "completed" and link.platform == "local"
        assert any("ranks [2, 64] -> [2]" in n for n in link.notes)
        assert study.options["platforms"] == ["local"] and study.recipe["name"] == "tiny"
    # As if killed half-way: one point's measurements gone, the run and the study interrupted.
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DELETE FROM measurements WHERE point_key LIKE '%%65536%%'")
        conn.execute("UPDATE run_cases SET status = 'pending'")
        conn.execute("UPDATE runs SET status = 'interrupted'")
        conn.execute("UPDATE studies SET status = 'interrupted'")
    resumed = runner.invoke(app, ["study", "run", str(recipe), "--resume", "--db", postgres_url])
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming study {study.id}" in resumed.output and "1 points left" in resumed.output
    with open_store(postgres_url) as store:
        assert store.study(study.id).status == "completed"
        sizes = {sm.measurement.parameters["size"] for sm in store.measurements(link.run_id)}
        assert sizes == {8, 65536}
        store.note_study(study.id, "local", "a note added later")
        assert store.study_runs(study.id)[0].notes[-1] == "a note added later"
    out = tmp_path / "tiny.md"
    report = runner.invoke(
        app, ["study", "report", str(recipe), "--db", postgres_url, "-o", str(out)]
    )
    assert report.exit_code == 0, report.output
    text = out.read_text()
    assert f"study run {study.id}" in text and "- local: a note added later" in text
    # The resumed point is in the table (a loaded host may leave it too few samples for an
    # interval: the answer then says so).
    assert any(line.startswith("| 65536 | ") and " us |" in line for line in text.splitlines())
    assert "**Does a 64 KiB message take longer than an 8 B one?** (local) " in text
