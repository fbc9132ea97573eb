"""The results store under stress: refused and unreachable databases, locks, concurrent
writers, a writer killed with SIGKILL.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import hpceval
from hpceval.errors import UserError
from hpceval.store import StoreUnavailable, open_store
from hpceval.store import dialect as store_dialect
from tests.test_store import db_path as db_path  # the fixture
from tests.test_store import latency, new_run


def test_a_database_locked_too_long_is_a_one_line_user_error(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_dialect, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    with open_store(str(db_path)) as store:
        run_id = new_run(store)
        store.add_measurement(run_id, None, "pingpong/2x1", "size=0", latency())
        blocker = sqlite3.connect(db_path, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StoreUnavailable) as caught:
                store.add_measurement(run_id, None, "pingpong/2x1", "size=8", latency())
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert str(caught.value) == (
            f"sqlite:///{db_path}: the results database is unavailable (database is locked);"
            " what was committed before is kept"
        )
        assert store.completed_points(run_id) == {("pingpong/2x1", "size=0")}


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, just notes\n" * 100)
    with pytest.raises(UserError, match=r"notes\.txt: file is not a database"):
        open_store(str(notes))
    assert notes.read_text() == "not a database, just notes\n" * 100


def test_an_sqlite_database_of_another_program_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE things (id INTEGER)")
    with pytest.raises(UserError, match="not an hpceval results database"):
        open_store(str(foreign))


def test_create_false_refuses_a_missing_database(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"missing\.db: no such results database"):
        open_store(str(tmp_path / "missing.db"), create=False)
    assert not (tmp_path / "missing.db").exists()


def test_missing_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        open_store(str(tmp_path / "nowhere" / "r.db"))


def test_unreachable_postgresql_server_is_a_one_line_user_error() -> None:
    # Port 1 on the loopback interface: nothing listens there, so the connection is refused.
    with pytest.raises(UserError) as caught:
        open_store("postgresql://nobody:secret@127.0.0.1:1/hpceval")
    message = str(caught.value)
    assert "\n" not in message
    assert "secret" not in message
    assert "127.0.0.1" in message


def test_a_committed_measurement_is_visible_to_another_connection(db_path: Path) -> None:
    with open_store(str(db_path)) as writer, open_store(str(db_path)) as reader:
        run_id = new_run(writer)
        assert reader.completed_points(run_id) == set()
        writer.add_measurement(run_id, None, "pingpong/2x1", "size=0", latency())
        # Another Store (its own connection pool) and plain sqlite3 both see it at once.
        assert reader.completed_points(run_id) == {("pingpong/2x1", "size=0")}
        with sqlite3.connect(db_path) as conn:
            assert conn.execute("SELECT count(*) FROM measurements").fetchone() == (1,)


def write_points(path: str, run_id: int, writer: str, count: int, start: Any) -> None:
    """Child process: `count` measurements for points named after `writer`."""
    with open_store(path) as child_store:
        start.wait()
        for index in range(count):
            child_store.add_measurement(
                run_id,
                None,
                "pingpong/2x1",
                f"{writer}-{index}",
                latency(float(index) + 0.5, writer=writer, index=index),
            )


def test_two_processes_write_concurrently(db_path: Path) -> None:
    per_writer = 200
    with open_store(str(db_path)) as parent:
        run_id = new_run(parent)
    context = multiprocessing.get_context("spawn")
    # Both writers have the database open before either writes, so their writes contend
    # (how they interleave is up to SQLite's busy handler: often in long bursts).
    start = context.Barrier(2)
    writers = [
        context.Process(target=write_points, args=(str(db_path), run_id, name, per_writer, start))
        for name in ("a", "b")
    ]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=120)
    assert [process.exitcode for process in writers] == [0, 0]

    with open_store(str(db_path)) as parent:
        stored = parent.measurements(run_id)
    assert len(stored) == 2 * per_writer
    for name in ("a", "b"):
        mine = [s for s in stored if s.point_key.startswith(f"{name}-")]
        assert [s.measurement.details["index"] for s in mine] == list(range(per_writer))
        for s in mine:
            index = s.measurement.details["index"]
            assert s.point_key == f"{name}-{index}"
            assert s.measurement.details["writer"] == name
            assert s.measurement.value == index + 0.5


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from hpceval.model import Measurement
    from hpceval.store import open_store

    store = open_store(sys.argv[1])
    run_id = int(sys.argv[2])
    index = 0
    while True:
        store.add_measurement(
            run_id, None, "pingpong/2x1", f"size={index}",
            Measurement(benchmark="mpibench", metric="latency", value=1.0, unit="us"),
        )
        print(index, flush=True)  # reported only once add_measurement has returned
        index += 1
    """
)


def test_kill_9_loses_no_committed_measurement(db_path: Path) -> None:
    with open_store(str(db_path)) as parent:
        run_id = new_run(parent)
    source_root = str(Path(hpceval.__file__).parents[1])
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [source_root, os.environ.get("PYTHONPATH")])),
    }
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db_path), str(run_id)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
    )
    assert child.stdout is not None
    reported = [int(child.stdout.readline()) for _ in range(50)]
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()

    with open_store(str(db_path)) as parent:
        completed = parent.completed_points(run_id)
    assert {("pingpong/2x1", f"size={index}") for index in reported} <= completed
