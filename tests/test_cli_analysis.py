"""The analysis commands (compare, cost, recommend, fit) on a small synthetic database."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import hpceval
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import open_store
from tests.cli_helpers import invoke, one_line_error, read_csv

SIZES = [2**k for k in range(17)]  # 1 B .. 64 KiB
# Hockney parameters (α µs, β MB/s): vm's time is exactly twice bare's at every size.
HOCKNEY = {"bare": (1.0, 1000.0), "vm": (2.0, 500.0)}
# NPB cg.C time (s) and Mop/s by node count (16 ranks per node).
NPB = {
    "bare": {1: (100.0, 2000.0), 2: (60.0, 4000.0)},
    "vm": {1: (150.0, 1000.0), 2: (90.0, 2000.0)},
}
CATALOG = """
format = 1
name = "test-prices"
source = "made up for the tests"
date = "2024-01"
currency = "USD"
billing = "per-second"
[rates]
EUR = 0.5
[[entry]]
name = "vm"
[entry.hourly]
on-demand = 3.0
spot = 1.0
[[entry]]
name = "per-tflops-only"
[entry.per_normalized_node_hour]
on-demand = 1.0
"""


# Placements in the one notation (hpceval.labels).
P1 = "1 node × 16 ranks × 1 thread, intra-node"
P2 = "2 nodes × 16 ranks × 1 thread, inter-node"


def spread(value: float) -> tuple[float, ...]:
    return (value * 0.99, value, value * 1.01)


def measurement(
    benchmark: str, metric: str, unit: str, value: float, parameters: Mapping[str, Any]
) -> Measurement:
    return Measurement(benchmark, metric, value, unit, dict(parameters), spread(value))


# Every point is measured three times (the repetitions a verdict needs), around its value.
REPETITIONS = (1.0, 0.99, 1.01)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """bare (priced 1 USD per node-hour in its platform file) and vm (no price)."""
    path = str(tmp_path / "results.db")
    with open_store(path) as store:
        env = store.add_environment(Environment(facts={}, fingerprint="e"))
        for name in ("bare", "vm"):
            config: dict[str, Any] = {"name": name}
            if name == "bare":
                config["price"] = {"per_node_hour": 1.0, "currency": "USD"}
            run_id = store.create_run(
                suite_name="s",
                suite_config={},
                platform_id=store.add_platform(name, config),
                environment_id=env,
                launcher="local",
                cases=[("p2p", "mpibench", {}), ("npb", "npb", {})],
                hpceval_version=hpceval.__version__,
                git_revision=None,
                origin=Origin.MEASURED,
                host="h",
                pid=1,
            )
            alpha, beta = HOCKNEY[name]
            for size in SIZES:
                params = {"pattern": "pingpong", "pair": "intra-node", "size": size}
                for f in REPETITIONS:
                    m = measurement("mpibench", "latency", "us", f * (alpha + size / beta), params)
                    store.add_measurement(run_id, None, "p2p", f"size={size}", m)
            for nodes, (seconds, mops) in NPB[name].items():
                params = {
                    "kernel": "cg",
                    "class": "C",
                    "ranks": 16 * nodes,
                    "nodes": nodes,
                    "ranks_per_node": 16,
                    "threads_per_rank": 1,
                }
                point = f"nodes={nodes}"
                for f in REPETITIONS:
                    store.add_measurement(
                        run_id, None, "npb", point,
                        measurement("npb", "time", "s", seconds * f, params),
                    )  # fmt: skip
                    store.add_measurement(
                        run_id, None, "npb", point,
                        measurement("npb", "mops_total", "Mop/s", mops / f, params),
                    )  # fmt: skip
    return path


@pytest.fixture
def catalog(tmp_path: Path) -> str:
    path = tmp_path / "prices.toml"
    path.write_text(CATALOG)
    return str(path)


# --------------------------------------------------------------------------- compare


def test_compare_summaries_points_and_exports(db: str, tmp_path: Path) -> None:
    out_csv, out_json = tmp_path / "c.csv", tmp_path / "c.json"
    r = invoke(
        "compare", "--baseline", "bare", "vm", "--db", db, "--csv", str(out_csv),
        "--json", str(out_json), "--top", "3",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    # vm's latency is twice bare's (performance 0.5, +100 %); its NPB time 1.5 times.
    assert "shared-memory messaging" in r.output and "0.5000" in r.output
    assert "+100.0%" in r.output
    assert "compute kernels" in r.output and "0.6667" in r.output and "+50.0%" in r.output
    assert "significant differences: 3 largest of 21" in r.output
    rows = read_csv(out_csv)
    assert len(rows) == 17 + 4  # latency at 17 sizes; NPB time and Mop/s at 2 node counts
    latency = [row for row in rows if row["metric"] == "latency"]
    assert {round(float(row["ratio"]), 9) for row in latency} == {2.0}
    assert {row["verdict"] for row in latency} == {"slower"}
    for row in latency:
        assert float(row["ratio_low"]) < 2.0 < float(row["ratio_high"])
    mops = [row for row in rows if row["metric"] == "mops_total"]
    assert sorted(float(row["ratio"]) for row in mops) == pytest.approx([0.5, 0.5])
    data = json.loads(out_json.read_text())
    assert len(data) == len(rows) and {d["platform"] for d in data} == {"vm"}


def test_compare_filters_by_benchmark_and_metric(db: str, tmp_path: Path) -> None:
    out_csv = tmp_path / "npb.csv"
    r = invoke(
        "compare", "--baseline", "vm", "--db", db, "--benchmark", "npb", "--metric", "time",
        "--csv", str(out_csv),
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = read_csv(out_csv)
    assert [row["platform"] for row in rows] == ["bare", "bare"]
    assert [float(row["ratio"]) for row in rows] == pytest.approx([100 / 150, 60 / 90])
    assert {row["verdict"] for row in rows} == {"faster"}
    assert "compute kernels" in r.output and "1.5000" in r.output


def test_compare_errors(db: str, tmp_path: Path) -> None:
    one_line_error(invoke("compare", "--baseline", "cloud", "--db", db), "'cloud'")
    one_line_error(invoke("compare", "--baseline", "bare", "nope", "--db", db), "'nope'")
    one_line_error(
        invoke("compare", "--baseline", "bare", "--db", db, "--benchmark", "fio"),
        "no fio measurements",
    )
    one_line_error(
        invoke("compare", "--baseline", "bare", "--db", str(tmp_path / "missing.db")),
        "missing.db",
    )
    assert not (tmp_path / "missing.db").exists()


# --------------------------------------------------------------------------- cost


def test_cost_needs_a_price_for_every_platform(db: str) -> None:
    one_line_error(invoke("cost", "--db", db), "platform 'vm' has no price")
    r = invoke("cost", "--db", db, "--catalog", "ec2-cc-2012")
    one_line_error(r, "--instance vm=ENTRY")


def test_cost_with_platform_and_catalog_prices(db: str, catalog: str, tmp_path: Path) -> None:
    out_csv, out_json = tmp_path / "cost.csv", tmp_path / "cost.json"
    r = invoke(
        "cost", "--db", db, "--catalog", catalog, "--csv", str(out_csv), "--json", str(out_json)
    )
    assert r.exit_code == 0, r.output
    assert "test-prices (2024-01, made up for the tests)" in r.output
    rows = read_csv(out_csv)
    got = {
        (row["platform"], row["pricing"], int(float(row["nodes"]))): (
            float(row["run_cost"]),
            float(row["price_per_gops_hour"]),
        )
        for row in rows
    }
    # bare at 1 USD per node-hour (its platform file): 100 s on 1 node, 60 s on 2 nodes;
    # USD per GOPS = hourly price of the nodes / GOPS = 1/2 and 2/4.
    # vm at the catalog's 3 USD (on-demand) and 1 USD (spot): 150 s on 1, 90 s on 2 nodes.
    expected = {
        ("bare", "on-demand", 1): (100 / 3600, 0.5),
        ("bare", "on-demand", 2): (2 * 60 / 3600, 0.5),
        ("vm", "on-demand", 1): (3 * 150 / 3600, 3.0),
        ("vm", "on-demand", 2): (6 * 90 / 3600, 3.0),
        ("vm", "spot", 1): (150 / 3600, 1.0),
        ("vm", "spot", 2): (2 * 90 / 3600, 1.0),
    }
    assert got.keys() == expected.keys()
    for key, (cost, per_gops) in expected.items():
        assert got[key] == pytest.approx((cost, per_gops)), key
    assert {row["currency"] for row in rows} == {"USD"}
    assert len(json.loads(out_json.read_text())) == 6
    assert "0.125" in r.output  # vm on-demand, 1 node
    assert "USD per GOPS-hour" in r.output and "time s (median)" in r.output
    assert {row["placement"] for row in rows} == {
        "1 node × 16 ranks × 1 thread, intra-node",
        "2 nodes × 16 ranks × 1 thread, inter-node",
    }
    assert {row["billing"] for row in rows} == {"per-second"}
    assert {row["repetitions"] for row in rows} == {"3"}


def test_cost_in_another_currency_and_with_instance_mapping(db: str, catalog: str) -> None:
    r = invoke("cost", "--db", db, "--catalog", catalog, "--currency", "EUR")
    assert r.exit_code == 0, r.output
    assert "cost of the NPB runs (EUR; time: median over repetitions)" in r.output
    assert "0.0625" in r.output  # 0.125 USD at 0.5 EUR per USD
    r = invoke(
        "cost", "--db", db, "--catalog", "ec2-cc-2012", "--instance", "vm=cc2.8xlarge",
        "--instance", "bare=cc1.4xlarge",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "cc2.8xlarge" in r.output and "cc1.4xlarge" in r.output
    # EC2 in 2012 billed every started hour: 90 s and 100 s are each one hour.
    assert "4.8 " in r.output  # vm: 2 nodes x 2.40 USD x 1 h
    assert "1.3 " in r.output  # bare: 1 node x 1.30 USD x 1 h
    assert "billed per-started-hour" in r.output and " 3600 " in r.output
    one_line_error(invoke("cost", "--db", db, "--currency", "GBP"), "no price")


def test_cost_errors(db: str, catalog: str) -> None:
    one_line_error(invoke("cost", "--db", db, "--catalog", "nowhere"), "unknown catalog 'nowhere'")
    one_line_error(
        invoke("cost", "--db", db, "--catalog", catalog, "--instance", "vm"),
        "expected PLATFORM=ENTRY",
    )
    one_line_error(
        invoke("cost", "--db", db, "--catalog", catalog, "--instance", "vm=missing"),
        "no entry 'missing'",
    )
    one_line_error(
        invoke("cost", "--db", db, "--catalog", catalog, "--instance", "vm=per-tflops-only"),
        "per normalized node-hour",
    )
    one_line_error(
        invoke("cost", "--db", db, "--catalog", catalog, "--currency", "GBP"),
        "no exchange rate",
    )


# --------------------------------------------------------------------------- recommend


def test_recommend_fastest_cheapest_pareto_and_deadline(db: str, tmp_path: Path) -> None:
    out_csv = tmp_path / "rec.csv"
    r = invoke(
        "recommend", "--workload", "cg.C", "--db", db, "--deadline", "80", "--csv", str(out_csv)
    )
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("statistic: median")
    assert f"fastest:  bare (measured) [{P2}, on-demand]: 60 s [" in lines[2]
    assert "(3 reps), 0.03333 USD" in lines[2]
    assert f"cheapest: bare (measured) [{P1}, on-demand]: 100 s [" in lines[3]
    assert f"deadline: bare (measured) [{P2}, on-demand] meets the 80 s deadline" in lines[4]
    assert "without a price: vm" in r.output
    rows = read_csv(out_csv)
    assert [row["configuration"] for row in rows] == [
        "bare (measured) [2 nodes × 16 ranks × 1 thread, inter-node, on-demand]",
        "vm (measured) [2 nodes × 16 ranks × 1 thread, inter-node]",
        "bare (measured) [1 node × 16 ranks × 1 thread, intra-node, on-demand]",
        "vm (measured) [1 node × 16 ranks × 1 thread, intra-node]",
    ]
    assert {row["statistic"] for row in rows} == {"median"}
    assert [row["pareto"] for row in rows] == ["True", "False", "True", "False"]
    assert float(rows[0]["cost"]) == pytest.approx(2 * 60 / 3600)
    assert [row["meets_deadline"] for row in rows] == ["True", "False", "False", "False"]


def test_recommend_with_catalog_ranks_and_no_deadline_met(db: str, catalog: str) -> None:
    r = invoke("recommend", "-w", "CG.c:32", "--db", db, "--catalog", catalog, "--deadline", "10")
    assert r.exit_code == 0, r.output
    assert "workload npb(kernel=cg, class=C, ranks=32)" in r.output
    assert f"fastest:  bare (measured) [{P2}, on-demand]: 60 s" in r.output
    assert f"cheapest: bare (measured) [{P2}, on-demand]" in r.output
    assert "deadline: none meets it: none of the 3 priced configurations" in r.output
    assert "vm (measured) [2 nodes × 16 ranks × 1 thread, inter-node, spot]" in r.output


def test_recommend_errors(db: str) -> None:
    one_line_error(invoke("recommend", "-w", "cg", "--db", db), "expected KERNEL.CLASS[:RANKS]")
    one_line_error(invoke("recommend", "-w", "cg.C:x", "--db", db), "'cg.C:x'")
    one_line_error(invoke("recommend", "-w", "ft.C", "--db", db), "no measurements of npb")
    one_line_error(invoke("recommend", "-w", "cg.C:7", "--db", db), "ranks=7")
    one_line_error(invoke("recommend", "-w", "cg.C", "--db", db, "--deadline", "-1"), "--deadline")


# --------------------------------------------------------------------------- fit


def test_fit_recovers_hockney_parameters(db: str, tmp_path: Path) -> None:
    out_csv, out_json = tmp_path / "fit.csv", tmp_path / "fit.json"
    r = invoke("fit", "--db", db, "--csv", str(out_csv), "--json", str(out_json))
    assert r.exit_code == 0, r.output
    rows = {row["platform"]: row for row in read_csv(out_csv)}
    assert rows.keys() == {"bare", "vm"}
    for name, (alpha, beta) in HOCKNEY.items():
        row = rows[name]
        assert float(row["alpha_us"]) == pytest.approx(alpha, rel=1e-6)
        assert float(row["beta_mb_s"]) == pytest.approx(beta, rel=1e-6)
        assert float(row["n_half_bytes"]) == pytest.approx(alpha * beta, rel=1e-6)
        assert float(row["series_n_half_bytes"]) == pytest.approx(alpha * beta, rel=1e-6)
        assert row["breakpoints"] == "" and row["segments"] == "1" and row["segment"] == "1"
        assert (row["first_size"], row["last_size"]) == ("1", "65536")
        assert float(row["rms_residual"]) < 1e-6
        assert row["placement"] == "pair=intra-node pattern=pingpong"
        assert row["statistic"] == "median" and row["runs"] in ("1", "2")
        assert row["warning"] == ""
    assert len(json.loads(out_json.read_text())) == 2
    assert "1000" in r.output and "500" in r.output
    assert "1/1" in r.output and "1–65536" in r.output and "warning" not in r.stderr


def test_fit_errors(db: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    with open_store(str(empty)):
        pass
    one_line_error(invoke("fit", "--db", str(empty)), "no mpibench latency measurements")


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", ["compare", "cost", "recommend", "fit"])
def test_every_command_has_help(command: str) -> None:
    r = invoke(command, "--help")
    assert r.exit_code == 0 and "--db" in r.output and "--csv" in r.output


def test_multi_zone_workloads_parse() -> None:
    from hpceval.cli_cost import parse_workload
    from hpceval.errors import UserError

    wanted = parse_workload("BT-MZ.c:64")
    assert (wanted.benchmark, dict(wanted.problem), wanted.ranks) == (
        "npb", {"kernel": "bt-mz", "class": "C"}, 64,
    )  # fmt: skip
    assert parse_workload("sp-mz.A").problem["kernel"] == "sp-mz"
    lu_mz = parse_workload("lu-mz.C:64")
    assert (dict(lu_mz.problem), lu_mz.ranks) == ({"kernel": "lu-mz", "class": "C"}, 64)
    with pytest.raises(UserError, match=r"expected KERNEL\.CLASS"):
        parse_workload("bt-xy.C:64")


def test_recommend_multi_zone_workload(db: str) -> None:
    # The database has CG only: the MZ workload is understood, and found missing.
    one_line_error(invoke("recommend", "-w", "bt-mz.C:64", "--db", db), "no measurements of npb")
