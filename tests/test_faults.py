"""Databases and files that cannot be written or read as expected: one line, exit 2, nothing
changed (issue 22, items 5 and 8)."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import have_mpi, write
from .test_cli import hpceval, one_line_error


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


PINGPONG_SUITE = """name = "pingpong"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, 1024, 65536]
ranks = [2]
budget_s = 0.05
warmup_s = 0.01
min_samples = 3
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with one real run of mpibench ping-pong (a few seconds)."""
    if not have_mpi():
        pytest.skip("mpicc/mpirun not installed (./setup.sh installs Open MPI)")
    base = tmp_path_factory.mktemp("measured")
    suite = write(base / "pingpong.toml", PINGPONG_SUITE)
    hpceval("run", "-s", str(suite), "--db", str(base / "r.db"), cwd=base, check=True)
    return base / "r.db"


@pytest.fixture
def small_database(measured: Path) -> Callable[[Path], Path]:
    def copy(path: Path) -> Path:
        shutil.copyfile(measured, path)
        return path

    return copy


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """`chattr +i`: not even root may write it (the file still opens)."""
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not possible here: {done.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (root only), unmounted at the end."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Error:" not in proc.stderr.replace("error:", "")


# --------------------------------------------------------------------------- item 5


def test_an_immutable_database_is_one_line_and_exit_2(
    tmp_path: Path, small_database: Callable[[Path], Path]
) -> None:
    db = small_database(tmp_path / "r.db")
    before = digest(db)
    with immutable(db):
        proc = hpceval("run", "-s", "smoke", "--db", str(db), cwd=tmp_path)
        no_traceback(proc)
        line = one_line_error(proc)
        assert "read-only: the file is immutable (chattr +i)" in line
        # Reading it still works.
        listed = hpceval("runs", "--db", str(db), cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert "pingpong" in listed.stdout
    assert digest(db) == before


# --------------------------------------------------------------------------- item 8


def test_a_database_on_a_read_only_file_system_can_be_read(
    tmp_path: Path, small_database: Callable[[Path], Path]
) -> None:
    with tmpfs(tmp_path / "mnt") as mnt:
        db = small_database(mnt / "r.db")
        before = digest(db)
        remount_read_only(mnt)
        for command in (["runs"], ["show"], ["show", "--run", "1"], ["fit"]):
            proc = hpceval(*command, "--db", str(db), cwd=tmp_path)
            assert proc.returncode == 0, (command, proc.stderr)
            assert "local" in proc.stdout, (command, proc.stdout)
        line = one_line_error(hpceval("run", "-s", "smoke", "--db", str(db), cwd=tmp_path))
        assert "read-only: it is on a read-only file system" in line
        assert digest(db) == before
        assert sorted(p.name for p in mnt.iterdir()) == ["r.db"]


def test_a_run_id_beyond_any_integer_column(
    tmp_path: Path, small_database: Callable[[Path], Path]
) -> None:
    db = small_database(tmp_path / "r.db")
    line = one_line_error(hpceval("show", "--run", "99999999999999999999", "--db", str(db),
                                  cwd=tmp_path))  # fmt: skip
    assert line == "hpceval: error: --run: 99999999999999999999 is out of range"


@pytest.mark.parametrize("kind", ["--suite", "--platform"])
def test_a_binary_config_file_is_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(b'name = "\xff\xfe\x00"\n')
    line = one_line_error(hpceval("run", kind, str(path), cwd=tmp_path))
    assert "bin.toml: not a UTF-8 text file (byte 0xff at offset 8)" in line
    assert not (tmp_path / "hpceval.db").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_budget_that_is_not_a_number(tmp_path: Path, value: str) -> None:
    suite = write(
        tmp_path / "s.toml",
        f'name = "s"\n[[benchmark]]\nname = "mpibench"\npatterns = ["pingpong"]\n'
        f"budget_s = {value}\n",
    )
    line = one_line_error(hpceval("run", "-s", str(suite), cwd=tmp_path))
    assert f"s.toml: benchmark[0].budget_s: {value} is not a number" in line


def test_a_full_disk_leaves_no_partial_report(
    tmp_path: Path, small_database: Callable[[Path], Path]
) -> None:
    db = small_database(tmp_path / "r.db")
    # The figures and tables alone, then a file system with room for them and little more:
    # the page (figures inlined) is what does not fit.
    first = tmp_path / "first"
    assert hpceval("report", "--db", str(db), "--out", str(first), cwd=tmp_path).returncode == 0
    # tmpfs counts whole 4 KiB pages per file.
    pages = sum(-(-p.stat().st_size // 4096) for d in ("figures", "tables")
                for p in (first / d).iterdir())  # fmt: skip
    page = (first / "index.html").stat().st_size
    assert page > 24 * 1024
    room = 4096 * pages + 12 * 1024
    with tmpfs(tmp_path / "mnt", size=f"{room // 1024}k") as mnt:
        out = mnt / "report"
        line = one_line_error(hpceval("report", "--db", str(db), "--out", str(out), cwd=tmp_path))
        assert "cannot write the report (No space left on device)" in line
        assert not (out / ".index.html.partial").exists()
        assert not (out / "index.html").exists()
    shutil.rmtree(first)
