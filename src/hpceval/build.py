"""Compiling the C benchmark programs, cached by (source hash, compiler, MPI, flags).

A cache entry is a directory named by the key; the executable is written to a temporary name
and renamed into place, so a concurrent or interrupted build never leaves a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hpceval.errors import ToolMissing, UserError

BUILD_TIMEOUT_S = 300

# SimGrid's compiler wrapper: programs it builds run only under smpirun (simulated MPI).
SMPI_COMPILERS = frozenset({"smpicc", "smpicxx", "smpiff", "smpif90"})
# Defined for SMPI builds: the C sources keep everything simulator-specific behind it.
SMPI_DEFINE = "-DHPCEVAL_SMPI"
# Linked into every smpicc build: MPI_Bcast, MPI_Scan, MPI_Exscan and small MPI_Allreduce as
# Open MPI >= 4.1 runs them where SimGrid runs other algorithms (the file says which and why).
SMPI_COLLECTIVE_SOURCES = (Path(__file__).parent / "smpi_colls" / "ompi_colls.c",)


def is_smpi_compiler(compiler: str) -> bool:
    """True for SimGrid's smpicc (by name or path), whose programs run under smpirun."""
    return Path(compiler).name in SMPI_COMPILERS


def smpi_cflags(cflags: Sequence[str]) -> tuple[str, ...]:
    """Flags adjusted for an SMPI build: HPCEVAL_SMPI defined, no OpenMP runtime.

    SMPI simulates MPI processes, not threads: a program built with -fopenmp would run its
    threads unsimulated on this host. -fopenmp-simd keeps the `omp simd` vectorization hints
    (the benched computation stays the code the native build runs), without the runtime.
    """
    out = [f for f in cflags if f not in ("-fopenmp", "-qopenmp", "-openmp")]
    if any(f.startswith("-fopenmp") for f in cflags) and "-fopenmp-simd" not in out:
        out.append("-fopenmp-simd")
    if SMPI_DEFINE not in out:
        out.append(SMPI_DEFINE)
    return tuple(out)


def check_smpi_options(compiler: str, cflags: Sequence[str]) -> None:
    """The SMPI-only build options (-DHPCEVAL_SMPI*) need the SMPI compiler."""
    if is_smpi_compiler(compiler):
        return
    bad = [f for f in cflags if f.startswith(SMPI_DEFINE)]
    if bad:
        raise UserError(
            f"cflags: {bad[0]} is an SMPI build option, it needs compiler smpicc, not {compiler}"
        )


def cache_root() -> Path:
    """$HPCEVAL_CACHE, else $XDG_CACHE_HOME/hpceval, else ~/.cache/hpceval."""
    if env := os.environ.get("HPCEVAL_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpceval"


def host_cpu_signature() -> str:
    """The CPU model and feature flags: what `-march=native` compiles for."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine()
    keep = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags", "Features"))]
    return platform.machine() + "\n" + "\n".join(sorted(set(keep)))


def build_key(
    sources: Sequence[Path], compiler_identity: str, cflags: Sequence[str], ldflags: Sequence[str]
) -> str:
    h = hashlib.sha256()
    if any(f.endswith("=native") for f in cflags):
        # A cache shared between machines (an NFS home) must not hand a binary built for
        # another CPU to this one: it would die of SIGILL.
        h.update(host_cpu_signature().encode() + b"\0")
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    h.update(compiler_identity.encode() + b"\0")
    h.update("\0".join(cflags).encode() + b"\0\0" + "\0".join(ldflags).encode())
    return h.hexdigest()[:24]


def compile_program(
    name: str,
    sources: Sequence[Path],
    *,
    depends: Sequence[Path] = (),
    compiler: str,
    compiler_identity: str,
    cflags: Sequence[str],
    ldflags: Sequence[str] = (),
    cache: Path | None = None,
) -> Path:
    """Return the cached executable, compiling it first if needed."""
    if is_smpi_compiler(compiler):
        sources = [*sources, *SMPI_COLLECTIVE_SOURCES]
    # Headers are not compiled but change the program: they are part of the key.
    key = build_key([*sources, *depends], compiler_identity, cflags, ldflags)
    target_dir = (cache or cache_root()) / "build" / f"{name}-{key}"
    exe = target_dir / name
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    if shutil.which(compiler) is None:
        if is_smpi_compiler(compiler):
            raise ToolMissing(f"{compiler} not found: install SimGrid (Debian: libsimgrid-dev)")
        raise ToolMissing(f"{compiler} not found: install an MPI (Debian: libopenmpi-dev)")
    target_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", dir=target_dir)
    os.close(fd)
    argv = [compiler, *cflags, "-o", tmp_name, *map(str, sources), *ldflags]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
        if proc.returncode != 0:
            # gcc/clang diagnostics read "file:line:col: error: cause".
            first = next((ln for ln in proc.stderr.splitlines() if ": error:" in ln), "")
            first = first or (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise UserError(
                f"building {name} failed ({' '.join(argv[:1] + list(cflags))}): {first}"
            )
        os.chmod(tmp_name, 0o755)
        os.replace(tmp_name, exe)
        (target_dir / "build.txt").write_text(" ".join(argv) + "\n" + compiler_identity + "\n")
    except subprocess.TimeoutExpired as e:
        raise UserError(f"building {name} took more than {BUILD_TIMEOUT_S} s") from e
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return exe
