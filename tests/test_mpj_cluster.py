"""MPJ Express across nodes: niodev on the netns emulated cluster (platform netns-2x2-mpj).

The argv, machines file and hosts file are checked exactly; real runs start a real MPJ
daemon in each namespace node (hpceval's own, for the campaign), run the Java NPB kernels and
mpibench-java across the nodes, and a campaign killed with SIGKILL leaves no daemon or JVM.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpceval.campaign import load_platform
from hpceval.clusters.netns import ClusterLayout, cleanup_netns, hosts_file_text
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.launch.starters.mpjrun import machines_file
from hpceval.model import Placement
from hpceval.mpj import STARTER_CLASS, mpj_mpi_facts
from hpceval.provenance.display import summarize
from hpceval.store import open_store

from .conftest import write
from .mpj_helpers import LONG_PINGPONG, jvms_of, wait_for_jvms, wait_for_no_jvm
from .test_cli import hpceval, one_line_error
from .test_mpibench_java import requires_mpj
from .test_netns import requires_netns

JAR = "/cache/npb-java.jar"


def mpj_launcher(**keys: Any) -> Any:
    platform = PlatformConfig.model_validate(
        {"name": "t", "nodes": 2, "launcher": {"kind": "netns", "starter": "mpjrun", **keys}}
    )
    return get_launcher_class("netns")(platform, MpiRuntime("Open MPI", "mpirun"))


# --------------------------------------------------------------------------- pure parts


@requires_mpj
def test_hybdev_names_each_node_once() -> None:
    command = mpj_launcher(device="hybdev").command(Placement(2, 2, 1, "none"), [JAR])
    argv = shlex.split(command.argv[2])
    assert argv[argv.index("-dev") + 1] == "hybdev" and argv[argv.index("-np") + 1] == "4"
    assert machines_file(("a", "b"), Placement(2, 2), "hybdev") == "a\nb\n"


def test_machines_file_places_ranks_node_by_node() -> None:
    hosts = ("hpce3-n0", "hpce3-n1")
    assert machines_file(hosts, Placement(2, 2)) == "hpce3-n0\nhpce3-n0\nhpce3-n1\nhpce3-n1\n"
    assert machines_file(hosts, Placement(2, 1)) == "hpce3-n0\nhpce3-n1\n"
    assert machines_file(hosts, Placement(1, 3)) == "hpce3-n0\n" * 3
    with pytest.raises(UserError, match="2 nodes, 1 hosts known"):
        machines_file(hosts[:1], Placement(2, 1))


def test_nodes_hosts_file_keeps_the_machines_and_names_every_node() -> None:
    text = hosts_file_text(ClusterLayout(7, 2), "127.0.0.1 localhost\n127.0.0.1 vm")
    assert text.splitlines() == [
        "127.0.0.1 localhost",
        "127.0.0.1 vm",
        "# hpceval emulated cluster hpce7",
        "10.213.7.1 hpce7-n0",
        "10.213.7.2 hpce7-n1",
    ]


@requires_mpj
def test_mpjrun_runs_in_node_0_through_the_agent() -> None:
    command = mpj_launcher(device="niodev").command(
        Placement(2, 1, 1, "none"), [JAR, "--kernel=cg", "--class=S"]
    )
    agent, node, line = command.argv
    assert agent == "/run/hpceval-netns/hpce0.rsh" and node == "hpce0-n0"
    argv = shlex.split(line)
    assert argv[1:3] == ["-cp", argv[2]] and STARTER_CLASS in argv
    at = argv.index(STARTER_CLASS)
    assert argv[at + 1 : at + 5] == ["-np", "2", "-dev", "niodev"]
    assert argv[at + 5] == "-machinesfile"
    assert argv[-4:] == ["-jar", JAR, "--kernel=cg", "--class=S"]
    assert "MPJ_HOME" in command.env and command.placement.binding == "none"


@requires_mpj
def test_only_the_daemon_devices_run_on_the_emulated_cluster() -> None:
    with pytest.raises(UserError, match=r"launcher\.device multicore: the netns launcher runs"):
        mpj_launcher(device="multicore").command(Placement(2, 1, 1, "none"), [JAR])
    with pytest.raises(UserError, match="not /bin/true"):
        mpj_launcher(device="niodev").command(Placement(2, 1, 1, "none"), ["/bin/true"])


@pytest.mark.parametrize("name", ["netns-2x2-mpj", "netns-2x2-mpj-hybdev"])
def test_shipped_platforms_load(name: str) -> None:
    platform = load_platform(name).config
    assert platform.launcher.kind == "netns" and platform.launcher.starter == "mpjrun"
    assert platform.nodes == 2


# --------------------------------------------------------------------------- real clusters

NPB_SUITE = """name = "npb-java-nodes"
[[benchmark]]
name = "npb-java"
kernels = ["cg", "mg"]
classes = ["S"]
ranks = [2]
ranks_per_node = [1]

