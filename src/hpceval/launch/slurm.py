"""`slurm`: each execution is a batch job; ranks start with srun (PMIx) or mpirun inside it.

`command()` returns the argv that runs inside the allocation (srun or mpirun). The executor
writes a job script around it (#SBATCH shape, `export` lines, the argv quoted with
shlex.quote), submits it with `sbatch --parsable`, follows the job's output file line by line
(points are committed as the benchmark prints them), polls `scontrol show job` for the state
(no slurmdbd needed), cancels with `scancel` on Ctrl-C or the campaign's time limit, and says
in one line why a job failed: the scheduler's state and reason ("Slurm job 42 TIMEOUT (time
limit 1 min)"). Jobs whose record slurmctld already purged (MinJobAge) are settled from the
exit status file the script writes.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hpceval.build import cache_root
from hpceval.config import Argument, PlatformConfig
from hpceval.errors import UserError
from hpceval.execute import STDERR_TAIL_LINES, Executor, Running, StartFailed
from hpceval.launch import register
from hpceval.launch.base import (
    Command,
    Launcher,
    MpiRuntime,
    running_as_root,
    thread_environment,
)
from hpceval.launch.local import OPEN_MPI_YIELD_ENV, environment_args, mpich_args
from hpceval.model import Placement
from hpceval.toolchain import run_as_root_requirements

# A Slurm client command that takes longer than this is treated as "controller not responding"
# (clients retry an unreachable controller for about MessageTimeout seconds first).
SLURM_COMMAND_TIMEOUT_S = 60.0
# How often the output file is read: lines reach the campaign at most this late.
TAIL_INTERVAL_S = 0.05
# stop(): how long to wait for a cancelled job to leave the running states before giving up.
STOP_TIMEOUT_S = 120.0
# Extra minutes on the job's Slurm time limit over the case's own (the campaign stops the job
# at the case's limit; Slurm's limit is the backstop if hpceval itself dies).
TIME_MARGIN_MIN = 1

TERMINAL_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)
# Pending reasons that never clear by themselves: the request does not fit the partition,
# account or QOS. Such a job is cancelled and reported instead of waiting forever.
HOPELESS_REASONS = frozenset(
    {
        "AccountNotAllowed",
        "BadConstraints",
        "InvalidAccount",
        "InvalidQOS",
        "PartitionConfig",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "QOSNotAllowed",
    }
)
# Words in a Slurm client's error that mean slurmctld could not be reached at all.
_UNREACHABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Zero Bytes were transmitted",
    "Communication connection failure",
    "timed out after",
)
_SRUN_BIND = {
    "core": "cores",
    "socket": "sockets",
    "numa": "ldoms",
    "hwthread": "threads",
    "none": "none",
}
# Lines of a job's stderr that only repeat what the state already says.
_ROUTINE_STDERR = re.compile(
    r"^srun: error: \S+: tasks? [\d,-]+: (Exited with exit code|Killed|Terminated)"
    r"|^srun: (Job step aborted|got SIGCONT|forcing job termination|launch/slurm: )"
    r"|^slurmstepd\S*: error: \*\*\* "
    r'|^Try "\S+ --help"'
    r"|^[-=*]+$"
)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:+@][A-Za-z0-9_.:+@-]*$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


# --------------------------------------------------------------------------- time syntax


def parse_slurm_time(text: str) -> int | None:
    """Slurm's time syntax -> seconds; None for UNLIMITED/INFINITE.

    Accepted as Slurm does: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS."""
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    m = _TIME_RE.match(value)
    if not m:
        raise ValueError(
            f"invalid Slurm time {text!r} (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)"
        )
    days, a, b, c = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if days is not None:
        hours, minutes, seconds = a, int(b or 0), int(c or 0)
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if c is not None:  # HH:MM:SS
        return (a * 60 + int(b or 0)) * 60 + int(c)
    if b is not None:  # MM:SS
        return a * 60 + int(b)
    return a * 60  # MM


def format_minutes(seconds: int | None) -> str:
    if seconds is None:
        return "unlimited"
    minutes = math.ceil(seconds / 60)
    if minutes >= 120 and minutes % 60 == 0:
        return f"{minutes // 60} h"
    return f"{minutes} min"


# --------------------------------------------------------------------------- options


class SlurmOptions(BaseModel):
    """The slurm launcher's own keys in the platform's [launcher] table."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    partition: str | None = None  # default: the cluster's default partition
    account: str | None = None
    qos: str | None = None
    # Per job, Slurm syntax ("30", "1:00:00", "1-00:00:00"); default: the case's time limit
    # plus a minute when the campaign tells it, else the partition's default time.
    time_limit: str | None = None
    sbatch_args: list[str] = Field(default_factory=list)  # given to sbatch as they are
    starter: Literal["srun", "mpirun"] = "srun"
    srun_mpi: str = "pmix"  # srun --mpi plugin (see `srun --mpi=list`)
    poll_s: float = Field(1.0, gt=0, le=60)  # scontrol polling interval
    job_dir: Argument | None = None  # scripts and output; default <cache>/slurm-jobs (shared FS!)
    slurm_conf: Argument | None = None  # SLURM_CONF for the Slurm commands; default: the usual one
    job_name: str = "hpceval"

    @field_validator("partition", "account", "qos", "srun_mpi", "job_name")
    @classmethod
    def _plain_name(cls, v: str | None) -> str | None:
        if v is not None and not _NAME_RE.match(v):
            raise ValueError(f"{v!r} is not a valid Slurm name")
        return v

    @field_validator("time_limit", mode="before")
    @classmethod
    def _time(cls, v: object) -> object:
        if isinstance(v, bool):
            raise ValueError('expected a Slurm time such as 30 or "1:00:00"')
        if isinstance(v, int):  # plain minutes
            v = str(v)
        if isinstance(v, str):
            seconds = parse_slurm_time(v)
            if seconds is not None and seconds <= 0:
                raise ValueError("must be positive")
        return v

    def time_limit_s(self) -> int | None:
        return parse_slurm_time(self.time_limit) if self.time_limit else None


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


