"""The results store: round trips, dedupe, runs, cases, executions.

Schema versions are in test_store_schema.py; refused databases, locks and concurrent writers
in test_store_durability.py.

Tests taking the `store` or `database` fixture run twice: on an SQLite file and on a real
PostgreSQL server (tests/postgres_server.py); the others are about SQLite files.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import hpceval
from hpceval.errors import UserError
from hpceval.model import (
    Environment,
    ExecutionRecord,
    ExecutionStatus,
    Measurement,
    Origin,
    Statistics,
    Status,
)
from hpceval.store import INDEXED_FACTS, CaseStatus, Store, database_url, open_store
from hpceval.store.schema import environments

pytest_plugins = ["tests.postgres_server"]  # the postgres_url fixture (a real server)

CASES = [
    ("pingpong/2x1", "mpibench", {"pattern": "pingpong", "ranks": 2}),
    ("allreduce/2x1", "mpibench", {"pattern": "allreduce", "ranks": 2}),
]


class FakeClock:
    """A clock that moves one second per reading."""

    def __init__(self, start: float = 1_700_000_000.0):
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, db_path: Path) -> str:
    """An empty results database: an SQLite file, or a database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return str(db_path)
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(database: str) -> Iterator[Store]:
    with open_store(database, clock=FakeClock()) as opened:
        yield opened


def new_run(store: Store, *, host: str = "node1", pid: int = 4242) -> int:
    platform_id = store.add_platform("laptop", {"launcher": "local", "slots": 4})
    environment_id = store.add_environment(
        Environment(facts={"cpu": {"model": "Test CPU"}}, fingerprint="env-1")
    )
    return store.create_run(
        suite_name="smoke",
        suite_config={"benchmarks": ["mpibench"], "budget_s": 1.0},
        platform_id=platform_id,
        environment_id=environment_id,
        launcher="local",
        cases=CASES,
        hpceval_version=hpceval.__version__,
        git_revision="abc123",
        origin=Origin.MEASURED,
        host=host,
        pid=pid,
    )


def latency(value: float = 1.5, **details: Any) -> Measurement:
    return Measurement(
        benchmark="mpibench",
        metric="latency",
        value=value,
        unit="us",
        parameters={"pattern": "pingpong", "size": 8, "ranks": 2},
        samples=(value,),
        details=details,
    )


def test_measurement_round_trips_exactly(store: Store) -> None:
    run_id = new_run(store)
    samples = (0.1 + 0.2, 1e-300, 5e-324, 1.7976931348623157e308, 3.0)
    stats = Statistics(
        count=5,
        minimum=min(samples),
        maximum=max(samples),
        median=0.30000000000000004,
        mean=0.1 + 0.2,
        stdev=0.0,
        ci_low=0.25,
        ci_high=0.35,
        confidence=0.99,
        extra={"outliers": 1.0, "upper": math.inf, "lower": -math.inf},
    )
    original = Measurement(
        benchmark="mpibench",
        metric="bandwidth",
        value=0.1 + 0.2,
        unit="MB/s",
        parameters={"pattern": "pingpong", "size": 1 << 22, "eager": True, "scale": 0.5},
        samples=samples,
        statistics=stats,
        statistic="median",
        origin=Origin.SIMULATED,
        details={"loops": 256, "stop": "ci", "rates": [1.5, math.inf], "nested": {"a": None}},
    )
    execution_id = store.start_execution(run_id, "pingpong/2x1", "mpibench", ["mpibench"], {}, 1.0)
    stored_id = store.add_measurement(
        run_id, execution_id, "pingpong/2x1", "size=4194304", original
    )

    (stored,) = store.measurements(run_id)
    assert stored.id == stored_id
    assert (stored.run_id, stored.execution_id) == (run_id, execution_id)
    assert (stored.case_key, stored.point_key) == ("pingpong/2x1", "size=4194304")
    assert stored.measurement == original
    assert stored.measurement.samples == samples
    assert all(type(sample) is float for sample in stored.measurement.samples)
    assert stored.measurement.origin is Origin.SIMULATED
    assert isinstance(stored.measurement.statistics, Statistics)


def test_nan_survives_the_round_trip(store: Store) -> None:
    run_id = new_run(store)
    original = Measurement(
        benchmark="mpibench",
        metric="latency",
        value=2.0,
        unit="us",
        samples=(2.0,),
        statistics=Statistics(2, 1.0, 3.0, 2.0, 2.0, math.nan, math.nan, math.nan),
        details={"skew": math.nan},
    )
    store.add_measurement(run_id, None, "pingpong/2x1", "p", original)
    (stored,) = store.measurements(run_id)
    assert stored.measurement.statistics is not None
    assert math.isnan(stored.measurement.statistics.stdev)
    assert math.isnan(stored.measurement.details["skew"])
    assert stored.execution_id is None


