"""Executors: how a launcher's argv is really started, watched and stopped.

The campaign talks to a `Running` execution only: read the next stdout line (committing
points as they arrive), stop it (time limit, Ctrl-C), wait for its exit status, explain a
failure. `LocalExecutor` runs argv as a child process group on this machine; a scheduler
(Slurm) provides its own executor that submits a job and follows its output file.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

# Seconds between SIGTERM and SIGKILL (and for a program to exit by itself once its output
# ended): mpirun forwards SIGTERM to its ranks and needs a moment to tear them down. The one
# grace period of hpceval, also for what runs in a netns node.
KILL_GRACE_S = 3.0
STDERR_TAIL_LINES = 200


class StartFailed(Exception):
    """The command could not be started at all (no such program, job rejected...)."""


class Running(Protocol):
    def next_line(self, timeout: float) -> str | None:
        """The next stdout line; None once output has ended; TimeoutError if none came."""
        ...

    def stop(self) -> None:
        """Stop everything the execution started (idempotent); returns once it is gone."""
        ...

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status (negative: killed by that signal); None if still running."""
        ...

    def stderr_tail(self) -> str: ...

    def queued(self) -> bool:
        """True while waiting in a scheduler's queue (the time limit starts when it leaves)."""
        ...

    def explain_failure(self, exit_code: int) -> str:
        """One line: why a non-zero exit status happened."""
        ...


class Executor(Protocol):
    def start(self, argv: Sequence[str], env: Mapping[str, str]) -> Running:
        """Start argv with `env` set on top of the inherited environment; StartFailed if not."""
        ...


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


# The frames of a Java stack trace ("at pkg.Class.method(File.java:12)", "... 3 more"): the
# line that names the exception (or its last "Caused by:") stands above them.
_JAVA_FRAME = re.compile(r"(at [\w$.<>/]+\(.*\)|\.\.\. \d+ more)")


def last_line(text: str) -> str:
    """The last line that says something: mpirun frames its messages with rows of dashes,
    and a JVM ends with the frames of the exception it names above them."""
    lines = [ln.strip() for ln in text.strip().splitlines() if any(c.isalnum() for c in ln)]
    while len(lines) > 1 and _JAVA_FRAME.fullmatch(lines[-1]):
        lines.pop()
    return lines[-1] if lines else ""


def describe_exit(exit_code: int, stderr: str) -> str:
    if exit_code < 0:
        error = f"killed by {signal.Signals(-exit_code).name}"
    else:
        error = f"exited with status {exit_code}"
    cause = last_line(stderr)
    return f"{error}: {cause}" if cause else error


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child: SIGTERM when hpceval dies (even by kill -9), so no orphan mpirun lingers."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


REAPER = Path(__file__).with_name("reaper.py")


def reaped(argv: Sequence[str]) -> list[str]:
    """argv run under hpceval's reaper (see hpceval.reaper): whatever it starts (mpirun's
    ranks in their own sessions, fio's workers, a daemon) dies with it, and with hpceval."""
    return [sys.executable, "-I", "-S", str(REAPER), *argv]


def _pump_lines(stream: IO[str], sink: queue.Queue[str | None]) -> None:
    for line in stream:
        sink.put(line)
    sink.put(None)


def _keep_tail(stream: IO[str], tail: collections.deque[str]) -> None:
    for line in stream:
        tail.append(line)


class LocalProcess:
    """A child process group with stdout read line by line and stderr's tail kept."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        if shutil.which(argv[0], path={**os.environ, **env}.get("PATH")) is None:
            raise StartFailed(f"cannot start {argv[0]}: No such file or directory")
        try:
            self.proc = subprocess.Popen(
                reaped(argv),
                env={**os.environ, **env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                start_new_session=True,  # Ctrl-C reaches hpceval only; it stops the group
                preexec_fn=die_with_parent,
            )
        except OSError as e:
            raise StartFailed(f"cannot start {argv[0]}: {e.strerror}") from e
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.readers = [
            threading.Thread(target=_pump_lines, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=_keep_tail, args=(self.proc.stderr, self.tail), daemon=True),
        ]
        for t in self.readers:
            t.start()

    def next_line(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None

    def stop(self) -> None:
        """SIGTERM the process group (mpirun and its ranks), SIGKILL after a grace period."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=KILL_GRACE_S)
        for t in self.readers:
            t.join(timeout=KILL_GRACE_S)

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        for t in self.readers:
            t.join(timeout=KILL_GRACE_S)
        return code

    def stderr_tail(self) -> str:
        return "".join(self.tail)

    def queued(self) -> bool:
        return False

    def explain_failure(self, exit_code: int) -> str:
        return describe_exit(exit_code, self.stderr_tail())


class LocalExecutor:
    def start(self, argv: Sequence[str], env: Mapping[str, str]) -> Running:
        return LocalProcess(argv, env)
