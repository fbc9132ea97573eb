"""GROMACS, LAMMPS, hpcc, fio, lattice QCD and a BioBench tool through the hostfile
launcher: a real campaign over SSH between two emulated nodes (sshd in each network
namespace, see test_launch_hostfile), the MPI applications as one rank per node. Minutes
of work: marked long."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpceval.build import cache_root
from hpceval.store import open_store

from .conftest import requires_mpi, requires_tool, write
from .test_launch_hostfile import SshCluster, in_node, requires_ssh, requires_sshd
from .test_launch_hostfile import ssh_cluster as ssh_cluster  # the fixture
from .test_netns import requires_netns
from .test_slurm_netns import APPS_SUITE


@pytest.mark.long
@requires_mpi
@requires_ssh
@requires_sshd
@requires_netns
@requires_tool("gmx_mpi")
@requires_tool("lmp")
@requires_tool("hpcc")
@requires_tool("fio")
@requires_tool("clustalw")
def test_applications_over_ssh(tmp_path: Path, ssh_cluster: SshCluster) -> None:
    layout = ssh_cluster.layout
    hosts = [layout.address(0), layout.address(1)]
    platform = write(tmp_path / "ssh.toml", "\n".join([
        'name = "ssh-pair"', "nodes = 2", f"hosts = {json.dumps(hosts)}",
        "[launcher]", 'kind = "hostfile"', f"ssh_args = {json.dumps(ssh_cluster.ssh_args())}",
        f'interface = "{layout.subnet}"', "connect_timeout_s = 2", "",
    ]))  # fmt: skip
    target = tmp_path / "fio"
    target.mkdir()
    suite = write(tmp_path / "suite.toml", APPS_SUITE.format(directory=target))
    argv = [sys.executable, "-m", "hpceval", "run", "--platform", str(platform),
            "--suite", str(suite)]  # fmt: skip
    proc = subprocess.run(
        in_node(layout.namespace(0), *argv),
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HPCEVAL_CACHE": str(cache_root())},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.launcher == "hostfile"
    executions = store.executions(run.id)
    assert {e.benchmark for e in executions} == {
        "gromacs", "lammps", "hpcc", "fio", "lqcd", "biobench",
    }  # fmt: skip
    assert {e.status.value for e in executions} == {"ok"}, [e.error for e in executions]
    for e in executions:
        if e.benchmark not in ("fio", "biobench"):  # MPI: mpirun over SSH, a rank per node
            assert "--hostfile" in e.argv, e.argv
    values = [sm.measurement.value for sm in store.measurements(run.id)]
    assert values and all(v > 0 for v in values)