def test_measurement_without_statistics_stays_none(store: Store) -> None:
    run_id = new_run(store)
    store.add_measurement(run_id, None, "pingpong/2x1", "p", latency())
    (stored,) = store.measurements(run_id)
    assert stored.measurement == latency()
    assert stored.measurement.statistics is None


def test_measurements_filter_by_run_benchmark_and_metric(store: Store) -> None:
    first, second = new_run(store), new_run(store)
    store.add_measurement(first, None, "pingpong/2x1", "a", latency(1.0))
    store.add_measurement(second, None, "pingpong/2x1", "a", latency(2.0))
    bandwidth = Measurement(benchmark="mpibench", metric="bandwidth", value=9.0, unit="MB/s")
    store.add_measurement(second, None, "pingpong/2x1", "a", bandwidth)

    assert [s.measurement.value for s in store.measurements()] == [1.0, 2.0, 9.0]
    assert [s.measurement.value for s in store.measurements(second)] == [2.0, 9.0]
    assert [s.measurement.value for s in store.measurements(metric="latency")] == [1.0, 2.0]
    assert store.measurements(second, benchmark="mpibench", metric="bandwidth")[0].id == 3
    assert store.measurements(benchmark="osu") == []


def test_platform_is_deduplicated_on_name_and_config(store: Store) -> None:
    first = store.add_platform("cloud", {"nodes": 2, "launcher": {"name": "srun", "args": []}})
    # Same content, other key order: same canonical JSON, same row.
    again = store.add_platform("cloud", {"launcher": {"args": [], "name": "srun"}, "nodes": 2})
    other_config = store.add_platform("cloud", {"nodes": 4, "launcher": {"name": "srun"}})
    other_name = store.add_platform("cloud-b", {"nodes": 2, "launcher": {"name": "srun"}})
    assert first == again
    assert len({first, other_config, other_name}) == 3
    assert store.platform_config(first) == (
        "cloud",
        {"nodes": 2, "launcher": {"name": "srun", "args": []}},
    )


def test_environment_is_deduplicated_on_fingerprint(store: Store) -> None:
    facts = {
        "cpu": {"model": "AMD EPYC 7763"},
        "virtualization": {"kind": "kvm", "vm": True},
        "mpi": {"implementation": "Open MPI", "version": "4.1.4"},
        "hpceval": {"version": "0.1.0"},
    }
    first = store.add_environment(Environment(facts=facts, fingerprint="f1"))
    assert store.add_environment(Environment(facts=facts, fingerprint="f1")) == first
    second = store.add_environment(Environment(facts={"cpu": {}}, fingerprint="f2"))
    assert second != first
    assert store.environment(first) == facts

    # The indexed columns hold the facts named by INDEXED_FACTS (missing ones are NULL).
    columns = [environments.c[column] for column in INDEXED_FACTS]
    with store._engine.connect() as conn:
        rows = conn.execute(sa.select(*columns).order_by(environments.c.id)).all()
    assert [tuple(row) for row in rows] == [
        ("AMD EPYC 7763", "kvm", "Open MPI", "4.1.4", "0.1.0"),
        (None, None, None, None, None),
    ]


def test_run_row_and_cases(store: Store) -> None:
    run_id = new_run(store)
    run = store.run(run_id)
    assert run.id == run_id
    assert run.platform_name == "laptop"
    assert run.status is Status.RUNNING
    assert run.origin is Origin.MEASURED
    assert run.suite_config == {"benchmarks": ["mpibench"], "budget_s": 1.0}
    assert (run.host, run.pid, run.git_revision, run.ended, run.note) == (
        "node1",
        4242,
        "abc123",
        None,
        None,
    )
    assert len(run.uid) == 36
    assert [(c.ordinal, c.case_key, c.benchmark, c.status) for c in store.cases(run_id)] == [
        (0, "pingpong/2x1", "mpibench", CaseStatus.PENDING),
        (1, "allreduce/2x1", "mpibench", CaseStatus.PENDING),
    ]
    assert store.cases(run_id)[1].description == {"pattern": "allreduce", "ranks": 2}

    store.set_case_status(run_id, "allreduce/2x1", "done")
    store.set_case_status(run_id, "pingpong/2x1", CaseStatus.FAILED)
    assert [c.status for c in store.cases(run_id)] == [CaseStatus.FAILED, CaseStatus.DONE]
    with pytest.raises(ValueError, match="no case 'bcast/2x1'"):
        store.set_case_status(run_id, "bcast/2x1", "done")
    with pytest.raises(ValueError):
        store.set_case_status(run_id, "pingpong/2x1", "finished")


