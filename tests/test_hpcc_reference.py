"""Tests of perf/hpcc_reference.py: the hpccoutf.txt parser, the input file, a real run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hpcc" / "hpccoutf-2ranks.txt"


def _load() -> ModuleType:
    # perf/ is not a package; load the file by path so that the test runs however pytest
    # was started.
    spec = importlib.util.spec_from_file_location(
        "hpcc_reference", ROOT / "perf" / "hpcc_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ref = _load()


@pytest.fixture(scope="module")
def text() -> str:
    return DATA.read_text()


def test_parses_captured_output(text: str) -> None:
    figures = ref.parse_hpcc_summary(text)
    assert figures == {
        "MaxPingPongLatency_usec": 0.418833,
        "MinPingPongLatency_usec": 0.414944,
        "AvgPingPongLatency_usec": 0.416889,
        "NaturallyOrderedRingLatency_usec": 0.325067,
        "RandomlyOrderedRingLatency_usec": 0.2858,
        "MaxPingPongBandwidth_MBps": 9137.76,
        "MinPingPongBandwidth_MBps": 6352.87,
        "AvgPingPongBandwidth_MBps": 7745.31,
        "NaturallyOrderedRingBandwidth_MBps": 7881.66,
        "RandomlyOrderedRingBandwidth_MBps": 8511.42,
    }


def test_summary_agrees_with_detailed_report(text: str) -> None:
    # The same run's human-readable report gives ping-pong latency in ms and bandwidth in
    # MB/s (10^6 bytes/s): "Max Ping Pong Latency: 0.000419 msecs",
    # "Min Ping Pong Bandwidth: 6352.866811 MB/s".
    figures = ref.parse_hpcc_summary(text)
    assert "Max Ping Pong Latency:                 0.000419 msecs" in text
    assert "Min Ping Pong Bandwidth:            6352.866811 MB/s" in text
    assert figures["MaxPingPongLatency_usec"] / 1000 == pytest.approx(0.000419, abs=5e-7)
    assert figures["MinPingPongBandwidth_MBps"] == pytest.approx(6352.866811, rel=1e-5)
    assert ref.LATENCY_MESSAGE_BYTES == 8
    assert ref.BANDWIDTH_MESSAGE_BYTES == 2_000_000


def test_summary_section_keeps_all_pairs(text: str) -> None:
    values = ref.parse_summary_section(text)
    assert values["CommWorldProcs"] == "2"
    assert values["Success"] == "1"
    assert values["HPL_N"] == "1000"
    assert values["MinPingPongBandwidth_GBytes"] == "6.35287"


def test_last_of_appended_runs_wins(text: str) -> None:
    second = text.replace("MaxPingPongLatency_usec=0.418833", "MaxPingPongLatency_usec=1.5")
    figures = ref.parse_hpcc_summary(text + second)
    assert figures["MaxPingPongLatency_usec"] == 1.5


def test_missing_summary_is_an_error(text: str) -> None:
    head = text[: text.index("Begin of Summary section.")]
    with pytest.raises(ref.HpccError, match="Summary"):
        ref.parse_hpcc_summary(head)
    cut = text[: text.index("End of Summary section.")]
    with pytest.raises(ref.HpccError, match="not terminated"):
        ref.parse_hpcc_summary(cut)


def test_missing_or_unmeasured_figure_is_an_error(text: str) -> None:
    without = text.replace("AvgPingPongLatency_usec=0.416889\n", "")
    with pytest.raises(ref.HpccError, match="no AvgPingPongLatency_usec"):
        ref.parse_hpcc_summary(without)
    # HPCC prints -1 for figures of a test that did not run (one process).
    unmeasured = text.replace(
        "MinPingPongBandwidth_GBytes=6.35287", "MinPingPongBandwidth_GBytes=-1"
    )
    with pytest.raises(ref.HpccError, match="not measured"):
        ref.parse_hpcc_summary(unmeasured)
    garbage = text.replace("MinPingPongLatency_usec=0.414944", "MinPingPongLatency_usec=fast")
    with pytest.raises(ref.HpccError, match="not a number"):
        ref.parse_hpcc_summary(garbage)


@pytest.mark.parametrize(
    ("nranks", "grid"),
    [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (2, 2)), (6, (2, 3)), (8, (2, 4)), (16, (4, 4))],
)
def test_process_grid(nranks: int, grid: tuple[int, int]) -> None:
    assert ref.process_grid(nranks) == grid


def test_hpccinf_text_layout() -> None:
    lines = ref.hpccinf_text(2, n=1000, nb=80).splitlines()
    # 32 HPL lines (line 32 a separator) plus 4 PTRANS lines, values first on each line.
    assert len(lines) == 36
    first = [line.split()[0] for line in lines]
    assert first[4:12] == ["1", "1000", "1", "80", "0", "1", "1", "2"]
    assert first[32:36] == ["0", "0", "0", "0"]
    assert ref.hpccinf_text(4, n=500, nb=50).splitlines()[10].split()[0] == "2"


def test_median_figures() -> None:
    runs = [{"a": 1.0, "b": 10.0}, {"a": 3.0, "b": 30.0}, {"a": 2.0, "b": 20.0}]
    assert ref.median_figures(runs) == {"a": 2.0, "b": 20.0}


def test_cli_parse(capsys: pytest.CaptureFixture[str]) -> None:
    assert ref.main(["--parse", str(DATA), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"MinPingPongBandwidth_MBps": 6352.87' in out
    assert '"bandwidth_bytes": 2000000' in out


@pytest.mark.mpi
@pytest.mark.skipif(
    not (os.path.exists(ref.HPCC_BINARY) and shutil.which("mpirun")),
    reason="needs Debian's hpcc and mpirun (./setup.sh deps installs them)",
)
def test_real_hpcc_run() -> None:
    run = ref.run_hpcc(2, timeout_s=300)
    assert run.nranks == 2
    assert set(run.figures) == set(ref.LATENCY_KEYS) | set(ref.BANDWIDTH_KEYS.values())
    assert all(value > 0 for value in run.figures.values())
    assert (
        run.figures["MinPingPongLatency_usec"]
        <= run.figures["AvgPingPongLatency_usec"]
        <= run.figures["MaxPingPongLatency_usec"]
    )
