"""The official codes a user points hpceval at (NPB, NPB-MZ, OSU, IMB, MILC): where their
sources are, what they are (a directory or a .tar.gz of the right layout), and a private
copy of them in hpceval's build cache, keyed by the hash of the sources, where they are
built. hpceval never writes into the user's tree, and never downloads anything: a source
that is not given is a one-line error naming what to provide.

A source is named by its kind (`npb-mpi`, `npb-omp`, `npb-mz-mpi`, `npb-mz-omp`, `osu`,
`imb`, `milc`) in the platform file's `[sources]` table or with `hpceval run --source
KIND=PATH`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hpceval.build import BUILD_TIMEOUT_S, cache_root, host_cpu_signature
from hpceval.errors import UserError


@dataclass(frozen=True)
class SourceKind:
    """One official code: its name in words, the folder its archive unpacks to, and the
    entries whose presence says a tree is of this layout."""

    kind: str
    label: str  # "NPB 3.4-MPI"
    folder: str  # "NPB3.4-MPI": what the user is told to give
    markers: tuple[str, ...]  # relative paths every tree of this kind has
    # ...and at least one of these, when the layout moved between versions (OSU 5.x
    # `mpi/`, 7.x `c/mpi/`)
    any_of: tuple[str, ...] = ()

    def missing(self, tree: Path) -> str | None:
        """The first entry of the layout that `tree` lacks (None: it has the layout)."""
        for marker in self.markers:
            if not (tree / marker).exists():
                return marker
        if self.any_of and not any((tree / m).exists() for m in self.any_of):
            return " or ".join(self.any_of)
        return None


SOURCE_KINDS: Final[Mapping[str, SourceKind]] = {
    k.kind: k
    for k in (
        SourceKind("npb-mpi", "NPB 3.4-MPI", "NPB3.4-MPI", ("Makefile", "config", "sys", "CG")),
        SourceKind("npb-omp", "NPB 3.4-OMP", "NPB3.4-OMP", ("Makefile", "config", "sys", "CG")),
        SourceKind(
            "npb-mz-mpi", "NPB 3.4-MZ-MPI", "NPB3.4-MZ-MPI", ("Makefile", "config", "sys", "BT-MZ")
        ),
        SourceKind(
            "npb-mz-omp", "NPB 3.4-MZ-OMP", "NPB3.4-MZ-OMP", ("Makefile", "config", "sys", "BT-MZ")
        ),
        SourceKind(
            "osu",
            "OSU micro-benchmarks",
            "osu-micro-benchmarks-X.Y",
            ("configure", "Makefile.in"),
            any_of=("c/mpi/pt2pt", "mpi/pt2pt"),
        ),
        SourceKind(
            "imb", "Intel MPI Benchmarks", "mpi-benchmarks-IMB-v2021.X", ("Makefile", "src_c")
        ),
        SourceKind(
            "milc",
            "MILC",
            "milc_qcd (version 7)",
            ("Makefile", "ks_imp_dyn/Make_template", "generic_ks", "libraries"),
        ),
    )
}
_KIND_SYNTAX = re.compile(r"^[a-z][a-z0-9-]*$")


def describe_kinds() -> str:
    return ", ".join(SOURCE_KINDS)


def check_kind(kind: str, where: str) -> SourceKind:
    found = SOURCE_KINDS.get(kind)
    if found is None:
        raise UserError(f"{where}: unknown source {kind!r} (known: {describe_kinds()})")
    return found


def parse_source_options(values: Sequence[str]) -> dict[str, str]:
    """`--source KIND=PATH` values as {kind: path}; UserError naming the bad one."""
    out: dict[str, str] = {}
    for value in values:
        kind, sep, path = value.partition("=")
        if not sep or not path or not _KIND_SYNTAX.match(kind):
            raise UserError(f"--source {value!r}: expected KIND=PATH (KIND: {describe_kinds()})")
        check_kind(kind, f"--source {value!r}")
        out[kind] = path
    return out


def missing_source_error(kind: SourceKind) -> UserError:
    return UserError(
        f"{kind.label} sources not given: set [sources] {kind.kind} in the platform file or "
        f"pass --source {kind.kind}=PATH, to a directory or .tar.gz of {kind.folder}"
    )


def resolve_source(kind_name: str, given: Mapping[str, str]) -> Path:
    """The absolute path of the sources of `kind_name` (a directory or a .tar.gz): checked to
    exist and, for a directory, to have the kind's layout (UserError otherwise)."""
    kind = check_kind(kind_name, "sources")
    text = given.get(kind_name)
    if not text:
        raise missing_source_error(kind)
    path = Path(text).expanduser().resolve()
    if path.is_dir():
        check_layout(path, kind)
        return path
    if path.is_file():
        if not path.name.endswith((".tar.gz", ".tgz")):
            raise UserError(f"sources {kind_name}: {path} is neither a directory nor a .tar.gz")
        return path
    raise UserError(f"sources {kind_name}: {path} does not exist")


def check_layout(tree: Path, kind: SourceKind) -> None:
    missing = kind.missing(tree)
    if missing is not None:
        raise UserError(f"sources {kind.kind}: {tree} is not a {kind.folder} tree (no {missing})")


