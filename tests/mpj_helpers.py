"""What the MPJ Express tests share (local, netns, hostfile and Slurm platforms): the suites
they run, and how they find the JVMs a campaign started and wait for them to come or go."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

# A short PingPong between two nodes (one rank on each): 0 B and 1 KiB, a few samples.
PINGPONG_ENTRY = """[[benchmark]]
name = "mpibench-java"
patterns = ["pingpong"]
sizes = [0, 1024]
ranks = [2]
ranks_per_node = [1]
binding = "none"
budget_s = 0.2
jit_warmup_s = 0.2
min_samples = 5
max_samples = 40
"""

# A PingPong that cannot reach its CI target: it samples for its whole minute, long enough for
# a test to kill hpceval while the daemons and rank JVMs run.
LONG_PINGPONG = """name = "long"
[[benchmark]]
name = "mpibench-java"
patterns = ["pingpong"]
sizes = [8]
ranks = [2]
ranks_per_node = [1]
binding = "none"
budget_s = 60
target_rci = 0.00001
max_samples = 100000000
"""


def suite(name: str, *entries: str) -> str:
    """A suite named `name` of these [[benchmark]] entries."""
    return f'name = "{name}"\n' + "\n".join(entries)


def jvms_of(marker: str) -> list[str]:
    """The JVMs (program java: not the reapers whose argv names java) whose argv names
    `marker`: the starter's, the ranks', MPJ daemons' (their class paths name MPJ_HOME)."""
    ps = subprocess.run(
        ["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True
    )
    return [
        ln
        for ln in ps.stdout.splitlines()
        if marker in ln and len(ln.split()) > 1 and Path(ln.split()[1]).name == "java"
    ]


def wait_for_jvms(proc: subprocess.Popen[str], cache: Path, count: int, timeout_s: float) -> None:
    """Until `count` JVMs naming `cache` run in two polls in a row; fails if hpceval ends
    first or time runs out. One poll is not enough: a JVM starting a process forks, and until
    the child execs, `ps` shows it with its parent's argv (a second daemon for a moment)."""
    deadline = time.monotonic() + timeout_s
    seen_before = 0
    while True:
        seen = len(jvms_of(str(cache)))
        if seen >= count and seen_before >= count:
            return
        seen_before = seen
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, jvms_of(str(cache))
        time.sleep(0.3)


def settled_count(marker: str, cache: Path, expected: int, timeout_s: float = 10.0) -> int:
    """How many JVMs naming `cache` have `marker` in their argv, once it is `expected` or
    `timeout_s` has passed: a JVM's fork shows its parent's argv until it execs (see
    wait_for_jvms), so a moment's extra count is not a lasting one."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = sum(marker in ln for ln in jvms_of(str(cache)))
        if found == expected or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def wait_for_no_jvm(cache: Path, timeout_s: float) -> list[str]:
    """The JVMs naming `cache` still running after waiting up to `timeout_s` for them to end."""
    deadline = time.monotonic() + timeout_s
    while jvms_of(str(cache)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return jvms_of(str(cache))