[[benchmark]]
name = "npb-java"
kernels = ["cg", "mg"]
classes = ["S"]
ranks = [4]
ranks_per_node = [2]
"""


@requires_netns
@requires_mpj
@pytest.mark.parametrize(
    ("platform", "device"), [("netns-2x2-mpj", "niodev"), ("netns-2x2-mpj-hybdev", "hybdev")]
)
def test_npb_java_verifies_across_two_nodes(tmp_path: Path, platform: str, device: str) -> None:
    suite = write(tmp_path / "suite.toml", NPB_SUITE)
    db = tmp_path / "r.db"
    hpceval(
        "run", "-p", platform, "-s", str(suite), "--db", str(db),
        cwd=tmp_path, check=True, timeout=600,
    )  # fmt: skip
    store = open_store(str(db))
    rows = store.measurements()
    placed = {
        (str(r.measurement.parameters["kernel"]), int(r.measurement.parameters["ranks"]),
         int(r.measurement.parameters["nodes"]))
        for r in rows if r.measurement.metric == "mops_total"
    }  # fmt: skip
    # 2 ranks: one per node; 4 ranks: two per node (the header's hosts were checked).
    assert placed == {(k, r, 2) for k in ("cg", "mg") for r in (2, 4)}
    for r in rows:
        assert r.measurement.details["mpj_device"] == device
        assert r.measurement.origin.value == "emulated"
    (run,) = store.runs()
    mpi = store.environment(run.environment_id)["mpi"]
    assert mpi["implementation"] == "MPJ Express" and mpi["device"] == device
    assert str(mpi["jvm"]).startswith("openjdk")


@requires_netns
@requires_mpj
def test_sigkill_leaves_no_daemon_or_jvm(tmp_path: Path) -> None:
    """hpceval killed with SIGKILL mid-run: the daemons, MPJRun and the rank JVMs all end."""
    suite = write(tmp_path / "suite.toml", LONG_PINGPONG)
    cache = tmp_path / "cache"  # the JVMs' class paths name it: they can be told apart
    env = {**os.environ, "HPCEVAL_CACHE": str(cache)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpceval", "run", "-p", "netns-2x2-mpj", "-s", str(suite),
         "--db", str(tmp_path / "r.db")],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # 2 daemons, MPJRun and the 2 ranks' JVMs (their class paths name hpceval's MPJ_HOME).
        wait_for_jvms(proc, cache, 5, timeout_s=180)
        assert any("daemon.jar" in ln for ln in jvms_of(str(cache)))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert wait_for_no_jvm(cache, timeout_s=15) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        # The namespaces of a killed campaign stay until the next session or this cleanup.
        cleanup_netns()


ONE_NODE_SUITE = """name = "one-node"
[[benchmark]]
name = "npb-java"
kernels = ["cg"]
classes = ["S"]
ranks = [2]
"""


def test_a_scheduler_without_mpj_daemons_refuses_mpjrun_in_one_line(tmp_path: Path) -> None:
    platform = write(
        tmp_path / "p.toml",
        'name = "p"\nnodes = 1\n[launcher]\nkind = "local"\nstarter = "mpjrun"\n'
        'device = "niodev"\n',
    )
    suite = write(tmp_path / "s.toml", ONE_NODE_SUITE)
    proc = hpceval(
        "run", "-p", str(platform), "-s", str(suite), "--db", str(tmp_path / "r.db"), cwd=tmp_path
    )
    line = one_line_error(proc)
    assert 'the mpjrun starter runs under launcher kind "mpj" (this machine), "netns"' in line
    assert '"hostfile" (hosts over SSH), "slurm" or "slurm-netns"' in line


def test_provenance_of_java_ranks_names_mpj_device_and_jvm() -> None:
    facts = mpj_mpi_facts("niodev", {"implementation": "Open MPI", "version": "4.1.4"})
    assert facts["implementation"] == "MPJ Express" and facts["device"] == "niodev"
    assert facts["c_mpi"] == {"implementation": "Open MPI", "version": "4.1.4"}
    shown = dict(summarize({"mpi": {**facts, "version": "0.44", "jvm": "openjdk 17.0.15"}}))
    assert shown["MPI"] == "MPJ Express 0.44 (niodev device, JVM openjdk 17.0.15)"
    # A C MPI's line is unchanged.
    assert dict(summarize({"mpi": facts["c_mpi"]}))["MPI"] == "Open MPI 4.1.4"
