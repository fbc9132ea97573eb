"""The slurm launcher on a real one-node Slurm cluster (slurmctld and slurmd started by the
tests): campaigns, kill -9 of hpceval, failed and timed-out jobs, Slurm down, interrupts.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hpceval as hpceval_package
from hpceval.errors import UserError
from hpceval.execute import StartFailed
from hpceval.launch.schedulers.slurm import SlurmExecutor
from hpceval.launch.schedulers.slurm import SlurmScheduler as SlurmLauncher
from hpceval.launch.schedulers.slurm_jobs import SlurmJob
from hpceval.model import Placement
from hpceval.store import open_store

from .conftest import requires_mpi, write
from .slurm_cluster import SlurmCluster
from .slurm_cluster import slurm_cluster as slurm_cluster  # the session fixture
from .test_cli import SMALL_SUITE, _count_points, one_line_error
from .test_slurm import SLURM_SLOW_SUITE, slurm


def hpceval(
    cluster: SlurmCluster, *args: str, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpceval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**cluster.env, "COLUMNS": "200"},
    )


def cluster_launcher(
    cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch, **options: object
) -> SlurmLauncher:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    settings = {"partition": cluster.partition, "poll_s": 0.2, **options}
    launcher = slurm(cores=os.cpu_count() or 1, **settings)
    launcher.preflight()
    return launcher


@requires_mpi
def test_campaign_through_slurm(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    suite = write(tmp_path / "small.toml", SMALL_SUITE)
    proc = hpceval(
        slurm_cluster, "run", "--platform", "slurm-local", "--suite", str(suite), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "2 of 2 cases ok" in proc.stdout
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.status == "completed" and run.launcher == "slurm"
    ms = store.measurements(run.id)
    assert len(ms) == 3 * 3
    assert {m.measurement.parameters["binding"] for m in ms} == {"core"}
    executions = store.executions(run.id)
    assert len(executions) == 2
    for e in executions:
        assert e.status == "ok" and e.exit_code == 0
        assert list(e.argv[:2]) == ["srun", "--mpi=pmix"]
        assert "COMPLETED on localhost" in e.stderr_tail
    assert slurm_cluster.queue() == []
    # Good jobs leave nothing behind in the job directory.
    assert not list((Path(os.environ["HPCEVAL_CACHE"]) / "slurm-jobs").glob("job-*"))


def start_long_campaign(
    cluster: SlurmCluster, tmp_path: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[str], set[str]]:
    """`hpceval run` of points that cannot reach their CI target (each samples for its whole
    30 s budget) on slurm-local; the process and the jobs queued before it."""
    long_points = SMALL_SUITE.replace("budget_s = 0.03", "budget_s = 30").replace(
        "min_samples = 3", "min_samples = 3\nmax_samples = 100000000\ntarget_rci = 0.00001"
    )
    suite = write(tmp_path / "long.toml", long_points)
    # Without the transport probe (a job of its own, a second long): the first job is the case.
    shipped = (Path(hpceval_package.__file__).parent / "data/platforms/slurm-local.toml")
    platform = write(tmp_path / "p.toml", "transport_probe = false\n" + shipped.read_text())
    before = set(cluster.queue())
    argv = ["run", "--platform", str(platform), "--suite", str(suite)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpceval", *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, before


def wait_for_a_job(
    cluster: SlurmCluster, proc: subprocess.Popen[str], before: set[str]
) -> set[str]:
    deadline = time.monotonic() + 240
    while not set(cluster.queue()) - before:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "hpceval submitted no job"
        time.sleep(0.2)
    return set(cluster.queue()) - before


def assert_cancelled(cluster: SlurmCluster, jobs: set[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while jobs & set(cluster.queue()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not jobs & set(cluster.queue()), "the job outlived hpceval"


@requires_mpi
def test_kill_9_of_hpceval_cancels_its_jobs(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """hpceval killed by SIGKILL while its batch job runs: its guard scancels the job (a
    job left in the queue would hold the nodes until Slurm's own time limit)."""
    proc, before = start_long_campaign(slurm_cluster, tmp_path, slurm_cluster.env)
    try:
        jobs = wait_for_a_job(slurm_cluster, proc, before)
        time.sleep(2)  # running, not only queued
        assert jobs <= set(slurm_cluster.queue()), "the job ended by itself"
        proc.kill()
        proc.wait()
        assert_cancelled(slurm_cluster, jobs, timeout_s=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@requires_mpi
def test_kill_9_while_sbatch_answers_cancels_the_job(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """hpceval killed by SIGKILL after sbatch queued the job but before its id came back (an
    sbatch that answers 20 s late): the guard, armed before sbatch, finds the job by its
    script once that sbatch ends, and cancels it."""
    real = shutil.which("sbatch", path=slurm_cluster.env.get("PATH"))
    assert real is not None
    slow = tmp_path / "bin"
    slow.mkdir()
    write(slow / "sbatch", f'#!/bin/sh\nanswer=$("{real}" "$@") || exit $?\nsleep 20\n'
          'echo "$answer"\n').chmod(0o755)  # fmt: skip
    env = {**slurm_cluster.env, "PATH": f"{slow}:{slurm_cluster.env.get('PATH', '')}"}
    proc, before = start_long_campaign(slurm_cluster, tmp_path, env)
    try:
        jobs = wait_for_a_job(slurm_cluster, proc, before)
        proc.kill()  # sbatch is still sleeping on the job's id
        proc.wait()
        assert_cancelled(slurm_cluster, jobs, timeout_s=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_jobs_through_the_executor(
    slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Output lines, exit status and the scheduler's reasons, job by job."""
    launcher = cluster_launcher(slurm_cluster, monkeypatch, job_dir=str(tmp_path / "jobs"))
    executor = launcher.executor()
    assert isinstance(executor, SlurmExecutor)

    echo = ["sh", "-c", 'echo "rank $SLURM_PROCID of $SLURM_NTASKS: $MARK"']
    ok = launcher.command(Placement(1, 2), echo)
    job = executor.submit(ok.argv, {**ok.env, "MARK": "it's a b"})
    lines = [job.next_line(timeout=30) for _ in range(2)]
    assert sorted(lines) == ["rank 0 of 2: it's a b\n", "rank 1 of 2: it's a b\n"]
    assert job.first_line_at is not None
    overhead = job.first_line_at - job.submitted
    assert job.next_line(timeout=30) is None and job.wait(timeout=30) == 0
    print(f"Slurm job {job.job_id}: {overhead:.2f} s from sbatch to its first output line")
    assert overhead < 15

    bad = launcher.command(Placement(1, 1), ["sh", "-c", "echo oops >&2; exit 3"])
    failed = executor.submit(bad.argv, bad.env)
    assert failed.next_line(timeout=30) is None
    code = failed.wait(timeout=30)
    assert code == 3
    assert failed.explain_failure(code) == f"Slurm job {failed.job_id} FAILED, exit code 3:0: oops"

    # mpirun inside the allocation (Open MPI's Slurm support) instead of srun.
    mpirun = cluster_launcher(slurm_cluster, monkeypatch, starter="mpirun")
    rank = ["sh", "-c", "echo mpirun rank $OMPI_COMM_WORLD_RANK"]
    cmd = mpirun.command(Placement(1, 2), rank)
    started = mpirun.executor().start(cmd.argv, cmd.env)
    lines = [started.next_line(timeout=30) for _ in range(2)]
    assert sorted(lines) == ["mpirun rank 0\n", "mpirun rank 1\n"]
    assert started.next_line(timeout=30) is None and started.wait(timeout=30) == 0

    # Slurm rejects the job at once: its own reason, one line.
    rejecting = slurm(
        cores=os.cpu_count() or 1,
        partition=slurm_cluster.partition,
        sbatch_args=["--constraint=nosuch"],
    )
    cmd = rejecting.command(Placement(1, 1), ["true"])
    with pytest.raises(
        StartFailed, match=r"^Slurm rejected the job: Invalid feature specification$"
    ):
        rejecting.executor().start(cmd.argv, cmd.env)

    # A job slurmctld no longer knows (MinJobAge passed) is settled from its status file.
    deadline = time.monotonic() + 30
    while slurm_cluster.run("scontrol", "show", "job", failed.job_id).returncode == 0:
        assert time.monotonic() < deadline, "slurmctld did not purge the job"
        time.sleep(0.5)
    again = SlurmJob(failed.job_id, failed.directory, slurm_cluster.env, 0.2, 0.0).follow()
    assert again.wait(timeout=30) == 3 and again.vanished
    assert "record is gone from slurmctld" in again.explain_failure(3)
    assert again.explain_failure(3).endswith(": oops")


def test_preflight_names_what_does_not_fit(
    slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cores = os.cpu_count() or 1
    with pytest.raises(UserError, match=r"no Slurm partition 'nosuch' \(partitions: debug\)"):
        cluster_launcher(slurm_cluster, monkeypatch, partition="nosuch")
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    with pytest.raises(UserError, match="nodes = 2 but Slurm partition 'debug' has 1"):
        slurm(cores=cores, nodes=2).preflight()
    with pytest.raises(UserError, match=f"cores_per_node = {cores + 1} but .* have {cores} CPUs"):
        slurm(cores=cores + 1).preflight()
    with pytest.raises(UserError, match="srun has no MPI plugin 'nosuch'"):
        slurm(cores=cores, srun_mpi="nosuch").preflight()


@requires_mpi
def test_failed_job_is_a_failed_execution_with_slurms_reason(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    # srun refuses an option: the job FAILS, the campaign records why and goes on.
    platform = write(
        tmp_path / "p.toml",
        "name = 'bad'\ncores_per_node = 'auto'\n[launcher]\nkind = 'slurm'\n"
        "partition = 'debug'\npoll_s = 0.2\nextra_args = ['--no-such-option']\n",
    )
    suite = write(
        tmp_path / "s.toml",
        "name = 's'\n[[benchmark]]\nname = 'mpibench'\npatterns = ['pingpong', 'barrier']\n"
        "sizes = [8]\nranks = [2]\n",
    )
    proc = hpceval(
        slurm_cluster, "run", "--platform", str(platform), "--suite", str(suite), cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    executions = store.executions(run.id)
    assert len(executions) == 2
    for e in executions:
        assert e.status == "failed"
        assert re.fullmatch(
            r"Slurm job \d+ FAILED, exit code \d+:0: srun: unrecognized option "
            r"'--no-such-option'",
            e.error,
        ), e.error
        assert "script and output in" in e.stderr_tail
    assert store.measurements(run.id) == []


@requires_mpi
def test_slurm_down_is_one_line(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    # A copy of the cluster's configuration with the wrong port: nothing answers there.
    # (MessageTimeout=2 shortens the clients' retries from about 9 s to 2 s.)
    conf = slurm_cluster.copy_config(
        tmp_path / "wrong.conf", {"SlurmctldPort": "9", "MessageTimeout": "2"}
    )
    platform = write(
        tmp_path / "p.toml",
        f"name = 'down'\n[launcher]\nkind = 'slurm'\nslurm_conf = '{conf}'\n",
    )
    proc = hpceval(
        slurm_cluster, "run", "--platform", str(platform), "--suite", "smoke", cwd=tmp_path
    )
    line = one_line_error(proc)
    assert "Slurm controller not responding: sinfo: Unable to contact slurm controller" in line
    assert not (tmp_path / "hpceval.db").exists()
    # The same while the campaign runs: the submission fails with the same cause.
    launcher = slurm(slurm_conf=str(conf))
    cmd = launcher.command(Placement(1, 1), ["true"])
    with pytest.raises(StartFailed, match=r"^Slurm controller not responding: sbatch: Unable"):
        launcher.executor().start(cmd.argv, cmd.env)


@requires_mpi
def test_interrupt_cancels_the_job_and_resume_completes(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    suite = write(tmp_path / "slow.toml", SLURM_SLOW_SUITE)
    db = tmp_path / "hpceval.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hpceval",
            "run",
            "--platform",
            "slurm-local",
            "--suite",
            str(suite),
        ],
        cwd=tmp_path,
        env=slurm_cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not (db.exists() and _count_points(db) >= 3):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"the campaign did not complete 3 points in time: {proc.communicate()}")
        time.sleep(0.1)
    # As a terminal's Ctrl-C does: to the whole process group, sbatch/scontrol included.
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "hpceval run --resume" in stderr
    assert slurm_cluster.queue() == [], "the running job was not cancelled"
    store = open_store(str(db))
    (run,) = store.runs()
    assert run.status == "interrupted"
    (interrupted,) = [e for e in store.executions(run.id) if e.status == "interrupted"]
    assert "CANCELLED" in interrupted.stderr_tail
    store.close()

    resumed = hpceval(slurm_cluster, "run", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    store = open_store(str(db))
    (run,) = store.runs()
    assert run.status == "completed"
    ms = store.measurements(run.id)
    keys = [(m.case_key, m.point_key, m.measurement.metric) for m in ms]
    assert len(keys) == len(set(keys))
    assert {(m.case_key, m.point_key) for m in ms} == {
        (c.case_key, p) for c in store.cases(run.id) for p in c.description["points"]
    }


@requires_mpi
def test_job_killed_by_its_slurm_time_limit_is_a_failed_run(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """About a minute: Slurm's time limits count whole minutes."""
    platform = write(
        tmp_path / "p.toml",
        "name = 'short'\ncores_per_node = 'auto'\n[launcher]\nkind = 'slurm'\n"
        "partition = 'debug'\ntime_limit = '1'\npoll_s = 0.5\n",
    )
    suite = write(
        tmp_path / "long.toml",
        "name = 'long'\n[[benchmark]]\nname = 'mpibench'\npatterns = ['barrier']\nranks = [1]\n"
        "budget_s = 600\nsample_s = 0.1\nmin_samples = 2000\nmax_samples = 2000\n"
        "time_limit_s = 600\n",
    )
    proc = hpceval(
        slurm_cluster, "run", "--platform", str(platform), "--suite", str(suite), cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.status == "completed"
    (e,) = store.executions(run.id)
    assert e.status == "failed"
    assert e.error.startswith("Slurm job ") and e.error.endswith(" TIMEOUT (time limit 1 min)")
    assert "DUE TO TIME LIMIT" in e.stderr_tail
    assert [c.status for c in store.cases(run.id)] == ["failed"]
    assert "TIMEOUT (time limit 1 min)" in proc.stderr  # the progress line of the case
