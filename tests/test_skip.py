"""Skipped cases: a benchmark whose tool is missing is recorded as skipped with the reason,
measures nothing, does not fail the run, and `hpceval run --resume` runs it once the tool is
there. Real tools, a real campaign, the real CLI; "missing" is a PATH without the tool."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpceval.model import ExecutionStatus
from hpceval.store import open_store

from .conftest import FIO_TINY_SUITE, requires_mpi, run_suite, write

FIO_SUITE = FIO_TINY_SUITE + 'workloads = ["seqread"]\n'

HPCC_SUITE = """
name = "hpcc-tiny"
[[benchmark]]
name = "hpcc"
ranks = [1]
n = 200
nb = 40
"""


def path_without(tmp_path: Path, *missing: str) -> str:
    """A PATH with every program of the current PATH except `missing` (links to the real
    ones), as on a machine where those packages are not installed."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.listdir(directory):
            link = farm / entry
            if entry in missing or link.exists() or link.is_symlink():
                continue
            link.symlink_to(os.path.join(directory, entry))
    return str(farm)


@requires_mpi
def test_missing_tool_is_a_skipped_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_without(tmp_path, "fio"))
    store = open_store(str(tmp_path / "r.db"))
    run_id, ms = run_suite(tmp_path, store, FIO_SUITE.format(directory=tmp_path))
    assert ms == []
    (execution,) = store.executions(run_id)
    assert execution.status == ExecutionStatus.SKIPPED.value
    assert execution.error == "fio not found on PATH; install Debian package fio (./setup.sh deps)"
    assert execution.argv == () and execution.exit_code is None
    (case,) = store.cases(run_id)
    assert case.status == "skipped"
    # The status travels: export and import keep the skipped case and its reason.
    export = tmp_path / "out.jsonl"
    for args in (("export", str(export), "--db", str(tmp_path / "r.db")),
                 ("import", str(export), "--db", str(tmp_path / "copy.db"))):  # fmt: skip
        done = hpceval("db", *args, cwd=tmp_path, path=os.environ["PATH"])
        assert done.returncode == 0, done.stderr
    copy = open_store(str(tmp_path / "copy.db"), create=False)
    (row,) = copy.runs()
    assert [(e.status, e.error) for e in copy.executions(row.id)] == [
        ("skipped", execution.error)
    ]
    assert [c.status for c in copy.cases(row.id)] == ["skipped"]


def hpceval(*args: str, cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpceval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": path, "COLUMNS": "250"},
    )


@requires_mpi
@pytest.mark.mpi
@pytest.mark.skipif(shutil.which("hpcc") is None, reason="hpcc is not installed (./setup.sh deps)")
def test_skipped_then_resumed_once_installed(tmp_path: Path) -> None:
    suite = write(tmp_path / "hpcc-tiny.toml", HPCC_SUITE)
    # MPI by absolute path: the environment (and its fingerprint, which --resume checks)
    # records where mpicc and mpirun are, and that must not change with the PATH.
    platform = write(
        tmp_path / "here.toml",
        f'name = "here"\n[launcher]\nkind = "local"\nmpirun = "{shutil.which("mpirun")}"\n'
        f'mpicc = "{shutil.which("mpicc")}"\n',
    )
    without = path_without(tmp_path, "hpcc")
    ran = hpceval(
        "run", "--suite", str(suite), "--platform", str(platform), cwd=tmp_path, path=without
    )
    # Skipped is not a failure: exit status 0, but said in the summary and on stderr.
    assert ran.returncode == 0, ran.stderr
    reason = "hpcc not found on PATH; install Debian package hpcc (./setup.sh deps)"
    assert "0 of 1 cases ok, 1 skipped" in ran.stdout
    assert "skipped" in ran.stdout and reason in ran.stdout
    where = "1 node × 1 rank × 1 thread, intra-node"
    assert f"skipped: N=200 NB=40 np=1, {where}: {reason}" in ran.stderr
    assert "hpceval run --resume" in ran.stderr

    shown = hpceval("show", cwd=tmp_path, path=without)
    assert f"skipped: hpcc:N=200:NB=40:np=1:1x1x1:bind=core: {reason}" in shown.stdout
    runs = hpceval("runs", cwd=tmp_path, path=without)
    assert f"0/1 done, 1 skipped ({reason})" in runs.stdout

    # The tool is installed now: --resume measures what was skipped, in the same run.
    real_path = os.environ["PATH"]
    resumed = hpceval("run", "--resume", cwd=tmp_path, path=real_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming run 1: 1 points in 1 cases left" in resumed.stderr
    assert "1 of 1 cases ok" in resumed.stdout
    store = open_store(str(tmp_path / "hpceval.db"), create=False)
    statuses = [e.status for e in store.executions(1)]
    assert statuses == ["skipped", "ok"]
    assert {m.measurement.metric for m in store.measurements(1)} >= {"hpl", "stream_triad_star"}
    (case,) = store.cases(1)
    assert case.status == "done"
    after = hpceval("run", "--resume", cwd=tmp_path, path=real_path)
    assert after.returncode == 2 and "no interrupted run to resume" in after.stderr
