from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from hpceval.benchmarks import Benchmark, Case, Program, get_benchmark
from hpceval.campaign import (
    Campaign,
    CampaignResult,
    case_description,
    load_platform,
    load_suite,
    plan_cases,
)
from hpceval.config import PlatformConfig
from hpceval.launch import Launcher, MpiRuntime, get_launcher_class
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


def requires_tool(program: str) -> pytest.MarkDecorator:
    """Skip unless the Debian-packaged `program` (fio, hpcc...) is on PATH."""
    return pytest.mark.skipif(
        shutil.which(program) is None,
        reason=f"{program} is not installed (./setup.sh deps installs it)",
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def fake_tool(path: Path, script: str) -> Path:
    """An executable shell script at `path` standing in for a real tool."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, script).chmod(0o755)
    return path


def fake_tool_on_path(monkeypatch: pytest.MonkeyPatch, path: Path, script: str) -> Path:
    """`fake_tool`, its directory put first on PATH for this test."""
    fake = fake_tool(path, script)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    return fake


def run_with_fake_tool(
    tmp_path: Path, *, tool: str, script: str, mode: str, log: Path, suite: str
) -> Path:
    """`hpceval run` of `suite` (its `{fake}` is the fake tool's path) on a local platform
    whose ranks get FAKE_MODE=`mode` and FAKE_LOG=`log`; it must exit 1. The database."""
    from tests.test_cli import hpceval  # test_cli imports this module

    # Named by the suite: an mpirun started by its absolute path puts its own bin directory
    # first on the ranks' PATH, so a fake earlier on PATH would not be the one started.
    fake = fake_tool(tmp_path / tool, script)
    platform = write(
        tmp_path / "p.toml",
        "name='fake'\n[launcher]\nkind='local'\n"
        f"env={{FAKE_MODE='{mode}', FAKE_LOG='{log}'}}\n",
    )
    suite_file = write(tmp_path / "s.toml", suite.format(fake=fake))
    proc = hpceval("run", "--platform", str(platform), "--suite", str(suite_file), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return tmp_path / "hpceval.db"


# The smallest fio run: 4 MiB files, one job, one second per workload.
FIO_TINY_SUITE = """
name = "fio-tiny"
[[benchmark]]
name = "fio"
directory = "{directory}"
size = "4MiB"
numjobs = 1
runtime_s = 1
"""


@pytest.fixture
def cores() -> int:
    return os.cpu_count() or 1


def run_suite(
    tmp_path: Path, store: Store, body: str, *, allow_failures: bool = False
) -> tuple[int, list[Measurement]]:
    """Plan a suite (TOML text) on the local platform and run it through a real campaign."""
    suite = load_suite(str(write(tmp_path / "suite.toml", body)))
    cases = plan_cases(suite, load_platform("local").config)
    toolchain = detect_mpi()
    programs = {
        name: get_benchmark(name).build(
            compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=["-O2"]
        )
        for name in {c.benchmark for c in cases}
    }
    run_id, result = run_cases(
        store, cases, programs, suite_name=suite.config.name, suite_config=suite.raw
    )
    if not allow_failures:
        assert not result.failed, [(o.case.key, o.error) for o in result.failed]
    return run_id, [sm.measurement for sm in store.measurements(run_id)]


def run_planned(store: Store, cases: list[Case]) -> tuple[int, CampaignResult]:
    """Run planned cases of prebuilt tools (nothing to compile: fio, hpcc) through a real
    campaign on the local platform."""
    programs = {
        name: get_benchmark(name).build(compiler="", compiler_identity="", cflags=[])
        for name in {c.benchmark for c in cases}
    }
    return run_cases(store, cases, programs, suite_name="test", suite_config={})


def local_launcher() -> Launcher:
    """The local platform's launcher with this machine's MPI."""
    platform = load_platform("local")
    toolchain = detect_mpi()
    return get_launcher_class("local")(
        platform.config, MpiRuntime(toolchain.implementation, toolchain.mpirun)
    )


def run_cases(
    store: Store,
    cases: Sequence[Case],
    programs: dict[str, Program],
    *,
    suite_name: str,
    suite_config: Mapping[str, Any],
) -> tuple[int, CampaignResult]:
    """Record a run of `cases` on the local platform and execute all their points."""
    platform = load_platform("local")
    run_id = store.create_run(
        suite_name=suite_name,
        suite_config=suite_config,
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
    result = Campaign(store, local_launcher(), programs).execute(
        run_id, [(c, list(c.points)) for c in cases]
    )
    return run_id, result


def entry_cases(
    bench: Benchmark[Any], options: dict[str, Any], platform: PlatformConfig
) -> list[Case]:
    """The cases of one suite entry's options, typed by the benchmark as load_suite does."""
    return bench.cases(bench.parse_options(options), platform, 0)