# --------------------------------------------------------------------------- Slurm commands


@dataclass(frozen=True)
class Answer:
    returncode: int
    stdout: str
    stderr: str


def slurm_env(options: SlurmOptions) -> dict[str, str]:
    env = dict(os.environ)
    if options.slurm_conf:
        env["SLURM_CONF"] = options.slurm_conf
    return env


def run_slurm(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = SLURM_COMMAND_TIMEOUT_S
) -> Answer:
    """Run a Slurm client command; a missing tool or a time-out is an answer, not an error."""
    try:
        proc = subprocess.run(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            # A Ctrl-C in the terminal must reach hpceval only: an sbatch killed half-way
            # could leave a job behind that nobody knows the id of.
            start_new_session=True,
        )
    except FileNotFoundError:
        return Answer(127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return Answer(124, "", f"{argv[0]}: timed out after {timeout:g} s")
    return Answer(proc.returncode, proc.stdout, proc.stderr)


def slurm_error(stderr: str) -> str:
    """The cause in a Slurm client's stderr, prefixes ("sbatch: error: ...") removed."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() or "fatal" in ln.lower()]
    line = (errors or lines or ["no error message"])[-1]
    line = re.sub(r"^[a-z_]+: (error|fatal): ", "", line)
    line = re.sub(r"^slurm_load_\w+( error)?: ", "", line)
    return line.removeprefix("Batch job submission failed: ")


def controller_unreachable(stderr: str) -> bool:
    return any(word in stderr for word in _UNREACHABLE)


def describe_slurm_failure(tool: str, answer: Answer) -> str:
    cause = slurm_error(answer.stderr)
    if answer.returncode == 127:
        return f"{cause} (install Slurm's client commands; Debian: slurm-client)"
    if controller_unreachable(answer.stderr):
        return f"Slurm controller not responding: {tool}: {cause}"
    return f"{tool}: {cause}"


# --------------------------------------------------------------------------- a job


@dataclass(frozen=True)
class JobState:
    """What `scontrol show job -o` says of a job."""

    state: str
    reason: str
    exit_code: str  # "X:S": exit status of the script, signal that ended it
    time_limit: str
    nodes: str

    @classmethod
    def parse(cls, text: str) -> JobState:
        def field(key: str) -> str:
            m = re.search(rf"(?:^|\s){key}=(\S*)", text)
            return m.group(1) if m else ""

        # "CANCELLED by 0" is squeue's wording; scontrol prints the bare state.
        return cls(
            state=field("JobState").split("+")[0],
            reason=field("Reason"),
            exit_code=field("ExitCode"),
            time_limit=field("TimeLimit"),
            nodes=field("NodeList"),
        )

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def status(self) -> int:
        """The exit status as the campaign reads it: negative for a signal, never 0 unless
        the job COMPLETED."""
        code, _, sig = self.exit_code.partition(":")
        try:
            exit_status, signum = int(code), int(sig or 0)
        except ValueError:
            exit_status, signum = 0, 0
        if exit_status:
            return exit_status
        if signum:
            return -signum
        return 0 if self.state == "COMPLETED" else -int(signal.SIGKILL)


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


# --------------------------------------------------------------------------- executor


class SlurmExecutor:
    """Starts a command as a batch job of the shape its launcher registered for it."""

    def __init__(self, launcher: SlurmLauncher, time_limit_min: int | None) -> None:
        self.launcher = launcher
        self.time_limit_min = time_limit_min

    def start(self, argv: Sequence[str], env: Mapping[str, str]) -> Running:
        return self.submit(argv, env)

    def submit(self, argv: Sequence[str], env: Mapping[str, str]) -> SlurmJob:
        launcher = self.launcher
        options = launcher.slurm_options
        shape = launcher.shape_of(argv)
        root = launcher.job_root()
        try:
            root.mkdir(parents=True, exist_ok=True)
            directory = Path(tempfile.mkdtemp(prefix="job-", dir=root))
            script = directory / "job.sh"
            script.write_text(
                job_script(
                    argv,
                    env,
                    shape,
                    options,
                    time_limit_min=self.time_limit_min,
                    stdout=directory / "stdout",
                    stderr=directory / "stderr",
                    status=directory / "exit-status",
                )
            )
        except OSError as e:
            raise StartFailed(f"cannot write a Slurm job script in {root}: {e.strerror}") from e
        client_env = slurm_env(options)
        submitted = time.monotonic()
        answer = run_slurm(sbatch_argv(options, script), client_env)
        job_id = answer.stdout.strip().split(";")[0]
        if answer.returncode != 0 or not job_id.isdigit():
            if controller_unreachable(answer.stderr):
                raise StartFailed(describe_slurm_failure("sbatch", answer))
            raise StartFailed(f"Slurm rejected the job: {slurm_error(answer.stderr)}")
        job = SlurmJob(job_id, directory, client_env, options.poll_s, submitted).follow()
        launcher.jobs.append(job)
        return job


def sbatch_argv(options: SlurmOptions, script: Path) -> list[str]:
    return ["sbatch", "--parsable", *options.sbatch_args, str(script)]


# --------------------------------------------------------------------------- launcher


def srun_argv(
    placement: Placement,
    program: Sequence[str],
    *,
    mpi: str,
    overcommit: bool,
    extra: Sequence[str],
) -> list[str]:
    """srun for the ranks: block distribution, so rank r runs on node r // ranks_per_node."""
    argv = [
        "srun",
        f"--mpi={mpi}",
        f"--nodes={placement.nodes}",
        f"--ntasks={placement.ranks}",
        f"--ntasks-per-node={placement.ranks_per_node}",
        f"--cpus-per-task={placement.threads_per_rank}",
        "--distribution=block:block",
        f"--cpu-bind={_SRUN_BIND[placement.binding]}",
        "--kill-on-bad-exit=1",
    ]
    if overcommit:
        argv.append("--overcommit")
    return [*argv, *extra, *program]


def open_mpi_slurm_args(placement: Placement, oversubscribed: bool) -> list[str]:
    """mpirun inside an allocation: R ranks per node, node by node (rank r on r // R)."""
    ppr = f"ppr:{placement.ranks_per_node}:node"
    if oversubscribed:
        return ["--map-by", ppr, "--oversubscribe", "--bind-to", "none"]
    if placement.threads_per_rank > 1:
        ppr += f":PE={placement.threads_per_rank}"
    args = ["--map-by", ppr, "--bind-to", placement.binding]
    if placement.binding == "hwthread":
        args.append("--use-hwthread-cpus")
    return args


@register
class SlurmLauncher(Launcher):
    name = "slurm"
    options_model = SlurmOptions

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        super().__init__(platform, runtime)
        self.slurm_options: SlurmOptions = self.options()
        self._shapes: dict[tuple[str, ...], JobShape] = {}
        self.jobs: list[SlurmJob] = []
        # False once preflight finds TaskPlugin=task/none: srun then ignores --cpu-bind, and
        # measurements must not claim a binding that did not happen.
        self.can_bind = True

    # -- commands

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        self.check_placement(placement)
        options = self.slurm_options
        oversubscribed = self.oversubscribed(placement)
        unbound = oversubscribed or (options.starter == "srun" and not self.can_bind)
        effective = replace(placement, binding="none") if unbound else placement
        impl = self.runtime.implementation
        env = thread_environment(placement.threads_per_rank, oversubscribed=oversubscribed)
        if oversubscribed and impl == "Open MPI":
            env.update(OPEN_MPI_YIELD_ENV)
        env.update(self.platform.launcher.env)
        extra = self.platform.launcher.extra_args
        if options.starter == "srun":
            # The job script exports env; srun hands the whole environment to the ranks.
            argv = srun_argv(
                effective, program, mpi=options.srun_mpi, overcommit=oversubscribed, extra=extra
            )
        elif impl == "Open MPI":
            if running_as_root():
                env.update(run_as_root_requirements(impl).env)
            rank_env = {k: v for k, v in env.items() if not k.startswith("OMPI_ALLOW_RUN_AS")}
            argv = [
                self.runtime.mpirun,
                "-np",
                str(placement.ranks),
                *open_mpi_slurm_args(effective, oversubscribed),
                *environment_args(impl, rank_env),
                *extra,
                *program,
            ]
        else:  # MPICH's Hydra starts its proxies with srun when it finds an allocation
            mapping, _ = mpich_args(effective, oversubscribed)
            argv = [
                self.runtime.mpirun,
                "-n",
                str(placement.ranks),
                "-ppn",
                str(placement.ranks_per_node),
                *mapping,
                *environment_args(impl, env),
                *extra,
                *program,
            ]
        self._shapes[tuple(argv)] = JobShape.of(placement, oversubscribed)
        notes: tuple[str, ...] = ()
        if oversubscribed:
            notes = ("oversubscribed: binding disabled, ranks yield when idle",)
        elif unbound:
            notes = ("Slurm has TaskPlugin=task/none: ranks are not bound",)
        return Command(tuple(argv), env, effective, oversubscribed, notes)

    def shape_of(self, argv: Sequence[str]) -> JobShape:
        try:
            return self._shapes[tuple(argv)]
        except KeyError:
            raise StartFailed("the slurm launcher did not build this command") from None

    def job_root(self) -> Path:
        if self.slurm_options.job_dir:
            return Path(self.slurm_options.job_dir).expanduser().resolve()
        return cache_root().resolve() / "slurm-jobs"

    # -- executions

    def job_time_limit_min(self, time_limit_s: float | None) -> int | None:
        """--time in minutes: the platform's, else the case's plus a margin, else none (the
        partition's default applies)."""
        configured = self.slurm_options.time_limit_s()
        if self.slurm_options.time_limit is not None:
            return None if configured is None else math.ceil(configured / 60)
        if time_limit_s is not None:
            return math.ceil(time_limit_s / 60) + TIME_MARGIN_MIN
        return None

    def executor(self, time_limit_s: float | None = None) -> Executor:
        return SlurmExecutor(self, self.job_time_limit_min(time_limit_s))

    def session(self) -> contextlib.AbstractContextManager[None]:
        return self._session()

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        try:
            yield
        finally:
            # Nothing may outlive the campaign in the queue; output of good jobs is in the
            # database, so their directories go (failed ones stay for a closer look).
            for job in self.jobs:
                job.stop()
                if job.exit_code == 0:
                    shutil.rmtree(job.directory, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.job_root().rmdir()  # only if empty

    # -- checks before the campaign

    def preflight(self) -> None:
        options = self.slurm_options
        where = f"platform {self.platform.name!r}"
        env = slurm_env(options)
        if shutil.which("sinfo", path=env.get("PATH")) is None:
            raise UserError(
                "sinfo not found: the slurm launcher needs Slurm's client commands "
                "(Debian: apt-get install slurm-client)"
            )
        answer = run_slurm(["sinfo", "--noheader", "--format=%R|%P|%a|%D|%c|%l"], env)
        if answer.returncode != 0:
            raise UserError(describe_slurm_failure("sinfo", answer))
        partitions = parse_sinfo(answer.stdout)
        if not partitions:
            raise UserError("sinfo lists no Slurm partition")
        name = options.partition or next((p.name for p in partitions.values() if p.default), None)
        if name is None:
            raise UserError(f"{where}: launcher.partition: not set and Slurm has no default")
        part = partitions.get(name)
        if part is None:
            raise UserError(
                f"{where}: launcher.partition: no Slurm partition {name!r} "
                f"(partitions: {', '.join(sorted(partitions))})"
            )
        if part.availability != "up":
            raise UserError(f"{where}: Slurm partition {name!r} is {part.availability}")
        if self.platform.nodes > part.nodes:
            raise UserError(
                f"{where}: nodes = {self.platform.nodes} but Slurm partition {name!r} "
                f"has {part.nodes}"
            )
        cores = self.platform.resolved_cores_per_node()
        if cores > part.cpus_per_node:
            raise UserError(
                f"{where}: cores_per_node = {cores} but the nodes of Slurm partition {name!r} "
                f"have {part.cpus_per_node} CPUs"
            )
        wanted = options.time_limit_s()
        if wanted is not None and part.max_time_s is not None and wanted > part.max_time_s:
            raise UserError(
                f"{where}: launcher.time_limit = {options.time_limit} exceeds the time limit of "
                f"Slurm partition {name!r} ({format_minutes(part.max_time_s)})"
            )
        config = run_slurm(["scontrol", "show", "config"], env)
        if config.returncode == 0:
            m = re.search(r"^TaskPlugin\s*=\s*(\S+)", config.stdout, re.M)
            self.can_bind = not (m and m.group(1) == "task/none")
        if options.starter == "srun":
            plugins = srun_mpi_plugins(env)
            if plugins is not None and options.srun_mpi not in plugins:
                raise UserError(
                    f"{where}: launcher.srun_mpi: srun has no MPI plugin {options.srun_mpi!r} "
                    f"(available: {', '.join(sorted(plugins))})"
                )
        root = self.job_root()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{where}: launcher.job_dir: cannot create {root}: {e.strerror}") from e


@dataclass(frozen=True)
class Partition:
    name: str
    default: bool
    availability: str
    nodes: int
    cpus_per_node: int  # the smallest node's
    max_time_s: int | None


def parse_sinfo(text: str) -> dict[str, Partition]:
    """`sinfo --format=%R|%P|%a|%D|%c|%l` -> partitions (a partition may span several lines,
    one per group of alike nodes)."""
    out: dict[str, Partition] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 6:
            continue
        name, label, avail, nodes, cpus, limit = fields
        try:
            n, c = int(nodes), int(cpus.rstrip("+"))
            max_time = parse_slurm_time(limit)
        except ValueError:
            continue
        seen = out.get(name)
        if seen is not None:
            n += seen.nodes
            c = min(c, seen.cpus_per_node)
        out[name] = Partition(name, label.endswith("*"), avail, n, c, max_time)
    return out


def srun_mpi_plugins(env: Mapping[str, str]) -> set[str] | None:
    """The names `srun --mpi=list` offers (None when it cannot tell)."""
    answer = run_slurm(["srun", "--mpi=list"], env)
    if answer.returncode != 0:
        return None
    text = answer.stdout + answer.stderr
    names: set[str] = set()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("specific pmix plugin versions available:"):
            names.update(v.strip() for v in stripped.split(":", 1)[1].split(","))
        elif re.fullmatch(r"(srun: )?[a-z0-9_]+", stripped):
            names.add(stripped.removeprefix("srun: "))
    return names or None
