"""hpceval against a real PostgreSQL server (tests/postgres_server.py starts one).

Campaigns writing to it (two at once), the server going away in the middle of a campaign, and a
site's results carried from SQLite through an export file into PostgreSQL and back out.
(The store API itself runs on PostgreSQL in test_store.py: its `store` fixture covers both.)
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from typer.testing import CliRunner, Result

from hpceval.cli import app
from hpceval.store import RunBundle, open_store
from hpceval.transfer import merge

from .conftest import requires_mpi, write
from .test_cli import SMALL_SUITE, hpceval
from .test_transfer import Clock, bundles, fill_site

if TYPE_CHECKING:
    from .postgres_server import PostgresServer

pytest_plugins = ["tests.postgres_server"]  # postgres_server, postgres_url: a real server

ALPHA = """
name = "alpha"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, 1024, 65536]
ranks = [2]
budget_s = 0.03
warmup_s = 0.005
min_samples = 3
"""

# Single-rank collectives: the two campaigns share 2 cores without spinning ranks starving.
BETA = """
name = "beta"
[[benchmark]]
name = "mpibench"
patterns = ["allreduce", "bcast"]
sizes = [8, 256, 4096, 65536]
ranks = [1]
budget_s = 0.03
warmup_s = 0.005
min_samples = 3
"""

# About 0.2 s a point, 22 points: long enough to stop the server in the middle.
STEADY = """
name = "steady"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong", "pingping"]
sizes = "0..1KiB"
ranks = [2]
budget_s = 0.2
warmup_s = 0.005
min_samples = 200
max_samples = 200
"""


def in_process(*args: str) -> Result:
    """The CLI in this process (a fresh `python -m hpceval` costs seconds of imports)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def planned_points(url: str, run_id: int) -> set[tuple[str, str]]:
    with open_store(url, create=False) as store:
        return {(c.case_key, p) for c in store.cases(run_id) for p in c.description["points"]}


def committed_points(url: str) -> int:
    """Points committed so far, read by another client (0 before the schema exists)."""
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT count(DISTINCT (run_id, case_key, point_key)) FROM measurements"
            ).fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0


def wait_for_points(url: str, count: int, proc: subprocess.Popen[str], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while committed_points(url) < count:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, stderr = proc.communicate()
            pytest.fail(f"the campaign did not commit {count} points: {stderr}")
        time.sleep(0.05)


# --------------------------------------------------------------------------- campaigns


@requires_mpi
def test_two_campaigns_write_to_one_database_at_once(postgres_url: str, tmp_path: Path) -> None:
    suites = {
        "alpha": write(tmp_path / "alpha.toml", ALPHA),
        "beta": write(tmp_path / "beta.toml", BETA),
    }
    started = time.monotonic()
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "hpceval", "run", "--suite", str(suite), "--db", postgres_url],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        for name, suite in suites.items()
    }
    outputs = {name: proc.communicate(timeout=300) for name, proc in procs.items()}
    for name, proc in procs.items():
        assert proc.returncode == 0, outputs[name][1]
    print(f"two campaigns at once: {time.monotonic() - started:.1f} s")

    with open_store(postgres_url, create=False) as store:
        runs = {run.suite_name: run for run in store.runs()}
        assert sorted(runs) == ["alpha", "beta"]
        patterns = {"alpha": {"pingpong"}, "beta": {"allreduce", "bcast"}}
        for name, run in runs.items():
            assert run.status == "completed"
            stored = store.measurements(run.id)
            # Every planned point of this run, and nothing else, each metric exactly once.
            assert {(m.case_key, m.point_key) for m in stored} == planned_points(
                postgres_url, run.id
            )
            keys = Counter((m.case_key, m.point_key, m.measurement.metric) for m in stored)
            assert max(keys.values()) == 1
            assert {m.measurement.parameters["pattern"] for m in stored} == patterns[name]
            executions = {e.id: e for e in store.executions(run.id)}
            assert {e.status for e in executions.values()} == {"ok"}
            for m in stored:
                assert m.run_id == run.id
                assert m.execution_id in executions
                assert executions[m.execution_id].case_key == m.case_key
        alpha_cases = {c.case_key for c in store.cases(runs["alpha"].id)}
        assert alpha_cases.isdisjoint(c.case_key for c in store.cases(runs["beta"].id))

    listed = hpceval("runs", "--db", postgres_url, cwd=tmp_path, check=True).stdout
    assert "alpha" in listed and "beta" in listed and "completed" in listed
    shown = hpceval(
        "show", "--run", str(runs["beta"].id), "--db", postgres_url, cwd=tmp_path, check=True
    ).stdout
    assert "allreduce" in shown and "bcast" in shown and "64 KiB" in shown
    assert "MPI" in shown  # the provenance header


