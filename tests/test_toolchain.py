"""Toolchain detection, tested on probe outputs captured from real MPI installations."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from hpceval.errors import ToolMissing, UserError
from hpceval.toolchain import (
    CommandOutput,
    MpiToolchain,
    detect_mpi,
    parse_compiler_version,
    parse_flags,
    parse_mpirun_version,
    parse_showme_command,
    parse_wrapper_show,
    parse_wrapper_version,
    run_as_root_requirements,
    run_command,
)

DATA = Path(__file__).parent / "data" / "toolchain"
OMPI = DATA / "openmpi-4.1.4-debian12"
MPICH = DATA / "mpich-4.0.2-debian12"
INTEL = DATA / "intel-mpi-quoted"

GCC_LINE = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# --- pure parsers ---------------------------------------------------------------------------


def test_mpirun_version_open_mpi() -> None:
    assert parse_mpirun_version(read(OMPI / "mpirun--version.txt")) == ("Open MPI", "4.1.4")


def test_mpirun_version_mpich_hydra() -> None:
    assert parse_mpirun_version(read(MPICH / "mpiexec.hydra--version.txt")) == ("MPICH", "4.0.2")


@pytest.mark.parametrize(
    ("file", "version"),
    [("mpirun--version-2021.8.txt", "2021.8"), ("mpirun--version-2019u2.txt", "2019 Update 2")],
)
def test_mpirun_version_intel_quoted(file: str, version: str) -> None:
    assert parse_mpirun_version(read(INTEL / file)) == ("Intel MPI", version)


def test_mpirun_version_unrecognized() -> None:
    assert parse_mpirun_version("") == ("unknown", None)
    assert parse_mpirun_version(read(OMPI / "gcc--version.txt")) == ("unknown", None)


def test_wrapper_version_open_mpi() -> None:
    text = read(OMPI / "mpicc--showme_version.txt")
    assert parse_wrapper_version(text) == ("Open MPI", "4.1.4")


def test_wrapper_version_mpich_ignores_compiler_verbose_output() -> None:
    text = read(MPICH / "mpicc-v.txt")
    assert "gcc version 12.2.0" in text  # the compiler's -v output follows the banner
    assert parse_wrapper_version(text) == ("MPICH", "4.0.2")


def test_wrapper_version_of_mpich_given_open_mpi_option_is_unknown() -> None:
    # What detect_mpi sees when it asks an MPICH wrapper for --showme:version first.
    text = read(MPICH / "mpicc--showme_version.txt")
    assert parse_wrapper_version(text) == ("unknown", None)


@pytest.mark.parametrize(
    ("file", "version"),
    [("mpiicc-v-2019u9.txt", "2019 Update 9"), ("mpiicc-v-2021.1.txt", "2021.1")],
)
def test_wrapper_version_intel_quoted(file: str, version: str) -> None:
    assert parse_wrapper_version(read(INTEL / file)) == ("Intel MPI", version)


def test_open_mpi_showme_parts() -> None:
    assert parse_showme_command(read(OMPI / "mpicc--showme_command.txt")) == "gcc"
    assert parse_flags(read(OMPI / "mpicc--showme_compile.txt")) == (
        "-I/usr/lib/x86_64-linux-gnu/openmpi/include",
        "-I/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi",
    )
    assert parse_flags(read(OMPI / "mpicc--showme_link.txt")) == (
        "-L/usr/lib/x86_64-linux-gnu/openmpi/lib",
        "-lmpi",
    )
    assert parse_showme_command("") is None


def test_wrapper_show_splits_like_showme() -> None:
    # Open MPI's full --showme line split by the MPICH parser gives what --showme:* gives.
    command, compile_flags, link_flags = parse_wrapper_show(read(OMPI / "mpicc--showme.txt"))
    assert command == "gcc"
    assert compile_flags == parse_flags(read(OMPI / "mpicc--showme_compile.txt"))
    assert link_flags == parse_flags(read(OMPI / "mpicc--showme_link.txt"))


def test_wrapper_show_mpich() -> None:
    assert parse_wrapper_show(read(MPICH / "mpicc-show.txt")) == (
        "gcc",
        ("-I/usr/include/x86_64-linux-gnu/mpich",),
        ("-Wl,-z,relro", "-L/usr/lib/x86_64-linux-gnu", "-lmpich"),
    )
    assert parse_wrapper_show("\n") == (None, (), ())


def test_compiler_version_first_line() -> None:
    assert parse_compiler_version(read(OMPI / "gcc--version.txt")) == GCC_LINE
    assert parse_compiler_version("\n\n") is None


# --- detect_mpi on replayed probes ----------------------------------------------------------


class FakeSystem:
    """Answers `which` from a table and runs nothing: outputs come from captured files."""

    def __init__(
        self, paths: Mapping[str, str], outputs: Mapping[tuple[str, ...], tuple[int, str]]
    ):
        self.paths = paths
        self.outputs = outputs
        self.calls: list[tuple[str, ...]] = []

    def which(self, name: str) -> str | None:
        return self.paths.get(name)

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        self.calls.append(tuple(argv))
        answer = self.outputs.get(tuple(argv))
        return CommandOutput(*answer) if answer is not None else None

    def detect(self, *names: str) -> MpiToolchain:
        return detect_mpi(*names, which=self.which, run=self.run)


OMPI_PATHS = {"mpicc": "/usr/bin/mpicc", "mpirun": "/usr/bin/mpirun"}
OMPI_OUTPUTS: dict[tuple[str, ...], tuple[int, str]] = {
    ("/usr/bin/mpirun", "--version"): (0, read(OMPI / "mpirun--version.txt")),
    ("/usr/bin/mpicc", "--showme:version"): (0, read(OMPI / "mpicc--showme_version.txt")),
    ("/usr/bin/mpicc", "--showme:command"): (0, read(OMPI / "mpicc--showme_command.txt")),
    ("/usr/bin/mpicc", "--showme:compile"): (0, read(OMPI / "mpicc--showme_compile.txt")),
    ("/usr/bin/mpicc", "--showme:link"): (0, read(OMPI / "mpicc--showme_link.txt")),
    ("gcc", "--version"): (0, read(OMPI / "gcc--version.txt")),
}
MPICH_PATHS = {"mpicc": "/usr/bin/mpicc.mpich", "mpirun": "/usr/bin/mpirun.mpich"}
MPICH_OUTPUTS: dict[tuple[str, ...], tuple[int, str]] = {
    ("/usr/bin/mpirun.mpich", "--version"): (0, read(MPICH / "mpiexec.hydra--version.txt")),
    ("/usr/bin/mpicc.mpich", "--showme:version"): (
        1,
        read(MPICH / "mpicc--showme_version.txt"),
    ),
    ("/usr/bin/mpicc.mpich", "-v"): (0, read(MPICH / "mpicc-v.txt")),
    ("/usr/bin/mpicc.mpich", "-show"): (0, read(MPICH / "mpicc-show.txt")),
    ("gcc", "--version"): (0, read(OMPI / "gcc--version.txt")),
}


def test_detect_open_mpi() -> None:
    system = FakeSystem(OMPI_PATHS, OMPI_OUTPUTS)
    toolchain = system.detect()
    assert toolchain == MpiToolchain(
        mpicc="/usr/bin/mpicc",
        mpirun="/usr/bin/mpirun",
        implementation="Open MPI",
        version="4.1.4",
        wrapper_implementation="Open MPI",
        wrapper_version="4.1.4",
        compiler="gcc",
        compiler_version=GCC_LINE,
        compile_flags=(
            "-I/usr/lib/x86_64-linux-gnu/openmpi/include",
            "-I/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi",
        ),
        link_flags=("-L/usr/lib/x86_64-linux-gnu/openmpi/lib", "-lmpi"),
    )
    assert toolchain.consistent
    assert toolchain.identity() == f"Open MPI 4.1.4; {GCC_LINE}"
    # MPICH's -show is never asked of an Open MPI wrapper.
    assert ("/usr/bin/mpicc", "-show") not in system.calls


def test_detect_mpich_with_custom_names() -> None:
    system = FakeSystem(
        {"mpicc.mpich": MPICH_PATHS["mpicc"], "mpirun.mpich": MPICH_PATHS["mpirun"]},
        MPICH_OUTPUTS,
    )
    toolchain = system.detect("mpicc.mpich", "mpirun.mpich")
    assert (toolchain.implementation, toolchain.version) == ("MPICH", "4.0.2")
    assert (toolchain.wrapper_implementation, toolchain.wrapper_version) == ("MPICH", "4.0.2")
    assert toolchain.compiler == "gcc"
    assert toolchain.compile_flags == ("-I/usr/include/x86_64-linux-gnu/mpich",)
    assert toolchain.link_flags == ("-Wl,-z,relro", "-L/usr/lib/x86_64-linux-gnu", "-lmpich")
    assert toolchain.identity() == f"MPICH 4.0.2; {GCC_LINE}"
    assert toolchain.consistent


def test_identity_changes_with_mpi_and_compiler() -> None:
    base = FakeSystem(OMPI_PATHS, OMPI_OUTPUTS).detect()
    other_compiler = MpiToolchain(**{**base.__dict__, "compiler_version": "clang version 14.0.6"})
    other_mpi = MpiToolchain(**{**base.__dict__, "version": "4.1.5"})
    identities = {base.identity(), other_compiler.identity(), other_mpi.identity()}
    assert len(identities) == 3


def test_mixed_alternatives_are_inconsistent() -> None:
    # Debian's mpirun alternative on Open MPI while the mpi alternative (mpicc) is MPICH.
    outputs = {**MPICH_OUTPUTS}
    outputs[("/usr/bin/mpirun.mpich", "--version")] = (0, read(OMPI / "mpirun--version.txt"))
    toolchain = FakeSystem(MPICH_PATHS, outputs).detect()
    assert toolchain.implementation == "Open MPI"
    assert toolchain.wrapper_implementation == "MPICH"
    assert not toolchain.consistent


def test_failed_probes_leave_unknowns() -> None:
    toolchain = FakeSystem(OMPI_PATHS, {}).detect()
    assert toolchain.implementation == "unknown"
    assert toolchain.version is None
    assert toolchain.compiler is None
    assert toolchain.compiler_version is None
    assert toolchain.identity() == "unknown ?; ?"
    assert toolchain.consistent  # nothing known contradicts


def test_missing_mpicc_names_the_package() -> None:
    with pytest.raises(ToolMissing) as caught:
        FakeSystem({"mpirun": "/usr/bin/mpirun"}, {}).detect()
    assert str(caught.value) == (
        "mpicc not found: install Debian package libopenmpi-dev (Open MPI) or libmpich-dev (MPICH)"
    )
    assert isinstance(caught.value, UserError)
    assert "\n" not in str(caught.value)


def test_missing_mpirun_names_the_package() -> None:
    with pytest.raises(ToolMissing, match=r"^mpirun not found: install Debian package openmpi-bin"):
        FakeSystem({"mpicc": "/usr/bin/mpicc"}, {}).detect()


def test_run_as_root_requirements_are_data() -> None:
    ompi = run_as_root_requirements("Open MPI")
    assert dict(ompi.env) == {
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
    assert ompi.mpirun_args == ("--allow-run-as-root",)
    assert dict(run_as_root_requirements("MPICH").env) == {}
    assert run_as_root_requirements("MPICH").mpirun_args == ()
    assert FakeSystem(OMPI_PATHS, OMPI_OUTPUTS).detect().run_as_root() == ompi


def test_run_command_never_raises() -> None:
    assert run_command(["/nonexistent/program-hpceval-test"]) is None
    result = run_command(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert result == CommandOutput(3, "out\nerr\n")
    assert run_command(["sleep", "5"], timeout=0.1) is None


@pytest.mark.skipif(shutil.which("mpicc") is None, reason="no MPI installed")
def test_detect_real_toolchain() -> None:
    toolchain = detect_mpi()
    assert toolchain.implementation != "unknown"
    assert toolchain.version
    assert toolchain.compiler_version
    assert toolchain.consistent
    assert toolchain.identity() == detect_mpi().identity()
