"""MPJ Express in Slurm jobs: the job starts one MPJ daemon per allocated node as a job step,
writes the machines file from its node list and runs MPJRun (hpceval.launch.schedulers.
mpj_daemons.JOB_DAEMONS_SCRIPT).

The job's argv is checked exactly; a real campaign runs mpibench-java and an NPB kernel in
Java across the two nodes of the Slurm-in-netns cluster (node names resolve in every node, as
on a real cluster), and leaves no daemon, JVM or daemon home behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpceval.clusters import slurm_netns as cluster_mod
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.launch.schedulers.mpj_daemons import (
    JOB_DAEMON_START_S,
    JOB_DAEMONS_SCRIPT,
    MACHINES_PLACEHOLDER,
)
from hpceval.model import Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, STARTER_CLASS
from hpceval.store import open_store

from .conftest import write
from .mpj_helpers import PINGPONG_ENTRY, jvms_of, suite
from .slurm_netns_cluster import requires_slurm_netns
from .slurm_netns_cluster import slurm_netns as slurm_netns  # the module fixture
from .test_mpibench_java import requires_mpj

JAR = "/cache/npb-java.jar"


def slurm_mpj(device: str = "niodev") -> Any:
    platform = PlatformConfig.model_validate(
        {
            "name": "s",
            "nodes": 2,
            "launcher": {"kind": "slurm", "starter": "mpjrun", "device": device},
        }
    )
    return get_launcher_class("slurm")(platform, MpiRuntime("Open MPI", "mpirun"))


@requires_mpj
@pytest.mark.parametrize(("device", "per_node"), [("niodev", "2"), ("hybdev", "1")])
def test_the_job_starts_daemons_then_mpjrun(device: str, per_node: str) -> None:
    command = slurm_mpj(device).command(Placement(2, 2, 1, "none"), [JAR, "--kernel=cg"])
    argv = list(command.argv)
    mpj_home = command.env["MPJ_HOME"]
    java = argv[argv.index(STARTER_CLASS) - 2 - 1]  # java -cp CLASSPATH MPJRun
    assert argv[:10] == [
        "/bin/bash", "-c", JOB_DAEMONS_SCRIPT, "bash", mpj_home, java,
        str(DEFAULT_DAEMON_PORT), per_node, str(JOB_DAEMON_START_S), MACHINES_PLACEHOLDER,
    ]  # fmt: skip
    start = argv.index(STARTER_CLASS)
    assert argv[start:] == [
        STARTER_CLASS, "-np", "4", "-dev", device, "-machinesfile", MACHINES_PLACEHOLDER,
        "-jar", JAR, "--kernel=cg",
    ]  # fmt: skip


@requires_mpj
def test_multicore_is_refused_in_a_job_in_one_line() -> None:
    with pytest.raises(UserError, match=r"launcher\.device multicore: a Slurm job runs"):
        slurm_mpj("multicore").command(Placement(1, 2, 1, "none"), [JAR])


SUITE = suite(
    "mpj-slurm",
    PINGPONG_ENTRY,
    """[[benchmark]]
name = "npb-java"
kernels = ["cg"]
classes = ["S"]
ranks = [4]
ranks_per_node = [2]
""",
)


@requires_slurm_netns
@requires_mpj
def test_java_ranks_on_two_slurm_nodes(
    slurm_netns: cluster_mod.SlurmNetnsCluster, tmp_path: Path
) -> None:
    cluster = slurm_netns
    platform = write(tmp_path / "p.toml", "\n".join([
        'name = "slurm-mpj"', "nodes = 2", "[launcher]", 'kind = "slurm-netns"',
        f'cluster = "{cluster.name}"', "poll_s = 0.2", 'starter = "mpjrun"', 'device = "niodev"',
        "",
    ]))  # fmt: skip
    suite = write(tmp_path / "s.toml", SUITE)
    db = tmp_path / "r.db"
    cache = tmp_path / "cache"  # the JVMs' class paths name it: they can be told apart
    before = set(Path("/tmp").glob("hpceval-mpj-*"))
    proc = subprocess.run(
        [sys.executable, "-m", "hpceval", "run", "--platform", str(platform), "--suite",
         str(suite), "--db", str(db)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "HPCEVAL_CACHE": str(cache)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    store = open_store(str(db))
    (run,) = store.runs()
    assert run.launcher == "slurm-netns"
    ms = [sm.measurement for sm in store.measurements(run.id)]
    latency = [m for m in ms if m.metric == "latency"]
    assert {m.parameters["size"] for m in latency} == {0, 1024}
    assert {m.parameters["pair"] for m in latency} == {"inter-node"}
    (cg,) = [m for m in ms if m.metric == "mops_total"]
    assert (cg.parameters["ranks"], cg.parameters["nodes"]) == (4, 2)  # verified, 2 per node
    assert {m.details["mpj_device"] for m in ms} == {"niodev"}
    assert all(m.origin.value == "emulated" for m in ms)
    pingpong = next(e for e in store.executions(run.id) if "pingpong" in " ".join(e.argv))
    first = next(ln for ln in pingpong.stdout_tail.splitlines() if ln.startswith("{"))
    assert json.loads(first)["hosts"] == cluster.node_names()
    # The daemons' step ended with the job, and the daemons' homes were removed.
    assert jvms_of(str(cache)) == []
    assert set(Path("/tmp").glob("hpceval-mpj-*")) <= before
    queue = cluster.client("squeue", "--noheader")
    assert queue.returncode == 0 and queue.stdout.strip() == ""


def test_daemon_script_is_bash_syntax() -> None:
    proc = subprocess.run(["bash", "-n", "-c", JOB_DAEMONS_SCRIPT], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
