from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

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
