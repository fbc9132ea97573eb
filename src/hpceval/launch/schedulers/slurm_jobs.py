"""A Slurm batch job seen as a `Running` execution: the job script around the starter's
argv, then the job followed (output file line by line, state polled with scontrol) and
cancelled with scancel on every exit path.
"""

from __future__ import annotations

import collections
import re
import shlex
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hpceval.execute import STDERR_TAIL_LINES, StartFailed
from hpceval.launch.schedulers.slurm_client import (
    HOPELESS_REASONS,
    JobState,
    SlurmOptions,
    format_minutes,
    parse_slurm_time,
    run_slurm,
)
from hpceval.model import Placement

# How often the output file is read: lines reach the campaign at most this late.
TAIL_INTERVAL_S = 0.05
# stop(): how long to wait for a cancelled job to leave the running states before giving up.
STOP_TIMEOUT_S = 120.0
# Lines of a job's stderr that only repeat what the state already says.
_ROUTINE_STDERR = re.compile(
    r"^srun: error: \S+: tasks? [\d,-]+: (Exited with exit code|Killed|Terminated)"
    r"|^srun: (Job step aborted|got SIGCONT|forcing job termination|launch/slurm: )"
    r"|^slurmstepd\S*: error: \*\*\* "
    r'|^Try "\S+ --help"'
    r"|^[-=*]+$"
)
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --------------------------------------------------------------------------- job script


@dataclass(frozen=True)
class JobShape:
    """The allocation a command needs."""

    nodes: int
    ranks_per_node: int
    threads_per_rank: int
    overcommit: bool  # more ranks x threads than CPUs on a node

    @classmethod
    def of(cls, placement: Placement, overcommit: bool) -> JobShape:
        return cls(
            placement.nodes, placement.ranks_per_node, placement.threads_per_rank, overcommit
        )


def _sbatch_value(value: str) -> str:
    """A value on an #SBATCH line: sbatch splits on blanks and honours double quotes."""
    if any(c in value for c in '"\n%\\'):
        raise StartFailed(f"path {value!r} has characters Slurm's file patterns interpret")
    return f'"{value}"' if any(c.isspace() for c in value) else value


