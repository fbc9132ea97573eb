"""The OSU micro-benchmarks and IMB-MPI1 through hpceval: their parsers on outputs of the
real programs (tests/data/osu, tests/data/imb), and build + run + parse through the CLI on
the mimic source trees of tests/data/official (OSU 7.x layout, IMB 2021 layout)."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from hpceval.benchmarks.imb.parse import parse_imb_output
from hpceval.benchmarks.osu.parse import parse_osu_output
from hpceval.errors import BenchmarkFailure
from hpceval.model import Measurement
from hpceval.store import open_store

from .conftest import DATA, requires_mpi, requires_tool, write
from .test_cli import hpceval

OSU_MIMIC = DATA / "official" / "osu" / "osu-micro-benchmarks-7.2"
IMB_MIMIC = DATA / "official" / "imb" / "mpi-benchmarks-IMB-v2021.7"


def test_osu_outputs_of_the_real_programs() -> None:
    latency = parse_osu_output((DATA / "osu" / "osu_latency.txt").read_text())
    assert (latency.test, latency.version, latency.column) == ("Latency", "5.7", "Latency (us)")
    assert latency.rows[0] == (0, 21.17) and latency.rows[-1][0] == 1024
    assert not latency.is_bandwidth
    bw = parse_osu_output((DATA / "osu" / "osu_bw.txt").read_text())
    assert bw.is_bandwidth and bw.rows[0] == (1, 11.50) and bw.rows[-1][0] == 65536
    allreduce = parse_osu_output((DATA / "osu" / "osu_allreduce.txt").read_text())
    assert allreduce.test == "Allreduce Latency" and allreduce.rows[0] == (4, 4.53)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\n", "not an OSU micro-benchmark output"),
        ("# OSU MPI Latency Test v7.2\n# Size  Latency (us)\n", "no table of sizes"),
        ("# OSU MPI Latency Test v7.2\n# Size  Latency (us)\n8  1.0\n4  1.0\n", "not increasing"),
        ("# OSU MPI Latency Test v7.2\n# Size  Latency (us)\n0  -1.0\n", "is not a figure"),
        ("# OSU MPI Latency Test v7.2\n# Size  Latency (us)\n0  nan\n", "is not a figure"),
    ],
)
def test_osu_outputs_that_fail_the_sanity_check(text: str, message: str) -> None:
    with pytest.raises(BenchmarkFailure, match=message):
        parse_osu_output(text)


def test_imb_output_of_the_real_program() -> None:
    output = parse_imb_output((DATA / "imb" / "imb-pingpong-allreduce-np2.txt").read_text())
    assert output.version == "2021.11"
    ping, allreduce = output.blocks
    assert (ping.benchmark, ping.processes) == ("PingPong", 2)
    assert ping.columns == ("#bytes", "#repetitions", "t[usec]", "Mbytes/sec")
    assert ping.rows[-1] == (1024.0, 100.0, 0.70, 1472.11)
    assert allreduce.columns[-1] == "t_avg[usec]" and allreduce.rows[1] == (
        4,
        100,
        0.16,
        0.66,
        0.41,
    )


def test_imb_outputs_that_fail_the_sanity_check() -> None:
    text = (DATA / "imb" / "imb-pingpong-allreduce-np2.txt").read_text()
    with pytest.raises(BenchmarkFailure, match="not an IMB output"):
        parse_imb_output("hello")
    cut = text[: text.index("# Benchmarking Allreduce")] + "# Benchmarking Allreduce\n"
    with pytest.raises(BenchmarkFailure, match="IMB Allreduce: no table"):
        parse_imb_output(cut)
    with pytest.raises(BenchmarkFailure, match="is not a time"):
        parse_imb_output(re.sub(r"(\s)0\.70(\s+1472\.11)", r"\1-0.70\2", text))


def _rows(db: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute(query))


@requires_mpi
def test_osu_builds_runs_and_stores_its_tables(tmp_path: Path) -> None:
    tree = tmp_path / "osu-micro-benchmarks-7.2"
    shutil.copytree(OSU_MIMIC, tree)
    write(tmp_path / "suite.toml", """
name = "osu"
[[benchmark]]
name = "osu"
tests = ["latency", "bw", "allreduce"]
ranks = [2]
max_size = 1024
""")  # fmt: skip
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"osu={tree}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert not (tree / "Makefile").exists()  # configured and built in the cache, not here
    rows = _rows(
        tmp_path / "h.db", "SELECT DISTINCT metric, unit, implementation FROM measurements"
    )
    assert set(rows) == {
        ("latency", "us", "official/OSU 7.2"),
        ("bandwidth", "MB/s", "official/OSU 7.2"),
    }
    sizes = _rows(tmp_path / "h.db", "SELECT COUNT(*) FROM measurements WHERE metric = 'bandwidth'")
    assert sizes == [(11,)]  # 1 B .. 1 KiB


def test_osu_without_sources(tmp_path: Path) -> None:
    write(tmp_path / "suite.toml", 'name = "o"\n[[benchmark]]\nname = "osu"\ntests = ["bw"]\n')
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert "OSU micro-benchmarks sources not given" in proc.stderr


IMB_SUITE = """
name = "imb"
[[benchmark]]
name = "imb"
benchmarks = ["PingPong", "Allreduce"]
ranks = [2]
max_size = 256
"""


def _run_imb(tmp_path: Path, edit: tuple[str, str] | None = None) -> tuple[Path, str, int]:
    """IMB's mimic tree (with `edit` applied to its program) run through the CLI: the
    tree, hpceval's stdout and its exit status."""
    tree = tmp_path / "mpi-benchmarks"
    shutil.copytree(IMB_MIMIC, tree)
    if edit is not None:
        source = tree / "src_c" / "imb_mimic.c"
        source.write_text(source.read_text().replace(*edit))
    write(tmp_path / "suite.toml", IMB_SUITE)
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"imb={tree}",
                   cwd=tmp_path)  # fmt: skip
    return tree, proc.stdout + proc.stderr, proc.returncode


