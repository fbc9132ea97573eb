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


IS_S = DATA / "npb-official" / "npb3.3.1-omp-is.S.t1.txt"


def _is_s(time: str, mops: str) -> str:
    text = IS_S.read_text()
    for printed, new in ((" Time in seconds =                     0.07", time),
                         (" Mop/s total     =                    10.04", mops)):  # fmt: skip
        assert printed in text
        text = text.replace(printed, printed.rsplit("=", 1)[0] + "= " + new)
    return text


def test_a_time_below_the_print_resolution_is_taken_from_the_mops() -> None:
    """Time = 0.00 (under 0.005 s) with a positive Mop/s: a real, fast run. Its time is IS
    class S's official operation count (10 x 2^16 keys) over the printed Mop/s."""
    report = parse_npb_output(_is_s("0.00", "200.00"), "is.S.txt")
    assert report.time_from_mops
    assert report.time_s == pytest.approx(10 * 2**16 / 200e6)
    assert report.time_s < 0.005
    printed = parse_npb_output(IS_S.read_text(), "is.S.txt")
    assert not printed.time_from_mops and printed.time_s == 0.07


def test_a_zero_time_that_the_mops_contradicts_is_refused() -> None:
    # 10 x 2^16 keys at 10.04 Mop/s take 0.065 s: it would have printed 0.07, not 0.00.
    with pytest.raises(NpbOutputError, match="'Time in seconds' is 0"):
        parse_npb_output(_is_s("0.00", "10.04"), "is.S.txt")
    with pytest.raises(NpbOutputError, match="'Time in seconds' is 0"):
        parse_npb_output(_is_s("0.00", "0.00"), "is.S.txt")