def job_script(
    argv: Sequence[str],
    env: Mapping[str, str],
    shape: JobShape,
    options: SlurmOptions,
    *,
    time_limit_min: int | None,
    stdout: Path,
    stderr: Path,
    status: Path,
) -> str:
    """The batch script: the allocation, the environment, then argv, its exit status kept."""
    lines = [
        "#!/bin/sh",
        f"#SBATCH --job-name={options.job_name}",
        f"#SBATCH --nodes={shape.nodes}",
    ]
    if shape.overcommit:
        # Slurm refuses more tasks per node than CPUs unless told to overcommit.
        lines += [
            f"#SBATCH --ntasks={shape.nodes * shape.ranks_per_node}",
            f"#SBATCH --cpus-per-task={shape.threads_per_rank}",
            "#SBATCH --overcommit",
        ]
    else:
        lines += [
            f"#SBATCH --ntasks-per-node={shape.ranks_per_node}",
            f"#SBATCH --cpus-per-task={shape.threads_per_rank}",
        ]
    if time_limit_min is not None:
        lines.append(f"#SBATCH --time={time_limit_min}")
    for key in ("partition", "account", "qos"):
        value = getattr(options, key)
        if value:
            lines.append(f"#SBATCH --{key}={value}")
    lines += [
        # A requeued job would run the benchmark again into the same output file.
        "#SBATCH --no-requeue",
        f"#SBATCH --output={_sbatch_value(str(stdout))}",
        f"#SBATCH --error={_sbatch_value(str(stderr))}",
    ]
    for key in sorted(env):
        if not _ENV_NAME_RE.match(key):
            raise StartFailed(f"invalid environment variable name {key!r}")
        lines.append(f"export {key}={shlex.quote(env[key])}")
    lines += [
        " ".join(shlex.quote(a) for a in argv),
        "status=$?",
        # Read back if slurmctld has already forgotten the job (MinJobAge).
        f'echo "$status" > {shlex.quote(str(status))}',
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- a job


class SlurmJob:
    """A submitted job, seen as a `Running` execution."""

    def __init__(
        self,
        job_id: str,
        directory: Path,
        env: Mapping[str, str],
        poll_s: float,
        submitted: float,
    ) -> None:
        self.job_id = job_id
        self.directory = directory
        self.stdout_path = directory / "stdout"
        self.stderr_path = directory / "stderr"
        self.status_path = directory / "exit-status"
        self.env = dict(env)
        self.poll_s = poll_s
        self.submitted = submitted  # monotonic clock
        self.first_line_at: float | None = None
        self.state: JobState | None = None
        self.vanished = False
        self.gave_up = ""
        self.hopeless = ""
        self.exit_code: int | None = None
        self.lines: collections.deque[str | None] = collections.deque()
        self._offset = 0
        self._partial = b""
        self._cancelled = False
        self._stopping_since: float | None = None
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._new_line = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._follow, daemon=True, name=f"slurm-{job_id}")

    def follow(self) -> SlurmJob:
        """Start following the job's output and state (in a thread); returns the job."""
        self._thread.start()
        return self

    # -- the follower thread: output file and job state

    def _read_output(self, final: bool) -> None:
        try:
            # Reopened every time: on NFS, a fresh open sees what the compute node wrote.
            with self.stdout_path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            data = b""
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        new = [ln.decode("utf-8", "replace") + "\n" for ln in complete]
        if final and self._partial:
            new.append(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        if new:
            with self._new_line:
                if self.first_line_at is None:
                    self.first_line_at = time.monotonic()
                self.lines.extend(new)
                self._new_line.notify_all()

    def _poll_state(self) -> None:
        answer = run_slurm(["scontrol", "show", "job", "-o", self.job_id], self.env)
        if answer.returncode == 0 and "JobState=" in answer.stdout:
            self.state = JobState.parse(answer.stdout)
        elif "Invalid job id" in answer.stderr:
            # Purged after MinJobAge: the job is over; the script's status file says how.
            self.vanished = True
        # Anything else (controller briefly away): keep polling; stop() bounds the wait.

    def _cancel(self) -> None:
        if not self._cancelled:
            self._cancelled = True
            run_slurm(["scancel", self.job_id], self.env)

    def _over(self) -> bool:
        if self.vanished or (self.state is not None and self.state.terminal):
            return True
        since = self._stopping_since
        if since is not None and time.monotonic() - since > STOP_TIMEOUT_S:
            self.gave_up = f"still not ended {STOP_TIMEOUT_S:g} s after scancel"
            return True
        return False

    def _follow(self) -> None:
        next_poll = 0.0
        while True:
            self._read_output(final=False)
            now = time.monotonic()
            if now >= next_poll or self._wake.is_set():
                self._wake.clear()
                self._poll_state()
                next_poll = time.monotonic() + self.poll_s
                state = self.state
                if (
                    state is not None
                    and state.state == "PENDING"
                    and state.reason in HOPELESS_REASONS
                    and not self.hopeless
                ):
                    self.hopeless = state.reason
                    self._cancel()
            if self._over():
                break
            self._wake.wait(TAIL_INTERVAL_S)
        self._read_output(final=True)
        self.exit_code = self._final_status()
        with self._new_line:
            self.lines.append(None)
            self._new_line.notify_all()

    def _final_status(self) -> int:
        if self.state is not None and self.state.terminal and not self.vanished:
            return self.state.status()
        try:
            return int(self.status_path.read_text().strip())
        except (OSError, ValueError):
            return -int(signal.SIGKILL)

    def queued(self) -> bool:
        """Still waiting in the queue (a campaign may start its time limit only after)."""
        state = self.state
        return state is not None and state.state == "PENDING" and not self.hopeless

    # -- the Running protocol

    def next_line(self, timeout: float) -> str | None:
        with self._new_line:
            if not self.lines and not self._new_line.wait_for(lambda: bool(self.lines), timeout):
                raise TimeoutError
            line = self.lines.popleft()
            if line is None:
                self.lines.appendleft(None)  # stays at the end for later calls
            return line

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._cancel()
        if self._stopping_since is None:
            self._stopping_since = time.monotonic()
        self._wake.set()
        self._thread.join()

    def wait(self, timeout: float | None = None) -> int | None:
        self._thread.join(timeout)
        if self._thread.is_alive():
            return None
        return self.exit_code

    def _stderr_lines(self) -> list[str]:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return []
        return text.splitlines()[-STDERR_TAIL_LINES:]

    def summary(self) -> str:
        if self.vanished:
            state = "ended (purged from slurmctld)"
        elif self.state is not None:
            state = self.state.state
            if self.state.nodes and self.state.nodes != "(null)":
                state += f" on {self.state.nodes}"
        else:
            state = "state unknown"
        where = "" if self.exit_code == 0 else f" (script and output in {self.directory})"
        return f"hpceval: Slurm job {self.job_id} {state}{where}"

    def stderr_tail(self) -> str:
        return "\n".join([self.summary(), *self._stderr_lines()]) + "\n"

    def _cause(self) -> str:
        """The line of the job's stderr that says most: the last error, Slurm's routine
        notices ("task 0: Exited with exit code 3", usage hints, banners) left out."""
        lines = [ln.strip() for ln in self._stderr_lines()]
        telling = [ln for ln in lines if ln and not _ROUTINE_STDERR.search(ln)]
        errors = [ln for ln in telling if "error" in ln.lower()]
        return (errors or telling or [""])[-1]

    def explain_failure(self, exit_code: int) -> str:
        head = f"Slurm job {self.job_id}"
        cause = self._cause()
        if self.hopeless:
            return f"{head} cannot start: pending with reason {self.hopeless}; cancelled"
        if self.gave_up:
            return f"{head} {self.gave_up}"
        state = self.state
        if self.vanished or state is None:
            text = f"{head} ended, exit status {exit_code} (its record is gone from slurmctld)"
            return f"{text}: {cause}" if cause else text
        if state.state == "TIMEOUT":
            limit = parse_slurm_time(state.time_limit) if state.time_limit else None
            return f"{head} TIMEOUT (time limit {format_minutes(limit)})"
        if state.state in ("FAILED", "COMPLETED"):
            text = f"{head} {state.state}, exit code {state.exit_code}"
        else:
            text = f"{head} {state.state}"
            if state.reason and state.reason != "None":
                text += f" ({state.reason})"
            if state.state == "NODE_FAIL" and state.nodes:
                text += f" on {state.nodes}"
            if state.state == "CANCELLED":
                return text
        return f"{text}: {cause}" if cause else text
