"""Export, import and merge of results between SQLite files and export files.

(PostgreSQL as source and destination, and a real campaign carried from a site database to a
central one, are in test_postgres.py; refused files in test_transfer_refused.py; the `db`
commands in test_transfer_cli.py.)
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import hpceval
from hpceval.export_file import FORMAT_NAME, FORMAT_VERSION, ExportFile, read_export
from hpceval.model import (
    Environment,
    ExecutionRecord,
    ExecutionStatus,
    Measurement,
    Origin,
    Statistics,
    Status,
)
from hpceval.store import (
    EXECUTION_INDEX,
    ImportAction,
    RunBundle,
    Store,
    StoreUnavailable,
    database_url,
    open_store,
)
from hpceval.store import bundles as store_bundles
from hpceval.store import importing as store_importing
from hpceval.store import schema as store_schema
from hpceval.store.bundles import portable_columns
from hpceval.transfer import export_runs, merge

pytest_plugins = ["tests.postgres_server"]  # postgres_url, empty_database (a real server)

# --------------------------------------------------------------------------- a site's results


class Clock:
    def __init__(self, start: float = 1_700_000_000.25):
        self.now = start

    def __call__(self) -> float:
        self.now += 0.125
        return self.now


PLATFORM = {
    "name": "site-cluster",
    "nodes": ["n01", "n02"],
    "cores_per_node": 64,
    "launcher": {"kind": "local", "extra_args": ["--mca", "btl", "^openib"], "env": {}},
    "price": {"per_node_hour": 1.25, "currency": "€"},
}
FACTS = {
    "cpu": {"model": "AMD EPYC 7763 64-Core", "sockets": 2, "ghz": 2.45},
    "virtualization": {"kind": "none"},
    "mpi": {"implementation": "Open MPI", "version": "4.1.4"},
    "hpceval": {"version": "0.1.0", "git_revision": "abc123"},
    "network": [{"name": "ib0", "driver": "mlx5_core", "io_path": "native"}],
    "notes": ["ünïcode ✓", "tab\there"],
    "load": math.nan,
}
CASES = [
    ("mpibench:pingpong:np=2", "mpibench", {"points": ["size=0", "size=8"], "time_limit_s": 60}),
    ("mpibench:allreduce:np=2", "mpibench", {"points": ["size=8"], "time_limit_s": 60.5}),
]


def point(value: float, metric: str = "latency", **details: Any) -> Measurement:
    samples = (value, value + 0.1 + 0.2, 5e-324)
    return Measurement(
        benchmark="mpibench",
        metric=metric,
        value=value,
        unit="MB/s" if metric == "bandwidth" else "us",
        parameters={"pattern": "pingpong", "size": 8, "oversubscribed": False, "ratio": 0.5},
        samples=samples,
        statistics=Statistics(
            count=3,
            minimum=min(samples),
            maximum=max(samples),
            median=value,
            mean=sum(samples) / 3,
            stdev=0.1,
            ci_low=None,
            ci_high=None,
            extra={"outliers": 0.0, "skew": math.inf, "kurtosis": -math.inf},
        ),
        details={"loops": 128, "stop": "budget", "why": "µs ✓", **details},
    )


def new_site_run(store: Store, *, suite: str = "site-suite", pid: int = 4242) -> int:
    return store.create_run(
        suite_name=suite,
        suite_config={"name": suite, "benchmark": [{"name": "mpibench", "budget_s": 0.03}]},
        platform_id=store.add_platform("site-cluster", PLATFORM),
        environment_id=store.add_environment(Environment(FACTS, "fingerprint-site")),
        launcher="local",
        cases=CASES,
        hpceval_version=hpceval.__version__,
        git_revision="abc123",
        origin=Origin.MEASURED,
        host="login01",
        pid=pid,
    )


def execute(
    store: Store, run_id: int, case_key: str, at: float, points: dict[str, list[Measurement]]
) -> int:
    execution_id = store.start_execution(
        run_id, case_key, "mpibench", ["mpirun", "-n", "2", "mpibench"], {"OMP": "1"}, at
    )
    for point_key, measured in points.items():
        for m in measured:
            store.add_measurement(run_id, execution_id, case_key, point_key, m)
    store.finish_execution(
        execution_id,
        ExecutionRecord(
            case_key=case_key,
            benchmark="mpibench",
            argv=("mpirun", "-n", "2", "mpibench"),
            env={"OMP": "1"},
            status=ExecutionStatus.OK,
            exit_code=0,
            started=at,
            ended=at + 1.5,
            stdout_tail='{"record":"point"}\n',
            stderr_tail="warning: ✓\n",
        ),
    )
    return execution_id


def fill_site(store: Store) -> list[int]:
    """Three runs: completed, interrupted (with an execution left running), and bare."""
    completed = new_site_run(store)
    execute(
        store,
        completed,
        CASES[0][0],
        100.0,
        {"size=0": [point(0.3), point(9.5, "bandwidth")], "size=8": [point(0.4)]},
    )
    execute(store, completed, CASES[1][0], 102.0, {"size=8": [point(1.1, "time")]})
    store.add_measurement(completed, None, CASES[1][0], "extra", point(2.0, "time"))
    for case_key, _, _ in CASES:
        store.set_case_status(completed, case_key, "done")
    store.set_run_status(completed, Status.COMPLETED)

    interrupted = new_site_run(store, suite="other-suite", pid=4343)
    execute(store, interrupted, CASES[0][0], 200.0, {"size=0": [point(0.5)]})
    store.start_execution(interrupted, CASES[1][0], "mpibench", ["mpirun"], {}, 203.0)
    store.set_run_status(interrupted, Status.INTERRUPTED)

    bare = new_site_run(store, suite="bare")
    return [completed, interrupted, bare]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "site.db"
    with open_store(str(path), clock=Clock()) as store:
        fill_site(store)
    yield path


def bundles(url: str) -> dict[str, RunBundle]:
    with open_store(url, create=False) as store:
        return {b.uid: b for b in map(store.export_run, store.select_runs())}


def counts(database: Path | str) -> dict[str, int]:
    """Rows per table of an SQLite file or a database URL."""
    engine = sa.create_engine(database_url(str(database)))
    try:
        with engine.connect() as conn:
            return {
                table: conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()
                for table in (
                    "platforms", "environments", "runs", "run_cases", "executions", "measurements"
                )
            }  # fmt: skip
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["site.jsonl", "site.jsonl.gz", "site-copy.db"])
def test_export_then_import_gives_every_field_back(site: Path, tmp_path: Path, name: str) -> None:
    exported = tmp_path / name
    items = export_runs(str(site), exported)
    assert [item.action for item in items] == ["exported"] * 3
    central = tmp_path / "central.db"
    imported = merge([str(exported)], str(central))
    assert [item.action for item in imported] == ["imported"] * 3

    original, copy = bundles(str(site)), bundles(str(central))
    assert copy == original
    # Through the store's own reading API too: every measurement, sample and statistic.
    with open_store(str(site)) as a, open_store(str(central)) as b:
        for run_a, run_b in zip(a.runs(), b.runs(), strict=True):
            assert run_a.uid == run_b.uid
            assert [m.measurement for m in a.measurements(run_a.id)] == [
                m.measurement for m in b.measurements(run_b.id)
            ]
            # (json: the facts hold a NaN, which equals nothing, itself included)
            assert json.dumps(a.environment(run_a.environment_id)) == json.dumps(
                b.environment(run_b.environment_id)
            )
            assert a.platform_config(run_a.platform_id) == b.platform_config(run_b.platform_id)
            assert a.cases(run_a.id) == b.cases(run_b.id)
            assert [e.argv for e in a.executions(run_a.id)] == [
                e.argv for e in b.executions(run_b.id)
            ]
    assert math.isnan(b_facts(central)["load"])


def b_facts(path: Path) -> dict[str, Any]:
    with open_store(str(path)) as store:
        return dict(store.environment(store.runs()[0].environment_id))


def test_export_file_layout(site: Path, tmp_path: Path) -> None:
    exported = tmp_path / "out.jsonl.gz"
    export_runs(str(site), exported, ["1", "3"])
    with gzip.open(exported, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    header = records[0]
    assert header["format"] == FORMAT_NAME
    assert header["version"] == FORMAT_VERSION == 3
    assert header["runs"] == 2
    assert header["source"] == f"sqlite:///{site}"
    # Platform and environment once, before the first run that uses them.
    assert [r.get("record") for r in records[1:]] == ["platform", "environment", "run", "run"]
    run = records[3]
    assert run["platform"] == {"name": "site-cluster", "config_hash": records[1]["config_hash"]}
    assert run["environment"] == "fingerprint-site"
    assert [m[EXECUTION_INDEX] for m in run["measurements"]] == [0, 0, 0, 1, None]
    assert run["measurements"][0]["statistics"]["extra"]["skew"] == {"$float": "inf"}
    assert records[2]["facts"]["load"] == {"$float": "nan"}
    assert "id" not in run["run"] and "run_id" not in run["executions"][0]


def test_the_format_pins_its_columns() -> None:
    # Format version 3 carries exactly these columns. A schema change that alters them must
    # bump FORMAT_VERSION (an older hpceval must refuse the new files) and update this list.
    assert FORMAT_VERSION == 3
    assert {
        table.name: [column.name for column in portable_columns(table)]
        for table in store_bundles.BUNDLE_TABLES
    } == {
        "platforms": ["name", "config", "config_hash"],
        "environments": ["fingerprint", "facts"],
        "runs": [
            "uid",
            "suite_name",
            "suite_config",
            "launcher",
            "status",
            "started",
            "ended",
            "host",
            "pid",
            "hpceval_version",
            "git_revision",
            "origin",
            "note",
        ],
        "run_cases": ["case_key", "ordinal", "benchmark", "description", "status"],
        "executions": [
            "case_key",
            "benchmark",
            "argv",
            "env",
            "status",
            "exit_code",
            "started",
            "ended",
            "stdout_tail",
            "stderr_tail",
            "error",
        ],
        "measurements": [
            "case_key",
            "point_key",
            "benchmark",
            "metric",
            "unit",
            "value",
            "statistic",
            "parameters",
            "statistics",
            "samples",
            "details",
            "origin",
            "created",
            "implementation",
        ],
    }


def test_importing_twice_adds_nothing(site: Path, tmp_path: Path) -> None:
    exported = tmp_path / "site.jsonl"
    export_runs(str(site), exported)
    central = tmp_path / "central.db"
    merge([str(exported)], str(central))
    before = counts(central)
    again = merge([str(exported), str(site)], str(central))
    assert [(item.action, item.detail) for item in again] == [("skipped", "already here")] * 6
    assert counts(central) == before
    assert before == {
        "platforms": 1,
        "environments": 1,
        "runs": 3,
        "run_cases": 6,
        "executions": 4,
        "measurements": 6,
    }


def test_ids_are_remapped_and_shared_rows_reused(site: Path, tmp_path: Path) -> None:
    central = tmp_path / "central.db"
    with open_store(str(central), clock=Clock(5e8)) as store:
        local = new_site_run(store, suite="central-own")  # same platform and environment
        execute(store, local, CASES[0][0], 1.0, {"size=0": [point(7.0)]})
    items = merge([str(site)], str(central))
    assert [item.run_id for item in items] == [2, 3, 4]
    assert counts(central)["platforms"] == 1 and counts(central)["environments"] == 1
    with open_store(str(central)) as store:
        for run in store.runs():
            executions = {e.id: e for e in store.executions(run.id)}
            for m in store.measurements(run.id):
                assert m.run_id == run.id
                if m.execution_id is not None:
                    assert executions[m.execution_id].case_key == m.case_key
        assert [m.measurement.value for m in store.measurements(1)] == [7.0]
    site_bundles = bundles(str(site))
    central_bundles = bundles(str(central))
    for uid, bundle in site_bundles.items():
        assert central_bundles[uid] == bundle


def test_a_later_state_of_a_run_updates_the_earlier_copy(site: Path, tmp_path: Path) -> None:
    early = tmp_path / "early.jsonl"
    export_runs(str(site), early, ["2"])  # the interrupted run, an execution still running
    central = tmp_path / "central.db"
    merge([str(early)], str(central))

    # At the site the run is found dead, resumed and completed.
    with open_store(str(site), clock=Clock(1_800_000_000.0)) as store:
        store.mark_dead_runs_interrupted(host="login01", is_alive=lambda pid: False)
        store.claim_run(2, host="login02", pid=77)
        execute(store, 2, CASES[1][0], 300.0, {"size=8": [point(1.7, "time")]})
        store.set_case_status(2, CASES[1][0], "done")
        store.set_run_status(2, Status.COMPLETED)
    late = tmp_path / "late.jsonl"
    export_runs(str(site), late, ["2"])

    (updated,) = merge([str(late)], str(central))
    assert updated.action == "updated"
    assert updated.detail == "+1 executions, +1 measurements (status interrupted → completed)"
    assert bundles(str(central)) == {updated.uid: bundles(str(site))[updated.uid]}

    # The earlier copy, imported again, changes nothing: the destination has more.
    (older,) = merge([str(early)], str(central))
    assert (older.action, older.detail) == ("skipped", "already here, with more than this copy")
    assert bundles(str(central))[updated.uid] == bundles(str(site))[updated.uid]


def test_copies_that_diverged_are_a_conflict_and_left_alone(site: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    export_runs(str(site), first, ["3"])
    export_runs(str(site), second, ["3"])
    with open_store(str(first)) as store:
        execute(store, 1, CASES[0][0], 1.0, {"size=0": [point(1.0)]})
    with open_store(str(second)) as store:
        execute(store, 1, CASES[0][0], 2.0, {"size=0": [point(2.0)]})
    before = bundles(str(first))
    (outcome,) = merge([str(second)], str(first))
    assert outcome.action == ImportAction.CONFLICT
    assert "each hold executions or measurements the other lacks" in outcome.detail
    assert bundles(str(first)) == before

    with open_store(str(second)) as store, store._engine.begin() as conn:
        conn.execute(store_schema.runs.update().values(launcher="slurm"))
    (outcome,) = merge([str(second)], str(first))
    assert outcome.detail == "a run with this uid is here but differs in launcher; left unchanged"


@pytest.fixture
def destination(empty_database: str) -> str:
    return empty_database


def test_a_failing_run_leaves_nothing_half_imported(
    site: Path, destination: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    insert = store_importing._insert_measurements
    calls = []

    def failing(conn: sa.Connection, run_id: int, rows: Any, execution_id: Any) -> None:
        calls.append(run_id)
        if len(calls) == 2:  # the second run: its run row, cases and executions are in
            raise sa.exc.OperationalError("INSERT INTO measurements", {}, OSError("disk full"))
        insert(conn, run_id, rows, execution_id)

    monkeypatch.setattr(store_importing, "_insert_measurements", failing)
    seen: list[str] = []
    with pytest.raises(StoreUnavailable, match="disk full"):
        merge([str(site)], destination, on_run=lambda item: seen.append(item.action))
    assert seen == ["imported"]
    # The first run whole; of the second (its run row, cases and executions were inserted
    # before the failure) nothing.
    assert counts(destination) == {
        "platforms": 1,
        "environments": 1,
        "runs": 1,
        "run_cases": 2,
        "executions": 2,
        "measurements": 5,
    }

    monkeypatch.setattr(store_importing, "_insert_measurements", insert)
    again = merge([str(site)], destination)
    assert [item.action for item in again] == ["skipped", "imported", "imported"]
    assert bundles(destination) == bundles(str(site))


def test_merge_databases_and_files_into_one_file(tmp_path: Path) -> None:
    sites = []
    for name in ("north", "south"):
        path = tmp_path / f"{name}.db"
        with open_store(str(path), clock=Clock()) as store:
            fill_site(store)
        sites.append(path)
    south_file = tmp_path / "south.jsonl.gz"
    export_runs(str(sites[1]), south_file)

    combined = tmp_path / "all.jsonl"
    items = merge([str(sites[0]), str(south_file)], str(combined))
    assert [item.action for item in items] == ["imported"] * 6
    assert items[0].source == f"sqlite:///{sites[0]}" and items[3].source == str(south_file)
    # Merging into an existing export file keeps its runs and adds none twice.
    again = merge([str(sites[1]), str(sites[0])], str(combined))
    assert [item.action for item in again] == ["skipped"] * 6
    everything = {b.uid: b for b in read_export(combined)}
    assert everything == bundles(str(sites[0])) | bundles(str(sites[1]))
    assert ExportFile(combined).header["runs"] == 6
