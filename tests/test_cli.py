"""The CLI end to end, as a user runs it: real processes, real MPI, a real SQLite file."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpceval.model import Environment, Origin
from hpceval.store import open_store

from .conftest import requires_mpi, write

SMALL_SUITE = """
name = "small"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong", "allreduce"]
sizes = [8, 1024, 65536]
ranks = [2]
budget_s = 0.03
warmup_s = 0.005
min_samples = 3
"""

# Enough points at a slow pace that a kill lands in the middle of the campaign.
SLOW_SUITE = """
name = "slow"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong", "pingping", "sendrecv"]
sizes = "0..4KiB"
ranks = [2]
budget_s = 0.15
warmup_s = 0.005
min_samples = 1000
max_samples = 1000
"""


def hpceval(
    *args: str, cwd: Path, check: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "hpceval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hpceval {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hpceval: error: ")
    return lines[0]


def test_help_on_every_command(tmp_path: Path) -> None:
    top = hpceval("--help", cwd=tmp_path)
    assert top.returncode == 0
    for command in ("run", "show", "runs", "doctor", "suites", "platforms", "build"):
        assert command in top.stdout
        sub = hpceval(command, "--help", cwd=tmp_path)
        assert sub.returncode == 0, sub.stderr
        assert "Usage" in sub.stdout


def test_suites_and_platforms_are_listed(tmp_path: Path) -> None:
    suites = hpceval("suites", cwd=tmp_path, check=True)
    for name in ("quick", "p2p", "collectives", "smoke"):
        assert name in suites.stdout
    assert "local" in hpceval("platforms", cwd=tmp_path, check=True).stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--suite", "nosuch"], "unknown suite 'nosuch'"),
        (["run", "--platform", "nosuch"], "unknown platform 'nosuch'"),
        (["run", "--suite", "missing.toml"], "missing.toml: no such suite file"),
        (["show"], "hpceval.db: no such results database"),
        (["run", "--resume"], "hpceval.db: no such results database"),
        (["runs"], "hpceval.db: no such results database"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    line = one_line_error(hpceval(*args, cwd=tmp_path))
    assert expected in line
    assert not (tmp_path / "hpceval.db").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["show", "--run", "42"], "no run with id 42"),
        (["run", "--resume"], "no interrupted run to resume"),
        (["show"], "no runs yet"),
    ],
)
def test_errors_on_an_empty_database(tmp_path: Path, args: list[str], expected: str) -> None:
    open_store(str(tmp_path / "hpceval.db")).close()
    assert expected in one_line_error(hpceval(*args, cwd=tmp_path))


def test_malformed_suite_writes_nothing(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.toml",
        "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nsizes='0..-1'\n",
    )
    line = one_line_error(hpceval("run", "--suite", str(bad), cwd=tmp_path))
    assert f"{bad}: benchmark[0].sizes:" in line
    assert not (tmp_path / "hpceval.db").exists()


def test_impossible_rank_count_writes_nothing(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "np.toml",
        "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nranks=[1]\n",
    )
    line = one_line_error(hpceval("run", "--suite", str(bad), cwd=tmp_path))
    assert "benchmark[0].ranks: pattern pingpong needs at least 2 ranks" in line
    assert not (tmp_path / "hpceval.db").exists()


def test_missing_mpicc_is_named(tmp_path: Path) -> None:
    platform = write(
        tmp_path / "p.toml",
        "name='nompi'\n[launcher]\nkind='local'\nmpicc='/nonexistent/mpicc'\n",
    )
    line = one_line_error(
        hpceval("run", "--platform", str(platform), "--suite", "smoke", cwd=tmp_path)
    )
    assert "mpicc" in line
    assert not (tmp_path / "hpceval.db").exists()


def test_doctor_reports_mpi(tmp_path: Path) -> None:
    proc = hpceval("doctor", cwd=tmp_path)
    assert "mpicc" in proc.stdout
    assert proc.returncode in (0, 1)


@requires_mpi
def test_run_show_runs(tmp_path: Path) -> None:
    suite = write(tmp_path / "small.toml", SMALL_SUITE)
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path, check=True)
    assert "summary" in proc.stdout
    assert "2 of 2 cases ok" in proc.stdout
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.status == "completed"
    ms = store.measurements(run.id)
    assert {(m.measurement.parameters["pattern"], m.measurement.metric) for m in ms} == {
        ("pingpong", "latency"),
        ("pingpong", "bandwidth"),
        ("allreduce", "time"),
    }
    assert len(ms) == 3 * 3
    executions = store.executions(run.id)
    assert all(e.status == "ok" for e in executions)
    assert all(e.argv[0].endswith("mpirun") for e in executions)
    shown = hpceval("show", cwd=tmp_path, check=True).stdout
    assert "pingpong" in shown and "allreduce" in shown and "64 KiB" in shown
    assert "MPI" in shown  # provenance header
    listed = hpceval("runs", cwd=tmp_path, check=True).stdout
    assert "small" in listed and "completed" in listed


@requires_mpi
def test_failing_case_is_recorded_and_campaign_goes_on(tmp_path: Path) -> None:
    # A time limit far below what the case needs: it must be killed, recorded, and the
    # next case must still run. The warm-up's length is wall-clock time, so the case
    # cannot end before the limit; samples' length is not: a warm-up slowed by a
    # neighbour calibrates short samples, and 1000 of them once took under 2 s in CI.
    suite = write(
        tmp_path / "s.toml",
        SMALL_SUITE.replace('patterns = ["pingpong", "allreduce"]', 'patterns = ["pingpong"]')
        + """
