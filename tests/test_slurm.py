"""The slurm launcher: exact argv, job scripts, pure helpers.

The real one-node Slurm cluster is in test_slurm_daemons.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hpceval.campaign import load_platform
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError, UserError
from hpceval.execute import StartFailed
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.launch.schedulers import slurm_client
from hpceval.launch.schedulers.slurm import SlurmScheduler as SlurmLauncher
from hpceval.launch.schedulers.slurm_client import (
    Answer,
    JobState,
    SlurmOptions,
    parse_sinfo,
    parse_slurm_time,
    slurm_error,
)
from hpceval.launch.schedulers.slurm_jobs import JobShape, job_script
from hpceval.model import Placement

from .conftest import write

# Two cases, enough points at a slow pace that the interruption lands inside the first job.
SLURM_SLOW_SUITE = """
name = "slow"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong", "pingping"]
sizes = "0..1KiB"
ranks = [2]
budget_s = 0.15
warmup_s = 0.005
min_samples = 1000
max_samples = 1000
"""

PROGRAM = ["/cache/mpibench", "--pattern", "pingpong"]


def slurm(
    cores: int = 2, nodes: int = 1, impl: str = "Open MPI", **launcher: object
) -> SlurmLauncher:
    platform = PlatformConfig.model_validate(
        {
            "name": "t",
            "nodes": nodes,
            "cores_per_node": cores,
            "launcher": {"kind": "slurm", **launcher},
        }
    )
    cls = get_launcher_class("slurm")
    assert cls is SlurmLauncher
    return SlurmLauncher(platform, MpiRuntime(impl, "/usr/bin/mpirun"))


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: False)


# --------------------------------------------------------------------------- exact argv


def test_srun_two_ranks_on_one_node() -> None:
    cmd = slurm().command(Placement(1, 2), PROGRAM)
    assert list(cmd.argv) == [
        "srun", "--mpi=pmix", "--nodes=1", "--ntasks=2", "--ntasks-per-node=2",
        "--cpus-per-task=1", "--distribution=block:block", "--cpu-bind=cores",
        "--kill-on-bad-exit=1", "--", *PROGRAM,
    ]  # fmt: skip
    assert dict(cmd.env) == {"OMP_NUM_THREADS": "1"}
    assert cmd.placement == Placement(1, 2) and not cmd.oversubscribed


def test_srun_hybrid_on_two_nodes_with_platform_options() -> None:
    launcher = slurm(
        cores=8, nodes=2, srun_mpi="pmi2", extra_args=["--exclusive"], env={"UCX_TLS": "rc"}
    )
    cmd = launcher.command(Placement(2, 2, 4, "socket"), PROGRAM)
    assert list(cmd.argv) == [
        "srun", "--mpi=pmi2", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2",
        "--cpus-per-task=4", "--distribution=block:block", "--cpu-bind=sockets",
        "--kill-on-bad-exit=1", "--exclusive", "--", *PROGRAM,
    ]  # fmt: skip
    assert dict(cmd.env) == {
        "OMP_NUM_THREADS": "4", "OMP_PLACES": "cores", "OMP_PROC_BIND": "close", "UCX_TLS": "rc",
    }  # fmt: skip


def test_srun_oversubscribed_overcommits_without_binding() -> None:
    launcher = slurm(cores=2)
    cmd = launcher.command(Placement(1, 4), PROGRAM)
    assert list(cmd.argv) == [
        "srun", "--mpi=pmix", "--nodes=1", "--ntasks=4", "--ntasks-per-node=4",
        "--cpus-per-task=1", "--distribution=block:block", "--cpu-bind=none",
        "--kill-on-bad-exit=1", "--overcommit", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.env["OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert cmd.oversubscribed and cmd.placement.binding == "none"
    assert launcher.shape_of(cmd.argv) == JobShape(1, 4, 1, overcommit=True)


def test_srun_without_a_binding_task_plugin_records_no_binding() -> None:
    launcher = slurm()
    launcher.can_bind = False  # what preflight concludes from TaskPlugin=task/none
    cmd = launcher.command(Placement(1, 2), PROGRAM)
    assert "--cpu-bind=none" in cmd.argv
    assert cmd.placement.binding == "none" and not cmd.oversubscribed


def test_mpirun_inside_the_allocation(as_user: None) -> None:
    cmd = slurm(cores=4, nodes=2, starter="mpirun").command(Placement(2, 2), PROGRAM)
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "4", "--map-by", "ppr:2:node", "--bind-to", "core",
        "-x", "OMP_NUM_THREADS", "--", *PROGRAM,
    ]  # fmt: skip
    hybrid = slurm(cores=8, starter="mpirun").command(Placement(1, 2, 4), PROGRAM)
    assert list(hybrid.argv)[3:7] == ["--map-by", "ppr:2:node:PE=4", "--bind-to", "core"]


def test_mpirun_as_root_allows_root_without_exporting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: True)
    cmd = slurm(starter="mpirun").command(Placement(1, 2), PROGRAM)
    assert cmd.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in cmd.argv


def test_mpich_inside_the_allocation() -> None:
    cmd = slurm(cores=4, nodes=2, impl="MPICH", starter="mpirun").command(Placement(2, 2), PROGRAM)
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-n", "4", "-ppn", "2", "-bind-to", "core",
        "-genv", "OMP_NUM_THREADS", "1", *PROGRAM,
    ]  # fmt: skip


def test_placements_beyond_the_platform_are_refused() -> None:
    with pytest.raises(UserError, match="needs 2 nodes"):
        slurm(nodes=1).command(Placement(2, 1), PROGRAM)
    with pytest.raises(UserError, match="oversubscribe = false"):
        slurm(oversubscribe=False).command(Placement(1, 4), PROGRAM)


# --------------------------------------------------------------------------- job script


def test_job_script_exact() -> None:
    options = SlurmOptions(partition="debug", account="proj", qos="short")
    text = job_script(
        ["srun", "--mpi=pmix", "/opt/my prog", "it's", "$HOME", "*"],
        {"OMP_NUM_THREADS": "1", "NOTE": "a 'quoted' $value"},
        JobShape(2, 4, 2, overcommit=False),
        options,
        time_limit_min=3,
        stdout=Path("/jobs/job-x/stdout"),
        stderr=Path("/jobs/job x/stderr"),
        status=Path("/jobs/job-x/exit-status"),
    )
    assert text == (
        "#!/bin/sh\n"
        "#SBATCH --job-name=hpceval\n"
        "#SBATCH --nodes=2\n"
        "#SBATCH --ntasks-per-node=4\n"
        "#SBATCH --cpus-per-task=2\n"
        "#SBATCH --time=3\n"
        "#SBATCH --partition=debug\n"
        "#SBATCH --account=proj\n"
        "#SBATCH --qos=short\n"
        "#SBATCH --no-requeue\n"
        "#SBATCH --output=/jobs/job-x/stdout\n"
        '#SBATCH --error="/jobs/job x/stderr"\n'
        "export NOTE='a '\"'\"'quoted'\"'\"' $value'\n"
        "export OMP_NUM_THREADS=1\n"
        "srun --mpi=pmix '/opt/my prog' 'it'\"'\"'s' '$HOME' '*'\n"
        "status=$?\n"
        'echo "$status" > /jobs/job-x/exit-status\n'
        'exit "$status"\n'
    )


def test_job_script_overcommits_and_leaves_the_time_to_the_partition() -> None:
    text = job_script(
        ["srun", "x"], {}, JobShape(1, 4, 1, overcommit=True), SlurmOptions(),
        time_limit_min=None, stdout=Path("/o"), stderr=Path("/e"), status=Path("/s"),
    )  # fmt: skip
    assert "#SBATCH --ntasks=4\n#SBATCH --cpus-per-task=1\n#SBATCH --overcommit\n" in text
    assert "--time" not in text and "--partition" not in text and "--ntasks-per-node" not in text


def test_job_script_quoting_survives_a_real_shell(tmp_path: Path) -> None:
    """The script, run by sh, passes every argument and variable through unchanged."""
    args = ["a b", "it's", "$HOME", "*", '"double"', "back\\slash", "new\nline", ""]
    env = {"WEIRD": "x 'y' \"z\" $PATH `id`"}
    probe = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['WEIRD']]))"
    text = job_script(
        [sys.executable, "-c", probe, *args], env, JobShape(1, 1, 1, False), SlurmOptions(),
        time_limit_min=None, stdout=tmp_path / "o", stderr=tmp_path / "e",
        status=tmp_path / "status",
    )  # fmt: skip
    script = write(tmp_path / "job.sh", text)
    out = subprocess.run(["sh", str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [args, env["WEIRD"]]
    assert (tmp_path / "status").read_text() == "0\n"


def test_job_script_refuses_paths_slurm_would_expand() -> None:
    with pytest.raises(StartFailed, match="file patterns"):
        job_script(
            ["x"], {}, JobShape(1, 1, 1, False), SlurmOptions(), time_limit_min=None,
            stdout=Path("/jobs/100%/o"), stderr=Path("/e"), status=Path("/s"),
        )  # fmt: skip


# --------------------------------------------------------------------------- pure helpers


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800), ("5:30", 330), ("1:00:00", 3600), ("2-0", 172800),
        ("1-2:30", 95400), ("1-00:00:01", 86401), ("UNLIMITED", None), ("infinite", None),
    ],
)  # fmt: skip
def test_slurm_time_syntax(text: str, seconds: int | None) -> None:
    assert parse_slurm_time(text) == seconds


def test_job_time_limit_from_platform_or_case() -> None:
    assert slurm(time_limit="1:30:00").job_time_limit_min(60) == 90
    assert slurm(time_limit=5).job_time_limit_min(None) == 5
    assert slurm().job_time_limit_min(90) == 2 + 1  # the case's limit plus a minute
    assert slurm().job_time_limit_min(None) is None  # the partition's default


def test_platform_errors_name_the_launcher_field(tmp_path: Path) -> None:
    for body, field, cause in [
        ("time_limit = '1h'", "launcher.time_limit", "invalid Slurm time '1h'"),
        ("starter = 'ssh'", "launcher.starter", "'srun' or 'mpirun'"),
        ("partition = 'a b'", "launcher.partition", "not a valid Slurm name"),
        ("poll_s = 0", "launcher.poll_s", "greater than 0"),
        ("queue = 'x'", "launcher.queue", "unknown field"),
    ]:
        path = write(tmp_path / "p.toml", f"name = 'c'\n[launcher]\nkind = 'slurm'\n{body}\n")
        with pytest.raises(ConfigError) as e:
            load_platform(str(path))
        assert f"{path}: {field}: " in str(e.value) and cause in str(e.value), str(e.value)


def test_shipped_slurm_platforms_load() -> None:
    for name in ("slurm-example", "slurm-local"):
        assert load_platform(name).config.launcher.kind == "slurm"


def test_scontrol_job_line() -> None:
    line = (
        "JobId=42 JobName=hpceval UserId=root(0) JobState=TIMEOUT Reason=TimeLimit "
        "Dependency=(null) ExitCode=0:15 RunTime=00:01:05 TimeLimit=00:01:00 "
        "NodeList=localhost BatchHost=localhost Command=/tmp/job.sh"
    )
    state = JobState.parse(line)
    assert state == JobState("TIMEOUT", "TimeLimit", "0:15", "00:01:00", "localhost")
    assert state.terminal and state.status() == -15
    assert JobState("FAILED", "NonZeroExitCode", "3:0", "", "").status() == 3
    assert JobState("COMPLETED", "None", "0:0", "", "").status() == 0
    assert JobState("NODE_FAIL", "None", "0:0", "", "").status() == -9


def test_sinfo_and_client_errors() -> None:
    parts = parse_sinfo(
        "debug|debug*|up|1|2|infinite\nbig|big|up|3|64|1-00:00:00\nbig|big|up|1|32+|1-00:00:00\n"
    )
    assert parts["debug"].default and parts["debug"].cpus_per_node == 2
    assert parts["big"].nodes == 4 and parts["big"].cpus_per_node == 32
    assert parts["big"].max_time_s == 86400 and parts["debug"].max_time_s is None
    assert (
        slurm_error("sbatch: error: Batch job submission failed: Invalid qos specification\n")
        == "Invalid qos specification"
    )
    assert (
        slurm_error("slurm_load_partitions: Unable to contact slurm controller (connect failure)")
        == "Unable to contact slurm controller (connect failure)"
    )
    assert slurm_client.describe_slurm_failure("sinfo", Answer(127, "", "sinfo: command not found"))