@requires_mpi
@requires_tool("make")
def test_imb_builds_runs_and_stores_its_blocks(tmp_path: Path) -> None:
    tree, output, status = _run_imb(tmp_path)
    assert status == 0, output
    assert not (tree / "IMB-MPI1").exists()
    rows = _rows(tmp_path / "h.db", "SELECT DISTINCT metric, implementation FROM measurements")
    assert {m for m, _ in rows} >= {"latency", "bandwidth", "time"}
    assert {i for _, i in rows} == {"official/IMB 2021.7"}


@requires_mpi
@requires_tool("make")
def test_imb_fails_when_a_benchmark_block_is_missing(tmp_path: Path) -> None:
    """A mimic that leaves Allreduce out: the execution fails with the reason."""
    _, output, status = _run_imb(tmp_path, ("b < nnames; ++b", "b < 1; ++b"))
    assert status == 1
    assert "IMB ran without the Allreduce block" in output


def _ratios(db: Path) -> list[Measurement]:
    with open_store(str(db), create=False) as store:
        return [
            s.measurement
            for s in store.measurements(1)
            if s.measurement.metric == "ratio_to_official"
        ]


@requires_mpi
def test_validate_holds_mpibench_against_osu_latency(tmp_path: Path) -> None:
    tree = tmp_path / "osu-micro-benchmarks-7.2"
    shutil.copytree(OSU_MIMIC, tree)
    proc = hpceval("validate", "--code", "osu", "--db", "v.db", "--sizes", "0,3,8,1KiB",
                   "--rounds", "2", "--source", f"osu={tree}", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "latency (median) on intra-node = " in proc.stdout
    # OSU prints powers of two only (7.x from 1 B): a size it lacks is named, not compared.
    assert "not compared: latency at 3 B: official/OSU 7.2 printed no such row" in proc.stderr
    ratios = _ratios(tmp_path / "v.db")
    assert sorted(int(m.parameters["size"]) for m in ratios) == [0, 8, 1024]
    for m in ratios:
        assert m.parameters["compared"] == "latency"
        assert m.parameters["reference"] == m.details["reference"] == "official/OSU 7.2"
        assert len(m.samples) == 2 and m.details["own_statistic"] == "median"
        # Each pair's ratio is mpibench's median over OSU's printed mean of the same round.
        own, official = m.details["own"], m.details["official"]
        assert m.samples == pytest.approx([a / b for a, b in zip(own, official, strict=True)])
    with open_store(str(tmp_path / "v.db"), create=False) as store:
        executions = sorted(store.executions(1), key=lambda e: e.started)
    assert [e.benchmark for e in executions] == ["mpibench", "osu"] * 2  # interleaved
    shown = hpceval("show", "--run", "1", "--db", "v.db", cwd=tmp_path, check=True).stdout
    assert "latency vs official" in shown and "x OSU 7.2 [" in shown
    hpceval("report", "--out", "rep", "--db", "v.db", cwd=tmp_path, check=True)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "mpibench ping-pong latency at 8 B (intra-node) = " in page
    assert "x official/OSU 7.2 on local" in page
    assert (tmp_path / "rep" / "tables" / "mpibench_validation.csv").is_file()


@requires_mpi
@requires_tool("make")
def test_validate_holds_mpibench_against_imb_pingpong_bandwidth_too(tmp_path: Path) -> None:
    tree = tmp_path / "mpi-benchmarks"
    shutil.copytree(IMB_MIMIC, tree)
    proc = hpceval("validate", "--code", "imb", "--metrics", "latency,bandwidth", "--db",
                   "v.db", "--sizes", "0,64", "--rounds", "2", "--source", f"imb={tree}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    found = {(m.parameters["compared"], m.parameters["size"]) for m in _ratios(tmp_path / "v.db")}
    # No bandwidth at 0 B on either side.
    assert found == {("latency", 0), ("latency", 64), ("bandwidth", 64)}
    assert {m.details["reference"] for m in _ratios(tmp_path / "v.db")} == {"official/IMB 2021.7"}


def test_validate_refuses_osu_bandwidth_naming_why(tmp_path: Path) -> None:
    tree = tmp_path / "osu-micro-benchmarks-7.2"
    shutil.copytree(OSU_MIMIC, tree)
    proc = hpceval("validate", "--code", "osu", "--metrics", "bandwidth", "--db", "v.db",
                   "--source", f"osu={tree}", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "osu_bw streams a window of messages" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "v.db").exists()
