"""Nothing a case starts outlives hpceval, and its scratch is reclaimed (issue 22, item 6)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hpceval.execute import REAPER
from hpceval.scratch import make_scratch, reclaim_scratch

from .conftest import requires_mpi, requires_tool, write


def processes_mentioning(text: str) -> list[int]:
    """Live (not zombie) processes whose command line holds `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_reaper_passes_the_exit_status_on() -> None:
    run = [sys.executable, "-I", "-S", str(REAPER)]
    assert subprocess.run([*run, "sh", "-c", "exit 3"], check=False).returncode == 3
    killed = subprocess.run([*run, "sh", "-c", "kill -TERM $$"], check=False)
    assert killed.returncode == -signal.SIGTERM


def test_what_a_command_leaves_behind_is_killed_when_it_exits(tmp_path: Path) -> None:
    # A daemon in its own session, as mpirun starts its ranks and fio its workers.
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(REAPER), "sh", "-c", "setsid sleep 301 &"], check=False
    )
    assert done.returncode == 0
    assert wait_for(lambda: not processes_mentioning("sleep 301"), 5)


def test_killing_the_reaper_kills_the_whole_tree(tmp_path: Path) -> None:
    script = write(tmp_path / "tree.sh", "setsid sleep 302 &\nsleep 303\n")
    reaper = subprocess.Popen([sys.executable, "-I", "-S", str(REAPER), "sh", str(script)])
    assert wait_for(lambda: len(processes_mentioning("sleep 30")) >= 2, 10)
    reaper.terminate()
    assert reaper.wait(timeout=10) == -signal.SIGTERM
    assert wait_for(lambda: not processes_mentioning("sleep 302")
                    and not processes_mentioning("sleep 303"), 5)  # fmt: skip


def test_scratch_of_a_dead_owner_is_reclaimed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    mine = make_scratch(tmp_path, "hpceval-x-")
    theirs = Path(str(mine).replace(f"-{os.getpid()}-", f"-{dead.pid}-"))
    theirs.mkdir()
    (theirs / "big").write_bytes(b"x")
    other_host = tmp_path / "hpceval-x-otherhost-1-abc"
    other_host.mkdir()
    assert reclaim_scratch(tmp_path, "hpceval-x-") == [theirs]
    assert mine.is_dir() and other_host.is_dir() and not theirs.exists()


FIO_SUITE = """name = "fio-long"
[[benchmark]]
name = "fio"
directory = "{directory}"
size = "4MiB"
numjobs = 1
runtime_s = {runtime}
workloads = ["randread"]
"""


@requires_mpi
@requires_tool("fio")
def test_kill_9_of_hpceval_during_a_fio_case(tmp_path: Path) -> None:
    directory = tmp_path / "disk"
    directory.mkdir()
    suite = write(tmp_path / "s.toml", FIO_SUITE.format(directory=directory, runtime=15))
    db = tmp_path / "r.db"
    hpceval = subprocess.Popen(
        [sys.executable, "-m", "hpceval", "run", "-s", str(suite), "--db", str(db)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: len(processes_mentioning(f"--directory={directory}")) >= 2, 60)
    finally:
        hpceval.kill()  # SIGKILL: no clean-up of its own
        hpceval.wait()
    # fio (main process and its worker) and mpirun die with hpceval, not minutes later.
    assert wait_for(lambda: not processes_mentioning(str(directory)), 10), [
        Path(f"/proc/{p}/cmdline").read_bytes() for p in processes_mentioning(str(directory))
    ]
    (left,) = directory.iterdir()  # the dead run's scratch, named by its owner
    assert str(hpceval.pid) in left.name
    # The next command that runs there reclaims it.
    resumed = subprocess.run(
        [sys.executable, "-m", "hpceval", "run", "--resume", "--db", str(db)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert list(directory.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_missing_program_is_still_a_start_failure() -> None:
    from hpceval.execute import LocalExecutor, StartFailed

    with pytest.raises(StartFailed, match="cannot start no-such-program: No such file"):
        LocalExecutor().start(["no-such-program"], {})