def source_hash(path: Path) -> str:
    """sha256 of the sources: every regular file's relative path and bytes (a directory),
    or the archive's bytes."""
    h = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
        h.update(str(file.relative_to(path)).encode() + b"\0")
        h.update(file.read_bytes() + b"\0")
    return h.hexdigest()


def build_dir_key(source_digest: str, compiler_identity: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256(source_digest.encode() + b"\0" + compiler_identity.encode() + b"\0")
    h.update("\0".join(flags).encode())
    if any(f.endswith("=native") for f in flags):
        h.update(host_cpu_signature().encode())
    return h.hexdigest()[:24]


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Holds an exclusive lock on `directory` (two runs building the same tree wait)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def private_tree(
    kind_name: str, source: Path, compiler_identity: str, flags: Sequence[str]
) -> tuple[Path, str]:
    """A private copy of the sources in the build cache (copied or unpacked once per source
    hash, compiler and flags), and the source hash. The copy is where make runs."""
    kind = check_kind(kind_name, "sources")
    digest = source_hash(source)
    key = build_dir_key(digest, compiler_identity, flags)
    base = cache_root() / "official" / f"{kind_name}-{key}"
    tree = base / "tree"
    with _locked(base):
        if not (tree / ".complete").is_file():
            if tree.exists():
                shutil.rmtree(tree)
            staging = Path(tempfile.mkdtemp(prefix=".staging.", dir=base))
            try:
                root = _unpack(source, staging, kind) if source.is_file() else None
                if root is None:
                    shutil.copytree(source, staging / "tree", symlinks=True)
                    root = staging / "tree"
                check_layout(root, kind)
                root.rename(tree)
                (tree / ".complete").write_text(digest + "\n")
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return tree, digest


def _checked_members(tar: tarfile.TarFile, into: Path) -> list[tarfile.TarInfo]:
    """The archive's members if every one stays inside `into`: regular files and folders,
    links only to places inside; tarfile.TarError naming the first that does not. The same
    rules as tarfile's "data" filter, checked here where Python lacks that filter."""
    root = into.resolve()
    members = []
    for member in tar.getmembers():
        target = (root / member.name).resolve()
        if not target.is_relative_to(root):
            raise tarfile.TarError(f"member {member.name!r} is outside the archive's tree")
        if member.issym() or member.islnk():
            base = target.parent if member.issym() else root
            if Path(member.linkname).is_absolute() or not (
                (base / member.linkname).resolve().is_relative_to(root)
            ):
                raise tarfile.TarError(f"member {member.name!r} links outside the archive's tree")
        elif not (member.isfile() or member.isdir()):
            raise tarfile.TarError(f"member {member.name!r} is not a file or a folder")
        member.mode &= 0o755  # no set-user-id, set-group-id or world-writable bits
        members.append(member)
    return members


def _unpack(archive: Path, into: Path, kind: SourceKind) -> Path:
    """Unpack a .tar.gz safely (no member outside `into`, no links out, no devices) and find
    the kind's tree in it: the archive's root, or the one folder (at any depth up to two)
    that has the kind's layout."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = _checked_members(tar, into)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, members=members, filter="data")
            else:  # Python before 3.11.4 (Debian 12's 3.11.2) has no extraction filters
                tar.extractall(into, members=members)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise UserError(f"sources {kind.kind}: cannot unpack {archive}: {e}") from None
    candidates = [
        into,
        *into.iterdir(),
        *(p for d in into.iterdir() if d.is_dir() for p in d.iterdir()),
    ]
    for candidate in candidates:
        if candidate.is_dir() and kind.missing(candidate) is None:
            if candidate == into:
                moved = into / "tree"
                moved.mkdir()
                for entry in list(into.iterdir()):
                    if entry != moved:
                        entry.rename(moved / entry.name)
                return moved
            return candidate
    raise UserError(f"sources {kind.kind}: {archive} holds no {kind.folder} tree")


def run_make(tree: Path, targets: Sequence[str], *, env: Mapping[str, str], what: str) -> None:
    """`make TARGETS` in the private tree; UserError with the first error line on failure."""
    run_build_step(tree, ["make", "--no-print-directory", *targets], env=env, what=what)


def run_build_step(tree: Path, argv: Sequence[str], *, env: Mapping[str, str], what: str) -> None:
    """One build command (argv, no shell) in the private tree; UserError with the first
    error line of its output on failure."""
    targets = argv[1:]
    try:
        proc = subprocess.run(
            list(argv),
            cwd=tree,
            env={**os.environ, **env, "LC_ALL": "C"},
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UserError(f"building {what} took more than {BUILD_TIMEOUT_S} s") from None
    except OSError as e:
        raise UserError(f"building {what}: cannot start {argv[0]}: {e.strerror}") from None
    if proc.returncode != 0:
        text = proc.stderr + proc.stdout
        first = next(
            (ln.strip() for ln in text.splitlines() if re.search(r"error|Error|\*\*\*", ln)),
            (text.strip().splitlines() or ["no output"])[-1],
        )
        raise UserError(
            f"building {what} failed ({argv[0]} {' '.join(targets)} in {tree}): {first}"
        )
