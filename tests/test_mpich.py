"""MPICH beside Open MPI, for real: Debian's mpich installed with Open MPI still the default
MPI, each benchmark built by its own MPI's wrapper (separate build-cache entries), mpibench
and NPB CG run with MPICH on this machine (local-mpich) and on an emulated cluster
(netns-2x2-mpich), and the provenance of each run naming the MPI that ran it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hpceval.store import open_store
from hpceval.toolchain import detect_mpi

from .conftest import requires_mpi, write
from .test_cli import hpceval
from .test_netns import header, requires_netns

requires_mpich = pytest.mark.skipif(
    shutil.which("mpicc.mpich") is None or shutil.which("mpiexec.mpich") is None,
    reason="MPICH is not installed (Debian: mpich libmpich-dev; ./setup.sh installs them)",
)

SUITE = """
name = "mpich-and-open-mpi"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, "1MiB"]
ranks = [2]
ranks_per_node = [{ranks_per_node}]
budget_s = 0.2
warmup_s = 0.01
min_samples = 3
max_samples = 40  # the header stays within the stored stdout tail
[[benchmark]]
name = "npb"
kernels = ["cg"]
classes = ["S"]
ranks = [2]
ranks_per_node = [{ranks_per_node}]
"""


def program_of(argv: tuple[str, ...], name: str) -> Path:
    return next(Path(a) for a in argv if Path(a).name == name)


def runs_by_platform(db: Path) -> dict[str, tuple[Any, list[Any]]]:
    store = open_store(str(db))
    out = {}
    for run in store.runs():
        mpi = store.environment(run.environment_id)["mpi"]
        out[run.platform_name] = (mpi, store.executions(run.id))
    return out


@requires_mpi
@requires_mpich
def test_open_mpi_stays_the_default_mpi() -> None:
    default = detect_mpi()
    assert (default.implementation, default.wrapper_implementation) == ("Open MPI", "Open MPI")
    mpich = detect_mpi("mpicc.mpich", "mpiexec.mpich")
    assert (mpich.implementation, mpich.wrapper_implementation) == ("MPICH", "MPICH")
    assert mpich.consistent and mpich.identity() != default.identity()
    alternatives = subprocess.run(
        ["update-alternatives", "--query", "mpirun"], capture_output=True, text=True
    )
    if alternatives.returncode == 0:  # Debian: the alternatives system chose Open MPI
        assert "Value: /usr/bin/mpirun.openmpi" in alternatives.stdout


@requires_mpi
@requires_mpich
def test_mpich_and_open_mpi_side_by_side_on_this_machine(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.toml", SUITE.format(ranks_per_node=2))
    for platform in ("local-mpich", "local"):
        proc = hpceval("run", "--platform", platform, "--suite", str(suite), cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = runs_by_platform(tmp_path / "hpceval.db")
    (mpich, mpich_runs), (ompi, ompi_runs) = runs["local-mpich"], runs["local"]
    assert (mpich["implementation"], ompi["implementation"]) == ("MPICH", "Open MPI")
    assert mpich["mpirun"] == shutil.which("mpiexec.mpich")
    for executions in (mpich_runs, ompi_runs):
        assert {e.status.value for e in executions} == {"ok"}, [e.error for e in executions]
    ping = {
        impl: next(e for e in executions if e.benchmark == "mpibench")
        for impl, executions in (("MPICH", mpich_runs), ("Open MPI", ompi_runs))
    }
    assert ping["MPICH"].argv[0] == shutil.which("mpiexec.mpich")
    assert header(ping["MPICH"].stdout_tail)["mpi_library"].startswith("MPICH Version:")
    assert header(ping["Open MPI"].stdout_tail)["mpi_library"].startswith("Open MPI v")
    # One build per MPI: the cache key holds the MPI's identity.
    built = {impl: program_of(e.argv, "mpibench") for impl, e in ping.items()}
    assert built["MPICH"].parent != built["Open MPI"].parent
    assert "MPICH" in (built["MPICH"].parent / "build.txt").read_text()
    linked = subprocess.run(["ldd", str(built["MPICH"])], capture_output=True, text=True).stdout
    assert "libmpich" in linked and "libmpi.so" not in linked


@requires_mpi
@requires_mpich
@requires_netns
def test_mpich_on_an_emulated_cluster(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.toml", SUITE.format(ranks_per_node=1))
    proc = hpceval("run", "--platform", "netns-2x2-mpich", "--suite", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    mpi, executions = runs_by_platform(tmp_path / "hpceval.db")["netns-2x2-mpich"]
    assert mpi["implementation"] == "MPICH"
    assert {e.status.value for e in executions} == {"ok"}, [e.error for e in executions]
    ping = next(e for e in executions if e.benchmark == "mpibench")
    hosts = header(ping.stdout_tail)["hosts"]
    assert len(hosts) == 2 and hosts[0].endswith("-n0") and hosts[1].endswith("-n1")
    assert ping.argv[ping.argv.index("-launcher") + 1] == "rsh"
