"""`hpceval doctor`: which tools hpceval needs or can use are installed, and how to get the rest.

Each check answers with what it found (a version or a path), what the tool is needed for and
the exact command that installs it. Probes are version queries only (no benchmark, browser or
daemon is started), so the whole doctor takes well under two seconds.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.table import Table
from rich.text import Text

from hpceval.errors import ToolMissing
from hpceval.mpj import parse_java_version, parse_mpj_version, system_mpj_home
from hpceval.provenance import Host, SystemHost, is_debian_like, parse_os_release
from hpceval.toolchain import (
    OPEN_MPI,
    MpiToolchain,
    detect_mpi,
    parse_compiler_version,
    run_as_root_requirements,
)

CheckStatus = Literal["ok", "missing", "optional-missing"]

MINIMUM_PYTHON = (3, 11)


@dataclass(frozen=True)
class Check:
    name: str
    status: CheckStatus
    found: str  # version or path; empty when missing
    needed_for: str
    remedy: str  # exact command on Debian, the package in words elsewhere; empty when ok


@dataclass(frozen=True)
class _Package:
    debian: str  # Debian package name(s), space-separated
    words: str  # what to install on another OS


@dataclass(frozen=True)
class _Tool:
    """A program looked up in PATH; `version_args` is None for programs that must not be
    started just to ask their version (hpcc runs the whole benchmark, chromium is slow)."""

    name: str
    programs: tuple[str, ...]  # alternatives, first found wins
    version_args: tuple[str, ...] | None
    needed_for: str
    package: _Package
    required: bool
    linked_library: str | None = None  # shown with the program (ldd): hpcc's BLAS


def _benchmark_tools() -> list[_Tool]:
    """The external programs the benchmarks run, as each benchmark declares them (optional:
    without one, that benchmark's cases are skipped)."""
    from hpceval.benchmarks import benchmark_names, get_benchmark

    tools = {}
    for name in benchmark_names():
        for tool in get_benchmark(name).tools:
            tools[tool.program] = _Tool(
                tool.program,
                tool.programs,
                tool.version_args,
                tool.needed_for,
                _Package(tool.package, tool.package_words),
                required=False,
                linked_library=tool.linked_library,
            )
    return list(tools.values())


_TOOLS = (
    _Tool(
        "hwloc",
        ("lstopo-no-graphics",),
        ("--version",),
        "CPU topology in the provenance of every run (fallback: /proc and /sys)",
        _Package("hwloc", "hwloc (lstopo-no-graphics)"),
        required=True,
    ),
    _Tool(
        "smpicc",
        ("smpicc",),
        None,
        "SimGrid SMPI projections: building for simulation",
        _Package("libsimgrid-dev", "SimGrid with its SMPI development tools"),
        required=False,
    ),
    _Tool(
        "smpirun",
        ("smpirun",),
        None,
        "SimGrid SMPI projections: simulated runs at scales not available",
        _Package("libsimgrid-dev", "SimGrid with its SMPI development tools"),
        required=False,
    ),
    _Tool(
        "sbatch",
        ("sbatch",),
        ("--version",),
        "submitting campaigns through Slurm",
        _Package("slurm-client", "the Slurm client commands"),
        required=False,
    ),
    _Tool(
        "slurmctld",
        ("slurmctld",),
        ("-V",),
        "a local Slurm controller for scheduler tests",
        _Package("slurmctld slurmd", "the Slurm controller and node daemons"),
        required=False,
    ),
    _Tool(
        "psql",
        ("psql",),
        ("--version",),
        "storing results in PostgreSQL instead of SQLite",
        _Package("postgresql-client", "the PostgreSQL client"),
        required=False,
    ),
    _Tool(
        "postgres",
        ("postgres",),
        ("--version",),
        "a local PostgreSQL server for the result store",
        _Package("postgresql", "the PostgreSQL server"),
        required=False,
    ),
    _Tool(
        "chromium",
        ("chromium", "chromium-browser"),
        None,
        "rendering HTML reports to PDF/PNG",
        _Package("chromium", "the Chromium browser"),
        required=False,
    ),
    _Tool(
        "systemd-detect-virt",
        ("systemd-detect-virt",),
        ("--version",),
        "identifying the hypervisor and container in provenance (fallback: CPUID, DMI)",
        _Package("systemd", "systemd (systemd-detect-virt)"),
        required=False,
    ),
)


def _remedy(package: _Package, debian: bool) -> str:
    if debian:
        return f"apt-get install -y {package.debian}"
    return f"install {package.words} with your system's package manager"


def _missing(required: bool) -> CheckStatus:
    return "missing" if required else "optional-missing"


def _first_line(host: Host, argv: Sequence[str]) -> str:
    result = host.run(argv)
    return (parse_compiler_version(result.output) or "") if result is not None else ""


def _find(host: Host, tool: _Tool) -> str | None:
    for program in tool.programs:
        if path := host.which(program):
            return path
    if tool.name == "postgres":
        return _postgres_outside_path(host)
    return None


def _postgres_outside_path(host: Host) -> str | None:
    # Debian keeps the server out of PATH, one directory per major version.
    versions = host.listdir("/usr/lib/postgresql") or []
    for version in sorted(versions, key=lambda v: (len(v), v), reverse=True):
        candidate = f"/usr/lib/postgresql/{version}/bin/postgres"
        if host.exists(candidate):
            return candidate
    return None


def _linked_library(host: Host, program: str, library: str) -> str:
    """The path of the library named like `library` that a program loads (ldd): hpcc's HPL
    and DGEMM figures depend on its BLAS."""
    result = host.run(["ldd", program])
    for line in result.output.splitlines() if result is not None else []:
        name, arrow, rest = line.strip().partition("=>")
        if arrow and library in name.lower():
            return rest.split("(")[0].strip()
    return ""


def _check_tool(host: Host, tool: _Tool, debian: bool) -> Check:
    path = _find(host, tool)
    if path is None:
        return Check(
            tool.name, _missing(tool.required), "", tool.needed_for, _remedy(tool.package, debian)
        )
    found = path
    if tool.version_args is not None:
        version = _first_line(host, [path, *tool.version_args])
        found = f"{version} ({path})" if version else path
    if tool.linked_library and (library := _linked_library(host, path, tool.linked_library)):
        found += f", {tool.linked_library.upper()} {library}"
    return Check(tool.name, "ok", found, tool.needed_for, "")


_MPICC = _Package("libopenmpi-dev", "the Open MPI (or MPICH) development package: mpicc")
_MPIRUN = _Package("openmpi-bin", "the Open MPI (or MPICH) runtime: mpirun")
_CC = _Package("gcc", "a C compiler (gcc or clang)")


def _mpi_checks(host: Host, debian: bool) -> tuple[list[Check], MpiToolchain | None]:
    mpicc_needed = "building the MPI benchmark programs"
    mpirun_needed = "launching every MPI benchmark"
    checks: list[Check] = []
    mpicc_path = host.which("mpicc")
    mpirun_path = host.which("mpirun")
    if mpicc_path is None:
        checks.append(Check("mpicc", "missing", "", mpicc_needed, _remedy(_MPICC, debian)))
    if mpirun_path is None:
        checks.append(Check("mpirun", "missing", "", mpirun_needed, _remedy(_MPIRUN, debian)))
    if checks:
        if mpicc_path is not None:
            checks.insert(0, Check("mpicc", "ok", mpicc_path, mpicc_needed, ""))
        if mpirun_path is not None:
            checks.append(Check("mpirun", "ok", mpirun_path, mpirun_needed, ""))
        return checks, None
    try:
        toolchain = detect_mpi(which=host.which, run=host.run)
    except ToolMissing:  # both were just found; only a race with an uninstall gets here
        return [Check("mpicc", "missing", "", mpicc_needed, _remedy(_MPICC, debian))], None

    wrapper = f"{toolchain.wrapper_implementation} {toolchain.wrapper_version or '?'}"
    checks.append(Check("mpicc", "ok", f"{wrapper} ({toolchain.mpicc})", mpicc_needed, ""))
    runner = f"{toolchain.implementation} {toolchain.version or '?'} ({toolchain.mpirun})"
    if toolchain.consistent:
        checks.append(Check("mpirun", "ok", runner, mpirun_needed, ""))
    else:
        # Binaries built by one MPI's mpicc do not start under another MPI's mpirun.
        remedy = (
            "update-alternatives --config mpirun"
            if debian
            else "put mpicc and mpirun of the same MPI implementation first in PATH"
        )
        checks.append(
            Check(
                "mpirun",
                "missing",
                f"{runner}, but mpicc is {wrapper}",
                f"{mpirun_needed} (must match mpicc)",
                remedy,
            )
        )
    return checks, toolchain


def _compiler_check(host: Host, toolchain: MpiToolchain | None, debian: bool) -> Check:
    needed = "compiling the benchmark programs (called by mpicc)"
    command = toolchain.compiler if toolchain and toolchain.compiler else "cc"
    path = host.which(command)
    if path is None:
        return Check(f"C compiler ({command})", "missing", "", needed, _remedy(_CC, debian))
    version = toolchain.compiler_version if toolchain else None
    version = version or _first_line(host, [path, "--version"])
    found = f"{version} ({path})" if version else path
    return Check(f"C compiler ({command})", "ok", found, needed, "")


def _mpj_check(host: Host, debian: bool) -> Check:
    """MPJ Express: its version from its configuration file (MPJ has no version command)."""
    home = system_mpj_home()
    needed = "the Java benchmarks (mpibench-java, npb-java); without it their cases are skipped"
    conf = host.read_text(str(home / "conf" / "mpjexpress.conf"))
    if conf is None or not host.exists(str(home / "lib" / "mpj.jar")):
        package = _Package("libmpj-java", "MPJ Express (mpj.jar, mpjrun)")
        return Check("mpj-express", "optional-missing", "", needed, _remedy(package, debian))
    version = parse_mpj_version(conf) or "unknown version"
    found = f"MPJ Express {version} ({home})"
    java = host.which("java")
    result = host.run([java, "-version"]) if java else None
    jvm = parse_java_version(result.output) if result is not None else None
    found += f", JVM {jvm} ({java})" if jvm else ", no JVM (java) on PATH"
    return Check("mpj-express", "ok", found, needed, "")


def _python_check(version_info: Sequence[int]) -> Check:
    found = ".".join(str(part) for part in version_info[:3])
    wanted = ".".join(str(part) for part in MINIMUM_PYTHON)
    if tuple(version_info[:2]) >= MINIMUM_PYTHON:
        return Check("python", "ok", found, "hpceval itself", "")
    return Check("python", "missing", found, "hpceval itself", f"install Python >= {wanted}")


def _root_check(euid: int, toolchain: MpiToolchain | None) -> Check:
    if euid != 0:
        return Check("root", "ok", f"not root (uid {euid})", "nothing: informational", "")
    implementation = toolchain.implementation if toolchain else OPEN_MPI
    env = run_as_root_requirements(implementation).env
    if env:
        settings = " ".join(f"{key}={value}" for key, value in sorted(env.items()))
        needed = f"{implementation} refuses to run as root: hpceval sets {settings} itself"
    else:
        needed = f"{implementation} runs as root without extra settings"
    return Check("root", "ok", "running as root (uid 0)", needed, "")


def run_checks(
    *, host: Host | None = None, python_version: Sequence[int] | None = None
) -> list[Check]:
    """Check every tool hpceval needs or can use, in display order."""
    host = host or SystemHost()
    os_release = host.read_text("/etc/os-release")
    debian = is_debian_like(parse_os_release(os_release)) if os_release else False
    checks, toolchain = _mpi_checks(host, debian)
    checks.append(_compiler_check(host, toolchain, debian))
    # The required tools, the benchmarks' programs, then the optional rest.
    tools = [
        *(t for t in _TOOLS if t.required),
        *_benchmark_tools(),
        *(t for t in _TOOLS if not t.required),
    ]
    checks.extend(_check_tool(host, tool, debian) for tool in tools)
    checks.append(_mpj_check(host, debian))
    checks.append(_python_check(python_version or tuple(sys.version_info[:3])))
    checks.append(_root_check(host.euid(), toolchain))
    return checks


_STATUS_STYLE = {"ok": "green", "missing": "bold red", "optional-missing": "yellow"}


def render(checks: Sequence[Check]) -> Table:
    table = Table(title="hpceval doctor")
    table.add_column("check")
    table.add_column("status")
    table.add_column("found")
    table.add_column("needed for")
    table.add_column("remedy")
    for check in checks:
        # Text cells: tool output may contain "[...]", which rich would read as markup.
        table.add_row(
            Text(check.name),
            Text(check.status, style=_STATUS_STYLE[check.status]),
            Text(check.found or "-"),
            Text(check.needed_for),
            Text(check.remedy),
        )
    return table


def exit_code(checks: Sequence[Check]) -> int:
    """1 when a required tool is missing, else 0 (optional ones do not count)."""
    return 1 if any(check.status == "missing" for check in checks) else 0