@requires_mpi
def test_the_database_going_away_mid_campaign(
    postgres_server: PostgresServer, postgres_url: str, tmp_path: Path
) -> None:
    suite = write(tmp_path / "steady.toml", STEADY)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpceval", "run", "--suite", str(suite), "--db", postgres_url],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        wait_for_points(postgres_url, 3, proc, limit_s=120)
        postgres_server.stop("fast")  # disconnects every client, as a server shutdown does
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        if not postgres_server.running():
            postgres_server.start()

    assert proc.returncode == 2, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"hpceval: error: {postgres_url}: the results database is unavailable ("
    ), stderr
    assert (
        "); what was committed before is kept; when it is back, continue with: "
        f"hpceval run --resume --db {postgres_url}"
        in last
    )
    assert "Traceback" not in stderr

    with open_store(postgres_url, create=False) as store:
        (run,) = store.runs()
        kept = {(m.case_key, m.point_key, m.measurement.metric): m.id for m in store.measurements()}
    assert len({key[:2] for key in kept}) >= 3
    assert len({key[:2] for key in kept}) < len(planned_points(postgres_url, run.id))
    # Found dead by the next command, the run is interrupted and resumable.
    listed = in_process("runs", "--db", postgres_url)
    assert listed.exit_code == 0 and "interrupted" in listed.stdout

    resumed = hpceval("run", "--resume", "--db", postgres_url, cwd=tmp_path, check=True)
    assert f"resuming run {run.id}" in resumed.stderr
    with open_store(postgres_url, create=False) as store:
        (run,) = store.runs()
        assert run.status == "completed"
        stored = store.measurements(run.id)
        executions = store.executions(run.id)
    keys = [(m.case_key, m.point_key, m.measurement.metric) for m in stored]
    assert len(keys) == len(set(keys)), "a point was measured twice"
    assert {key[:2] for key in keys} == planned_points(postgres_url, run.id)
    now = dict(zip(keys, (m.id for m in stored), strict=True))
    assert all(now[key] == kept_id for key, kept_id in kept.items())  # untouched
    assert "interrupted" in {e.status for e in executions}  # the one cut off
    assert "running" not in {e.status for e in executions}


# --------------------------------------------------------------------------- transfer


