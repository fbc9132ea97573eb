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
    # Headers are not compiled but change the program: they are part of the key.
    key = build_key([*sources, *depends], compiler_identity, cflags, ldflags)
    target_dir = (cache or cache_root()) / "build" / f"{name}-{key}"
    exe = target_dir / name
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    if shutil.which(compiler) is None:
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
