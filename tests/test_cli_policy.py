"""The flags every analysis command shares (--statistic, --min-repetitions,
--baseline-origin, --allow-mixed-origins, --origin) and the errors that name them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import hpceval
from hpceval.model import Environment, Measurement, Origin
from hpceval.statistics import describe
from hpceval.store import open_store
from tests.cli_helpers import invoke, one_line_error, read_csv

# The latency of each platform, 8 B ping-pong, per repetition: skewed samples (one
# descheduled sample in five), as on a loaded machine.
LATENCY = {"bare": 1.0, "vm": 2.0}
PACKED = {"per_node_hour": 1.0, "currency": "USD"}
# The placements in the notation of hpceval.labels.
PAIR = "intra-node"
TWO = f"1 node × 2 ranks × 1 thread, {PAIR}"
FOUR = f"1 node × 4 ranks × 1 thread, {PAIR}"


def _run(store: Any, platform: str, origin: Origin, config: dict[str, Any]) -> int:
    env = store.add_environment(Environment(facts={}, fingerprint=f"e-{platform}"))
    run_id: int = store.create_run(
        suite_name="s", suite_config={}, platform_id=store.add_platform(platform, config),
        environment_id=env, launcher="local", cases=[("p2p", "mpibench", {}), ("npb", "npb", {})],
        hpceval_version=hpceval.__version__, git_revision=None, origin=origin, host="h", pid=1,
    )  # fmt: skip
    return run_id


def _fill(store: Any, run_id: int, latency: float, origin: Origin, repetitions: int) -> None:
    for rep in range(repetitions):
        level = latency * (1 + 0.01 * rep)
        samples = (level, level * 1.01, level * 0.99, level * 1.02, level * 30.0)
        for size in (8, 1024, 65536, 1 << 20):
            t = tuple(s + size / 1000.0 for s in samples)
            params = {"pattern": "pingpong", "pair": "intra-node", "size": size}
            m = Measurement("mpibench", "latency", sum(t) / len(t), "us", params, t,
                            statistics=describe(t), origin=origin)  # fmt: skip
            store.add_measurement(run_id, None, "p2p", f"size={size}-{rep}", m)
            bw = tuple(size / x for x in t)
            store.add_measurement(run_id, None, "p2p", f"bw={size}-{rep}",
                                  Measurement("mpibench", "bandwidth", size / (sum(t) / len(t)),
                                              "MB/s", params, bw, origin=origin))  # fmt: skip
        for oversubscribed, nodes in ((False, 1), (True, 1)):
            params = {"kernel": "cg", "class": "A", "ranks": 4 if oversubscribed else 2,
                      "nodes": nodes, "ranks_per_node": 4 if oversubscribed else 2,
                      "threads_per_rank": 1, "oversubscribed": oversubscribed}  # fmt: skip
            seconds = 10.0 * latency * (0.5 if oversubscribed else 1.0) * (1 + 0.01 * rep)
            store.add_measurement(run_id, None, "npb", f"cg-{oversubscribed}-{rep}",
                                  Measurement("npb", "time", seconds, "s", params, (seconds,),
                                              origin=origin))  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> str:
    """bare (measured, 3 repetitions, priced), vm (measured, 2 repetitions, priced),
    netns (emulated, 3 repetitions)."""
    path = str(tmp_path / "results.db")
    with open_store(path) as store:
        for platform, origin, reps, latency in (
            ("bare", Origin.MEASURED, 3, 1.0),
            ("vm", Origin.MEASURED, 2, 2.0),
            ("netns", Origin.EMULATED, 3, 3.0),
        ):
            run_id = _run(store, platform, origin, {"name": platform, "price": PACKED})
            _fill(store, run_id, latency, origin, reps)
    return path


def test_compare_names_the_statistic_and_the_repetitions(db: str, tmp_path: Path) -> None:
    out = tmp_path / "c.csv"
    r = invoke("compare", "-b", "bare", "vm", "--db", db, "--csv", str(out))
    assert r.exit_code == 0, r.output
    assert r.output.startswith("statistic: median (median of samples per repetition")
    assert "no verdict, too few repetitions" in r.output
    assert "too few reps" in r.output
    rows = read_csv(out)
    assert {row["statistic"] for row in rows} == {"median"}
    assert {row["verdict"] for row in rows} == {"too few repetitions"}
    assert {row["note"] for row in rows} == {"too few repetitions (n=2, need ≥3)"}
    latency = next(r for r in rows if r["metric"] == "latency" and r["size"] == "8")
    # A repetition's median is 1.01 x its level + 0.008 (8 B / 1000); the medians over
    # repetitions: vm's levels 2, 2.02; bare's 1, 1.01, 1.02.
    vm = (2.02 + 2.0402) / 2 + 0.008
    bare = 1.01 * 1.01 + 0.008
    assert float(latency["ratio"]) == pytest.approx(vm / bare)
    assert float(latency["mean"]) > float(latency["median"])  # the descheduled samples
    bandwidth = next(r for r in rows if r["metric"] == "bandwidth" and r["size"] == "8")
    assert float(bandwidth["ratio"]) == pytest.approx(1 / float(latency["ratio"]))
    # Two repetitions are enough when asked: a verdict.
    r = invoke("compare", "-b", "bare", "vm", "--db", db, "--csv", str(out),
               "--min-repetitions", "2")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert {row["verdict"] for row in read_csv(out)} == {"slower"}


@pytest.mark.parametrize("statistic", ["mean", "min"])
def test_compare_with_another_statistic(db: str, tmp_path: Path, statistic: str) -> None:
    out = tmp_path / "c.csv"
    r = invoke("compare", "-b", "bare", "vm", "--db", db, "--csv", str(out),
               "--statistic", statistic)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"statistic: {statistic} ")
    rows = read_csv(out)
    assert {row["statistic"] for row in rows} == {statistic}
    for row in rows:
        assert float(row["value"]) == pytest.approx(float(row[statistic]))


def test_statistic_from_the_environment(db: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    out = tmp_path / "c.csv"
    monkeypatch.setenv("HPCEVAL_STATISTIC", "mean")
    r = invoke("compare", "-b", "bare", "vm", "--db", db, "--csv", str(out))
    assert r.exit_code == 0, r.output
    assert {row["statistic"] for row in read_csv(out)} == {"mean"}


def test_origins_are_put_side_by_side_only_when_asked(db: str, tmp_path: Path) -> None:
    one_line_error(invoke("compare", "-b", "bare", "--db", db), "--allow-mixed-origins")
    out = tmp_path / "c.csv"
    r = invoke("compare", "-b", "bare", "--db", db, "--allow-mixed-origins", "--csv", str(out))
    assert r.exit_code == 0, r.output
    assert "netns (emulated)" in r.output and "vm (measured)" in r.output
    assert {(row["platform"], row["origin"]) for row in read_csv(out)} == {
        ("vm", "measured"),
        ("netns", "emulated"),
    }
    r = invoke("compare", "-b", "netns", "bare", "--db", db, "--baseline-origin", "emulated",
               "--allow-mixed-origins", "--csv", str(out))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert {row["baseline_origin"] for row in read_csv(out)} == {"emulated"}
    one_line_error(invoke("compare", "-b", "bare", "--db", db, "--baseline-origin", "real"),
                   "--baseline-origin 'real': expected one of measured, emulated, simulated")
    one_line_error(invoke("compare", "-b", "bare", "vm", "--db", db,
                          "--baseline-origin", "simulated"),
                   "--baseline-origin simulated: baseline 'bare' has no simulated")  # fmt: skip


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("compare", "-b", "bare", "vm", "--statistic", "mode"), "--statistic 'mode'"),
        (("cost", "--statistic", "average"), "--statistic 'average'"),
        (("recommend", "-w", "cg.A", "--statistic", "max"), "--statistic 'max'"),
        (("fit", "--statistic", "p99"), "--statistic 'p99'"),
        (("cost", "--origin", "real"), "--origin 'real'"),
        (("recommend", "-w", "cg.A", "--origin", "real"), "--origin 'real'"),
        (("fit", "--origin", "real"), "--origin 'real'"),
        (("cost",), "--allow-mixed-origins"),
        (("recommend", "-w", "cg.A"), "--allow-mixed-origins"),
        (("cost", "--origin", "simulated"), "--origin simulated: no simulated data"),
        (("cost", "--catalog", "csc-2016", "--instance", "bare=AWS c4.8xlarge", "--origin",
          "measured"), "--node-tflops PLATFORM=TFLOPS"),
        (("cost", "--catalog", "csc-2016", "--node-tflops", "bare=-1", "--origin", "measured"),
         "not a positive"),
        (("cost", "--catalog", "csc-2016", "--node-tflops", "bare", "--origin", "measured"),
         "PLATFORM=TFLOPS"),
    ],
)
def test_errors_name_the_flags(db: str, args: tuple[str, ...], fragment: str) -> None:
    r = invoke(*args, "--db", db)
    one_line_error(r, fragment)
    # Never a Python parameter: keyword=True, allow_cross_origin, baseline_origin.
    assert not re.search(r"\b\w+_\w+=|allow_\w+|baseline_origin\b", r.output), r.output


def test_cost_bills_and_names_its_statistic(db: str, tmp_path: Path) -> None:
    out = tmp_path / "cost.csv"
    r = invoke("cost", "--db", db, "--origin", "measured", "--csv", str(out))
    assert r.exit_code == 0, r.output
    assert "time s (median)" in r.output and "USD per GOPS-hour" in r.output
    rows = read_csv(out)
    assert {row["statistic"] for row in rows} == {"median"}
    bare = next(r for r in rows if r["platform"] == "bare" and r["oversubscribed"] == "False")
    assert float(bare["time_s"]) == pytest.approx(10.1)  # median of 10, 10.1, 10.2
    assert (bare["time_min"], bare["time_mean"]) == ("10.0", "10.1")
    assert bare["repetitions"] == "3"
    assert bare["placement"] == f"1 node × 2 ranks × 1 thread, {PAIR}"
    # csc-2016, priced with the node's peak: 0.5294 EUR per normalized node-hour x 2 TFLOPS.
    r = invoke("cost", "--db", db, "--origin", "measured", "--catalog", "csc-2016",
               "--instance", "bare=CSC Sisu (Cray XC40)", "--instance", "vm=AWS c4.8xlarge",
               "--node-tflops", "bare=2", "--node-tflops", "vm=0.5", "--csv", str(out))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "0.5294 EUR per normalized node-hour × 2 TFLOPS node peak" in r.output
    rows = read_csv(out)
    sisu = next(r for r in rows if r["platform"] == "bare" and r["oversubscribed"] == "False")
    assert float(sisu["hourly"]) == pytest.approx(0.5294 * 2)
    assert sisu["billing"] == "per-second"
    # Per second: 10.1 s is billed as 11 s.
    assert float(sisu["billed_s"]) == 11.0
    assert float(sisu["run_cost"]) == pytest.approx(0.5294 * 2 * 11 / 3600)
    aws = [r for r in rows if r["platform"] == "vm"]
    assert {r["billing"] for r in aws} == {"per-started-hour"}
    assert {float(r["billed_s"]) for r in aws} == {3600.0}
    assert {r["pricing"] for r in aws} == {"spot", "on-demand", "reserved"}


def test_recommend_excludes_and_says_why(db: str, tmp_path: Path) -> None:
    out = tmp_path / "rec.csv"
    r = invoke("recommend", "-w", "cg.A", "--db", db, "--origin", "measured", "--deadline",
               "100", "--csv", str(out))  # fmt: skip
    assert r.exit_code == 0, r.output
    # bare's oversubscribed run is fastest (5 s) but not recommended; vm has 2 repetitions.
    assert f"fastest:  bare (measured) [{TWO}, on-demand]: 10.1 s" in r.output
    assert (f"not recommended: bare (measured) [{FOUR}, oversubscribed, on-demand]: "
            "oversubscribed (more ranks than cores; --allow-oversubscribed)") in r.output
    assert (f"not recommended: vm (measured) [{TWO}, on-demand]: too few repetitions "
            "(n=2, need ≥3)") in r.output
    rows = read_csv(out)
    assert {row["statistic"] for row in rows} == {"median"}
    assert sum(1 for row in rows if row["excluded"]) == 3
    r = invoke("recommend", "-w", "cg.A", "--db", db, "--origin", "measured",
               "--allow-oversubscribed", "--min-repetitions", "2")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"fastest:  bare (measured) [{FOUR}, oversubscribed, on-demand]: 5.05 s" in r.output
    assert "not recommended:" not in r.output
    r = invoke("recommend", "-w", "cg.A", "--db", db, "--allow-mixed-origins",
               "--min-repetitions", "2")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "netns (emulated)" in r.output


def test_show_names_its_statistic(db: str) -> None:
    r = invoke("show", "--run", "1", "--db", db)
    assert r.exit_code == 0, r.output
    assert "median of samples per repetition" in r.output
    assert "latency µs (median)" in r.output and "mean µs" in r.output
    assert "NPB kernels, hpceval (verified runs; median of the repetitions)" in r.output
    r = invoke("show", "--run", "1", "--db", db, "--statistic", "mean")
    assert "latency µs (mean)" in r.output and "bandwidth MB/s (n/mean(t))" in r.output
    one_line_error(invoke("show", "--db", db, "--statistic", "best"), "--statistic 'best'")


def test_fit_and_report_take_the_same_flags(db: str, tmp_path: Path) -> None:
    out = tmp_path / "fit.csv"
    r = invoke("fit", "--db", db, "--origin", "measured", "--statistic", "min", "--csv", str(out))
    assert r.exit_code == 0, r.output
    rows = read_csv(out)
    assert {row["origin"] for row in rows} == {"measured"}
    assert {row["statistic"] for row in rows} == {"min"}
    report = invoke("report", "--out", str(tmp_path / "report"), "--db", db, "--baseline",
                    "bare", "--statistic", "mean", "--min-repetitions", "2",
                    "--baseline-origin", "measured")  # fmt: skip
    assert report.exit_code == 0, report.output
    html = (tmp_path / "report" / "index.html").read_text()
    assert "statistic: mean" in html
    one_line_error(invoke("report", "--out", str(tmp_path / "r2"), "--db", db,
                          "--baseline-origin", "real"), "--baseline-origin 'real'")  # fmt: skip