[[benchmark]]
name = "mpibench"
patterns = ["alltoall"]
sizes = [8]
ranks = [2]
budget_s = 60
sample_s = 0.05
min_samples = 1000
max_samples = 1000
warmup_s = 30
time_limit_s = 2
""",
    )
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    statuses = {e.case_key.split(":")[1]: e for e in store.executions(run.id)}
    assert statuses["pingpong"].status == "ok"
    assert statuses["alltoall"].status == "timeout"
    assert "time limit of 2 s" in statuses["alltoall"].error
    assert run.status == "completed"


def _count_points(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
        if "measurements" not in tables:  # the campaign has not created its schema yet
            return 0
        return int(
            conn.execute(
                "select count(distinct case_key || point_key) from measurements"
            ).fetchone()[0]
        )


@requires_mpi
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_interrupt_and_resume_loses_and_repeats_nothing(
    tmp_path: Path, sig: signal.Signals
) -> None:
    suite = write(tmp_path / "slow.toml", SLOW_SUITE)
    db = tmp_path / "hpceval.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpceval", "run", "--suite", str(suite)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if db.exists() and _count_points(db) >= 5:
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the campaign did not complete 5 points in time")
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    if sig != signal.SIGKILL:
        assert proc.returncode == 128 + sig, stderr
        assert "hpceval run --resume" in stderr
    before = _count_points(db)
    assert before >= 5
    store = open_store(str(db))
    (run,) = store.runs()
    planned = sum(len(c.description["points"]) for c in store.cases(run.id))
    assert before < planned, "the run finished before it could be interrupted"
    kept = {
        (m.case_key, m.point_key, m.measurement.metric): m.id for m in store.measurements(run.id)
    }
    store.close()

    resumed = hpceval("run", "--resume", cwd=tmp_path, check=True)
    assert f"resuming run {run.id}" in resumed.stderr

    store = open_store(str(db))
    (run,) = store.runs()
    assert run.status == "completed"
    ms = store.measurements(run.id)
    keys = [(m.case_key, m.point_key, m.measurement.metric) for m in ms]
    assert len(keys) == len(set(keys)), "a point was measured twice"
    assert {(m.case_key, m.point_key) for m in ms} == {
        (c.case_key, p) for c in store.cases(run.id) for p in c.description["points"]
    }
    # What was measured before the interruption is still there, untouched.
    now = {(m.case_key, m.point_key, m.measurement.metric): m.id for m in ms}
    assert all(now[k] == v for k, v in kept.items())
    assert all(c.status == "done" for c in store.cases(run.id))


FAKE_MPIRUN = """#!/bin/sh
# Stands in for mpirun to make the benchmark misbehave in controlled ways.
if [ "$1" = "--version" ]; then echo "mpirun (Open MPI) 4.1.4"; exit 0; fi
case "$FAKE_MPIRUN_MODE" in
  crash)
    echo '{"record":"header","program":"mpibench","version":"1.0","nranks":2,"hosts":["h","h"]}'
    echo "Segmentation fault (core dumped)" >&2
    exit 139 ;;
  nonsense)
    # Never ends by itself: the run finishes only if hpceval stops the execution.
    echo $$ >> "$(dirname "$0")/nonsense.pids"
    echo '{"record":"header","program":"mpibench","version":"1.0","nranks":2,"hosts":["h","h"]}'
    echo '{"record":"point","pattern":"pingpong","size":8,"samples":2,"loops":1,'\\
'"t_max_us":[1.0,-3.0],"t_min_us":[1,1],"t_avg_us":[1,1]}'
    exec sleep 3600 ;;
