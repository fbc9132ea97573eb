"""Official NPB outputs edited (run dates, CRLF, missing fields) and refused (truncated,
binary, not NPB, two runs, overflowing Fortran fields).
"""

from __future__ import annotations

import pytest

from hpceval.errors import UserError
from hpceval.importers import NpbOutputError, parse_npb_output
from tests.test_import_npb import DATA, HPCC_OUTPUT, TRUNCATED_FILES, edited, parse


def test_run_date_and_unknown_labels_kept() -> None:
    text = edited(
        "npb3.3.1-omp-ep.S.t1.txt",
        " Compile date    =              27 Jun 2017\n",
        " Compile date    =              27 Jun 2017\n"
        " Run date        =              28 Jun 2017\n"
        " Compiler ver    =                    6.3.0\n",
    )
    report = parse_npb_output(text, "ep.S.x")
    assert report.run_date == "28 Jun 2017"
    assert report.other_fields == {"Compiler ver": "6.3.0"}


def test_crlf_line_ends() -> None:
    text = (DATA / "npb3.2-mpi-cg.A.2.txt").read_text().replace("\n", "\r\n")
    report = parse_npb_output(text, "cg.A.2")
    assert report.mops_per_process == 303.16
    assert report.verified


def test_version_from_header_when_not_in_summary() -> None:
    text = edited("npb2.3-mpi-ep.S.1.txt", " Version         =                      2.3\n", "")
    assert parse_npb_output(text, "ep.S.1").version == "2.3"


def test_verification_not_performed() -> None:
    text = edited(
        "npb3.3.1-omp-is.S.t1.txt",
        " Verification    =               SUCCESSFUL\n",
        " Verification    =            NOT PERFORMED\n",
    )
    report = parse_npb_output(text, "is.U.x")
    assert report.verification == "NOT PERFORMED"
    assert not report.verified


# Errors


def assert_one_line_error(error: pytest.ExceptionInfo[NpbOutputError], source: str) -> str:
    message = str(error.value)
    assert message.startswith(f"{source}: ")
    assert "\n" not in message
    assert isinstance(error.value, UserError)
    assert isinstance(error.value, ValueError)
    return message


@pytest.mark.parametrize("name", TRUNCATED_FILES)
def test_truncated_output_is_refused(name: str) -> None:
    with pytest.raises(NpbOutputError) as error:
        parse(name)
    message = assert_one_line_error(error, name)
    assert "truncated" in message
    assert "'FT Benchmark Completed'" in message


def test_not_npb_output_is_refused() -> None:
    with pytest.raises(NpbOutputError) as error:
        parse_npb_output(HPCC_OUTPUT.read_text(), "hpccoutf.txt")
    assert "not an NPB output" in assert_one_line_error(error, "hpccoutf.txt")


def test_empty_file_is_refused() -> None:
    with pytest.raises(NpbOutputError, match=r"empty\.txt: not an NPB output"):
        parse_npb_output("", "empty.txt")


def test_binary_is_refused() -> None:
    with pytest.raises(NpbOutputError, match=r"cg\.C\.x: is a binary file"):
        parse_npb_output("\x7fELF\x02\x01\x01\0\0\0", "cg.C.x")


def test_unsupported_benchmark_is_refused() -> None:
    with pytest.raises(NpbOutputError) as error:
        parse("npb3.3.1-omp-ua.S.t1.txt")
    message = assert_one_line_error(error, "npb3.3.1-omp-ua.S.t1.txt")
    assert "UA is not a benchmark hpceval imports" in message


def test_two_runs_in_one_file_are_refused() -> None:
    text = (DATA / "npb3.2-mpi-cg.A.1.txt").read_text() + (
        DATA / "npb3.2-mpi-cg.A.2.txt"
    ).read_text()
    with pytest.raises(NpbOutputError, match="holds 2 NPB summaries"):
        parse_npb_output(text, "both.txt")


def test_missing_summary_field_is_refused() -> None:
    text = edited("npb3.3.1-omp-mg.S.t1.txt", " Mop/s total     =                    49.18\n", "")
    with pytest.raises(NpbOutputError) as error:
        parse_npb_output(text, "mg.S.x")
    assert "the MG summary lacks 'Mop/s total'" in assert_one_line_error(error, "mg.S.x")


def test_fortran_field_overflow_is_refused() -> None:
    text = edited(
        "npb3.3.1-omp-mg.S.t1.txt",
        " Mop/s total     =                    49.18\n",
        " Mop/s total     =             ************\n",
    )
    with pytest.raises(NpbOutputError, match=r"'Mop/s total' is '\*+' \(a Fortran field"):
        parse_npb_output(text, "mg.S.x")
