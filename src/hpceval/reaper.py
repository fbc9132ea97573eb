"""The process between hpceval and a benchmark command: nothing it starts outlives hpceval.

`python reaper.py ARGV...` runs ARGV as its child and passes its exit status on (a child
killed by a signal makes the reaper die by the same signal). It is a child subreaper
(PR_SET_CHILD_SUBREAPER): whatever ARGV starts and leaves behind is re-parented to it, not
to PID 1, even when mpirun puts its ranks in their own sessions. It gets SIGTERM when
hpceval dies, even by kill -9 (PR_SET_PDEATHSIG, set in hpceval's preexec); on SIGTERM or
SIGINT, and once ARGV has exited, it terminates every process still below it (SIGTERM, then
SIGKILL after REAP_GRACE_S): an orphaned fio, hpcc, gmx or MPI daemon dies with the case.

Cost: one Python start-up per execution, outside any timed region (measured here, on a
loaded 2-core machine: 60-80 ms median beside a bare `true`).
It imports nothing of hpceval, so that it starts fast and runs as a plain script.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Shorter than hpceval's own grace period (execute.KILL_GRACE_S) before it kills the reaper.
REAP_GRACE_S = 1.5
# The environment variable naming a directory to remove once the command is over; only
# hpceval's own temporary directories (this prefix) are removed.
REMOVE_ENV = "HPCEVAL_REAPER_REMOVE"
REMOVABLE_PREFIX = "hpceval-"


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _children(pid: int) -> list[int] | None:
    """The direct children of `pid` (/proc/PID/task/*/children; None if the kernel lacks it)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                found += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            return None
        except OSError:
            continue
    return found


def _all_parents() -> dict[int, int]:
    """pid -> parent of every process (a scan of /proc: slower, works everywhere)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        parents[int(entry)] = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return parents


def descendants(root: int) -> list[int]:
    """Every process below `root`."""
    parents: dict[int, int] | None = None
    below: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = _children(parent)
        if children is None:
            if parents is None:
                parents = _all_parents()
            children = [pid for pid, ppid in parents.items() if ppid == parent]
        below += children
        frontier += children
    return below


def _reap_zombies() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def terminate_descendants(grace_s: float = REAP_GRACE_S) -> None:
    """SIGTERM to every process below this one, SIGKILL to those left after `grace_s`."""
    me = os.getpid()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        for pid in descendants(me):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        while time.monotonic() < deadline:
            _reap_zombies()
            if not descendants(me):
                return
            time.sleep(0.02)


class _Stop(Exception):
    """Raised by the signal handler to end the wait for the command."""


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: reaper.py PROGRAM [ARG...]", file=sys.stderr)
        return 2
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # A directory of hpceval's that dies with the command (an MPJ daemon's machines file):
    # removed here also when hpceval was killed with SIGKILL and could not remove it.
    remove = os.environ.pop(REMOVE_ENV, "")
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        raise _Stop

    def remember(signum: int, _frame: object) -> None:
        stopping.append(signum)

    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    status: int | None = None
    try:
        for sig in handled:
            signal.signal(sig, stop)
        child = os.fork()
        if child == 0:  # the command: default signal handling, then exec
            for sig in handled:
                signal.signal(sig, signal.SIG_DFL)
            try:
                os.execvp(argv[0], argv)
            except OSError as e:
                print(f"cannot start {argv[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
        while status is None:
            pid, raw = os.waitpid(child, 0)
            if pid == child:
                status = raw
    except _Stop:
        pass
    except OSError as e:
        print(f"hpceval reaper: {argv[0]}: {e.strerror}", file=sys.stderr)
        return 127
    finally:
        for sig in handled:
            signal.signal(sig, remember)
        # The command has exited, or is being stopped: nothing it started may stay behind.
        terminate_descendants()
        if os.path.basename(remove.rstrip("/")).startswith(REMOVABLE_PREFIX):
            shutil.rmtree(remove, ignore_errors=True)
    if status is None:
        return _die_by(stopping[0] if stopping else signal.SIGTERM)
    if os.WIFSIGNALED(status):
        return _die_by(os.WTERMSIG(status))
    return os.WEXITSTATUS(status)


def _die_by(signum: int) -> int:
    """End as the command ended: killed by `signum` (so hpceval explains it the same way)."""
    signal.signal(signum, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signum)
    return 128 + signum


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