esac
"""


def _sleeping(pid: int) -> bool:
    try:
        return b"sleep" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone
        return False


@requires_mpi
@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("crash", "exited with status 139: Segmentation fault (core dumped)"),
        # The pingpong case sees a negative time, the pingping case a point of another pattern.
        ("nonsense", "non-positive times|expected 'pingping'"),
    ],
)
def test_crashing_or_nonsense_benchmark_is_a_recorded_failure(
    tmp_path: Path, mode: str, cause: str
) -> None:
    fake = write(tmp_path / "mpirun", FAKE_MPIRUN)
    fake.chmod(0o755)
    platform = write(
        tmp_path / "p.toml",
        # The fake mpirun answers the transport probe with its nonsense too (and sleeps):
        # not probed, the time measured is the benchmark's alone.
        f"name='fake'\ntransport_probe=false\n[launcher]\nkind='local'\nmpirun='{fake}'\n"
        f"env={{FAKE_MPIRUN_MODE='{mode}'}}\n",
    )
    suite = write(
        tmp_path / "s.toml",
        "name='s'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong','pingping']\n"
        "sizes=[8]\nranks=[2]\n",
    )
    proc = hpceval("run", "--platform", str(platform), "--suite", str(suite), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    if mode == "nonsense":  # a nonsense point stops the execution: it is not waited out
        pids = [int(p) for p in (tmp_path / "nonsense.pids").read_text().split()]
        assert len(pids) == 2
        assert not [pid for pid in pids if _sleeping(pid)], "an execution still runs"
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    executions = store.executions(run.id)
    assert len(executions) == 2  # the campaign went on after the first failure
    for e in executions:
        assert e.status == "failed"
        assert re.search(cause.replace("(", r"\(").replace(")", r"\)"), e.error), e.error
    if mode == "crash":
        assert "Segmentation fault" in executions[0].stderr_tail
    assert store.measurements(run.id) == []
    assert {c.status for c in store.cases(run.id)} == {"failed"}


NPB_OFFICIAL = Path(__file__).parent / "data" / "npb-official"


def test_import_npb_official_outputs(tmp_path: Path) -> None:
    good = NPB_OFFICIAL / "npb3.2-mpi-cg.A.2.txt"
    bad = NPB_OFFICIAL / "npb3.3.1-omp-cg.S.t1-unsuccessful.txt"
    proc = hpceval("import", "npb", str(good), str(bad), "--platform", "cluster-a", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # one file failed its verification
    assert "imported 1 verified NPB results, 1 failed verification" in proc.stdout
    shown = hpceval("show", cwd=tmp_path, check=True).stdout
    assert "NPB kernels" in shown and "606.3" in shown
    assert "verification UNSUCCESSFUL" in shown
    # An imported run is not a campaign: there is nothing to resume.
    assert "no interrupted run" in one_line_error(hpceval("run", "--resume", cwd=tmp_path))


def test_import_refuses_a_file_that_is_not_npb_output(tmp_path: Path) -> None:
    notes = write(tmp_path / "notes.txt", "hello\n")
    line = one_line_error(hpceval("import", "npb", str(notes), "--platform", "x", cwd=tmp_path))
    assert "notes.txt: not an NPB output" in line
    store = open_store(str(tmp_path / "hpceval.db"))
    assert store.runs() == []


def test_the_console_entry_point_closes_stores_and_ends_quickly(tmp_path: Path) -> None:
    # `hpceval` ends with end_process (os._exit, no interpreter clean-up): the stores that a
    # command left open are closed first, so SQLite folds its write-ahead log into the file
    # (no -wal/-shm left beside it), and the output and exit status are the command's.
    db = tmp_path / "r.db"
    with open_store(str(db)) as store:
        platform = store.add_platform("p", {})
        environment = store.add_environment(Environment(facts={}, fingerprint="f"))
        store.create_run(
            suite_name="tiny", suite_config={}, platform_id=platform,
            environment_id=environment, launcher="local", cases=[], hpceval_version="0",
            git_revision=None, origin=Origin.MEASURED, host="h", pid=1,
        )  # fmt: skip
    assert not list(tmp_path.glob("r.db-*"))
    for command in (["runs"], ["show"]):  # `show` does not close its store itself
        proc = hpceval(*command, "--db", str(db), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "tiny" in proc.stdout
        assert not list(tmp_path.glob("r.db-*")), command
    missing = hpceval("runs", "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    assert missing.returncode == 2
    expected = f"hpceval: error: {tmp_path / 'none.db'}: no such results database"
    assert missing.stderr.strip() == expected
    ended = subprocess.run(
        [sys.executable, "-c",
         "from hpceval.cli import end_process; print('out'); end_process('why')"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (ended.returncode, ended.stdout, ended.stderr) == (1, "out\n", "why\n")


def test_analysis_commands_start_without_the_campaign_machinery() -> None:
    """What `run` needs (campaigns, launchers, benchmarks, pydantic configurations) is not
    imported by the CLI nor by `compare`: each analysis command starts ~0.3 s sooner."""
    probe = (
        "import sys, hpceval.cli, hpceval.analysis.compare\n"
        "heavy = ('hpceval.campaign', 'hpceval.benchmarks', 'hpceval.launch',"
        " 'hpceval.config', 'pydantic', 'matplotlib')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or m.startswith(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # The commands that need them still get them.
    listed = subprocess.run([sys.executable, "-m", "hpceval", "suites"], capture_output=True,
                            text=True, check=False)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "quick" in listed.stdout