def records(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@requires_mpi
def test_a_site_campaign_exported_merged_centrally_and_exported_again(
    postgres_url: str, tmp_path: Path
) -> None:
    """The air-gapped site: measure into SQLite, export, import centrally, export again."""
    site = tmp_path / "site.db"
    suite = write(tmp_path / "small.toml", SMALL_SUITE)
    hpceval("run", "--suite", str(suite), "--db", str(site), cwd=tmp_path, check=True)
    exported = tmp_path / "site.jsonl.gz"
    result = in_process("db", "export", str(exported), "--db", str(site))
    assert result.exit_code == 0, result.output

    imported = in_process("db", "import", str(exported), "--db", postgres_url)
    assert imported.exit_code == 0, imported.output
    assert imported.stdout.splitlines()[-1] == f"1 run: 1 imported → {postgres_url}"
    again = tmp_path / "central.jsonl"
    result = in_process("db", "export", str(again), "--db", postgres_url)
    assert result.exit_code == 0, result.output

    first, second = records(exported), records(again)
    assert {k: v for k, v in first[0].items() if k not in ("exported", "source")} == {
        k: v for k, v in second[0].items() if k not in ("exported", "source")
    }
    assert second[0]["source"] == postgres_url
    assert first[1:] == second[1:]  # every record, every field, every sample
    assert json.dumps(first[1:]) == json.dumps(second[1:])  # and the same JSON types

    # Imported again, by file or straight from the site database: nothing is added.
    for source in (str(exported), str(site)):
        (outcome,) = merge([source], postgres_url)
        assert (outcome.action, outcome.detail) == ("skipped", "already here")
    with open_store(postgres_url) as central:
        assert len(central.runs()) == 1
    shown = in_process("show", "--db", postgres_url)
    assert shown.exit_code == 0 and "pingpong" in shown.stdout and "allreduce" in shown.stdout


def test_merging_between_sqlite_files_and_postgresql_databases(
    postgres_server: PostgresServer, postgres_url: str, tmp_path: Path
) -> None:
    """Edge values (NaN, infinities, unicode, running executions, missing statistics) and
    ids remapped on the way: SQLite → PostgreSQL → another PostgreSQL → SQLite."""
    site = tmp_path / "site.db"
    with open_store(str(site), clock=Clock()) as store:
        fill_site(store)
    original: dict[str, RunBundle] = bundles(str(site))

    with open_store(postgres_url) as central:  # a central database with a run of its own
        with open_store(str(tmp_path / "other.db"), clock=Clock(1e9)) as other:
            fill_site(other)
        merge([str(tmp_path / "other.db")], postgres_url)
        assert len(central.runs()) == 3
    items = merge([str(site)], postgres_url)
    assert [(item.action, item.run_id) for item in items] == [
        ("imported", 4),
        ("imported", 5),
        ("imported", 6),
    ]
    central_bundles = bundles(postgres_url)
    for uid, bundle in original.items():
        assert central_bundles[uid] == bundle

    second = postgres_server.create_database()
    assert [item.action for item in merge([postgres_url], second)] == ["imported"] * 6
    back = tmp_path / "back.db"
    assert [item.action for item in merge([second], str(back))] == ["imported"] * 6
    assert bundles(str(back)) == central_bundles
    assert [item.action for item in merge([str(site), second], str(back))] == ["skipped"] * 9


# --------------------------------------------------------------------------- the test server

HOLD_A_SERVER = """
import time
from pathlib import Path


def test_hold(postgres_server):
    Path(OUT).write_text(str(postgres_server.root))
    time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"  # a zombie has ended


def test_a_killed_session_leaves_no_server_behind(tmp_path: Path) -> None:
    """kill -9 of a pytest session that started the test server: its watchdog stops the
    server and removes its files (no fixture teardown runs)."""
    out = tmp_path / "root.txt"
    module = write(tmp_path / "test_hold.py", HOLD_A_SERVER.replace("OUT", repr(str(out))))
    plugins = ["-p", "no:cacheprovider", "-p", "tests.postgres_server"]
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", *plugins, str(module)],
        cwd=Path(__file__).parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while not out.exists():
            assert child.poll() is None, "the child session ended before starting its server"
            assert time.monotonic() < deadline, "the child session started no server"
            time.sleep(0.2)
        root = Path(out.read_text())
        postmaster = int((root / "data" / "postmaster.pid").read_text().split()[0])
        assert _running(postmaster)
        child.kill()
        child.wait()
        deadline = time.monotonic() + 30
        while (_running(postmaster) or root.exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(postmaster), "the server outlived its session"
        assert not root.exists(), "the server's files were left behind"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
