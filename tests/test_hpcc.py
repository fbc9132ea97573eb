"""hpcc: hpccoutf.txt parsing on real captured reports (1, 2, 4 ranks and a failed HPL),
input generation, argv, real runs at 1 and 2 ranks, and a crashing hpcc."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.hpcc import HpccOptions, measurements, problem_size
from hpceval.benchmarks.hpcc.parse import (
    COMPUTE_METRICS,
    FIGURES,
    MESSAGING_METRICS,
    HpccOutputError,
    check_report,
    figures,
    hpccinf_text,
    hpl_residuals,
    stream_working_set,
)
from hpceval.campaign import load_platform, load_suite, plan_cases
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, ConfigError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import ExecutionStatus, Placement
from hpceval.store import open_store

from .conftest import (
    DATA,
    entry_cases,
    fake_tool_on_path,
    requires_mpi,
    requires_tool,
    run_planned,
    run_suite,
    write,
)

HPCC = DATA / "hpcc"
requires_hpcc = requires_tool("hpcc")


def read(name: str) -> str:
    return (HPCC / name).read_text()


# --------------------------------------------------------------------------- parser


def test_one_rank_report() -> None:
    values = check_report(read("hpccoutf-1rank.txt"))
    got = figures(values)
    # b_eff does not run on one rank (HPCC prints -1): only the compute figures.
    assert set(got) == COMPUTE_METRICS and len(got) == 18
    assert got["hpl"] == (pytest.approx(2.79021), "GFLOP/s")  # HPL_Tflops=0.00279021
    assert got["dgemm_star"] == (3.98578, "GFLOP/s")
    assert got["dgemm_single"] == (2.40958, "GFLOP/s")
    assert got["stream_triad_star"] == (pytest.approx(27756.9), "MB/s")  # 27.7569 GB/s
    assert got["ptrans"] == (pytest.approx(5995.53), "MB/s")  # PTRANS_GBs=5.99553
    assert got["randomaccess_mpi"] == (0.0202922, "GUP/s")
    assert got["randomaccess_single"] == (0.426411, "GUP/s")
    assert got["fft_mpi"] == (3.90837, "GFLOP/s")
    assert got["fft_single"] == (5.58781, "GFLOP/s")


@pytest.mark.parametrize("name", ["hpccoutf-2ranks.txt", "hpccoutf-4ranks.txt"])
def test_several_ranks_have_every_figure(name: str) -> None:
    got = figures(check_report(read(name)))
    assert set(got) == COMPUTE_METRICS | MESSAGING_METRICS and len(got) == 28
    lat = [got[f"pingpong_latency_{s}"][0] for s in ("min", "avg", "max")]
    bw = [got[f"pingpong_bandwidth_{s}"][0] for s in ("min", "avg", "max")]
    assert lat == sorted(lat) and bw == sorted(bw)
    assert got["pingpong_latency_avg"][1] == "us" and got["random_ring_bandwidth"][1] == "MB/s"


def test_two_rank_figures_and_units() -> None:
    got = figures(check_report(read("hpccoutf-2ranks.txt")))
    # The same numbers as perf/hpcc_reference.py's parser (tests/data/hpcc/README.md).
    assert got["pingpong_latency_avg"] == (0.416889, "us")
    assert got["pingpong_bandwidth_min"] == (pytest.approx(6352.87), "MB/s")
    assert got["natural_ring_latency"] == (0.325067, "us")
    assert got["random_ring_bandwidth"] == (pytest.approx(8511.42), "MB/s")
    assert got["hpl"] == (pytest.approx(2.37953), "GFLOP/s")
    # The detailed report gives the same ping-pong bandwidth in MB/s (10^6 B/s).
    assert "Min Ping Pong Bandwidth:            6352.866811 MB/s" in read("hpccoutf-2ranks.txt")


def test_four_rank_figures() -> None:
    got = figures(check_report(read("hpccoutf-4ranks.txt")))
    assert got["hpl"] == (pytest.approx(2.9609), "GFLOP/s")
    assert got["pingpong_latency_avg"] == (1.88995, "us")
    assert got["stream_triad_single"] == (pytest.approx(49733.7), "MB/s")


def test_failed_hpl_residual_is_a_failure_with_the_values() -> None:
    text = read("hpccoutf-1rank-hpl-failed.txt")
    (residual,) = hpl_residuals(text)
    assert residual.verdict == "FAILED" and residual.residual == pytest.approx(0.007196)
    with pytest.raises(HpccOutputError) as info:
        check_report(text)
    assert str(info.value) == (
        "HPL residual check FAILED: scaled residual 0.007196 against threshold 0 "
        "(N=1000, NB=80, 1x1 grid)"
    )


def test_other_failed_checks_and_incomplete_reports() -> None:
    text = read("hpccoutf-2ranks.txt")
    ptrans = text.replace("PASSED    ", "FAILED    ", 1)
    with pytest.raises(HpccOutputError, match="hpcc reports a failed check: WALL"):
        check_report(ptrans)
    with pytest.raises(HpccOutputError, match="Success='0'"):
        check_report(text.replace("Success=1", "Success=0"))
    with pytest.raises(HpccOutputError, match="did hpcc finish"):
        check_report(text[: text.index("Begin of HPL section.")])
    unmeasured = text.replace("AvgPingPongLatency_usec=0.416889", "AvgPingPongLatency_usec=-1")
    with pytest.raises(HpccOutputError, match=r"AvgPingPongLatency_usec=-1 \(not measured\)"):
        figures(check_report(unmeasured))


def test_every_figure_has_a_category() -> None:
    assert COMPUTE_METRICS.isdisjoint(MESSAGING_METRICS)
    assert {f.metric for f in FIGURES} == COMPUTE_METRICS | MESSAGING_METRICS
    assert {"hpl", "dgemm_star", "stream_triad_star", "fft_mpi", "randomaccess_mpi"} <= (
        COMPUTE_METRICS
    )
    # benchmark.toml, which compare reads without importing this module, agrees.
    declared = get_benchmark("hpcc").declaration
    for metric in COMPUTE_METRICS:
        expected = "memory" if metric.startswith("stream_") else "compute"
        assert declared.category_of(metric) == expected, metric
    for metric in MESSAGING_METRICS:
        assert declared.category_of(metric) == "communication", metric


# --------------------------------------------------------------------------- input


def test_input_file_layout() -> None:
    lines = hpccinf_text(6, n=1200, nb=80).splitlines()
    assert len(lines) == 36
    first = [line.split()[0] for line in lines]
    # N, NB, grid 2 x 3 (P <= Q, as square as possible), HPL's threshold 16.
    assert first[4:13] == ["1", "1200", "1", "80", "0", "1", "2", "3", "16"]
    assert hpccinf_text(1, 1000, 80, threshold=1e-6).splitlines()[12].split()[0] == "1e-06"
    # The captured failed run was made with that threshold: the input is kept beside it.
    assert read("hpccinf-1rank-threshold0.txt") == hpccinf_text(1, 1000, 80, threshold=1e-6)


def test_problem_size_from_memory() -> None:
    # 8 N^2 = fraction x memory, rounded down to a multiple of NB.
    assert problem_size(0.0005, 1, 23_000_000_000, 80) == 1120
    assert problem_size(0.5, 2, 16_000_000_000, 256) == 44544
    assert problem_size(1e-9, 1, 1_000_000, 80) == 80  # never below one block


def _suite(tmp_path: Path, body: str) -> Path:
    return write(tmp_path / "hpcc.toml", 'name = "h"\n[[benchmark]]\nname = "hpcc"\n' + body)


def test_cases_from_the_platform(tmp_path: Path) -> None:
    platform = PlatformConfig(name="p", cores_per_node=4, memory_gb_per_node=16.0)
    suite = load_suite(str(_suite(tmp_path, "ranks = [1, 4]\nmemory_fraction = 0.01\nnb = 100\n")))
    one, four = plan_cases(suite, platform)
    assert one.parameters == {"n": 4400, "nb": 100, "p": 1, "q": 1}
    assert four.parameters == {"n": 4400, "nb": 100, "p": 2, "q": 2}
    assert four.placement == Placement(1, 4, 1, "core")
    assert four.key == "hpcc:N=4400:NB=100:np=4:1x4x1:bind=core"
    explicit = load_suite(str(_suite(tmp_path, "ranks = [2]\nn = 500\n")))
    (case,) = plan_cases(explicit, platform)
    assert case.parameters["n"] == 500 and (case.parameters["p"], case.parameters["q"]) == (1, 2)


def test_bad_sizes_are_refused(tmp_path: Path) -> None:
    cluster = PlatformConfig.model_validate(
        {"name": "c", "nodes": 2, "hosts": ["a", "b"], "cores_per_node": 4,
         "launcher": {"kind": "hostfile"}}
    )  # fmt: skip
    suite = load_suite(str(_suite(tmp_path, "ranks = [2]\n")))
    with pytest.raises(ConfigError, match="benchmark\\[0\\]: platform 'c' does not say its memory"):
        plan_cases(suite, cluster)
    small = PlatformConfig(name="s", cores_per_node=2, memory_gb_per_node=1.0)
    huge = load_suite(str(_suite(tmp_path, "n = 20000\n")))
    with pytest.raises(ConfigError, match=r"N=20000 needs 3.2 GB per node .* has 1.0 GB"):
        plan_cases(huge, small)
    with pytest.raises(ConfigError, match="n: 150 is smaller than the block size"):
        load_suite(str(_suite(tmp_path, "n = 150\nnb = 200\n")))
    with pytest.raises(ValueError):
        HpccOptions(n=50)


def test_each_rank_starts_in_the_run_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: False)
    bench = get_benchmark("hpcc")
    (case,) = entry_cases(
        bench, {"ranks": [2], "n": 400}, PlatformConfig(name="l", cores_per_node=2)
    )
    with bench.staged(case, case.points) as staged:
        rundir = Path(str(staged.options["rundir"]))
        assert (rundir / "hpccinf.txt").read_text() == hpccinf_text(2, 400, 80)
        program = bench.command(staged, bench.build(compiler="", compiler_identity="",
                                                    cflags=[]), case.points)  # fmt: skip
        local = get_launcher_class("local")(
            PlatformConfig(name="l", cores_per_node=2), MpiRuntime("Open MPI", "/usr/bin/mpirun")
        )
        cmd = local.command(staged.placement, program)
    assert not rundir.exists()  # removed after the execution
    hpcc = shutil.which("hpcc") or ""
    assert program == ["env", f"--chdir={rundir}", hpcc]
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "2", "--map-by", "core", "--bind-to", "core",
        "-x", "OMP_NUM_THREADS", "--", "env", f"--chdir={rundir}", hpcc,
    ]  # fmt: skip


def test_measurements_check_ranks_and_size() -> None:
    bench = get_benchmark("hpcc")
    platform = PlatformConfig(name="l", cores_per_node=2)
    (case,) = entry_cases(bench, {"ranks": [2], "n": 1000}, platform)
    ms = measurements(read("hpccoutf-2ranks.txt"), case)
    assert len(ms) == 28 and all(m.benchmark == "hpcc" for m in ms)
    hpl = next(m for m in ms if m.metric == "hpl")
    assert hpl.parameters["n"] == 1000 and hpl.parameters["ranks"] == 2
    assert hpl.details["hpcc_version"] == "1.5.0f" and hpl.details["HPL_time"]
    (other,) = entry_cases(bench, {"ranks": [4], "n": 1000}, platform)
    with pytest.raises(BenchmarkFailure, match="hpcc ran on 2 ranks, expected 4"):
        measurements(read("hpccoutf-2ranks.txt"), other)
    (bigger,) = entry_cases(bench, {"ranks": [2], "n": 1200}, platform)
    with pytest.raises(BenchmarkFailure, match="hpcc solved N=1000, the input asked N=1200"):
        measurements(read("hpccoutf-2ranks.txt"), bigger)


# --------------------------------------------------------------------------- real runs

TINY = """
name = "hpcc-tiny"
[[benchmark]]
name = "hpcc"
ranks = [1, 2]
n = 400
nb = 40
"""


@requires_hpcc
@requires_mpi
@pytest.mark.mpi
def test_tiny_runs_at_one_and_two_ranks(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "r.db"))
    _, ms = run_suite(tmp_path, store, TINY)
    one = {m.metric: m for m in ms if m.parameters["ranks"] == 1}
    two = {m.metric: m for m in ms if m.parameters["ranks"] == 2}
    assert set(one) == COMPUTE_METRICS
    assert set(two) == COMPUTE_METRICS | MESSAGING_METRICS
    assert one["hpl"].unit == "GFLOP/s" and one["hpl"].value > 0
    assert two["pingpong_latency_avg"].unit == "us" and two["pingpong_latency_avg"].value > 0
    assert two["hpl"].details["HPL_N"] == "400" and two["hpl"].parameters["q"] == 2
    runs = Path(os.environ["HPCEVAL_CACHE"]) / "hpcc-runs"
    assert list(runs.iterdir()) == []  # every run directory removed


@requires_mpi
@pytest.mark.mpi
def test_crashing_hpcc_is_a_failed_run_with_its_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = fake_tool_on_path(
        monkeypatch,
        tmp_path / "bin" / "hpcc",
        "#!/bin/sh\necho 'hpcc: simulated crash in HPL_pdgesv' >&2\nexit 1\n",
    )
    suite = load_suite(str(write(tmp_path / "s.toml", TINY.replace("[1, 2]", "[1]"))))
    cases = plan_cases(suite, load_platform("local").config)
    store = open_store(str(tmp_path / "r.db"))
    run_id, result = run_planned(store, cases)
    (outcome,) = result.failed
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error.startswith("exited with status 1")
    (execution,) = store.executions(run_id)
    assert str(fake) in execution.argv
    assert "hpcc: simulated crash in HPL_pdgesv" in execution.stderr_tail
    assert store.measurements(run_id) == []


# --------------------------------------------------------------------------- in cache


@pytest.mark.parametrize(
    ("llc", "stream_in"),
    [(32 << 20, "cache"), (1 << 20, "memory"), (None, None)],
)
def test_stream_arrays_in_the_last_level_cache_are_flagged(
    llc: int | None, stream_in: str | None
) -> None:
    """2 ranks x STREAM_VectorSize 166,666 x 8 B x 3 arrays = 8.0 MB on the node: in a
    32 MiB L3 the "memory bandwidth" is the cache's; an unknown cache flags nothing."""
    values = check_report(read("hpccoutf-2ranks.txt"))
    assert stream_working_set(values, 2) == 2 * 166666 * 8 * 3
    bench = get_benchmark("hpcc")
    (case,) = entry_cases(
        bench, {"ranks": [2], "n": 1000}, PlatformConfig(name="l", cores_per_node=2)
    )
    case = replace(case, options={**case.options, "llc_bytes": llc})
    ms = measurements(read("hpccoutf-2ranks.txt"), case)
    triad = next(m for m in ms if m.metric == "stream_triad_star")
    hpl = next(m for m in ms if m.metric == "hpl")
    assert triad.parameters.get("stream_in") == stream_in
    assert "stream_in" not in hpl.parameters
    assert triad.details["stream_working_set_bytes"] == 2 * 166666 * 24
    headline = bench.headline(ms)
    table = Console(width=250, record=True)
    for t in bench.tables(ms):
        table.print(t)
    shown = table.export_text()
    if stream_in == "cache":
        assert "WARNING in cache: L3 bandwidth, not memory" in headline
        assert "(in cache: L3 bandwidth, not memory)" in shown
    else:
        assert "in cache" not in headline and "in cache" not in shown


