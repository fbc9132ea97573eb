from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hpceval
from hpceval.analysis.frame import (
    CORE_COLUMNS,
    build_frame,
    check_frame,
    frame_from_measurements,
    group_codes,
    numeric,
    parameter_columns,
    point_columns,
    pool,
    select,
    text,
)
from hpceval.analysis.loading import load_frame
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import open_store


def m(
    value: float,
    samples: tuple[float, ...] = (),
    *,
    metric: str = "latency",
    unit: str = "us",
    origin: Origin = Origin.MEASURED,
    **parameters: int | float | str | bool,
) -> Measurement:
    return Measurement(
        benchmark="mpibench",
        metric=metric,
        value=value,
        unit=unit,
        parameters=parameters,
        samples=samples,
        origin=origin,
    )


def test_one_row_per_measurement_with_parameters_as_columns() -> None:
    frame = build_frame(
        [
            ("bare", 1, m(2.0, (1.0, 3.0), pattern="pingpong", size=8, pair="intra-node")),
            ("vm", 2, m(4.0, pattern="pingpong", size=16)),
            ("vm", None, m(5.0, (5.0,), pattern="bcast", size=8, ratio=0.5, quiet=True)),
        ]
    )
    check_frame(frame)
    assert list(frame.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    assert parameter_columns(frame) == ["pair", "pattern", "quiet", "ratio", "size"]
    assert str(frame["size"].dtype) == "Int64"
    assert str(frame["quiet"].dtype) == "boolean"
    assert frame["ratio"].dtype == np.float64
    assert isinstance(frame["pattern"].dtype, pd.CategoricalDtype)
    assert frame["run"].isna().tolist() == [False, False, True]
    assert frame["pair"].isna().tolist() == [False, True, True]
    # A measurement stored without samples contributes its value as its single sample.
    assert frame["samples"][1].tolist() == [4.0]
    assert frame["samples"][0].dtype == np.float64
    assert numeric(frame, "size").tolist() == [8.0, 16.0, 8.0]
    assert math.isnan(numeric(frame, "nodes")[0])
    assert text(frame, "pair").tolist() == ["intra-node", None, None]


def test_parameter_named_like_a_core_column_is_renamed() -> None:
    odd = Measurement("x", "latency", 1.0, "us", parameters={"value": 3, "samples": "a"})
    frame = frame_from_measurements([odd], platform="p")
    assert parameter_columns(frame) == ["parameter.samples", "parameter.value"]
    assert frame["value"].tolist() == [1.0]
    assert frame["parameter.value"].tolist() == [3]


def test_check_frame_names_missing_columns() -> None:
    with pytest.raises(ValueError, match="samples"):
        check_frame(pd.DataFrame({"run": [1], "platform": ["x"]}))


def test_point_columns_leave_out_file_names() -> None:
    frame = frame_from_measurements(
        [m(1.0, kernel="cg", file="cg.A.1.out"), m(2.0, kernel="cg", file="cg.A.2.out")],
        platform="p",
    )
    assert point_columns(frame) == ["benchmark", "metric", "unit", "kernel"]
    pooled = pool(frame, ["platform", "origin", *point_columns(frame)])
    assert pooled.count.tolist() == [2]
    assert pooled.mean.tolist() == [1.5]


def test_pool_repetitions_in_order() -> None:
    frame = frame_from_measurements(
        [
            m(2.0, (1.0, 3.0), size=1),
            m(10.0, (10.0,), size=2),
            m(5.0, (4.0, 6.0), size=1),
        ],
        platform="p",
    )
    pooled = pool(frame, ["size"])
    assert pooled.keys["size"].tolist() == [1, 2]
    assert pooled.count.tolist() == [4, 1]
    assert pooled.measurements.tolist() == [2, 1]
    assert pooled.samples(0).tolist() == [1.0, 3.0, 4.0, 6.0]
    assert pooled.mean.tolist() == [3.5, 10.0]
    assert pooled.var[0] == pytest.approx(np.var([1, 3, 4, 6], ddof=1))
    assert math.isnan(pooled.var[1])
    assert pooled.rows.tolist() == [0, 1, 0]


def test_group_codes_treat_missing_as_a_value() -> None:
    frame = pd.DataFrame(
        {
            "a": pd.Categorical(["x", None, "x", None]),
            "b": pd.array([1, 1, None, 1], dtype="Int64"),
        }
    )
    codes, first = group_codes(frame, ["a", "b"])
    assert codes[1] == codes[3]
    assert len(set(codes.tolist())) == 3
    assert sorted(first.tolist()) == [0, 1, 2]


def test_select_by_platform_origin_benchmark_and_metric() -> None:
    frame = build_frame(
        [
            ("a", 1, m(1.0)),
            ("b", 2, m(1.0, origin=Origin.SIMULATED)),
            ("b", 2, m(1.0, metric="bandwidth", unit="MB/s")),
        ]
    )
    assert len(select(frame, platforms=["b"])) == 2
    assert len(select(frame, origins=[Origin.SIMULATED])) == 1
    assert len(select(frame, metrics=["latency"], benchmark="mpibench")) == 2
    assert len(select(frame, benchmark="npb")) == 0


def test_load_frame_from_a_store(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "r.db")) as store:
        env = store.add_environment(Environment(facts={}, fingerprint="e"))
        run_ids = []
        for name in ("bare", "vm"):
            platform = store.add_platform(name, {"name": name})
            run_ids.append(
                store.create_run(
                    suite_name="s",
                    suite_config={},
                    platform_id=platform,
                    environment_id=env,
                    launcher="local",
                    cases=[("c", "mpibench", {})],
                    hpceval_version=hpceval.__version__,
                    git_revision=None,
                    origin=Origin.MEASURED,
                    host="h",
                    pid=1,
                )
            )
        store.add_measurement(run_ids[0], None, "c", "size=8", m(1.0, (0.9, 1.1), size=8))
        store.add_measurement(run_ids[1], None, "c", "size=8", m(3.0, (3.0,), size=8))
        frame = load_frame(store)
        assert frame["platform"].astype(str).tolist() == ["bare", "vm"]
        assert frame["run"].tolist() == run_ids
        assert frame["samples"][0].tolist() == [0.9, 1.1]
        assert len(load_frame(store, platforms=["vm"])) == 1
        assert len(load_frame(store, runs=[run_ids[0]])) == 1
        assert len(load_frame(store, metric="bandwidth")) == 0
