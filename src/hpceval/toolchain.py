"""Detect the MPI toolchain: which MPI, which compiler wrapper, which C compiler, which flags.

Detection runs a handful of quick version probes (`mpirun --version`, `mpicc --showme:*` or
`mpicc -show`, `cc --version`); the parsing is done by pure functions over their text so it
can be tested on outputs captured from real installations (tests/data/toolchain/).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from hpceval.errors import ToolMissing

Implementation = Literal["Open MPI", "MPICH", "Intel MPI", "unknown"]

OPEN_MPI: Implementation = "Open MPI"
MPICH: Implementation = "MPICH"
INTEL_MPI: Implementation = "Intel MPI"
UNKNOWN: Implementation = "unknown"

# Version probes are expected to answer in milliseconds; a hung wrapper must not hang hpceval.
PROBE_TIMEOUT_S = 5.0

# What to install when a program is missing (Debian package names).
_MISSING_REMEDY = {
    "mpicc": "install Debian package libopenmpi-dev (Open MPI) or libmpich-dev (MPICH)",
    "mpirun": "install Debian package openmpi-bin (Open MPI) or mpich (MPICH)",
}


@dataclass(frozen=True)
class CommandOutput:
    """What a probe printed (stdout and stderr merged, in order) and its exit status."""

    returncode: int
    output: str


Runner = Callable[[Sequence[str]], CommandOutput | None]
Which = Callable[[str], str | None]


def run_command(argv: Sequence[str], timeout: float = PROBE_TIMEOUT_S) -> CommandOutput | None:
    """Run a probe without a shell; None when it cannot be started or does not finish in time."""
    # The C locale keeps tool messages in English so the parsers see what they were tested on.
    env = {**os.environ, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return CommandOutput(done.returncode, done.stdout.decode("utf-8", errors="replace"))


@dataclass(frozen=True)
class RunAsRoot:
    """What mpirun needs when started by root: environment variables and extra arguments.

    Either is enough for Open MPI; launchers pick one. Empty for implementations that run as
    root without being told.
    """

    env: Mapping[str, str] = field(default_factory=dict)
    mpirun_args: tuple[str, ...] = ()


_RUN_AS_ROOT: Mapping[str, RunAsRoot] = {
    OPEN_MPI: RunAsRoot(
        env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
        mpirun_args=("--allow-run-as-root",),
    ),
}


def run_as_root_requirements(implementation: str) -> RunAsRoot:
    """The settings mpirun of `implementation` needs to start as root (pure data)."""
    return _RUN_AS_ROOT.get(implementation, RunAsRoot())


@dataclass(frozen=True)
class MpiToolchain:
    """The MPI used to build and launch benchmarks, as found on this machine."""

    mpicc: str  # absolute path of the compiler wrapper
    mpirun: str  # absolute path of the launcher
    implementation: Implementation  # of mpirun
    version: str | None
    wrapper_implementation: Implementation  # of mpicc: differs when alternatives are mixed
    wrapper_version: str | None
    compiler: str | None  # the C compiler the wrapper calls, as the wrapper names it ("gcc")
    compiler_version: str | None  # first line of `<compiler> --version`
    compile_flags: tuple[str, ...] = ()  # what the wrapper adds when compiling
    link_flags: tuple[str, ...] = ()  # what the wrapper adds when linking

    @property
    def consistent(self) -> bool:
        """False when mpicc and mpirun come from different MPI implementations.

        Programs built by one implementation's wrapper do not start under another's mpirun;
        on Debian this happens when the `mpi` and `mpirun` alternatives point apart.
        """
        if UNKNOWN in (self.implementation, self.wrapper_implementation):
            return True
        return self.implementation == self.wrapper_implementation

    def identity(self) -> str:
        """A short stable string naming MPI and compiler, for build-cache keys."""
        mpi = f"{self.implementation} {self.version or '?'}"
        compiler = self.compiler_version or self.compiler or "?"
        return f"{mpi}; {compiler}"

    def run_as_root(self) -> RunAsRoot:
        return run_as_root_requirements(self.implementation)


_OPEN_MPI_RUN = re.compile(r"\(Open MPI\)\s+(\S+)")
_HYDRA_VERSION = re.compile(r"^\s*Version:\s+(\S+)", re.MULTILINE)
_INTEL_VERSION = re.compile(r"Intel\(R\) MPI Library.*?Version\s+(.+?)\s+Build\b")


def parse_mpirun_version(text: str) -> tuple[Implementation, str | None]:
    """Implementation and version from `mpirun --version` (Open MPI, MPICH Hydra, Intel MPI)."""
    if match := _OPEN_MPI_RUN.search(text):
        return OPEN_MPI, match.group(1)
    # Intel MPI is built on Hydra too: look for its banner before the generic Hydra one.
    if "Intel(R) MPI Library" in text:
        match = _INTEL_VERSION.search(text)
        return INTEL_MPI, match.group(1) if match else None
    if "HYDRA build details" in text:
        match = _HYDRA_VERSION.search(text)
        return MPICH, match.group(1) if match else None
    return UNKNOWN, None


_OPEN_MPI_WRAPPER = re.compile(r"Open MPI\s+(\S+)")
_MPICH_WRAPPER = re.compile(r"for MPICH version\s+(\S+)")
# "mpiicc for the Intel(R) MPI Library 2019 Update 9 for Linux*"; newer releases print
# "mpigcc for Intel(R) MPI library 2021.13".
_INTEL_WRAPPER = re.compile(r"Intel\(R\) MPI library\s+(\d[\d.]*(?:\s+Update\s+\d+)?)", re.I)


def parse_wrapper_version(text: str) -> tuple[Implementation, str | None]:
    """Implementation and version from `mpicc --showme:version` (Open MPI) or `mpicc -v`.

    Only the wrapper's own banner is read: `mpicc -v` of MPICH goes on with the compiler's
    `-v` output, which is ignored.
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    if match := _OPEN_MPI_WRAPPER.search(first):
        return OPEN_MPI, match.group(1)
    if match := _MPICH_WRAPPER.search(first):
        return MPICH, match.group(1)
    if match := _INTEL_WRAPPER.search(first):
        return INTEL_MPI, match.group(1)
    return UNKNOWN, None


