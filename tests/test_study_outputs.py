"""What a study report shows beyond answers: tables that never pool different points, values
relative to the baseline at the lowest core count, the cost section (catalog and date),
the figures (published points overlaid, projections labelled), projections with
`simulate` grouped with the study, and `--source`."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import hpceval
from hpceval.analysis.policy import StatisticPolicy
from hpceval.campaign import SilentReporter
from hpceval.cli import app
from hpceval.errors import UserError
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import Store, open_store
from hpceval.study.costs import cost_lines
from hpceval.study.extend import extend_study
from hpceval.study.figures import convert, series_of, write_figures
from hpceval.study.recipe import Cost, Figure, Recipe, Table
from hpceval.study.runner import measured_runs, projected_runs
from hpceval.study.tables import Column, differing_parameters, table_lines
from tests.conftest import have_mpi, write

runner = CliRunner()

Point = tuple[dict[str, Any], list[float], str]  # parameters, samples, unit


def add_run(
    store: Store,
    platform: str,
    benchmark: str,
    metrics: Mapping[str, Sequence[Point]],
    *,
    origin: Origin = Origin.MEASURED,
    config: Mapping[str, Any] | None = None,
) -> int:
    env = store.add_environment(Environment(facts={}, fingerprint="e"))
    run_id = store.create_run(
        suite_name="s",
        suite_config={},
        platform_id=store.add_platform(platform, dict(config or {})),
        environment_id=env,
        launcher="smpi" if origin is Origin.SIMULATED else "local",
        cases=[("k", benchmark, {})],
        hpceval_version=hpceval.__version__,
        git_revision=None,
        origin=origin,
        host="h",
        pid=1,
    )
    for metric, points in metrics.items():
        for params, samples, unit in points:
            m = Measurement(
                benchmark,
                metric,
                sum(samples) / len(samples),
                unit,
                params,
                samples=tuple(samples),
                origin=origin,
            )
            key = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
            store.add_measurement(run_id, None, "k", key, m)
    return run_id


def table(by: list[str], **select: Any) -> Table:
    return Table.model_validate({"title": "t", "by": by, "select": select})


# --------------------------------------------------------------------------- tables


def test_a_table_row_never_pools_points_that_differ_in_an_unlisted_parameter(
    tmp_path: Path,
) -> None:
    with open_store(str(tmp_path / "r.db")) as store:
        run = add_run(
            store,
            "bare",
            "npb",
            {
                "time": [
                    ({"kernel": "ft", "ranks": 2, "ranks_per_node": 1}, [4.0, 4.0, 4.0], "s"),
                    ({"kernel": "ft", "ranks": 2, "ranks_per_node": 2}, [2.0, 2.0, 2.0], "s"),
                    ({"kernel": "ep", "ranks": 2, "ranks_per_node": 2}, [1.0, 1.0, 1.0], "s"),
                ]
            },
        )
        lines = table_lines(
            store,
            table(["kernel", "ranks"], benchmark="npb", metric="time"),
            [Column("bare", (run,))],
            "bare",
        )
    assert lines[0] == "| kernel | ranks | ranks_per_node | bare |"
    assert "| ft | 2 | 1 | 4 s |" in lines and "| ft | 2 | 2 | 2 s |" in lines
    assert "| ep | 2 | 2 | 1 s |" in lines  # never "3 s": the mean of two different points
    assert any("Columns ranks_per_node added" in line for line in lines)


def outlying_latencies(store: Store) -> int:
    """A run whose 8 B point is one measurement stored the old way (value = the mean of its
    samples, one of them an outlier) and whose 1 KiB point is three repetitions, one of them
    an outlier (stored values: their medians)."""
    run = add_run(store, "bare", "mpibench", {})
    samples = {8: [[10.0, 10.0, 10.0, 10.0, 1000.0]], 1024: [[20.0] * 3, [20.0] * 3, [500.0] * 3]}
    for size, repetitions in samples.items():
        for rep, values in enumerate(repetitions):
            old = size == 8
            m = Measurement(
                "mpibench",
                "latency",
                sum(values) / len(values) if old else sorted(values)[len(values) // 2],
                "us",
                {"pattern": "pingpong", "size": size, "rep": rep},
                samples=tuple(values),
                statistic="mean" if old else "median",
            )
            store.add_measurement(run, None, "k", f"size={size},rep={rep}", m)
    return run


def test_a_cell_is_the_policys_statistic_of_its_samples_not_a_mean_of_values(
    tmp_path: Path,
) -> None:
    select = table(["size"], benchmark="mpibench", metric="latency")
    with open_store(str(tmp_path / "r.db")) as store:
        columns = [Column("bare", (outlying_latencies(store),))]
        median = table_lines(store, select, columns, "bare")
        mean = table_lines(store, select, columns, "bare", StatisticPolicy("mean"))
    # The median: one slow sample, or one slow repetition, does not move the point.
    assert "| 8 | 10 us |" in median and "| 1024 | 20 us |" in median
    # The mean (asked for): the outliers count, hierarchically (mean of repetitions' means).
    assert "| 8 | 208 us |" in mean and "| 1024 | 180 us |" in mean


def latency_figure(**more: Any) -> Figure:
    """A figure of mpibench's latency by size (lat.svg), with `more` of the figure's keys."""
    return Figure.model_validate(
        {
            "kind": "lines",
            "title": "latency by size",
            "file": "lat",
            "select": {"benchmark": "mpibench", "metric": "latency"},
            "x": "size",
            **more,
        }
    )


def test_a_figure_point_is_the_policys_statistic_of_its_samples(tmp_path: Path) -> None:
    spec = latency_figure()
    with open_store(str(tmp_path / "r.db")) as store:
        columns = [Column("bare", (outlying_latencies(store),))]
        (median,) = series_of(store, spec, columns, StatisticPolicy())
        (mean,) = series_of(store, spec, columns, StatisticPolicy("mean"))
    assert median.points == {8.0: 10.0, 1024.0: 20.0}
    assert mean.points == {8.0: 208.0, 1024.0: 180.0}
    assert median.unit == "us"


def test_the_fewest_parameters_that_keep_points_apart_are_added() -> None:
    # pair and nodes both tell the two ping-pongs apart; pair splits no ring line.
    points = {
        ("p", "2", "pingpong"): [
            {"pair": "intra-node", "nodes": "1", "binding": "core"},
            {"pair": "inter-node", "nodes": "2", "binding": "none"},
        ],
        ("p", "2", "ring"): [{"nodes": "1", "binding": "core"}],
        ("p", "4", "ring"): [{"nodes": "2", "binding": "none"}],
    }
    assert differing_parameters(points, [], lambda k: (k[0], k[2])) == ["pair"]
    assert differing_parameters({("a",): [{"x": "1"}, {"x": "1"}]}, []) == []


def test_an_application_is_shown_relative_to_the_baseline_at_its_lowest_core_count(
    tmp_path: Path,
) -> None:
    def points(t1: float, t2: float) -> dict[str, list[Point]]:
        return {
            "wall_time": [
                ({"system": "si", "ranks": 1}, [t1] * 3, "s"),
                ({"system": "si", "ranks": 2}, [t2] * 3, "s"),
            ]
        }

    with open_store(str(tmp_path / "r.db")) as store:
        columns = [
            Column("bare", (add_run(store, "bare", "qe", points(10.0, 6.0)),)),
            Column("vm", (add_run(store, "vm", "qe", points(20.0, 15.0)),)),
        ]
        spec = Table.model_validate(
            {
                "title": "t",
                "by": ["system", "ranks"],
                "select": {"benchmark": "qe", "metric": "wall_time"},
                "relative_to_lowest": "ranks",
            }
        )
        lines = table_lines(store, spec, columns, "bare")
    assert "| si | 1 | 10 s (1×) | 20 s (2×) |" in lines
    assert "| si | 2 | 6 s (0.6×) | 15 s (1.5×) |" in lines


# --------------------------------------------------------------------------- cost


def npb_points(seconds: float, mops: float) -> dict[str, list[Point]]:
    params = {"kernel": "cg", "class": "S", "ranks": 4, "nodes": 2, "ranks_per_node": 2}
    return {"time": [(params, [seconds] * 3, "s")], "mops_total": [(params, [mops] * 3, "Mop/s")]}


def test_cost_prices_each_node_as_the_catalog_entry_with_its_date(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "r.db")) as store:
        measured = add_run(store, "bare", "npb", npb_points(10.0, 2000.0))
        projected = add_run(store, "bare", "npb", npb_points(20.0, 1000.0), origin=Origin.SIMULATED)
        columns = [Column("bare", (measured,)), Column("bare", (projected,), simulated=True)]
        cost = Cost(catalog="ec2-cc-2012", instance="cc1.4xlarge", benchmark="npb")
        lines = cost_lines(store, cost, columns)
        text = "\n".join(lines)
        assert "catalog ec2-cc-2012" in text and "prices of 2012-05, USD" in text
        assert "Each node priced as **cc1.4xlarge** (on-demand, 1.3 USD per hour" in text
        # 2 nodes x 1.30 USD, a started hour billed; GOPS 2: 2.6 / 2 = 1.3 USD per GOPS-hour.
        assert "| bare | cg | S | 4 | 2 | 2 | 10 | 3600 | 2.6 | 2 | 1.3 |" in lines
        assert "| bare [projected] | cg | S | 4 | 2 | 2 | 20 | 3600 | 2.6 | 1 | 2.6 |" in lines
        assert any("price SimGrid projections" in line for line in lines)
        with pytest.raises(UserError, match="no entry"):
            cost_lines(store, cost, columns, catalog_name="csc-2016")
        normalized = "\n".join(cost_lines(store, Cost(catalog="csc-2016"), columns))
    assert "prices of 2016-05, EUR" in normalized
    assert "| CSC Sisu (Cray XC40) | CSC | academic | 0.5294 EUR | 0.0083 EUR |" in normalized
    assert "- bare: no price in its platform file" in normalized


# --------------------------------------------------------------------------- figures


def test_units_convert_only_within_one_quantity() -> None:
    assert convert(55.0, "us", "us") == 55.0
    assert convert(4.9, "Gbps", "MB/s") == pytest.approx(612.5)
    assert convert(1.0, "s", "MB/s") is None


def test_figures_overlay_published_points_and_label_projections(tmp_path: Path) -> None:
    def latencies(scale: float) -> dict[str, list[Point]]:
        return {
            "latency": [
                (
                    {"pattern": "pingpong", "pair": pair, "size": s},
                    [scale * (1 + s / 1e4)] * 3,
                    "us",
                )
                for pair in ("intra-node", "inter-node")
                for s in (8, 1024, 65536)
            ]
        }

    spec = latency_figure(series=["pair"], log_x=True, published="ec2-cc-p2p-latency")
    with open_store(str(tmp_path / "r.db")) as store:
        columns = [
            Column("bare", (add_run(store, "bare", "mpibench", latencies(1.0)),)),
            Column(
                "bare",
                (add_run(store, "bare", "mpibench", latencies(2.0), origin=Origin.SIMULATED),),
                simulated=True,
            ),
        ]
        ((_, rendered, svg),) = write_figures(store, [spec], columns, tmp_path, "rep")
    assert svg == tmp_path / "rep-lat.svg" and svg.with_suffix(".png").stat().st_size > 0
    text = svg.read_text()
    assert "published EC2-CC: CC1 (Xen HVM, PV NIC)" in text
    assert "bare [projected] pair=inter-node" in text
    assert "SimGrid SMPI projections" in rendered.caption
    assert "black markers at size 8" in rendered.caption


# --------------------------------------------------------------------------- projections

requires_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="needs SimGrid SMPI (smpicc, smpirun: Debian libsimgrid-dev)",
)


def projecting(extensions: list[dict[str, Any]]) -> Recipe:
    """A one-part mpibench recipe with these projections."""
    return Recipe.model_validate(
        {
            "name": "syn",
            "title": "t",
            "source": "s",
            "reference": "r",
            "description": "d",
            "part": [{"name": "p", "title": "t", "benchmark": [{"name": "mpibench"}]}],
            "extend": extensions,
        }
    )


def hockney(latency_us: float, mb_s: float) -> list[Point]:
    return [
        (
            {"pattern": "pingpong", "ranks": 2, "pair": pair, "size": size},
            [latency_us * (0.1 if pair == "intra-node" else 1) + size / mb_s] * 5,
            "us",
        )
        for pair in ("intra-node", "inter-node")
        for size in (8, 1024, 65536, 1048576)
    ]


@requires_smpi
def test_a_curve_is_projected_beyond_the_platform_and_grouped_with_the_study(
    tmp_path: Path,
) -> None:
    recipe = projecting(
        [
            {
                "name": "pingpong-4",
                "title": "4 ranks",
                "bench": ["mpibench"],
                "pattern": "pingpong",
                "sizes": [8, 65536],
                "ranks": [64],
                "smallest": {
                    "bench": ["mpibench"],
                    "pattern": "allreduce",
                    "sizes": [8, 65536],
                    "ranks": [4],
                },
            }
        ]
    )
    with open_store(str(tmp_path / "r.db")) as store:
        two = add_run(
            store, "two-nodes", "mpibench", {"latency": hockney(20.0, 1000.0)},
            config={"cores_per_node": 2, "nodes": 2},
        )  # fmt: skip
        one = add_run(
            store, "one-node", "mpibench", {"latency": hockney(20.0, 1000.0)[:4]},
            config={"cores_per_node": 2, "nodes": 1},
        )  # fmt: skip
        study = store.create_study("syn", {}, "two-nodes", {"platforms": ["two-nodes", "one-node"]})
        store.add_study_run(study, two, "two-nodes", [])
        store.add_study_run(study, one, "one-node", [])
        said: list[str] = []
        outcomes = extend_study(
            store, recipe, study, ["two-nodes", "one-node"], smallest=True,
            reporter=SilentReporter, say=said.append,
        )  # fmt: skip
        done, refused = outcomes
        assert done.run_id is not None and refused.run_id is None
        run = store.run(done.run_id)
        assert run.origin is Origin.SIMULATED and run.platform_name == "two-nodes"
        (m,) = {
            sm.measurement.parameters["ranks"]
            for sm in store.measurements(done.run_id, metric="time")
        }
        assert m == 4
        assert measured_runs(store, study) == {"two-nodes": two, "one-node": one}
        assert projected_runs(store, study) == {"two-nodes": [done.run_id]}
        # The platform that could not be projected says why, with its measured run.
        notes = {r.platform: r.notes for r in store.study_runs(study)}
        assert any("not projected" in n for n in notes["one-node"])
        # Nothing is projected twice.
        assert extend_study(
            store, recipe, study, ["two-nodes"], smallest=True,
            reporter=SilentReporter, say=said.append,
        ) == []  # fmt: skip


# --------------------------------------------------------------------------- --source

TINY_MILC = """
name = "tiny-milc"
title = "t"
source = "s"
reference = "r"
description = "d"
[[part]]
name = "apps"
title = "a"
pending = "a MILC source tree"
[[part.benchmark]]
name = "milc"
ranks = [1]
"""


def test_source_must_name_a_benchmark_of_the_recipe_that_takes_one(tmp_path: Path) -> None:
    recipe = write(tmp_path / "r.toml", TINY_MILC)
    db = str(tmp_path / "r.db")
    for value, why in (
        ("milc", "is not BENCHMARK=PATH"),
        ("lqcd=/tmp", "runs no benchmark 'lqcd'"),
        (f"milc={tmp_path / 'nowhere'}", "is not a directory"),
    ):
        result = runner.invoke(app, ["study", "run", str(recipe), "--source", value, "--db", db])
        assert result.exit_code == 2 and why in result.output, result.output


@pytest.mark.mpi
@pytest.mark.skipif(not have_mpi(), reason="needs mpicc and mpirun")
def test_without_a_source_the_part_is_left_out_saying_what_to_give(tmp_path: Path) -> None:
    recipe = write(tmp_path / "r.toml", TINY_MILC)
    result = runner.invoke(
        app, ["study", "run", str(recipe), "--db", str(tmp_path / "r.db"), "--no-extend"]
    )
    assert "milc: left out: " in result.output
    assert "MILC sources not given: set [sources] milc" in result.output


def test_a_source_is_added_to_the_platforms_sources(tmp_path: Path) -> None:
    """`--source milc=PATH` reaches the milc cases as the platform's [sources] milc (the
    official-code sources), as `hpceval run --source` does."""
    from hpceval.campaign import load_platform
    from hpceval.study.recipe import load_recipe
    from hpceval.study.runner import plan_platform

    tree = tmp_path / "milc_qcd"
    for d in ("ks_imp_dyn", "generic_ks", "libraries"):
        (tree / d).mkdir(parents=True)
    (tree / "Makefile").write_text("")
    (tree / "ks_imp_dyn" / "Make_template").write_text("")
    recipe = load_recipe(str(write(tmp_path / "r.toml", TINY_MILC))).config
    plan = plan_platform(recipe, load_platform("local"), smallest=True, max_ranks=None,
                         sources={"milc": str(tree)})  # fmt: skip
    assert plan.platform.config.sources["milc"] == str(tree)
    assert [c.options["source"] for c in plan.cases] == [str(tree.resolve())]


# --------------------------------------------------------------------------- planning


def test_java_parts_run_on_mpj_platforms_and_native_parts_elsewhere() -> None:
    from hpceval.campaign import load_platform
    from hpceval.study.recipe import load_recipe
    from hpceval.study.runner import plan_platform

    recipe = load_recipe("ec2-cc").config
    java = plan_platform(recipe, load_platform("local-mpj"), smallest=True, max_ranks=None)
    assert {c.benchmark for c in java.cases} <= {"mpibench-java"}
    assert any(
        "npb: left out: a native program, and this platform's launcher starts Java" in n
        for n in java.notes
    )
    native = plan_platform(recipe, load_platform("local"), smallest=True, max_ranks=None)
    assert "mpibench-java" not in {c.benchmark for c in native.cases}
    assert any("mpibench-java: left out: a Java program" in n for n in native.notes)


@requires_smpi
def test_a_refused_curve_is_noted_and_projected_when_accepted(tmp_path: Path) -> None:
    recipe = projecting(
        [
            {
                "name": "ring",
                "title": "t",
                "bench": ["mpibench"],
                "pattern": "pingpong",
                "sizes": [8],
                "ranks": [2],
            }
        ]
    )
    # The 1 MiB inter-node point at a third of the 64 KiB bandwidth: refused by the checks.
    curve = [
        (p, [s[0] * 3] * 5 if p["size"] == 1048576 and p["pair"] == "inter-node" else s, u)
        for p, s, u in hockney(20.0, 1000.0)
    ]
    with open_store(str(tmp_path / "r.db")) as store:
        run = add_run(
            store, "bumpy", "mpibench", {"latency": curve},
            config={"cores_per_node": 2, "nodes": 2},
        )  # fmt: skip
        study = store.create_study("syn", {}, "bumpy", {"platforms": ["bumpy"]})
        store.add_study_run(study, run, "bumpy", [])
        (refused,) = extend_study(
            store, recipe, study, ["bumpy"], smallest=False,
            reporter=SilentReporter, say=lambda _: None,
        )  # fmt: skip
        assert refused.run_id is None and "not a plausible PingPong curve" in refused.note
        (accepted,) = extend_study(
            store, recipe, study, ["bumpy"], smallest=False,
            reporter=SilentReporter, say=lambda _: None, accept_curve=True,
        )  # fmt: skip
        assert accepted.run_id is not None
        assert "calibrated on a curve with flagged points" in accepted.note