def test_shipped_suites_flag_or_size_hpcc_stream_out_of_cache() -> None:
    """No shipped suite's HPCC STREAM figure passes for memory bandwidth unflagged: on this
    machine every shipped HPCC case is either out of cache or flagged (its case carries the
    provenance's cache, which `measurements` compares with the report's vector size)."""
    for name in ("quick", "standard", "full", "hpcc"):
        for case in plan_cases(load_suite(name), load_platform("local").config):
            if case.benchmark == "hpcc":
                assert "llc_bytes" in case.options


def test_report_says_in_cache() -> None:
    """The report's table of hpcc points carries `stream_in` and the section says what an
    in-cache figure is."""
    from hpceval.analysis.frame import build_frame
    from hpceval.report.sections import Context
    from hpceval.report.sections.other import other_section
    from hpceval.report.styles import Palette

    bench = get_benchmark("hpcc")
    (case,) = entry_cases(
        bench, {"ranks": [2], "n": 1000}, PlatformConfig(name="l", cores_per_node=2)
    )
    case = replace(case, options={**case.options, "llc_bytes": 32 << 20})
    ms = measurements(read("hpccoutf-2ranks.txt"), case)
    frame = build_frame([("vm", 1, m) for m in ms])
    section = other_section(Context(frame=frame, palette=Palette({}), baseline=None))
    assert any("in cache: L3 bandwidth, not memory" in note for note in section.notes)
    table = next(t for t in section.tables if t.name == "benchmark_hpcc")
    csv = table.csv().decode()
    assert "stream_in" in csv.splitlines()[0] and ",cache," in csv
