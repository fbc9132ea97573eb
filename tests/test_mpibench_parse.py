"""Parsing real captured mpibench output (tests/data/mpibench, see its README)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.benchmarks.mpibench import BYTES_FACTOR, TIME_DIVISOR, point_key
from hpceval.errors import BenchmarkFailure
from hpceval.model import Placement
from hpceval.patterns import COLLECTIVES
from hpceval.units import MEGABYTE_PER_SECOND, MICROSECOND

from .conftest import DATA

BENCH = get_benchmark("mpibench")
CAPTURES = sorted((DATA / "mpibench").glob("*.jsonl"))


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def case_for(path: Path) -> Case:
    """The case that would have produced a capture, from its header."""
    header = records(path)[0]
    assert header["record"] == "header"
    sizes = header["sizes"]
    assert isinstance(sizes, list)
    nranks = header["nranks"]
    assert isinstance(nranks, int)
    return Case(
        key=f"mpibench:{header['pattern']}",
        benchmark="mpibench",
        placement=Placement(1, nranks, 1, "none"),
        parameters={"pattern": str(header["pattern"])},
        points=tuple(point_key(int(s)) for s in sizes),
        time_limit_s=60,
    )


def test_captures_exist_for_every_pattern() -> None:
    patterns = {records(p)[0]["pattern"] for p in CAPTURES}
    assert patterns == {
        "pingpong", "pingping", "sendrecv", "exchange", "bcast", "reduce", "allreduce",
        "alltoall", "allgather", "barrier", "natural_ring", "random_ring", "multi_pingpong",
    }  # fmt: skip


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_parse_capture(path: Path) -> None:
    case = case_for(path)
    text = path.read_text()
    points = BENCH.parse(text, case)
    BENCH.verify(text, case, case.points)
    raw_points = [r for r in records(path) if r["record"] == "point"]
    assert [p.point_key for p in points] == list(case.points)
    pattern = str(case.parameters["pattern"])
    for parsed, raw in zip(points, raw_points, strict=True):
        size = int(str(raw["size"]))
        by_metric = {m.metric: m for m in parsed.measurements}
        time_metric = "time" if pattern in COLLECTIVES else "latency"
        t = by_metric[time_metric]
        raw_samples = raw["t_max_us"]
        assert isinstance(raw_samples, list)
        # Rings report time per message (HPCC): half the printed per-iteration time.
        samples = [s / TIME_DIVISOR.get(pattern, 1) for s in raw_samples]
        # The value is the median of the raw per-sample t_max, in µs, with every sample kept;
        # the mean (IMB/OSU's convention) and the minimum are in the details.
        assert t.unit == MICROSECOND
        assert t.samples == pytest.approx(tuple(samples))
        assert t.statistic == "median"
        assert t.value == pytest.approx(statistics.median(samples))
        assert t.details["mean_us"] == pytest.approx(sum(samples) / len(samples))
        assert t.details["min_us"] == pytest.approx(min(samples))
        assert t.statistics is not None and t.statistics.count == raw["samples"]
        assert t.statistics.minimum == pytest.approx(min(samples))
        assert t.parameters["size"] == size
        assert t.parameters["pattern"] == pattern
        assert t.parameters["ranks"] == case.placement.ranks
        assert t.details["loops"] == raw["loops"]
        assert t.details["stop"] in ("ci", "budget", "max_samples")
        mean = t.details["mean_us"]
        assert t.statistics.extra["t_min"] <= t.statistics.extra["t_avg"] <= mean * (1 + 1e-12)
        if pattern in BYTES_FACTOR and size > 0:
            bw = by_metric["bandwidth"]
            assert bw.unit == MEGABYTE_PER_SECOND
            # MB/s with 1 MB = 10^6 B: bytes per µs.
            assert bw.value == pytest.approx(BYTES_FACTOR[pattern] * size / t.value)
            assert bw.statistic == "bytes/median(t)"
            assert bw.details["bytes_per_mean_time"] == pytest.approx(
                BYTES_FACTOR[pattern] * size / mean
            )
            assert bw.statistics is not None
            assert bw.statistics.ci_low is None or bw.statistics.ci_low <= bw.value
        else:
            assert "bandwidth" not in by_metric


def test_pingpong_physics_in_capture() -> None:
    points = BENCH.parse(
        (DATA / "mpibench" / "pingpong_np2.jsonl").read_text(),
        case_for(DATA / "mpibench" / "pingpong_np2.jsonl"),
    )
    latency = {p.point_key: p.measurements[0].value for p in points}
    assert 0 < latency["size=0"] < 50  # shared memory: around a microsecond
    bandwidth = {
        p.point_key: m.value for p in points for m in p.measurements if m.metric == "bandwidth"
    }
    assert bandwidth["size=1048576"] > bandwidth["size=1024"] > bandwidth["size=1"]


@pytest.mark.parametrize(
    ("stem", "cause"),
    [
        ("error_unknown_pattern", "unknown pattern"),
        ("error_np1_pingpong", "at least 2"),
        ("error_reduce_size", "multiple of 4"),
        ("error_multi_pingpong_odd", "even number of ranks"),
    ],
)
def test_error_records_fail_with_the_cause(stem: str, cause: str) -> None:
    out = (DATA / "mpibench" / f"{stem}.out").read_text()
    err = (DATA / "mpibench" / f"{stem}.err").read_text()
    assert cause in err
    case = Case("k", "mpibench", Placement(1, 2), {"pattern": "pingpong"}, ("size=8",), 60)
    with pytest.raises(BenchmarkFailure, match=cause):
        BENCH.verify(out, case, case.points)
    with pytest.raises(BenchmarkFailure, match=cause):
        BENCH.parse(out, case)


def test_concurrent_pairs_capture_times_the_first_rank_of_every_pair() -> None:
    """Two pairs at once: t_min/t_avg/t_max are over the two timing ranks (they differ,
    unlike a PingPong's), and the bandwidth is per pair (n / t_max)."""
    path = DATA / "mpibench" / "multi_pingpong_np4.jsonl"
    points = BENCH.parse(path.read_text(), case_for(path))
    raw = [r for r in records(path) if r["record"] == "point"]
    assert any(r["t_min_us"] != r["t_max_us"] for r in raw)
    for parsed, r in zip(points, raw, strict=True):
        lat = next(m for m in parsed.measurements if m.metric == "latency")
        assert lat.samples == pytest.approx(tuple(r["t_max_us"]))  # type: ignore[arg-type]
    single = BENCH.parse(
        (DATA / "mpibench" / "multi_pingpong_np2.jsonl").read_text(),
        case_for(DATA / "mpibench" / "multi_pingpong_np2.jsonl"),
    )
    for p in single:  # one pair is a PingPong: only one rank times
        (lat,) = [m for m in p.measurements if m.metric == "latency"]
        assert lat.statistics is not None
        assert lat.statistics.extra["t_min"] == pytest.approx(lat.statistics.mean)


def _pingpong_case() -> Case:
    return Case("k", "mpibench", Placement(1, 2), {"pattern": "pingpong"}, ("size=8",), 60)


def _point(**over: object) -> str:
    record: dict[str, object] = {
        "record": "point", "pattern": "pingpong", "size": 8, "nranks": 2,
        "warmup_iterations": 10, "loops": 4, "samples": 2, "stop": "ci", "elapsed_s": 0.1,
        "t_max_us": [1.0, 1.2], "t_min_us": [1.0, 1.2], "t_avg_us": [1.0, 1.2],
    }  # fmt: skip
    record.update(over)
    return json.dumps(record)


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        (_point(t_max_us=[1.0]), "does not hold 2 samples"),
        (_point(t_max_us=[1.0, -1.0]), "non-positive"),
        (_point(t_max_us=[1.0, 0.0]), "non-positive"),
        (_point(size=16), "size=16 was not requested"),
        (_point(pattern="pingping"), "expected 'pingpong'"),
        (_point(samples=0, t_max_us=[], t_min_us=[], t_avg_us=[]), "no samples"),
        ('{"record": "point", "size": ', "malformed record"),
        ('{"size": 8}', "without a type"),
    ],
)
def test_nonsense_points_fail_the_sanity_check(line: str, cause: str) -> None:
    with pytest.raises(BenchmarkFailure, match=cause):
        BENCH.parse_line(line, _pingpong_case())


