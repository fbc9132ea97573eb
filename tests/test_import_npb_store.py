"""Official NPB outputs imported into a results store: runs, executions, measurements,
environments, and the files refused before anything is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpceval.errors import UserError
from hpceval.importers import import_npb
from hpceval.model import ExecutionStatus, Origin, Status
from hpceval.store import CaseStatus, Store, open_store
from tests.test_import_npb import DATA, EXPECTED, OMP_OPTIONS, VERIFIED_FILES


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "x.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with open_store(str(db_path)) as opened:
        yield opened


def test_import_stores_runs_executions_and_measurements(store: Store) -> None:
    files = [DATA / name for name in sorted(EXPECTED)]
    run_id = import_npb(
        store, files, platform_name="cluster-a", note="from the 2017 campaign", clock=FakeClock()
    )

    run = store.run(run_id)
    assert run.suite_name == "import:npb"
    assert run.launcher == "import"
    assert run.origin is Origin.MEASURED
    assert run.status is Status.COMPLETED
    assert run.ended is not None
    assert run.note == "from the 2017 campaign"
    assert run.platform_name == "cluster-a"
    assert store.platform_config(run.platform_id) == (
        "cluster-a",
        {"name": "cluster-a", "imported": True},
    )

    cases = store.cases(run_id)
    assert [c.description["file"] for c in cases] == [str(f) for f in files]
    keys = [c.case_key for c in cases]
    assert "npb3.2-mpi-cg.A.2.txt:cg.A:np=2:threads=1" in keys
    assert "npb3.3.1-omp-is.S.t1.txt:is.S:np=1:threads=1" in keys
    assert {c.benchmark for c in cases} == {"npb"}
    statuses = {c.description["file"]: c.status for c in cases}
    assert statuses[str(DATA / "npb3.3.1-omp-cg.S.t1-unsuccessful.txt")] is CaseStatus.FAILED
    assert sum(s is CaseStatus.DONE for s in statuses.values()) == len(VERIFIED_FILES)

    executions = store.executions(run_id)
    assert len(executions) == len(files)
    for execution, path in zip(executions, files, strict=True):
        assert execution.argv == ("import", str(path))
        assert execution.env == {}
        assert execution.exit_code is None
        assert execution.ended is not None and execution.ended >= execution.started
        assert execution.stdout_tail == path.read_text()[-8192:]
    by_file = {e.argv[1]: e for e in executions}
    failed = by_file[str(DATA / "npb3.3.1-omp-cg.S.t1-unsuccessful.txt")]
    assert failed.status is ExecutionStatus.FAILED
    assert failed.error == "verification UNSUCCESSFUL"
    assert "The correct zeta is" in failed.stdout_tail
    ok = [e for e in executions if e is not failed]
    assert all(e.status is ExecutionStatus.OK and e.error == "" for e in ok)

    stored = store.measurements(run_id)
    assert len(stored) == 3 * len(VERIFIED_FILES)
    assert not [s for s in stored if s.execution_id == failed.id]
    assert {s.measurement.metric for s in stored} == {"time", "mops_total", "mops_per_process"}


def test_import_measurement_values(store: Store) -> None:
    files = [DATA / "npb3.2-mpi-cg.A.2.txt", DATA / "npb3.3.1-omp-ft.S.t1.txt"]
    run_id = import_npb(store, files, platform_name="p", clock=FakeClock())
    stored = store.measurements(run_id)
    assert {s.measurement.benchmark for s in stored} == {"npb"}
    got = {(f"npb.{s.measurement.parameters['kernel']}", s.measurement.metric): s for s in stored}
    assert set(got) == {
        (benchmark, metric)
        for benchmark in ("npb.cg", "npb.ft")
        for metric in ("time", "mops_total", "mops_per_process")
    }
    cg_case = "npb3.2-mpi-cg.A.2.txt:cg.A:np=2:threads=1"
    for (benchmark, metric), unit, value in [
        (("npb.cg", "time"), "s", 2.47),
        (("npb.cg", "mops_total"), "Mop/s", 606.32),
        (("npb.cg", "mops_per_process"), "Mop/s", 303.16),
        (("npb.ft", "time"), "s", 3.18),
        (("npb.ft", "mops_total"), "Mop/s", 55.67),
        # One OpenMP process: its Mop/s per process is the total (per thread is in details).
        (("npb.ft", "mops_per_process"), "Mop/s", 55.67),
    ]:
        m = got[(benchmark, metric)].measurement
        assert m.unit == unit
        assert m.value == value
        assert m.samples == (value,)
        assert m.statistics is not None
        assert m.statistics.count == 1 and m.statistics.mean == value
        assert m.statistic == "single run"  # as hpceval's own NPB benchmark stores it
        assert m.origin is Origin.MEASURED
    assert got[("npb.cg", "time")].case_key == cg_case
    assert got[("npb.cg", "time")].point_key == "class=A"

    cg = got[("npb.cg", "mops_total")].measurement
    assert cg.parameters == {
        "kernel": "cg",
        "class": "A",
        "ranks": 2,
        "threads_per_rank": 1,
        "source": "official NPB 3.2",
        "file": "npb3.2-mpi-cg.A.2.txt",
    }
    assert cg.details["npb_version"] == "3.2"
    assert cg.details["programming_model"] == "mpi"
    assert cg.details["compiled_processes"] == 2
    assert cg.details["verification_values"] == {
        "zeta": 17.130235054,
        "error": 5.22633719989e-14,
    }
    ft = got[("npb.ft", "time")].measurement
    assert ft.parameters == {
        "kernel": "ft",
        "class": "S",
        "ranks": 1,
        "threads_per_rank": 1,
        "source": "official NPB 3.3.1",
        "file": "npb3.3.1-omp-ft.S.t1.txt",
    }
    assert ft.details["compiler"] == "gfortran"
    assert ft.details["flags"] == "-O -ff2c"
    assert ft.details["compile_options"] == OMP_OPTIONS
    assert ft.details["compile_date"] == "27 Jun 2017"
    assert ft.details["run_date"] is None
    assert ft.details["mops_per_thread"] == 55.67
    assert ft.details["total_threads"] == 1
    assert ft.details["programming_model"] == "openmp"


def test_import_environment_records_the_builds(store: Store, db_path: Path) -> None:
    files = [DATA / "npb3.3.1-omp-cg.S.t1.txt", DATA / "npb3.3.1-omp-mg.S.t1.txt"]
    files.append(DATA / "npb2.3-mpi-mg.B.4.txt")
    run_id = import_npb(store, files, platform_name="p", clock=FakeClock())
    facts = store.environment(store.run(run_id).environment_id)
    builds = facts["npb"]["builds"]
    # The two OpenMP outputs come from the same build: it is recorded once.
    assert len(builds) == 2
    assert {b["npb_version"] for b in builds} == {"3.3.1", "2.3"}
    assert {b["compiler"] for b in builds} == {"gfortran", "mpif77"}
    assert {b["flags"] for b in builds} == {"-O -ff2c", "-O3"}
    canonical = json.dumps(dict(facts), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected_fingerprint = hashlib.sha256(canonical.encode()).hexdigest()
    # Importing the same files again reuses the platform and the environment rows.
    again = import_npb(store, list(reversed(files)), platform_name="p", clock=FakeClock())
    assert store.run(again).environment_id == store.run(run_id).environment_id
    assert store.run(again).platform_id == store.run(run_id).platform_id
    # The Store API does not expose fingerprints: read the database file itself.
    with contextlib.closing(sqlite3.connect(db_path)) as connection:
        stored = connection.execute("SELECT fingerprint FROM environments").fetchall()
    assert stored == [(expected_fingerprint,)]


def test_bad_file_aborts_before_anything_is_written(store: Store) -> None:
    files = [DATA / "npb3.3.1-omp-cg.S.t1.txt", DATA / "npb3.3-mpi-ft.S.4-segv.txt"]
    with pytest.raises(UserError) as error:
        import_npb(store, files, platform_name="p", clock=FakeClock())
    message = str(error.value)
    assert message.startswith(f"{DATA / 'npb3.3-mpi-ft.S.4-segv.txt'}: truncated")
    assert "\n" not in message
    assert store.runs() == []
    assert store.measurements() == []


def test_missing_file_aborts_with_its_name(store: Store, tmp_path: Path) -> None:
    missing = tmp_path / "cg.C.16.out"
    with pytest.raises(UserError, match=f"^{missing}: cannot read it"):
        import_npb(store, [DATA / "npb3.3.1-omp-cg.S.t1.txt", missing], platform_name="p")
    assert store.runs() == []


def test_no_files_is_an_error(store: Store) -> None:
    with pytest.raises(UserError, match="no NPB output files"):
        import_npb(store, [], platform_name="p")


def test_same_file_name_in_two_directories(store: Store, tmp_path: Path) -> None:
    copies = []
    for directory in ("node1", "node2"):
        (tmp_path / directory).mkdir()
        copies.append(tmp_path / directory / "cg.out")
        shutil.copy(DATA / "npb3.2-mpi-cg.A.2.txt", copies[-1])
    run_id = import_npb(store, copies, platform_name="p", clock=FakeClock())
    assert [c.case_key for c in store.cases(run_id)] == [
        "cg.out:cg.A:np=2:threads=1",
        "cg.out:cg.A:np=2:threads=1#2",
    ]
    assert len(store.measurements(run_id)) == 6


def test_only_failed_runs_give_no_measurements(store: Store) -> None:
    run_id = import_npb(
        store,
        [DATA / "npb3.3.1-omp-cg.S.t1-unsuccessful.txt"],
        platform_name="p",
        clock=FakeClock(),
    )
    assert store.run(run_id).status is Status.COMPLETED
    assert store.measurements(run_id) == []
    [execution] = store.executions(run_id)
    assert execution.status is ExecutionStatus.FAILED
    assert execution.error == "verification UNSUCCESSFUL"
