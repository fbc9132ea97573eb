"""The multi-node Slurm cluster of `hpceval cluster slurm up`, for the tests that use it.

The module fixture `slurm_netns` starts it through the CLI (two nodes, links shaped to
1GbE, a name of this test process's own), and stops it with `hpceval cluster slurm down`
afterwards, also when the tests failed; it checks that no daemon and no file is left.

Use it with `from .slurm_netns_cluster import slurm_netns  # noqa: F401`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from hpceval.clusters import slurm_netns as cluster_mod

LINK = "1GbE"
LINK_MB_S = 1e9 / 8 / 1e6  # the shaped link's rate, in MB/s


def shaped_ceiling_mb_s(size: int) -> float:
    """The most one message of `size` bytes can show through the shaped link: its tbf bucket
    leaves at the veth's speed, the rest at the link's rate (docs/clusters.md, "Emulation
    limits"); 2 % for timing."""
    from hpceval.clusters.netns import NetnsOptions

    burst = NetnsOptions(link=LINK).burst_bytes() or 0
    return 1.02 * LINK_MB_S * size / max(size - burst, 1)
NODES = 2


def hpceval_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpceval", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def platform_text(cluster: str, *, mpich: bool = False) -> str:
    """A platform on the test cluster; with `mpich`, MPICH's wrapper, mpiexec and srun PMI-2."""
    lines = [
        f'name = "slurm-netns-{"mpich" if mpich else "ompi"}"', f"nodes = {NODES}",
        "[launcher]", 'kind = "slurm-netns"', f'cluster = "{cluster}"', "poll_s = 0.2",
        "oversubscribe = true",
    ]  # fmt: skip
    if mpich:
        lines += ['mpirun = "mpiexec.mpich"', 'mpicc = "mpicc.mpich"', 'srun_mpi = "pmi2"']
    return "\n".join(lines) + "\n"


requires_slurm_netns = pytest.mark.skipif(
    cluster_mod.why_not_here() is not None, reason=cluster_mod.why_not_here() or ""
)


@pytest.fixture(scope="module")
def slurm_netns() -> Iterator[cluster_mod.SlurmNetnsCluster]:
    name = f"pytest-{os.getpid()}"
    proc = hpceval_cli("cluster", "slurm", "up", "--name", name, "--nodes", str(NODES),
                       "--link", LINK)  # fmt: skip
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cluster = cluster_mod.load(name)
        assert cluster is not None
        yield cluster
    finally:
        cluster = cluster_mod.load(name)
        down = hpceval_cli("cluster", "slurm", "down", "--name", name)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not cluster_mod.cluster_dir(name).exists()
        if cluster is not None:
            assert not any(cluster.alive().values())
