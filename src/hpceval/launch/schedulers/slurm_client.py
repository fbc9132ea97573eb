"""Talking to Slurm: its time syntax, the platform's Slurm keys, client commands
(sinfo, scontrol, sbatch, scancel, srun --mpi=list) and what they answer, parsed.

Nothing here follows a job (`slurm_jobs`) or decides a command (`slurm`).
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hpceval.config import Argument

# A Slurm client command that takes longer than this is treated as "controller not responding"
# (clients retry an unreachable controller for about MessageTimeout seconds first).
SLURM_COMMAND_TIMEOUT_S = 60.0
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
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:+@][A-Za-z0-9_.:+@-]*$")
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
    srun_mpi: str = "pmix"  # the PMI plugin srun wires up ranks with (`srun --mpi=list`)
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
