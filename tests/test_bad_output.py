"""A benchmark's bad output (inf, nan, garbage) is a failed case with its reason, never a
crash of the campaign (issue 22, item 7)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hpceval.errors import BenchmarkFailure
from hpceval.model import Measurement
from hpceval.store import open_store

from .conftest import DATA, fake_tool_on_path, requires_mpi, write
from .test_cli import hpceval
from .test_faults import PINGPONG_SUITE

# A real ping-pong case after the hpcc case whose report is doctored: it must still run.
INF_HPL = (
    PINGPONG_SUITE
    + """
[[benchmark]]
name = "hpcc"
ranks = [1]
n = 1000
nb = 80
"""
)


@requires_mpi
@pytest.mark.mpi
def test_an_infinite_hpl_figure_fails_its_case_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = (DATA / "hpcc" / "hpccoutf-1rank.txt").read_text()
    assert "HPL_Tflops=0.00279021\n" in report
    write(tmp_path / "hpccoutf.txt", report.replace("HPL_Tflops=0.00279021", "HPL_Tflops=1e999"))
    # hpcc runs in its own directory: the fake writes the doctored report there.
    fake_tool_on_path(
        monkeypatch, tmp_path / "bin" / "hpcc", f"#!/bin/sh\ncp {tmp_path / 'hpccoutf.txt'} .\n"
    )
    suite = write(tmp_path / "s.toml", INF_HPL)
    db = tmp_path / "r.db"
    proc = hpceval("run", "-s", str(suite), "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    with open_store(str(db), create=False) as store:
        (run,) = store.runs()
        assert run.status == "completed"
        by_benchmark = {e.benchmark: e for e in store.executions(run.id)}
        assert by_benchmark["hpcc"].status == "failed"
        assert "HPL_Tflops" in by_benchmark["hpcc"].error
        assert "not finite" in by_benchmark["hpcc"].error
        assert by_benchmark["mpibench"].status == "ok"
        assert all(sm.measurement.benchmark == "mpibench" for sm in store.measurements(run.id))


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_a_measurement_refuses_non_finite_values_as_a_benchmark_failure(bad: float) -> None:
    with pytest.raises(BenchmarkFailure, match="not finite"):
        Measurement("b", "m", bad, "s")
    with pytest.raises(BenchmarkFailure, match="not finite"):
        Measurement("b", "m", 1.0, "s", samples=(1.0, bad))


@pytest.mark.parametrize("procs", ["garbage", "1e999", "1.5", "-1", "99999999999999999999"])
def test_an_hpcc_report_with_a_garbage_process_count_is_a_failure(procs: str) -> None:
    from hpceval.benchmarks.base import Case
    from hpceval.benchmarks.hpcc import measurements
    from hpceval.model import Placement

    report = (DATA / "hpcc" / "hpccoutf-1rank.txt").read_text()
    assert "CommWorldProcs=1\n" in report
    case = Case("hpcc", "hpcc", Placement(1, 1), {"n": 1000, "nb": 80}, ("rep=1",), 60)
    with pytest.raises(BenchmarkFailure, match="CommWorldProcs"):
        measurements(report.replace("CommWorldProcs=1\n", f"CommWorldProcs={procs}\n"), case)