def parse_showme_command(text: str) -> str | None:
    """The compiler command from Open MPI's `mpicc --showme:command`."""
    words = text.split()
    return words[0] if words else None


def parse_flags(text: str) -> tuple[str, ...]:
    """Flags printed on one line by `mpicc --showme:compile` / `--showme:link`."""
    return tuple(shlex.split(text))


# Flags that matter only when linking; everything else the wrapper adds applies to both steps.
_LINK_ONLY_PREFIXES = ("-L", "-l", "-Wl,", "-Xlinker", "-rpath")


def parse_wrapper_show(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """Compiler, compile flags and link flags from MPICH's (and Intel MPI's) `mpicc -show`.

    `-show` prints one full command line; the flags are split the way Open MPI's
    `--showme:compile` / `--showme:link` would split them.
    """
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    words = shlex.split(line)
    if not words:
        return None, (), ()
    compile_flags: list[str] = []
    link_flags: list[str] = []
    for word in words[1:]:
        if word.startswith(_LINK_ONLY_PREFIXES):
            link_flags.append(word)
        elif word.startswith(("-I", "-D")):
            compile_flags.append(word)
        else:
            compile_flags.append(word)
            link_flags.append(word)
    return words[0], tuple(compile_flags), tuple(link_flags)


def parse_compiler_version(text: str) -> str | None:
    """The identifying first line of `<cc> --version` (e.g. "gcc (Debian 12.2.0-14) 12.2.0")."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def _output(run: Runner, argv: Sequence[str]) -> str:
    result = run(argv)
    return result.output if result is not None else ""


def detect_mpi(
    mpicc: str = "mpicc",
    mpirun: str = "mpirun",
    *,
    which: Which = shutil.which,
    run: Runner = run_command,
) -> MpiToolchain:
    """Find mpicc and mpirun and describe them; raises ToolMissing when either is absent.

    Probes that fail leave their fields as None/"unknown" rather than raising: a toolchain
    that cannot report its version may still build and run.
    """
    mpicc_path = which(mpicc)
    if mpicc_path is None:
        raise ToolMissing(f"{mpicc} not found: {_MISSING_REMEDY['mpicc']}")
    mpirun_path = which(mpirun)
    if mpirun_path is None:
        raise ToolMissing(f"{mpirun} not found: {_MISSING_REMEDY['mpirun']}")

    implementation, version = parse_mpirun_version(_output(run, [mpirun_path, "--version"]))

    # Open MPI's wrapper answers --showme:*; MPICH's would pass that option to the compiler,
    # which rejects it, so its banner does not parse as Open MPI and `-show` is used instead.
    wrapper_impl, wrapper_version = parse_wrapper_version(
        _output(run, [mpicc_path, "--showme:version"])
    )
    if wrapper_impl == OPEN_MPI:
        compiler = parse_showme_command(_output(run, [mpicc_path, "--showme:command"]))
        compile_flags = parse_flags(_output(run, [mpicc_path, "--showme:compile"]))
        link_flags = parse_flags(_output(run, [mpicc_path, "--showme:link"]))
    else:
        wrapper_impl, wrapper_version = parse_wrapper_version(_output(run, [mpicc_path, "-v"]))
        compiler, compile_flags, link_flags = parse_wrapper_show(
            _output(run, [mpicc_path, "-show"])
        )

    compiler_version = None
    if compiler is not None:
        compiler_version = parse_compiler_version(_output(run, [compiler, "--version"]))

    return MpiToolchain(
        mpicc=mpicc_path,
        mpirun=mpirun_path,
        implementation=implementation,
        version=version,
        wrapper_implementation=wrapper_impl,
        wrapper_version=wrapper_version,
        compiler=compiler,
        compiler_version=compiler_version,
        compile_flags=compile_flags,
        link_flags=link_flags,
    )


# ------------------------------------------------------------------ SimGrid SMPI --

_SMPI_VERSION = re.compile(r"SimGrid version\s+(\S+)")


def parse_smpi_version(text: str) -> str | None:
    """SimGrid's version from `smpicc --version` / `smpirun --version` ("SimGrid version 3.32")."""
    match = _SMPI_VERSION.search(text)
    return match.group(1) if match else None


@dataclass(frozen=True)
class SmpiToolchain:
    """SimGrid's SMPI as found on this machine: smpicc builds, smpirun simulates."""

    smpicc: str
    smpirun: str
    version: str | None
    compiler: str | None  # the C compiler smpicc calls ("/usr/bin/cc")
    compiler_version: str | None

    def identity(self) -> str:
        """A short stable string naming SimGrid and the C compiler, for build-cache keys."""
        compiler = self.compiler_version or self.compiler or "?"
        return f"SimGrid SMPI {self.version or '?'}; {compiler}"


def detect_smpi(
    smpicc: str = "smpicc",
    smpirun: str = "smpirun",
    *,
    which: Which = shutil.which,
    run: Runner = run_command,
) -> SmpiToolchain:
    """Find smpicc and smpirun and describe them; ToolMissing when either is absent."""
    remedy = "install Debian package libsimgrid-dev (SimGrid)"
    smpicc_path = which(smpicc)
    if smpicc_path is None:
        raise ToolMissing(f"{smpicc} not found: {remedy}")
    smpirun_path = which(smpirun)
    if smpirun_path is None:
        raise ToolMissing(f"{smpirun} not found: {remedy}")
    version = parse_smpi_version(_output(run, [smpicc_path, "--version"]))
    # `smpicc -show` prints the whole compiler command, like MPICH's wrapper.
    compiler, _, _ = parse_wrapper_show(_output(run, [smpicc_path, "-show"]))
    compiler_version = None
    if compiler is not None:
        compiler_version = parse_compiler_version(_output(run, [compiler, "--version"]))
    return SmpiToolchain(smpicc_path, smpirun_path, version, compiler, compiler_version)
