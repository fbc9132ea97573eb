"""The multi-node Slurm cluster on this machine (`hpceval cluster slurm`) and the slurm-netns
launcher: its slurm.conf and daemon command lines, then a real cluster of two
network-namespace nodes (munged, slurmctld, one slurmd per node) started and stopped by the
CLI, with campaigns through sbatch/srun across both nodes (Open MPI and MPICH)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from hpceval.campaign import load_platform
from hpceval.clusters import netns as netns_mod
from hpceval.clusters import slurm_netns as cluster_mod
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError, UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import Origin, Placement
from hpceval.store import open_store

from .conftest import requires_mpi, requires_tool, write
from .slurm_netns_cluster import (
    hpceval_cli,
    platform_text,
    requires_slurm_netns,
    shaped_ceiling_mb_s,
)
from .slurm_netns_cluster import slurm_netns as slurm_netns  # the module fixture

LAYOUT = netns_mod.ClusterLayout(3, 2)
HARDWARE = "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=3900"
requires_mpich = pytest.mark.skipif(
    shutil.which("mpicc.mpich") is None or shutil.which("mpiexec.mpich") is None,
    reason="MPICH is not installed (Debian: mpich libmpich-dev; ./setup.sh installs them)",
)


# --------------------------------------------------------------------------- pure parts


def test_slurm_conf_names_each_node_by_its_namespace() -> None:
    text = cluster_mod.slurm_conf(Path("/run/hpceval-slurm/x"), LAYOUT, 40123, HARDWARE)
    lines = text.splitlines()
    assert "SlurmctldHost=hpce3-ctl(10.213.3.254)" in lines
    assert "SlurmctldPort=40123" in lines and "SlurmdPort=6818" in lines
    # One slurmd per node on one machine: their files apart (%n is the node's name).
    per_node = [("SlurmdSpoolDir", "spool/%n"), ("TmpFS", "tmp/%n"),
                ("SlurmdPidFile", "slurmd-%n.pid"), ("SlurmdLogFile", "slurmd-%n.log")]  # fmt: skip
    for key, value in per_node:
        assert f"{key}=/run/hpceval-slurm/x/{value}" in lines
    assert "TaskPlugin=task/none" in lines  # the nodes share the cores: no binding claimed
    for i in (0, 1):
        node = f"NodeName=hpce3-n{i} NodeHostname=hpce3-n{i} NodeAddr=10.213.3.{i + 1}"
        assert f"{node} {HARDWARE} State=UNKNOWN" in lines
    partition = "PartitionName=nodes Nodes=hpce3-n0,hpce3-n1 Default=YES MaxTime=INFINITE"
    assert f"{partition} State=UP" in lines


def test_node_hardware_is_read_from_slurmd_c() -> None:
    out = f"NodeName=vm {HARDWARE} UpTime=0-00:11:02\n\n"
    assert cluster_mod.node_hardware(out) == HARDWARE
    with pytest.raises(UserError, match="no NodeName line"):
        cluster_mod.node_hardware("slurmd: error: something\n")


def test_daemon_command_lines() -> None:
    d = Path("/run/hpceval-slurm/x")
    argvs = cluster_mod.daemon_argvs(d, LAYOUT)
    assert list(argvs) == ["munged", "slurmctld", "slurmd-hpce3-n0", "slurmd-hpce3-n1"]
    uts = ["unshare", "--uts", "--ipc", "/bin/sh", "-c",
           'echo "$1" > /proc/sys/kernel/hostname && shift && exec "$@"', "sh"]  # fmt: skip
    assert argvs["slurmctld"] == [
        *uts, "hpce3-ctl", "/usr/sbin/slurmctld", "-D", "-i", "-f", f"{d}/slurm.conf",
    ]  # fmt: skip
    assert argvs["slurmd-hpce3-n1"] == [
        "nsenter", "--net=/run/netns/hpce3-n1", *uts, "hpce3-n1",
        "/usr/sbin/slurmd", "-D", "-N", "hpce3-n1", "-f", f"{d}/slurm.conf",
    ]  # fmt: skip
    assert f"--socket={d}/munge.socket" in argvs["munged"]


def test_down_leaves_namespaces_another_live_process_owns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(netns_mod, "STATE_DIR", tmp_path)
    free = cluster_mod._namespaces_free_to_remove
    assert not free(5, [])  # nothing recorded: nothing to remove
    me = os.getpid()
    netns_mod.state_file(5).write_text(
        json.dumps({"pid": me, "start": netns_mod.process_start(me)})
    )
    assert free(5, [me])  # ours
    assert not free(5, [])  # a living owner that is not ours (the index was given again)
    netns_mod.state_file(5).write_text(json.dumps({"pid": me, "start": "0"}))
    assert free(5, [])  # that pid is another process now: the owner is gone


@pytest.mark.parametrize("name", ["", "-x", "../etc", "A", "a b", "a" * 25, "x;rm"])
def test_cluster_names_are_checked(name: str) -> None:
    with pytest.raises(UserError, match="cluster name"):
        cluster_mod.cluster_dir(name)


def test_the_launcher_finds_slurm_conf_by_the_cluster_name(tmp_path: Path) -> None:
    platform = load_platform("slurm-netns").config
    options, _ = get_launcher_class("slurm-netns").validate_options(platform.launcher.options())
    assert options.slurm_conf == "/run/hpceval-slurm/default/slurm.conf"  # type: ignore[union-attr]
    bad = write(tmp_path / "p.toml", platform_text("Bad Name"))
    with pytest.raises(ConfigError, match=r"launcher\.cluster.*cluster name 'Bad Name'"):
        load_platform(str(bad))
    both = write(tmp_path / "q.toml", platform_text("c") + 'slurm_conf = "/etc/slurm.conf"\n')
    with pytest.raises(ConfigError, match="set by the cluster's name"):
        load_platform(str(both))


def test_shipped_platforms_load() -> None:
    assert load_platform("slurm-netns").config.launcher.kind == "slurm-netns"
    for name in ("local-mpich", "netns-2x2-mpich", "slurm-netns-mpich"):
        launcher = load_platform(name).config.launcher
        assert (launcher.mpicc, launcher.mpirun) == ("mpicc.mpich", "mpiexec.mpich")


def test_mpich_jobs_on_the_emulated_cluster_keep_to_the_links() -> None:
    platform = PlatformConfig.model_validate(
        {"name": "p", "nodes": 2, "launcher": {"kind": "slurm-netns", "srun_mpi": "pmi2"}}
    )
    launcher = get_launcher_class("slurm-netns")(platform, MpiRuntime("MPICH", "mpiexec"))
    command = launcher.command(Placement(2, 2), ["prog"])
    assert command.argv[:2] == ("srun", "--mpi=pmi2")
    assert command.env["UCX_TLS"] == "self,sm,tcp" and command.env["UCX_NET_DEVICES"] == "eth0"
    assert launcher.origin is Origin.EMULATED


def test_netns_starts_mpich_through_the_rsh_agent() -> None:
    platform = PlatformConfig.model_validate({"name": "p", "nodes": 2})
    launcher = get_launcher_class("netns")(platform, MpiRuntime("MPICH", "mpiexec.mpich"))
    command = launcher.command(Placement(2, 2), ["prog", "--x"])
    assert command.argv == (
        "ip", "netns", "exec", "hpce0-n0", "mpiexec.mpich", "-n", "4",
        "-hosts", "hpce0-n0:2,hpce0-n1:2", "-ppn", "2", "-launcher", "rsh",
        "-launcher-exec", "/run/hpceval-netns/hpce0.rsh", "-bind-to", "none", "-iface", "eth0",
        "-genv", "HYDRA_IFACE", "eth0", "-genv", "OMP_NUM_THREADS", "1",
        "-genv", "UCX_NET_DEVICES", "eth0", "-genv", "UCX_TLS", "self,sm,tcp", "prog", "--x",
    )  # fmt: skip
    assert command.placement.binding == "none"
    one_node = launcher.command(Placement(1, 2), ["prog"])
    assert one_node.argv[one_node.argv.index("-bind-to") + 1] == "core"


# --------------------------------------------------------------------------- a real cluster

PINGPONG_SUITE = """
name = "slurm-netns-pingpong"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, "1MiB"]
ranks = [2]
ranks_per_node = [1, 2]
budget_s = 0.3
warmup_s = 0.01
min_samples = 5
max_samples = 40  # the header stays within the stored stdout tail
"""

MPICH_SUITE = """
name = "slurm-netns-mpich"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, "1MiB"]
ranks = [2]
ranks_per_node = [1]
budget_s = 0.3
warmup_s = 0.01
min_samples = 3
max_samples = 40
[[benchmark]]
name = "npb"
kernels = ["cg"]
classes = ["S"]
ranks = [2]
ranks_per_node = [1]
"""


def header(stdout: str) -> dict[str, Any]:
    record = json.loads(stdout.splitlines()[0])
    assert record["record"] == "header"
    return dict(record)


def run_campaign(tmp_path: Path, platform: str, suite: str) -> tuple[Any, int]:
    p = write(tmp_path / "platform.toml", platform)
    s = write(tmp_path / "suite.toml", suite)
    proc = hpceval_cli("run", "--platform", str(p), "--suite", str(s), "--db",
                       str(tmp_path / "hpceval.db"), timeout=400)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    return store, run.id


def measured(store: Any, run_id: int, case_part: str, metric: str, size: int) -> Any:
    (m,) = [
        sm.measurement for sm in store.measurements(run_id)
        if case_part in sm.case_key and sm.measurement.metric == metric
        and sm.measurement.parameters["size"] == size
    ]  # fmt: skip
    return m


@requires_slurm_netns
def test_each_node_is_a_namespace_with_its_own_name_and_address(
    slurm_netns: cluster_mod.SlurmNetnsCluster,
) -> None:
    cluster = slurm_netns
    assert cluster.node_states() == {n: "idle" for n in cluster.node_names()}
    script = "echo $(hostname) $(readlink /proc/self/ns/net) $(ip -4 -o addr show eth0)"
    proc = cluster.client("srun", "--nodes=2", "--ntasks=2", "--label", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    rows = sorted(line.split() for line in proc.stdout.splitlines())
    (_, host0, ns0, *addr0), (_, host1, ns1, *addr1) = rows
    assert (host0, host1) == tuple(cluster.node_names())
    assert ns0 != ns1  # two network namespaces
    assert f"{cluster.layout.address(0)}/24" in addr0 and f"{cluster.layout.address(1)}/24" in addr1
    status = hpceval_cli("cluster", "slurm", "status", "--name", cluster.name)
    assert status.returncode == 0, status.stdout
    assert f"node {host1}: idle" in status.stdout and "slurmctld: running" in status.stdout


@requires_slurm_netns
def test_cluster_commands_refuse_bad_input(
    slurm_netns: cluster_mod.SlurmNetnsCluster, tmp_path: Path
) -> None:
    again = hpceval_cli("cluster", "slurm", "up", "--name", slurm_netns.name)
    assert again.returncode == 2 and "is already up" in again.stderr, again.stderr
    bad = hpceval_cli("cluster", "slurm", "up", "--name", "-oProxyCommand=x")
    assert bad.returncode == 2 and "cluster name" in bad.stderr, bad.stderr
    link = hpceval_cli("cluster", "slurm", "up", "--name", "other", "--link", "fast")
    assert link.returncode == 2 and "--link: unknown link profile" in link.stderr
    assert not cluster_mod.cluster_dir("other").exists()
    gone = hpceval_cli("cluster", "slurm", "status", "--name", "never-started")
    assert gone.returncode == 1 and "not up" in gone.stdout
    # A platform on a cluster that is not up: one line before anything is written.
    p = write(tmp_path / "p.toml", platform_text("never-started"))
    run = hpceval_cli("run", "--platform", str(p), "--suite", "smoke", "--db",
                      str(tmp_path / "x.db"))  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "Slurm cluster 'never-started' is not up; start it with: hpceval cluster slurm up" in (
        run.stderr
    )
    assert not (tmp_path / "x.db").exists()


@requires_slurm_netns
@requires_mpi
def test_a_campaign_through_sbatch_and_srun_on_two_nodes(
    slurm_netns: cluster_mod.SlurmNetnsCluster, tmp_path: Path
) -> None:
    store, run_id = run_campaign(tmp_path, platform_text(slurm_netns.name), PINGPONG_SUITE)
    run = store.run(run_id)
    assert run.launcher == "slurm-netns" and run.origin is Origin.EMULATED
    n0, n1 = slurm_netns.node_names()
    hosts = {e.case_key: header(e.stdout_tail)["hosts"] for e in store.executions(run_id)}
    assert hosts == {
        "mpibench:pingpong:np=2:2x1x1:pair=inter-node:bind=core": [n0, n1],
        "mpibench:pingpong:np=2:1x2x1:pair=intra-node:bind=core": [n0, n0],
    }
    # Between nodes the bytes go through the shaped veths: 1 MiB at most at the link's rate
    # but for the tbf bucket that leaves at once (164 MB/s with 1 GbE's 2 ms bucket; the
    # unshaped veths carry 400-1000 MB/s here; a busy machine makes it less), and the 8 B
    # latency is that of TCP through two veths and a bridge, above shared memory within a
    # node.
    bandwidth = measured(store, run_id, "2x1x1", "bandwidth", 1 << 20).value
    assert 0 < bandwidth < shaped_ceiling_mb_s(1 << 20), bandwidth
    inter = measured(store, run_id, "2x1x1", "latency", 8).statistics.minimum
    intra = measured(store, run_id, "1x2x1", "latency", 8).statistics.minimum
    assert inter > 2 * intra, (inter, intra)


@requires_slurm_netns
@requires_mpich
def test_mpich_through_srun_on_two_nodes(
    slurm_netns: cluster_mod.SlurmNetnsCluster, tmp_path: Path
) -> None:
    store, run_id = run_campaign(tmp_path, platform_text(slurm_netns.name, mpich=True), MPICH_SUITE)
    run = store.run(run_id)
    mpi = store.environment(run.environment_id)["mpi"]
    assert (mpi["implementation"], mpi["mpirun"]) == ("MPICH", shutil.which("mpiexec.mpich"))
    executions = store.executions(run_id)
    assert {e.status.value for e in executions} == {"ok"}, [e.error for e in executions]
    ping = next(e for e in executions if e.benchmark == "mpibench")
    assert ping.argv[:2] == ("srun", "--mpi=pmi2")
    assert header(ping.stdout_tail)["hosts"] == slurm_netns.node_names()
    assert header(ping.stdout_tail)["mpi_library"].startswith("MPICH Version:")
    # UCX held to TCP on eth0: the shaped link, not shared memory between the namespaces.
    bandwidth = measured(store, run_id, "2x1x1", "bandwidth", 1 << 20).value
    assert bandwidth < shaped_ceiling_mb_s(1 << 20), bandwidth
    cg = [sm.measurement for sm in store.measurements(run_id) if sm.case_key.startswith("npb")]
    assert cg and all(m.value > 0 for m in cg)


APPS_SUITE = """
name = "apps-through-slurm"
[[benchmark]]
name = "gromacs"
box_nm = [2.5]
steps = 40
ranks = [2]
ranks_per_node = [1]
[[benchmark]]
name = "lammps"
n = [5]
steps = 100
ranks = [2]
ranks_per_node = [1]
[[benchmark]]
name = "hpcc"
ranks = [2]
ranks_per_node = [1]
n = 200
nb = 40
[[benchmark]]
name = "fio"
directory = "{directory}"
size = "4MiB"
numjobs = 1
runtime_s = 1
[[benchmark]]
name = "lqcd"
lattice = ["4x4x4x8"]
ranks = [2]
ranks_per_node = [1]
[[benchmark]]
name = "biobench"
tool = ["clustalw"]
size = "tiny"
"""


@pytest.mark.long
@requires_slurm_netns
@requires_mpi
@requires_tool("gmx_mpi")
@requires_tool("lmp")
@requires_tool("hpcc")
@requires_tool("fio")
@requires_tool("clustalw")
def test_applications_through_slurm(
    slurm_netns: cluster_mod.SlurmNetnsCluster, tmp_path: Path
) -> None:
    target = tmp_path / "fio"
    target.mkdir()
    suite = APPS_SUITE.format(directory=target)
    store, run_id = run_campaign(tmp_path, platform_text(slurm_netns.name), suite)
    executions = store.executions(run_id)
    assert {e.benchmark for e in executions} == {
        "gromacs", "lammps", "hpcc", "fio", "lqcd", "biobench",
    }  # fmt: skip
    assert {e.status.value for e in executions} == {"ok"}, [e.error for e in executions]
    # Every MPI application ran as two ranks, one on each node, through srun.
    for e in executions:
        assert e.argv[0] == "srun", e.argv
    values = [sm.measurement.value for sm in store.measurements(run_id)]
    assert values and all(v > 0 for v in values)
    assert not any(re.match(r"fio", p.name) for p in target.iterdir())  # scratch removed
