"""`slurm`: each execution is a batch job; ranks start with srun (PMIx) or mpirun inside it.

`command()` returns the argv that runs inside the allocation (srun or mpirun). The executor
writes a job script around it (#SBATCH shape, `export` lines, the argv quoted with
shlex.quote), submits it with `sbatch --parsable`, follows the job's output file line by line
(points are committed as the benchmark prints them), polls `scontrol show job` for the state
(no slurmdbd needed), cancels with `scancel` on Ctrl-C or the campaign's time limit (and, through
a guard process, when hpceval itself is killed: slurm_guard.py), and says in one line why a
job failed: the scheduler's state and reason ("Slurm job 42 TIMEOUT (time
limit 1 min)"). Jobs whose record slurmctld already purged (MinJobAge) are settled from the
exit status file the script writes.

With `starter = "mpjrun"` (Java programs on MPJ Express, niodev or hybdev) the job starts
one MPJ daemon per allocated node as a job step, writes the machines file from the
allocation's node list, then runs MPJRun (hpceval.launch.schedulers.mpj_daemons: the job's
script); the daemons and their rank JVMs end with the step, or with the job.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from hpceval.build import cache_root
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.execute import Executor, Running, StartFailed
from hpceval.launch.command import Command, MpiRuntime
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.base import Scheduler
from hpceval.launch.schedulers.mpj import check_daemon_device, mpj_request
from hpceval.launch.schedulers.mpj_daemons import MACHINES_PLACEHOLDER, job_daemons_argv
from hpceval.launch.schedulers.slurm_client import (
    SlurmOptions,
    controller_unreachable,
    describe_slurm_failure,
    format_minutes,
    parse_sinfo,
    run_slurm,
    slurm_env,
    slurm_error,
    srun_mpi_plugins,
)
from hpceval.launch.schedulers.slurm_jobs import JobShape, SlurmJob, job_script
from hpceval.launch.starters.base import Nodes, StartRequest
from hpceval.model import Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, MPJ_STARTER, installation

# Extra minutes on the job's Slurm time limit over the case's own (the campaign stops the job
# at the case's limit; Slurm's limit is the backstop if hpceval itself dies).
TIME_MARGIN_MIN = 1


GUARD = Path(__file__).with_name("slurm_guard.py")
GUARD_EXIT_TIMEOUT_S = 10


class JobGuard:
    """hpceval's side of slurm_guard.py: the jobs it submitted are cancelled by the guard if
    hpceval dies before `close` (which says they were stopped here)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        read_end, write_end = os.pipe()  # not inheritable: hpceval holds the only writer
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARD)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(env),
                start_new_session=True,
            )
        except OSError:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._pipe = os.fdopen(write_end, "w", buffering=1)

    def submitting(self, script: Path) -> None:
        """Before sbatch: a job of this script is cancelled too if hpceval dies before its id
        comes back (the guard finds it in the queue by its command)."""
        with contextlib.suppress(OSError):
            self._pipe.write(f"?{script}\n")

    def submitted(self, job_id: str, script: Path) -> None:
        with contextlib.suppress(OSError):  # a guard that died: the jobs are still stopped here
            self._pipe.write(f"+{job_id} {script}\n")

    def close(self) -> None:
        """The jobs were stopped here: the guard ends without cancelling anything."""
        with contextlib.suppress(OSError):
            self._pipe.write("done\n")
        with contextlib.suppress(OSError):
            self._pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=GUARD_EXIT_TIMEOUT_S)


# --------------------------------------------------------------------------- executor


class SlurmExecutor:
    """Starts a command as a batch job of the shape its launcher registered for it."""

    def __init__(self, launcher: SlurmScheduler, time_limit_min: int | None) -> None:
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
        guard = launcher.guard(client_env)
        submitted = time.monotonic()
        guard.submitting(script)
        answer = run_slurm(sbatch_argv(options, script), client_env)
        job_id = answer.stdout.strip().split(";")[0]
        if answer.returncode != 0 or not job_id.isdigit():
            if controller_unreachable(answer.stderr):
                raise StartFailed(describe_slurm_failure("sbatch", answer))
            raise StartFailed(f"Slurm rejected the job: {slurm_error(answer.stderr)}")
        guard.submitted(job_id, script)
        job = SlurmJob(job_id, directory, client_env, options.poll_s, submitted).follow()
        launcher.jobs.append(job)
        return job


def sbatch_argv(options: SlurmOptions, script: Path) -> list[str]:
    return ["sbatch", "--parsable", *options.sbatch_args, str(script)]


# --------------------------------------------------------------------------- scheduler

NO_TASK_PLUGIN_NOTE = "Slurm has TaskPlugin=task/none: ranks are not bound"


@register
class SlurmScheduler(Scheduler):
    name = "slurm"
    options_model = SlurmOptions
    default_starter = "srun"

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        super().__init__(platform, runtime)
        self.slurm_options: SlurmOptions = self.options()
        self._shapes: dict[tuple[str, ...], JobShape] = {}
        self.jobs: list[SlurmJob] = []
        self._guard: JobGuard | None = None
        # False once preflight finds TaskPlugin=task/none: srun then ignores --cpu-bind, and
        # measurements must not claim a binding that did not happen.
        self.can_bind = True

    # -- commands

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        """The ranks run in the job's allocation. The job script exports the environment
        (srun hands it to the ranks; mpirun/mpiexec find the nodes in the allocation)."""
        unbound = self.starter.binds_through_scheduler and not self.can_bind
        request = replace(
            super().start_request(placement, program),
            nodes=Nodes(allocation=True),
            unbound_reason=NO_TASK_PLUGIN_NOTE if unbound else None,
            pmi=self.slurm_options.srun_mpi,
        )
        if self.runs_mpj:
            # The job writes the machines file, from its allocation (mpj_daemons).
            self._check_mpj_device()
            return mpj_request(request, Nodes(allocation=True, hostfile=MACHINES_PLACEHOLDER))
        return request

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        command = super().command(placement, program)
        if self.runs_mpj:
            device = self.starter_options().device
            per_node = 1 if device == "hybdev" else placement.ranks_per_node
            mpj_home = command.env["MPJ_HOME"]
            argv = job_daemons_argv(
                mpj_home, command.argv[0], DEFAULT_DAEMON_PORT, per_node, command.argv
            )
            command = replace(command, argv=tuple(argv))
        self._shapes[command.argv] = JobShape.of(placement, command.oversubscribed)
        return command

    @property
    def runs_mpj(self) -> bool:
        return self.starter.name == MPJ_STARTER

    def _check_mpj_device(self) -> None:
        check_daemon_device(self.starter_options().device, "a Slurm job")

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

    def guard(self, env: Mapping[str, str]) -> JobGuard:
        """The guard of this launcher's jobs (started with the first one)."""
        if self._guard is None:
            self._guard = JobGuard(env)
        return self._guard

    def close(self) -> None:
        # Nothing may outlive the campaign in the queue; output of good jobs is in the
        # database, so their directories go (failed ones stay for a closer look).
        for job in self.jobs:
            job.stop()
            if job.exit_code == 0:
                shutil.rmtree(job.directory, ignore_errors=True)
        if self._guard is not None:
            self._guard.close()
            self._guard = None
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
        if self.runs_mpj:
            self._check_mpj_device()
            installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed
        if self.starter.name == "srun":
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
