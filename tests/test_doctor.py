"""Doctor: checks replayed from the machine captured in tests/data/provenance, variations of
it (tools removed, another OS, mixed MPI), and one real run on this machine."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from hpceval.doctor import Check, exit_code, render, run_checks
from hpceval.provenance import RecordingHost, ReplayHost, SystemHost
from hpceval.toolchain import CommandOutput

CAPTURE = Path(__file__).parent / "data" / "provenance" / "kvm-docker-debian12"
MPICH = Path(__file__).parent / "data" / "toolchain" / "mpich-4.0.2-debian12"
GCC_LINE = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"


class Variant(ReplayHost):
    """The captured machine with some programs removed, files replaced or commands added."""

    def __init__(
        self,
        *,
        without: Sequence[str] = (),
        paths: dict[str, str] | None = None,
        files: dict[str, str] | None = None,
        outputs: dict[tuple[str, ...], CommandOutput] | None = None,
        dirs: dict[str, list[str]] | None = None,
        existing: Sequence[str] = (),
        euid: int | None = None,
    ):
        super().__init__(CAPTURE)
        self.without = set(without)
        self.paths = paths or {}
        self.files = files or {}
        self.outputs = outputs or {}
        self.dirs = dirs or {}
        self.existing = set(existing)
        self.uid = euid

    def which(self, name: str) -> str | None:
        if name in self.without:
            return None
        return self.paths.get(name) or super().which(name)

    def read_text(self, path: str) -> str | None:
        return self.files[path] if path in self.files else super().read_text(path)

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        return self.outputs.get(tuple(argv)) or super().run(argv)

    def listdir(self, path: str) -> list[str] | None:
        return self.dirs[path] if path in self.dirs else super().listdir(path)

    def exists(self, path: str) -> bool:
        return path in self.existing or super().exists(path)

    def euid(self) -> int:
        return self.uid if self.uid is not None else super().euid()


def by_name(checks: Sequence[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def test_captured_machine() -> None:
    checks = run_checks(host=ReplayHost(CAPTURE), python_version=(3, 11, 7))
    found = {check.name: (check.status, check.found, check.remedy) for check in checks}
    assert found == {
        "mpicc": ("ok", "Open MPI 4.1.4 (/usr/bin/mpicc)", ""),
        "mpirun": ("ok", "Open MPI 4.1.4 (/usr/bin/mpirun)", ""),
        "C compiler (gcc)": ("ok", f"{GCC_LINE} (/usr/bin/gcc)", ""),
        "hwloc": ("ok", "lstopo-no-graphics 2.9.0 (/usr/bin/lstopo-no-graphics)", ""),
        "hpcc": ("ok", "/usr/bin/hpcc", ""),
        "fio": ("optional-missing", "", "apt-get install -y fio"),
        "gmx": ("optional-missing", "", "apt-get install -y gromacs"),
        "lmp": ("optional-missing", "", "apt-get install -y lammps"),
        "pw.x": ("optional-missing", "", "apt-get install -y quantum-espresso"),
        "javac": ("optional-missing", "", "apt-get install -y default-jdk-headless"),
        "mpj-express": ("optional-missing", "", "apt-get install -y libmpj-java"),
        "blastn": ("optional-missing", "", "apt-get install -y ncbi-blast+"),
        "clustalw": ("optional-missing", "", "apt-get install -y clustalw"),
        "hmmsearch": ("optional-missing", "", "apt-get install -y hmmer"),
        "nucmer": ("optional-missing", "", "apt-get install -y mummer"),
        "velveth": ("optional-missing", "", "apt-get install -y velvet"),
        "smpicc": ("optional-missing", "", "apt-get install -y libsimgrid-dev"),
        "smpirun": ("optional-missing", "", "apt-get install -y libsimgrid-dev"),
        "sbatch": ("optional-missing", "", "apt-get install -y slurm-client"),
        "slurmctld": ("optional-missing", "", "apt-get install -y slurmctld slurmd"),
        "psql": ("ok", "psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1) (/usr/bin/psql)", ""),
        "postgres": (
            "ok",
            "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1) (/usr/local/bin/postgres)",
            "",
        ),
        "chromium": ("optional-missing", "", "apt-get install -y chromium"),
        "systemd-detect-virt": (
            "ok",
            "systemd 252 (252.38-1~deb12u1) (/usr/bin/systemd-detect-virt)",
            "",
        ),
        "python": ("ok", "3.11.7", ""),
        "root": ("ok", "running as root (uid 0)", ""),
    }
    root = by_name(checks)["root"]
    assert "OMPI_ALLOW_RUN_AS_ROOT=1" in root.needed_for
    assert "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in root.needed_for
    assert "hpceval sets" in root.needed_for
    assert all(check.needed_for for check in checks)
    assert exit_code(checks) == 0  # only optional tools (fio, SimGrid, Slurm...) are missing


def test_java_and_mpj_express_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MPJ_HOME", raising=False)
    java_out = 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment\n'
    host = Variant(
        paths={"java": "/usr/bin/java", "javac": "/usr/bin/javac"},
        outputs={
            ("/usr/bin/java", "-version"): CommandOutput(0, java_out),
        },
        files={"/usr/share/mpj/conf/mpjexpress.conf": "# ports\nmpjexpress.version=0.44\n"},
        existing=["/usr/share/mpj/lib/mpj.jar"],
    )
    checks = by_name(run_checks(host=host))
    assert checks["javac"].found == "/usr/bin/javac"
    assert checks["mpj-express"].found == (
        "MPJ Express 0.44 (/usr/share/mpj), JVM openjdk 17.0.15 (/usr/bin/java)"
    )
    assert checks["mpj-express"].status == "ok"


def test_missing_mpi_is_required() -> None:
    checks = by_name(run_checks(host=Variant(without=["mpicc", "mpirun"])))
    assert checks["mpicc"].status == "missing"
    assert checks["mpicc"].remedy == "apt-get install -y libopenmpi-dev"
    assert checks["mpirun"].remedy == "apt-get install -y openmpi-bin"
    # Without mpicc the compiler check falls back on `cc`, absent from the capture.
    assert checks["C compiler (cc)"].status == "missing"
    assert checks["C compiler (cc)"].remedy == "apt-get install -y gcc"


def test_only_mpirun_missing_keeps_mpicc_ok() -> None:
    checks = by_name(run_checks(host=Variant(without=["mpirun"])))
    assert (checks["mpicc"].status, checks["mpicc"].found) == ("ok", "/usr/bin/mpicc")
    assert checks["mpirun"].status == "missing"


def test_mixed_mpi_alternatives_are_reported() -> None:
    mpicc = "/usr/bin/mpicc.mpich"
    host = Variant(
        paths={"mpicc": mpicc},
        outputs={
            (mpicc, "--showme:version"): CommandOutput(
                1, (MPICH / "mpicc--showme_version.txt").read_text()
            ),
            (mpicc, "-v"): CommandOutput(0, (MPICH / "mpicc-v.txt").read_text()),
            (mpicc, "-show"): CommandOutput(0, (MPICH / "mpicc-show.txt").read_text()),
        },
    )
    checks = by_name(run_checks(host=host))
    assert checks["mpicc"].found == f"MPICH 4.0.2 ({mpicc})"
    assert checks["mpirun"].status == "missing"
    assert checks["mpirun"].found == "Open MPI 4.1.4 (/usr/bin/mpirun), but mpicc is MPICH 4.0.2"
    assert checks["mpirun"].remedy == "update-alternatives --config mpirun"


def test_other_os_names_packages_in_words() -> None:
    rocky = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
    checks = by_name(run_checks(host=Variant(files={"/etc/os-release": rocky})))
    assert (
        checks["fio"].remedy
        == "install fio, the flexible I/O tester with your system's package manager"
    )
    assert all("apt-get" not in check.remedy for check in checks.values())


def test_postgres_outside_path() -> None:
    server = "/usr/lib/postgresql/15/bin/postgres"
    host = Variant(
        without=["postgres"],
        dirs={"/usr/lib/postgresql": ["15", "9.6"]},
        existing=[server],
    )
    assert by_name(run_checks(host=host))["postgres"].found == server


def test_python_and_user() -> None:
    checks = by_name(run_checks(host=Variant(euid=1000), python_version=(3, 10, 12)))
    assert checks["python"].status == "missing"
    assert checks["python"].remedy == "install Python >= 3.11"
    assert (checks["root"].status, checks["root"].found) == ("ok", "not root (uid 1000)")


def test_exit_code_ignores_optional() -> None:
    optional = Check("chromium", "optional-missing", "", "reports", "apt-get install -y chromium")
    ok = Check("mpicc", "ok", "/usr/bin/mpicc", "building", "")
    assert exit_code([ok, optional]) == 0
    assert exit_code([ok, optional, Check("fio", "missing", "", "storage", "x")]) == 1


def test_render_shows_text_verbatim() -> None:
    checks = [
        Check("odd", "ok", "tool [bold]1.0[/bold]", "testing markup", ""),
        Check("fio", "missing", "", "storage benchmarks", "apt-get install -y fio"),
    ]
    console = Console(record=True, width=200)
    console.print(render(checks))
    text = console.export_text()
    assert "tool [bold]1.0[/bold]" in text
    assert "apt-get install -y fio" in text
    assert render(checks).row_count == 2


# What doctor may ask a program: its version or identity, or its linked libraries (ldd);
# never a compilation, an MPI launch or a daemon start. (How long it takes on a quiet
# machine is measured by perf/doctor_speed.py.)
IDENTITY_QUERIES = {"--version", "-version", "-V", "-h"}


def test_this_machine_only_answers_identity_queries() -> None:
    host = RecordingHost(SystemHost())
    checks = run_checks(host=host)
    assert host.commands
    for argv in map(shlex.split, host.commands):
        program = Path(argv[0]).name
        asked = argv[-1]
        if program == "mpicc":  # Open MPI's wrapper: its version and its gcc command line
            assert asked.startswith("--showme:") and len(argv) == 2, argv
        elif program == "ldd":
            assert len(argv) == 2, argv
        else:
            assert len(argv) == 2 and asked in IDENTITY_QUERIES, argv
    names = [check.name for check in checks]
    assert names[:2] == ["mpicc", "mpirun"]
    assert names[-2:] == ["python", "root"]
    assert by_name(checks)["python"].status == "ok"


def test_every_benchmark_tool_is_installed_by_setup() -> None:
    """Each program a benchmark declares (Benchmark.tools) comes from a package that
    ./setup.sh installs: scripts/packages.txt lists it with a probe for that program."""
    from hpceval.benchmarks import benchmark_names, get_benchmark

    listed = {}
    for line in (Path(__file__).parents[1] / "scripts" / "packages.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            package, probe = line.split()[:2]
            listed[package] = probe
    tools = [tool for name in benchmark_names() for tool in get_benchmark(name).tools]
    assert {t.program for t in tools} >= {"fio", "gmx", "hpcc", "lmp"}
    for tool in tools:
        assert tool.package in listed, f"{tool.program}: {tool.package} not in packages.txt"
        assert listed[tool.package].removeprefix("cmd:") in tool.programs, tool
    # doctor checks each of them, under the program's name.
    checks = by_name(run_checks(host=ReplayHost(CAPTURE), python_version=(3, 11, 7)))
    for tool in tools:
        assert checks[tool.program].needed_for == tool.needed_for