def test_header_placement_checks() -> None:
    header = {"record": "header", "program": "mpibench", "version": "1.0", "nranks": 2,
              "hosts": ["a", "b"]}  # fmt: skip
    with pytest.raises(BenchmarkFailure, match="ran on 2 host"):
        BENCH.parse_line(json.dumps(header), _pingpong_case())
    with pytest.raises(BenchmarkFailure, match="expected 2"):
        BENCH.parse_line(json.dumps({**header, "nranks": 3, "hosts": ["a"] * 3}), _pingpong_case())
    with pytest.raises(BenchmarkFailure, match=r"protocol 2\.0"):
        BENCH.parse_line(
            json.dumps({**header, "version": "2.0", "hosts": ["a", "a"]}), _pingpong_case()
        )


def test_verify_needs_every_point_and_the_end_record() -> None:
    case = _pingpong_case()
    header = json.dumps({"record": "header", "program": "mpibench", "version": "1.0",
                         "nranks": 2, "hosts": ["a", "a"]})  # fmt: skip
    end = json.dumps({"record": "end", "status": "ok", "points": 1})
    BENCH.verify("\n".join([header, _point(), end]), case, case.points)
    with pytest.raises(BenchmarkFailure, match="measured 0 of 1 points"):
        BENCH.verify("\n".join([header, end]), case, case.points)
    with pytest.raises(BenchmarkFailure, match="no successful end record"):
        BENCH.verify("\n".join([header, _point()]), case, case.points)
    # Foreign lines (MPI warnings on stdout) are ignored, not fatal.
    BENCH.verify("\n".join(["WARNING: something", header, _point(), end]), case, case.points)
    assert math.isfinite(BENCH.parse(_point(), case)[0].measurements[0].value)
