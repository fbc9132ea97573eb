"""The bulk read path of the analysis frame (Store.measurement_columns + load_frame).

The bulk frame must be exactly the frame `build_frame` makes of the Store's Measurements read
one by one (the path it replaced): same rows in the same order, same columns, dtypes, values
and samples, on a store that mixes benchmarks, parameter types, origins and runs stored
interleaved, with every filter, on an empty store, on SQLite and on a real PostgreSQL server.
Then perf/analysis_scale.py: its database reads back as the Store wrote it, and the script
runs end to end on 20,000 measurements (no timing asserted).
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

import hpceval
from hpceval.analysis.frame import CORE_COLUMNS, build_frame
from hpceval.analysis.loading import load_frame
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import Store, decode_json_texts, open_store
from hpceval.store import columns as store_columns

pytest_plugins = ["tests.postgres_server"]  # postgres_url, empty_database (a real server)

BENCH = Path(__file__).resolve().parent.parent / "perf" / "analysis_scale.py"


@pytest.fixture
def database(empty_database: str) -> str:
    return empty_database


@pytest.fixture
def mixed(database: str) -> Iterator[tuple[Store, dict[str, int]]]:
    with open_store(database) as store:
        yield store, fill_mixed(store)


def one_by_one(
    store: Store,
    *,
    runs: Sequence[int] | None = None,
    platforms: Sequence[str] | None = None,
    benchmark: str | None = None,
    metric: str | None = None,
) -> pd.DataFrame:
    """The frame as load_frame made it before the bulk path: a Measurement per row."""
    entries = []
    for run in sorted(store.runs(), key=lambda r: r.id):
        if runs is not None and run.id not in runs:
            continue
        if platforms is not None and run.platform_name not in platforms:
            continue
        for stored in store.measurements(run.id, benchmark=benchmark, metric=metric):
            entries.append((run.platform_name, run.id, stored.measurement))
    return build_frame(entries)


def assert_same_frame(bulk: pd.DataFrame, reference: pd.DataFrame) -> None:
    assert list(bulk.columns) == list(reference.columns)
    pd.testing.assert_frame_equal(
        bulk.drop(columns="samples"), reference.drop(columns="samples"), check_exact=True
    )
    assert len(bulk["samples"]) == len(reference["samples"])
    for got, expected in zip(bulk["samples"], reference["samples"], strict=True):
        assert got.dtype == np.float64 == expected.dtype
        assert np.array_equal(got, expected, equal_nan=True)


def measurement(
    benchmark: str,
    metric: str,
    value: float,
    unit: str,
    samples: tuple[float, ...] = (),
    /,
    *,
    statistic: str = "mean",
    origin: Origin = Origin.MEASURED,
    implementation: str = "hpceval",
    **parameters: int | float | str | bool,
) -> Measurement:
    # As a database holds it: one written before hpceval refused non-finite samples may hold
    # an inf (the simulated ping-pong below), and every read must keep it.
    return Measurement.from_stored(
        benchmark=benchmark,
        metric=metric,
        value=value,
        unit=unit,
        parameters=parameters,
        samples=samples,
        statistic=statistic,
        origin=origin,
        implementation=implementation,
    )


CASES = [("p2p", "mpibench", {}), ("npb", "npb", {}), ("io", "fio", {})]


def fill_mixed(store: Store, *, official: bool = True) -> dict[str, int]:
    """Three platforms (one simulated, one with an odd name), three benchmarks, parameters
    of every type (and mixed types, a missing one, one named like a core column, a NaN),
    samples with non-finite values or none, and runs whose measurements interleave; with
    `official`, two runs of an official code (schema 4 on: databases of older schemas,
    which had no implementation, are compared without them)."""
    env = store.add_environment(Environment(facts={"cpu": {"model": "x"}}, fingerprint="e1"))
    runs: dict[str, int] = {}
    for name, origin in (("bare", Origin.MEASURED), ("vm é\x1f|", Origin.MEASURED),
                         ("sim", Origin.SIMULATED), ("vm-again", Origin.MEASURED)):  # fmt: skip
        platform_name = "vm é\x1f|" if name == "vm-again" else name  # a second run of it
        platform = store.add_platform(platform_name, {"name": platform_name})
        runs[name] = store.create_run(
            suite_name="mixed",
            suite_config={},
            platform_id=platform,
            environment_id=env,
            launcher="local",
            cases=CASES,
            hpceval_version=hpceval.__version__,
            git_revision=None,
            origin=origin,
            host="h",
            pid=1,
        )

    def add(run: str, case: str, m: Measurement) -> None:
        store.add_measurement(runs[run], None, case, "point", m)

    for run in ("bare", "vm é\x1f|"):
        for size in (0, 8, 1024):
            times = tuple(1.0 + size / 1000 + k / 10 for k in range(4))
            add(run, "p2p", measurement("mpibench", "latency", sum(times) / 4, "us", times,
                                        pattern="pingpong", size=size, pair="intra-node",
                                        ranks=2, binding="core"))  # fmt: skip
            if size:
                add(run, "p2p", measurement("mpibench", "bandwidth", size / 2.0, "MB/s",
                                            tuple(size / t for t in times),
                                            statistic="bytes/mean(time)", pattern="pingpong",
                                            size=size, pair="intra-node", ranks=2,
                                            binding="core"))  # fmt: skip
    # The first run again, after the second: rows still come run by run.
    add("bare", "p2p", measurement("mpibench", "time", 3.5, "us", (3.0, 4.0), pattern="bcast",
                                   size=8, ranks=4, nodes=1, ratio=0.5, value=7,
                                   samples="as a parameter"))  # fmt: skip
    add("bare", "npb", measurement("npb", "time", 12.5, "s", (12.5,), statistic="single run",
                                   kernel="cg", **{"class": "A"}, ranks=2, verified=True,
                                   file="cg.A.2.out"))  # fmt: skip
    add("bare", "npb", measurement("npb", "mops_total", 150.0, "Mop/s", (),
                                   statistic="single run", kernel="cg", **{"class": "A"},
                                   ranks=2, verified=False))  # fmt: skip
    add("sim", "p2p", measurement("mpibench", "latency", 2.0, "us", (1.5, math.inf, 2.5),
                                  origin=Origin.SIMULATED, pattern="pingpong", size=8.5,
                                  ranks="two", threshold=math.nan))  # fmt: skip
    add("sim", "npb", measurement("npb", "time", 11.0, "s", (), statistic="single run",
                                  origin=Origin.SIMULATED, kernel="cg", **{"class": "A"},
                                  ranks=2))  # fmt: skip
    # Official codes: the implementation of each row read by (run, series).
    for run, version in (("bare", "3.4.2"), ("vm-again", "3.4.3")) if official else ():
        official = f"official/NPB {version}"
        add(run, "npb", measurement("npb-official", "mops_total", 140.0, "Mop/s", (140.0,),
                                    statistic="single run", implementation=official,
                                    kernel="cg", **{"class": "A"}, ranks=2))  # fmt: skip
    add("vm-again", "io", measurement("fio", "bandwidth", 512.0, "MiB/s", (500.0, 524.0),
                                      rw="read", bs=4096, direct=True))  # fmt: skip
    add("vm é\x1f|", "io", measurement("fio", "iops", 1.0e5, "IOPS", (1.0e5,), rw="randread",
                                       bs=4096))  # fmt: skip
    return runs


def test_bulk_frame_is_the_frame_of_the_measurements(
    mixed: tuple[Store, dict[str, int]],
) -> None:
    store, _ = mixed
    frame = load_frame(store)
    assert_same_frame(frame, one_by_one(store))
    # What the mixed store was made to exercise is there.
    assert len(frame) == 19
    assert frame["run"].tolist() == sorted(frame["run"].tolist())
    assert str(frame["size"].dtype) == "float64"  # 8.5 among the integers
    assert frame["ranks"].dtype == object  # 2 and "two"
    assert str(frame["verified"].dtype) == "boolean"
    assert str(frame["bs"].dtype) == "Int64"
    assert isinstance(frame["pattern"].dtype, pd.CategoricalDtype)
    assert {"parameter.value", "parameter.samples", "file", "threshold"} <= set(frame.columns)
    assert list(frame.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    sim = frame.loc[frame["platform"] == "sim"]
    assert sim["samples"].iloc[1].tolist() == [11.0]  # stored without samples: the value
    assert math.isinf(sim["samples"].iloc[0][1])
    assert math.isnan(sim["threshold"].iloc[0])
    assert set(frame["origin"].astype(str)) == {"measured", "simulated"}
    official = frame.loc[frame["benchmark"] == "npb-official"]
    assert official["implementation"].astype(str).tolist() == [
        "official/NPB 3.4.2", "official/NPB 3.4.3"
    ]
    assert set(frame.loc[frame["benchmark"] != "npb-official", "implementation"]) == {"hpceval"}


def test_filters_are_those_of_the_measurement_path(mixed: tuple[Store, dict[str, int]]) -> None:
    store, runs = mixed
    selections: list[dict[str, Any]] = [
        {"runs": [runs["bare"]]},
        {"runs": [runs["sim"], runs["bare"]]},
        {"runs": []},
        {"runs": [999]},
        {"platforms": ["vm é\x1f|"]},  # two runs of the same platform
        {"platforms": ["sim", "bare"], "benchmark": "npb"},
        {"platforms": []},
        {"benchmark": "mpibench"},
        {"metric": "time"},
        {"benchmark": "npb", "metric": "time", "runs": [runs["sim"]]},
        {"benchmark": "nothing"},
    ]
    for selection in selections:
        bulk = load_frame(store, **selection)
        assert_same_frame(bulk, one_by_one(store, **selection))
    assert len(load_frame(store, platforms=["vm é\x1f|"])) == 8
    assert set(load_frame(store, metric="time")["benchmark"].astype(str)) == {"mpibench", "npb"}


def test_filters_are_applied_by_the_database(mixed: tuple[Store, dict[str, int]]) -> None:
    store, runs = mixed
    columns = store.measurement_columns(
        run_ids=[runs["bare"], runs["sim"]], platform_names=["sim"], metric="time"
    )
    assert columns.run_id == [runs["sim"]]
    assert [kind[:5] for kind in columns.kinds] == [("sim", "simulated", "npb", "time", "s")]


def test_read_by_forked_workers_is_the_read_here(
    mixed: tuple[Store, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, runs = mixed
    selections: list[dict[str, Any]] = [
        {}, {"platforms": ["vm é\x1f|"]}, {"runs": [runs["sim"], runs["bare"]], "metric": "time"}
    ]
    here = [load_frame(store, **selection) for selection in selections]
    monkeypatch.setattr(store_columns, "_ROWS_PER_READ_WORKER", 2)  # 17 rows: 3 workers
    monkeypatch.setenv(store_columns.READ_WORKERS_ENV, "3")
    read_here: list[int] = []
    read_range = Store._read_range

    def counted(self: Store, query: Any) -> Any:
        read_here.append(os.getpid())
        return read_range(self, query)

    monkeypatch.setattr(Store, "_read_range", counted)
    for selection, expected in zip(selections, here, strict=True):
        assert_same_frame(load_frame(store, **selection), expected)
    assert not read_here  # every range read in a worker (whose calls are not seen here)


def test_a_lost_read_worker_is_read_again_here(
    mixed: tuple[Store, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = mixed
    expected = load_frame(store)
    monkeypatch.setattr(store_columns, "_ROWS_PER_READ_WORKER", 5)
    monkeypatch.setenv(store_columns.READ_WORKERS_ENV, "2")
    parent = os.getpid()
    read_range = Store._read_range

    def dies_in_a_worker(self: Store, query: Any) -> Any:
        if os.getpid() != parent:
            os._exit(9)  # as a worker killed for memory would
        return read_range(self, query)

    monkeypatch.setattr(Store, "_read_range", dies_in_a_worker)
    assert_same_frame(load_frame(store), expected)


def test_names_with_quotes_filter_the_read(database: str) -> None:
    with open_store(database) as store:
        env = store.add_environment(Environment(facts={}, fingerprint="q"))
        for name in ("o'brien", "o'brien'; drop table runs; --", "plain"):
            run = store.create_run(
                suite_name="q", suite_config={}, platform_id=store.add_platform(name, {}),
                environment_id=env, launcher="local", cases=CASES,
                hpceval_version=hpceval.__version__, git_revision=None,
                origin=Origin.MEASURED, host="h", pid=1,
            )  # fmt: skip
            store.add_measurement(run, None, "p2p", "point", measurement(
                "mpibench", "latency", 1.0, "us", (1.0,), pattern="pingpong", size=8))
        frame = load_frame(store, platforms=["o'brien'; drop table runs; --"], metric="latency")
        assert frame["platform"].astype(str).tolist() == ["o'brien'; drop table runs; --"]
        assert len(store.runs()) == 3
        assert len(load_frame(store, platforms=["o'brien", "plain"])) == 2


def test_empty_store(database: str) -> None:
    with open_store(database) as store:
        frame = load_frame(store)
        assert frame.empty
        assert_same_frame(frame, one_by_one(store))
        assert list(frame.columns) == list(CORE_COLUMNS)


def test_postgresql_and_sqlite_give_the_same_frame(tmp_path: Path, postgres_url: str) -> None:
    frames = []
    for database in (str(tmp_path / "r.db"), postgres_url):
        with open_store(database) as store:
            fill_mixed(store)
            frames.append(load_frame(store))
    assert_same_frame(frames[1], frames[0])


def test_json_texts_decoded_in_one_pass() -> None:
    texts = ['{"a": 1, "b": [1.5, {"$float": "nan"}]}', "[]", '{"big": 36893488147419103232}']
    decoded = decode_json_texts(texts)
    assert decoded[0]["a"] == 1 and math.isnan(decoded[0]["b"][1])
    assert decoded[1:] == [[], {"big": 2**65}]  # beyond 64 bits: the json module's answer
    assert decode_json_texts([]) == []


# --------------------------------------------------------------------------- the bench


def bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("analysis_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_bench_database_reads_back_as_the_store_wrote_it(tmp_path: Path) -> None:
    bench = bench_module()
    generated = bench.generate(tmp_path / "small.db", 2_000, seed=3)
    assert generated.measurements == 2_000
    with open_store(str(tmp_path / "small.db"), create=False) as store:
        frame = load_frame(store)
        assert_same_frame(frame, one_by_one(store))
        runs = store.runs()
    assert len(frame) == 2_000
    assert frame["platform"].nunique() == 10
    assert set(frame["benchmark"].astype(str)) == {"mpibench"}  # 200 a platform: p2p first
    assert int(sum(map(len, frame["samples"]))) == generated.samples
    assert {r.status.value for r in runs} == {"interrupted"}  # each cut short
    latency = frame.loc[(frame["metric"] == "latency") & (frame["size"] == 0)]
    assert (latency["samples"].map(len) >= 9).all()  # mpibench's sample counts


def test_bench_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = bench_module()
    assert bench.main(["--measurements", "20000", "--keep", str(tmp_path / "b.db")]) == 0
    out = capsys.readouterr().out
    assert "database: 20,000 measurements" in out
    steps = ["load", "compare"] + [
        f"{command} [{mode}]"
        for mode in ("in-process", "processes")
        for command in ("hpceval compare", "hpceval report", "hpceval compare (cached)",
                        "hpceval report (no cache)")
    ]  # fmt: skip
    for step in steps:
        line = next((line for line in out.splitlines() if line.startswith(step + " ")), "")
        assert re.match(rf"{re.escape(step)} +\d+\.\d\d ", line), out  # timed, not failed
    for mode in ("in-process", "processes"):
        assert f"total [{mode}] (compare then report" in out
    assert "x the 10 s target" in out and "failed" not in out
    with open_store(str(tmp_path / "b.db"), create=False) as store:
        frame = load_frame(store)
    assert len(frame) == 20_000
    assert set(frame["benchmark"].astype(str)) == {"mpibench", "npb"}


# --------------------------------------------------------------------------- compare at scale


def scattered_frame(points: int, low: int, high: int, seed: int = 5) -> pd.DataFrame:
    """Two platforms and a baseline, `points` points each, every side with its own number of
    samples (between low and high): many distinct sample counts."""
    rng = np.random.default_rng(seed)
    entries = []
    for run, (platform, scale) in enumerate((("bare", 1.0), ("vm", 1.3), ("ec2", 0.9))):
        for size in range(points):
            count = int(rng.integers(low, high + 1))
            samples = tuple((scale + size / 100) * rng.lognormal(0.0, 0.05, count))
            entries.append((platform, run + 1, measurement(
                "mpibench", "latency", float(np.mean(samples)), "us", samples,
                pattern="pingpong", size=size)))  # fmt: skip
    return build_frame(entries)


def reference_bootstrap(
    frame: pd.DataFrame, platform: str, size: int, resamples: int, seed: int
) -> tuple[float, float]:
    """The documented scheme, one point at a time: a single repetition's samples resampled
    with the picks of a generator seeded with (seed, side, count), the median of each."""

    def side(name: str, number: int) -> Any:
        (samples,) = frame.loc[(frame["platform"] == name) & (frame["size"] == size), "samples"]
        n = len(samples)
        rng = np.random.default_rng([seed, number, n])
        picks = rng.integers(0, n, size=(resamples, n))
        return np.median(np.asarray(samples)[picks], axis=1)

    replicates = np.sort(side(platform, 0) / side("bare", 1))
    return (
        float(replicates[math.floor((resamples - 1) * 0.025)]),
        float(replicates[math.ceil((resamples - 1) * 0.975)]),
    )


def test_bootstrap_keeps_the_documented_scheme_in_any_chunking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hpceval.analysis import compare as compare_module
    from hpceval.analysis import policy as policy_module
    from hpceval.analysis import ratios as ratios_module

    frame = scattered_frame(points=12, low=5, high=40)
    result = compare_module.compare(frame, "bare", method="bootstrap", resamples=500, seed=7)
    # Pairs in chunks of 3 and small gathered blocks: the same intervals.
    monkeypatch.setattr(ratios_module, "_PAIR_ELEMENTS", 3 * 500)
    monkeypatch.setattr(policy_module, "_BLOCK_ELEMENTS", 2 * 500 * 40)
    chunked = compare_module.compare(frame, "bare", method="bootstrap", resamples=500, seed=7)
    table = result.table
    for column in ("ratio_low", "ratio_high"):
        np.testing.assert_allclose(chunked.table[column], table[column], rtol=1e-12)
    for row in table.itertuples():
        low, high = reference_bootstrap(frame, str(row.platform), int(row.size), 500, 7)
        assert row.ratio_low == pytest.approx(low, rel=1e-12)
        assert row.ratio_high == pytest.approx(high, rel=1e-12)


def test_auto_counts_the_bootstrap_work_not_only_the_points() -> None:
    from hpceval.analysis.compare import compare

    # Few samples a point: bootstrapped. Hundreds, with as many distinct counts as points
    # (a weight matrix each): the delta method, as for very many points.
    assert compare(scattered_frame(points=50, low=10, high=20), "bare").method == "bootstrap"
    heavy = compare(scattered_frame(points=50, low=300, high=900), "bare")
    assert heavy.method == "delta"
    assert set(heavy.table["ci_method"].astype(str)) == {"delta"}


def test_bench_prints_medians_and_ranges_of_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = bench_module()
    db = tmp_path / "x.db"
    db.write_bytes(b"\0" * 1000)
    steps = [bench.Step("load", 2.0, "rows", 2.0)]
    for wall in (4.0, 6.0, 5.0):
        for mode in ("in-process", "processes"):
            steps += [
                bench.Step(f"hpceval compare [{mode}]", wall, "c", wall),
                bench.Step(f"hpceval report [{mode}]", wall + 1, "r", 2 * wall),
            ]
    bench.print_table(bench.Generated(db, 10, 20, 1, float("nan")), steps)
    out = capsys.readouterr().out
    compare_line = next(line for line in out.splitlines() if line.startswith("hpceval compare [p"))
    expected = r"hpceval compare \[processes\] +5\.00 +0\.50 +5\.00 +4\.00– 6\.00  c"
    assert re.match(expected, compare_line)
    assert ("total [processes] (compare then report (report from the cache compare filled)): "
            "11.00 s = 1.10 x the 10 s target (MISSES it); CPU 15.00 s; per repeat 9.00–13.00 s"
            ) in out  # fmt: skip
    assert "total [processes] (compare + report, no cache): not measured" in out
    assert "Medians of 3 repeats." in out


def test_an_in_memory_database_is_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_columns, "_ROWS_PER_READ_WORKER", 2)
    monkeypatch.setenv(store_columns.READ_WORKERS_ENV, "2")
    with open_store("sqlite://") as store:  # workers would see an empty database of their own
        fill_mixed(store)
        assert not store._reopenable()
        assert len(load_frame(store)) == 19
