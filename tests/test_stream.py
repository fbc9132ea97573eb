"""stream: sizing from the provenance's last-level cache, parsing a real captured output,
STREAM's validation, bandwidth = bytes / median time, and a real `hpceval run` on local."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.stream import CACHE_FACTOR, parse_output
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.provenance import SystemHost, last_level_cache
from hpceval.store import open_store

from .cli_helpers import invoke
from .conftest import DATA, entry_cases, requires_mpi, write

STREAM = DATA / "stream"
CAPTURED = (STREAM / "stream-1rank-llc1x.txt").read_text()
PLATFORM = PlatformConfig(name="l", cores_per_node=2)
LLC = 503316480  # the captured output's array: 480 MiB, this machine's L3 (1x, not 4x)


def captured_case(llc: int = LLC // CACHE_FACTOR):
    """The case the captured output answers (its array of 62,914,560 doubles on 1 rank)."""
    bench = get_benchmark("stream")
    cases = entry_cases(bench, {"ranks": [1], "llc_bytes": llc}, PLATFORM)
    (case,) = cases
    return case


def test_cases_are_sized_from_the_provenance_cache() -> None:
    found = last_level_cache(SystemHost())
    if found is None:
        pytest.skip("this machine's lstopo and sysfs give no cache size")
    llc, source = found
    bench = get_benchmark("stream")
    one, per_core = entry_cases(bench, {}, PLATFORM)
    assert one.placement.ranks == 1 and per_core.placement.ranks == 2
    for case in (one, per_core):
        assert case.options["llc_bytes"] == llc and case.options["llc_source"] == source
        total = 8 * int(case.options["elements"]) * case.placement.ranks
        assert CACHE_FACTOR * llc <= total < CACHE_FACTOR * llc + 8 * case.placement.ranks
        assert case.options["trials"] == 10


def test_arrays_smaller_than_four_caches_are_refused() -> None:
    bench = get_benchmark("stream")
    with pytest.raises(UserError, match="below 4 x the last-level cache"):
        entry_cases(bench, {"llc_bytes": 1 << 20, "array_bytes": 3 << 20}, PLATFORM)
    with pytest.raises(ValueError, match="trials"):
        bench.parse_options({"trials": 5})


def test_parse_captured_output() -> None:
    assert captured_case().options["elements"] == 62914560
    (point,) = [parse_output(CAPTURED, captured_case())]
    by = {m.metric: m for m in point.measurements}
    assert set(by) == {f"{k}_{q}" for k in ("copy", "scale", "add", "triad") for q in
                       ("time", "bandwidth")}  # fmt: skip
    triad = by["triad_bandwidth"]
    times = by["triad_time"].samples
    assert len(times) == 9  # trials 2..10: the first is left out, as STREAM does
    assert times[0] == pytest.approx(4.891195620e-01)
    # bytes / median time, never the mean of per-trial bandwidths
    median_time = sorted(times)[4]
    assert triad.value == pytest.approx(1509949440 / 1e6 / median_time)
    assert triad.statistic == "bytes/median(time)" and triad.unit == "MB/s"
    assert triad.statistics is not None
    assert triad.statistics.maximum == pytest.approx(1509949440 / 1e6 / min(times))  # STREAM's best
    assert triad.statistics.mean == pytest.approx(1509949440 / 1e6 / (sum(times) / 9))
    assert by["copy_bandwidth"].details["bytes_per_trial"] == 2 * 8 * 62914560
    assert "(median of 9; best" in get_benchmark("stream").headline(point.measurements)


def test_failed_validation_is_a_failure_never_a_number() -> None:
    lines = CAPTURED.splitlines()
    broken = []
    for line in lines:
        record = json.loads(line)
        if record["record"] == "validation":
            record["passed"] = False
            record["relative_error"][0] = 1e-3
        broken.append(json.dumps(record))
    with pytest.raises(BenchmarkFailure, match="failed validation"):
        parse_output("\n".join(broken), captured_case())
    without = "\n".join(ln for ln in lines if '"validation"' not in ln)
    with pytest.raises(BenchmarkFailure, match="no validation record"):
        parse_output(without, captured_case())


def test_output_of_another_size_is_refused() -> None:
    other = captured_case(llc=LLC)  # 4x the elements of the captured run
    with pytest.raises(BenchmarkFailure, match="elements"):
        parse_output(CAPTURED, other)


@requires_mpi
def test_real_run_through_hpceval_run(tmp_path: Path) -> None:
    """The `stream` suite entry on local: sized from this machine's provenance (4x its
    last-level cache), run by `hpceval run`, validated, stored and shown."""
    if last_level_cache(SystemHost()) is None:
        pytest.skip("this machine's lstopo and sysfs give no cache size")
    suite = write(tmp_path / "stream.toml", 'name = "s"\ndescription = "d"\n'
                  '[[benchmark]]\nname = "stream"\nranks = [1]\n')  # fmt: skip
    db = str(tmp_path / "r.db")
    result = invoke("run", "--suite", str(suite), "--db", db)
    assert result.exit_code == 0, result.output
    assert "triad" in result.output and "(median of 9; best" in result.output
    store = open_store(db)
    ms = [s.measurement for s in store.measurements(metric="triad_bandwidth")]
    assert len(ms) == 1 and ms[0].value > 0
    llc, _ = last_level_cache(SystemHost()) or (0, "")
    assert int(ms[0].parameters["array_bytes"]) >= CACHE_FACTOR * llc
    shown = invoke("show", "--db", db)
    assert shown.exit_code == 0 and "STREAM, MB/s" in shown.output and "triad" in shown.output


def test_quick_and_standard_measure_memory_bandwidth() -> None:
    """The shipped default suites carry a memory-bandwidth case (one process; standard also
    one per core), sized from the provenance like any stream case."""
    if last_level_cache(SystemHost()) is None:
        pytest.skip("this machine's lstopo and sysfs give no cache size")
    from hpceval.campaign import load_platform, load_suite, plan_cases

    local = load_platform("local").config
    for name, ranks in (("quick", [1]), ("standard", [1, local.resolved_cores_per_node()])):
        cases = plan_cases(load_suite(name), local)
        streams = [c for c in cases if c.benchmark == "stream"]
        assert sorted(c.placement.ranks for c in streams) == ranks