def test_duplicate_case_keys_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="duplicate case keys"):
        store.create_run(
            suite_name="s",
            suite_config={},
            platform_id=store.add_platform("p", {}),
            environment_id=store.add_environment(Environment(facts={}, fingerprint="e")),
            launcher="local",
            cases=[CASES[0], CASES[0]],
            hpceval_version="0.1.0",
            git_revision=None,
            origin=Origin.MEASURED,
            host="h",
            pid=1,
        )
    assert store.runs() == []


def test_unknown_run_is_a_user_error(store: Store) -> None:
    with pytest.raises(UserError) as caught:
        store.run(7)
    assert str(caught.value) == f"no run with id 7 in {store.url}"
    with pytest.raises(UserError, match="no run with id 7"):
        store.set_run_status(7, Status.COMPLETED)


def test_runs_newest_first_and_latest_run(store: Store) -> None:
    assert store.latest_run() is None
    first, second = new_run(store), new_run(store)
    store.set_run_status(first, Status.INTERRUPTED)
    assert [run.id for run in store.runs()] == [second, first]
    assert store.latest_run() == store.run(second)
    latest_interrupted = store.latest_run(statuses={Status.INTERRUPTED, Status.FAILED})
    assert latest_interrupted is not None
    assert latest_interrupted.id == first
    assert store.latest_run(statuses=[Status.COMPLETED]) is None


def test_run_status_ended_and_claim(store: Store) -> None:
    run_id = new_run(store)
    store.set_run_status(run_id, Status.COMPLETED, ended=123.0)
    assert (store.run(run_id).status, store.run(run_id).ended) == (Status.COMPLETED, 123.0)

    store.set_run_status(run_id, Status.INTERRUPTED)  # ended defaults to now (the fake clock)
    interrupted = store.run(run_id)
    assert interrupted.ended is not None
    assert interrupted.ended > interrupted.started

    store.claim_run(run_id, host="node2", pid=99)
    claimed = store.run(run_id)
    assert (claimed.status, claimed.host, claimed.pid, claimed.ended) == (
        Status.RUNNING,
        "node2",
        99,
        None,
    )
    with pytest.raises(UserError, match="still running \\(pid 99 on node2\\)"):
        store.claim_run(run_id, host="node3", pid=100)
    with pytest.raises(UserError, match="no run with id 999"):
        store.claim_run(999, host="node3", pid=100)


def test_execution_start_and_finish(store: Store) -> None:
    run_id = new_run(store)
    execution_id = store.start_execution(
        run_id, "pingpong/2x1", "mpibench", ["mpirun", "-n", "2", "mpibench"], {"X": "1"}, 10.0
    )
    (running,) = store.executions(run_id)
    assert (running.id, running.status, running.ended, running.argv) == (
        execution_id,
        "running",
        None,
        ("mpirun", "-n", "2", "mpibench"),
    )
    record = ExecutionRecord(
        case_key="pingpong/2x1",
        benchmark="mpibench",
        argv=("mpirun", "-n", "2", "mpibench"),
        env={"X": "1"},
        status=ExecutionStatus.FAILED,
        exit_code=2,
        started=10.0,
        ended=12.5,
        stdout_tail='{"record":"error"}\n',
        stderr_tail="mpibench: error: too few ranks\n",
        error="mpibench: error: too few ranks",
    )
    store.finish_execution(execution_id, record)
    (finished,) = store.executions(run_id)
    assert finished.status is ExecutionStatus.FAILED
    assert (finished.exit_code, finished.started, finished.ended) == (2, 10.0, 12.5)
    assert (finished.stdout_tail, finished.stderr_tail, finished.error) == (
        record.stdout_tail,
        record.stderr_tail,
        record.error,
    )
    assert finished.env == {"X": "1"}
    with pytest.raises(ValueError, match="no execution"):
        store.finish_execution(execution_id + 1, record)


