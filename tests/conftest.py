from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.campaign import Campaign, case_description, plan_cases
from hpceval.config import load_platform, load_suite
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import Store
from hpceval.toolchain import detect_mpi

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One build cache for the whole session (builds are slow), never the user's own.
    cache = tmp_path_factory.getbasetemp() / "hpceval-cache"
    monkeypatch.setenv("HPCEVAL_CACHE", str(cache))
    monkeypatch.delenv("HPCEVAL_DB", raising=False)


def have_mpi() -> bool:
    return shutil.which("mpicc") is not None and shutil.which("mpirun") is not None


requires_mpi = pytest.mark.skipif(
    not have_mpi(), reason="mpicc/mpirun not installed (./setup.sh installs Open MPI)"
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def cores() -> int:
    return os.cpu_count() or 1


def run_suite(
    tmp_path: Path, store: Store, body: str, *, allow_failures: bool = False
) -> tuple[int, list[Measurement]]:
    """Plan a suite (TOML text) on the local platform and run it through a real campaign."""
    suite = load_suite(str(write(tmp_path / "suite.toml", body)))
    platform = load_platform("local")
    cases = plan_cases(suite, platform.config)
    toolchain = detect_mpi()
    launcher = get_launcher_class("local")(
        platform.config, MpiRuntime(toolchain.implementation, toolchain.mpirun)
    )
    programs = {
        name: get_benchmark(name).build(
            compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=["-O2"]
        )
        for name in {c.benchmark for c in cases}
    }
    run_id = store.create_run(
        suite_name=suite.config.name,
        suite_config=suite.raw,
        platform_id=store.add_platform("local", platform.raw),
        environment_id=store.add_environment(Environment({"test": True}, "test-env")),
        launcher="local",
        cases=[(c.key, c.benchmark, case_description(c)) for c in cases],
        hpceval_version="test",
        git_revision=None,
        origin=Origin.MEASURED,
        host=socket.gethostname(),
        pid=os.getpid(),
    )
    result = Campaign(store, launcher, programs).execute(
        run_id, [(c, list(c.points)) for c in cases]
    )
    if not allow_failures:
        assert not result.failed, [(o.case.key, o.error) for o in result.failed]
    return run_id, [sm.measurement for sm in store.measurements(run_id)]
