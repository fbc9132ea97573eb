"""The report's "Java overhead" section, from real captured outputs of the Java and C programs.

The C side (mpibench.c on Open MPI, hpceval's ft.c) and the Java side (MpiBench.java, Ft.java
on MPJ Express) are parsed from tests/data by the benchmarks' own parsers, stored as two runs
whose provenance names their MPI, and the report is written from that database.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import hpceval
from hpceval.analysis.ratios import Verdict
from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.model import Environment, Measurement, Origin, Placement
from hpceval.store import open_store
from tests.cli_helpers import invoke, read_csv

DATA = Path(__file__).parent / "data"
SIZES = (0, 8, 1024, 65536)
C_SIZES = (0, 1, 8, 1024, 65536, 1048576, 4194304)  # what the C capture measured


def pingpong_case(benchmark: str, sizes: tuple[int, ...] = SIZES) -> Case:
    return Case(
        key=f"{benchmark}/pingpong", benchmark=benchmark, placement=Placement(1, 2, 1, "none"),
        parameters={"pattern": "pingpong", "pair": "intra-node"},
        points=tuple(f"size={s}" for s in sizes), time_limit_s=60,
    )  # fmt: skip


def ft_case(benchmark: str) -> Case:
    return Case(
        key=f"{benchmark}/ft", benchmark=benchmark, placement=Placement(1, 1, 1, "none"),
        parameters={"kernel": "ft", "class": "S"}, points=("rep=1",), time_limit_s=60,
    )  # fmt: skip


def parsed(benchmark: str, case: Case, capture: Path) -> list[Measurement]:
    text = capture.read_text()
    points = get_benchmark(benchmark).parse(text, case)
    return [m for p in points for m in p.measurements]


def add_run(store: Any, platform: str, mpi: dict[str, Any], ms: list[Measurement]) -> None:
    env = store.add_environment(Environment(facts={"mpi": mpi}, fingerprint=f"env-{platform}"))
    run_id = store.create_run(
        suite_name="s", suite_config={},
        platform_id=store.add_platform(platform, {"name": platform}), environment_id=env,
        launcher="local", cases=[("c", "c", {})], hpceval_version=hpceval.__version__,
        git_revision=None, origin=Origin.MEASURED, host="h", pid=1,
    )  # fmt: skip
    for i, m in enumerate(ms):
        store.add_measurement(run_id, None, "c", f"p{i}", m)


def write_db(path: Path, *, with_java: bool = True) -> None:
    c = parsed(
        "mpibench", pingpong_case("mpibench", C_SIZES), DATA / "mpibench" / "pingpong_np2.jsonl"
    )
    c = [m for m in c if m.parameters["size"] in SIZES]
    c += parsed("npb", ft_case("npb"), DATA / "npb" / "ft_S_np1.jsonl")
    java = parsed(
        "mpibench-java", pingpong_case("mpibench-java"), DATA / "mpibench_java" / "pingpong_np2.out"
    ) + parsed("npb-java", ft_case("npb-java"), DATA / "npb_java" / "ft-S-np1.out")
    with open_store(str(path)) as store:
        add_run(store, "local", {"implementation": "Open MPI", "version": "4.1.4"}, c)
        if with_java:
            mpj = {"implementation": "MPJ Express", "version": "0.44", "device": "multicore",
                   "jvm": "openjdk 17.0.15"}  # fmt: skip
            add_run(store, "local-mpj", mpj, java)


def test_java_section_pairs_every_point_with_the_c_one(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    write_db(db)
    out = tmp_path / "out"
    result = invoke("report", "--out", str(out), "--db", str(db))
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert "Java overhead: MPJ Express against C MPI" in page
    assert (out / "figures" / "java_slowdown.svg").is_file()
    rows = read_csv(out / "tables" / "java_vs_c.csv")
    got = {(r["benchmark"], r["metric"], r["size"] or r["kernel"]) for r in rows}
    for size in SIZES:
        assert ("mpibench", "latency", str(size)) in got
    assert ("npb", "time", "ft") in got and ("npb", "mops_total", "ft") in got
    for r in rows:
        assert r["java_platform"] == "local-mpj" and r["c_platform"] == "local"
        ratio = float(r["ratio"])
        assert math.isclose(ratio, float(r["java_value"]) / float(r["c_value"]), rel_tol=1e-9)
        # compare's verdict (one run a side: too few repetitions for the policy's verdict).
        assert r["verdict"] in {v.value for v in Verdict}
        if r["benchmark"] == "mpibench":  # many samples each side: a confidence interval
            assert float(r["ratio_low"]) <= ratio <= float(r["ratio_high"])
        else:  # one run each: no interval
            assert r["ratio_low"] == ""
    first = read_csv(out / "tables" / "java_first_iteration.csv")
    assert {int(r["size"]) for r in first} == set(SIZES)
    for r in first:
        assert math.isclose(
            float(r["first_over_warm"]),
            float(r["first_iteration"]) / float(r["jit_warm_mean"]), rel_tol=1e-9,
        )  # fmt: skip
        assert float(r["first_over_warm"]) > 1  # interpreted code is slower than JIT-compiled
    provenance = read_csv(out / "tables" / "provenance.csv")
    java_row = next(r for r in provenance if r["platform"] == "local-mpj")
    assert java_row["mpi"] == "MPJ Express" and java_row["mpi_device"] == "multicore"


def test_java_section_says_what_is_missing_without_java(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    write_db(db, with_java=False)
    out = tmp_path / "out"
    result = invoke("report", "--out", str(out), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "No Java runs (platforms whose MPI is MPJ Express" in (out / "index.html").read_text()
    assert not (out / "tables" / "java_vs_c.csv").exists()


def test_compare_refuses_java_against_c_unless_mixed_on_purpose(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    write_db(db)
    with open_store(str(db)) as store:
        labels = {(p, b, i) for p, b, i in store.implementations()}
    assert ("local-mpj", "npb", "java/mpj-express 0.44") in labels
    assert ("local-mpj", "mpibench", "java/mpj-express 0.44") in labels
    assert ("local", "npb", "hpceval") in labels
    refused = invoke("compare", "--baseline", "local", "--db", str(db))
    assert refused.exit_code == 2, refused.output
    line = " ".join(refused.output.split())
    assert "come from different implementations" in line and "--mix-implementations" in line
    assert "java/mpj-express 0.44 on local-mpj" in line and "hpceval on local" in line
    mixed = invoke("compare", "--baseline", "local", "--mix-implementations", "--db", str(db))
    assert mixed.exit_code == 0, mixed.output
    flat = " ".join(mixed.output.split())
    assert "implementations mixed: mpibench: hpceval on local; java/mpj-express 0.44" in flat