def test_measurement_of_an_unknown_case_is_refused(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(sa.exc.IntegrityError):
        store.add_measurement(run_id, None, "no-such-case", "p", latency())


def test_completed_points(store: Store) -> None:
    run_id = new_run(store)
    other_run = new_run(store)
    assert store.completed_points(run_id) == set()
    store.add_measurement(run_id, None, "pingpong/2x1", "size=0", latency())
    # Two metrics of one point count once.
    store.add_measurement(run_id, None, "pingpong/2x1", "size=0", latency(2.0))
    store.add_measurement(run_id, None, "allreduce/2x1", "size=4", latency())
    store.add_measurement(other_run, None, "pingpong/2x1", "size=8", latency())
    assert store.completed_points(run_id) == {
        ("pingpong/2x1", "size=0"),
        ("allreduce/2x1", "size=4"),
    }


def test_mark_dead_runs_interrupted(store: Store) -> None:
    dead = new_run(store, host="node1", pid=100)
    alive = new_run(store, host="node1", pid=200)
    elsewhere = new_run(store, host="node2", pid=100)
    finished = store.start_execution(dead, "pingpong/2x1", "mpibench", ["a"], {}, 5e9)
    store.finish_execution(
        finished,
        ExecutionRecord(
            "pingpong/2x1", "mpibench", ("a",), {}, ExecutionStatus.OK, 0, 5e9, 5e9 + 3
        ),
    )
    hanging = store.start_execution(dead, "allreduce/2x1", "mpibench", ["b"], {}, 5e9 + 4)
    live_execution = store.start_execution(alive, "pingpong/2x1", "mpibench", ["c"], {}, 5e9)

    marked = store.mark_dead_runs_interrupted(host="node1", is_alive=lambda pid: pid == 200)

    assert marked == [dead]
    assert store.run(dead).status is Status.INTERRUPTED
    assert store.run(dead).ended == 5e9 + 4  # the last sign of life, not the time found
    assert store.run(alive).status is Status.RUNNING
    assert store.run(elsewhere).status is Status.RUNNING  # another host's pids mean nothing here
    by_id = {e.id: e for e in store.executions(dead)}
    assert by_id[finished].status is ExecutionStatus.OK
    assert by_id[hanging].status is ExecutionStatus.INTERRUPTED
    assert by_id[hanging].ended == 5e9 + 4
    assert "process 100 on node1" in by_id[hanging].error
    assert store.executions(alive)[0].id == live_execution
    assert store.executions(alive)[0].status == "running"
    # Once interrupted, a run is no longer a candidate.
    assert store.mark_dead_runs_interrupted(host="node1", is_alive=lambda pid: False) == [alive]


def test_open_store_defaults_to_hpceval_db_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store(None) as opened:
        assert opened.url == "sqlite:///hpceval.db"
    assert (tmp_path / "hpceval.db").is_file()


def test_database_urls() -> None:
    assert database_url(None).render_as_string() == "sqlite:///hpceval.db"
    assert database_url("/data/r.db").render_as_string() == "sqlite:////data/r.db"
    assert database_url("sqlite:///r.db").database == "r.db"
    for plain in ("postgresql://u:secret@db.example/hpc", "postgres://u:secret@db.example/hpc"):
        url = database_url(plain)
        assert url.drivername == "postgresql+psycopg"
        assert (url.host, url.database, url.password) == ("db.example", "hpc", "secret")
    assert database_url("postgresql+psycopg://h/d").drivername == "postgresql+psycopg"
    with pytest.raises(UserError, match="unsupported database"):
        database_url("mysql://h/d")


def test_sqlite_is_in_wal_mode_with_foreign_keys(db_path: Path) -> None:
    with open_store(str(db_path)) as store, store._engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_reopening_keeps_the_data(db_path: Path) -> None:
    with open_store(str(db_path)) as first:
        run_id = new_run(first)
        first.add_measurement(run_id, None, "pingpong/2x1", "p", latency())
    with open_store(f"sqlite:///{db_path}") as second:
        assert second.measurements(run_id)[0].measurement == latency()


def test_text_with_nul_characters_is_stored(store: Store) -> None:
    # PostgreSQL text cannot hold NUL; a crashed program's output may contain some.
    run_id = new_run(store)
    execution_id = store.start_execution(run_id, "pingpong/2x1", "mpibench", ["a"], {}, 1.0)
    store.finish_execution(
        execution_id,
        ExecutionRecord(
            "pingpong/2x1", "mpibench", ("a",), {}, ExecutionStatus.FAILED, 139, 1.0, 2.0,
            stdout_tail="core\x00dump", stderr_tail="\x00", error="crashed\x00",
        ),
    )  # fmt: skip
    (execution,) = store.executions(run_id)
    assert (execution.stdout_tail, execution.stderr_tail, execution.error) == (
        "core\ufffddump",
        "\ufffd",
        "crashed\ufffd",
    )
