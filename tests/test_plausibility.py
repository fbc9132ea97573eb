"""Impossible figures in a well-formed output are refused, never stored as verified
(issue 22, item 2)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hpceval.benchmarks.npb.official_output import NpbOutputError, parse_npb_output

from .conftest import DATA
from .test_cli import hpceval, one_line_error

CG_A = DATA / "npb-official" / "npb3.2-mpi-cg.A.2.txt"


def doctored(line: str, replacement: str) -> str:
    text = CG_A.read_text()
    assert line in text
    return text.replace(line, replacement)


IMPOSSIBLE = [
    (" Time in seconds =                     2.47", " Time in seconds =                     -1.0",
     "'Time in seconds' is -1: a run takes a positive time"),
    (" Time in seconds =                     2.47", " Time in seconds =                     0.00",
     "'Time in seconds' is 0"),
    (" Mop/s total     =                   606.32", " Mop/s total     =                   0.0",
     "'Mop/s total' is 0"),
    (" Mop/s/process   =                   303.16", " Mop/s/process   =                   -3.0",
     "'Mop/s/process' is -3"),
    (" Iterations      =                       15", " Iterations      =                       -5",
     "'Iterations' is -5, but CG class A runs 15"),
    (" Iterations      =                       15", " Iterations      =                  9.9e307",
     "'Iterations' is '9.9e307', not a number"),
    (" Mop/s total     =                   606.32", " Mop/s total     =                  6063.20",
     "'Mop/s total' is 6063.2, but CG class A's official operation count over 2.47 s gives"),
    (" Total processes =                        2", " Total processes =                        0",
     "'Total processes' is 0"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "replacement", "message"), IMPOSSIBLE)
def test_impossible_npb_figures_are_refused(line: str, replacement: str, message: str) -> None:
    with pytest.raises(NpbOutputError, match="^cg.A.2.txt: " + message.replace("(", r"\(")):
        parse_npb_output(doctored(line, replacement), "cg.A.2.txt")


def test_an_impossible_import_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "cg.A.2.txt"
    line, replacement, _ = IMPOSSIBLE[0]
    bad.write_text(doctored(line, replacement))
    db = tmp_path / "r.db"
    hpceval("import", "npb", str(CG_A), "-p", "x", "--db", str(db), cwd=tmp_path, check=True)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    message = one_line_error(hpceval("import", "npb", str(CG_A), str(bad), "-p", "x",
                                     "--db", str(db), cwd=tmp_path))  # fmt: skip
    assert "cg.A.2.txt: 'Time in seconds' is -1" in message
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_every_real_output_is_plausible() -> None:
    unusable = ("error", "segv", "-ua.")  # cut short, or a benchmark hpceval does not import
    complete = [
        p for p in (DATA / "npb-official").glob("*.txt") if not any(u in p.name for u in unusable)
    ]
    assert len(complete) >= 10
    for path in complete:
        parse_npb_output(path.read_text(errors="replace"), path.name)
