from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hpceval.analysis import compare as compare_module
from hpceval.analysis import ratios as ratios_module
from hpceval.analysis.categories import Category, categorize
from hpceval.analysis.compare import CrossOriginError, compare
from hpceval.analysis.frame import Entry, build_frame
from hpceval.analysis.policy import StatisticPolicy
from hpceval.analysis.ratios import Verdict
from hpceval.errors import UserError
from hpceval.model import Measurement, Origin

Params = dict[str, int | float | str | bool]
# Verdicts from one run's samples: the tests of the interval arithmetic, not of the policy's
# repetition rule (tests/test_statistics_policy.py).
WITHIN_RUN = StatisticPolicy(min_repetitions=1)
MEAN_WITHIN_RUN = StatisticPolicy(statistic="mean", min_repetitions=1)


def lat(
    samples: list[float] | np.ndarray,
    *,
    metric: str = "latency",
    unit: str = "us",
    benchmark: str = "mpibench",
    origin: Origin = Origin.MEASURED,
    **parameters: int | float | str | bool,
) -> Measurement:
    values = tuple(float(s) for s in samples)
    return Measurement(
        benchmark=benchmark,
        metric=metric,
        value=sum(values) / len(values),
        unit=unit,
        parameters=parameters,
        samples=values,
        origin=origin,
    )


def around(mean: float) -> list[float]:
    """Samples whose mean is `mean` exactly, with a small spread."""
    return [mean * 0.99, mean, mean * 1.01]


def test_ratio_orientation_and_verdict_of_one_point() -> None:
    frame = build_frame(
        [
            ("bare", 1, lat(around(10.0), pattern="pingpong", pair="inter-node", size=8)),
            ("vm", 2, lat(around(50.0), pattern="pingpong", pair="inter-node", size=8)),
            (
                "bare",
                1,
                lat(around(900.0), metric="bandwidth", unit="MB/s", pattern="pingpong", size=8),
            ),
            (
                "vm",
                2,
                lat(around(450.0), metric="bandwidth", unit="MB/s", pattern="pingpong", size=8),
            ),
        ]
    )
    result = compare(frame, "bare", policy=WITHIN_RUN)
    assert result.method == "bootstrap"
    assert result.platforms == ("vm",)
    points = {p.metric: p for p in result.points()}
    latency = points["latency"]
    assert latency.ratio == pytest.approx(5.0)
    assert latency.performance == pytest.approx(0.2)
    assert latency.slowdown == pytest.approx(5.0)
    assert latency.overhead == pytest.approx(4.0)
    assert not latency.higher_is_better
    assert latency.verdict is Verdict.SLOWER
    assert latency.ratio_low is not None and latency.ratio_high is not None
    assert latency.ratio_low <= 5.0 <= latency.ratio_high
    assert latency.performance_low == pytest.approx(1 / latency.ratio_high)
    assert latency.samples == 3 and latency.baseline_samples == 3
    assert latency.parameters == {"pattern": "pingpong", "pair": "inter-node", "size": 8}
    assert latency.category is Category.INTER_NODE
    bandwidth = points["bandwidth"]
    assert bandwidth.ratio == pytest.approx(0.5)
    assert bandwidth.performance == pytest.approx(0.5)
    assert bandwidth.higher_is_better
    assert bandwidth.verdict is Verdict.SLOWER


def test_faster_and_no_significant_difference() -> None:
    rng = np.random.default_rng(3)
    noisy = rng.normal(100.0, 20.0, size=(2, 8))
    frame = build_frame(
        [
            ("bare", 1, lat(around(10.0), size=1)),
            ("fast", 2, lat(around(8.0), size=1)),
            ("bare", 1, lat(noisy[0], size=2)),
            ("fast", 2, lat(noisy[1], size=2)),
        ]
    )
    result = compare(frame, "bare", policy=WITHIN_RUN)
    verdicts = {p.parameters["size"]: p.verdict for p in result.points()}
    assert verdicts == {1: Verdict.FASTER, 2: Verdict.NO_DIFFERENCE}


def test_single_sample_points_have_no_interval() -> None:
    frame = build_frame(
        [
            ("bare", 1, lat([10.0], size=1)),
            ("vm", 2, lat(around(12.0), size=1)),
            ("bare", 1, lat(around(10.0), size=2)),
            ("vm", 2, lat([12.0], size=2)),
        ]
    )
    result = compare(frame, "bare", policy=WITHIN_RUN)
    for p in result.points():
        assert p.verdict is Verdict.UNDETERMINED
        assert p.ratio == pytest.approx(1.2)
        assert p.ratio_low is None and p.ratio_high is None
        assert p.ci_method == ""
    notes = sorted(p.note for p in result.points())
    assert notes == [
        "single sample on the baseline: no confidence interval",
        "single sample on the platform: no confidence interval",
    ]


def test_repetitions_and_runs_are_pooled() -> None:
    # NPB repetitions: one sample each, same point: pooled into one point of 3 samples.
    entries: list[Entry] = []
    for rep, t in enumerate((10.0, 10.2, 9.8)):
        entries.append(("bare", rep + 1, lat([t], metric="time", unit="s", benchmark="npb")))
        entries.append(("vm", 9, lat([t * 1.1], metric="time", unit="s", benchmark="npb")))
    (point,) = compare(build_frame(entries), "bare").points()
    assert point.samples == 3 and point.baseline_samples == 3
    assert point.repetitions == 3 and point.ci_over == "repetitions"
    assert point.ratio == pytest.approx(1.1)
    assert point.category is Category.COMPUTE
    assert point.verdict is Verdict.SLOWER


@pytest.mark.parametrize("method", ["bootstrap", "delta"])
def test_interval_covers_the_true_ratio(method: compare_module.CiMethod) -> None:
    # 300 independent points, true ratio 1.2: the 95 % intervals should cover it ~95 %.
    rng = np.random.default_rng(2024)
    entries: list[Entry] = []
    for point in range(300):
        n_a, n_b = rng.integers(12, 40, size=2)
        entries.append(("vm", 1, lat(rng.normal(12.0, 1.5, n_a), size=point)))
        entries.append(("bare", 2, lat(rng.normal(10.0, 1.5, n_b), size=point)))
    result = compare(build_frame(entries), "bare", method=method, resamples=1000, seed=7,
                     policy=MEAN_WITHIN_RUN)  # fmt: skip
    table = result.table
    assert result.method == method
    covered = (table["ratio_low"] <= 1.2) & (table["ratio_high"] >= 1.2)
    assert 0.88 <= covered.mean() <= 0.99
    assert (table["ratio_low"] <= table["ratio"]).all()
    assert (table["ratio"] <= table["ratio_high"]).all()


def test_bootstrap_is_seeded_and_close_to_the_delta_method() -> None:
    rng = np.random.default_rng(5)
    frame = build_frame(
        [
            ("bare", 1, lat(rng.normal(10.0, 0.5, 200), size=1)),
            ("vm", 2, lat(rng.normal(11.0, 0.5, 150), size=1)),
        ]
    )
    mean = MEAN_WITHIN_RUN
    a = compare(frame, "bare", method="bootstrap", seed=1, policy=mean).table
    b = compare(frame, "bare", method="bootstrap", seed=1, policy=mean).table
    c = compare(frame, "bare", method="bootstrap", seed=2, policy=mean).table
    d = compare(frame, "bare", method="delta", policy=mean).table
    assert a["ratio_low"][0] == b["ratio_low"][0]
    assert a["ratio_low"][0] != c["ratio_low"][0]
    half_width = d["ratio_high"][0] - d["ratio"][0]
    assert a["ratio_low"][0] == pytest.approx(d["ratio_low"][0], abs=0.1 * half_width)
    assert a["ratio_high"][0] == pytest.approx(d["ratio_high"][0], abs=0.1 * half_width)


def test_auto_switches_to_the_delta_method_beyond_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frame = build_frame([("bare", 1, lat(around(1.0))), ("vm", 2, lat(around(2.0)))])
    assert compare(frame, "bare").method == "bootstrap"
    monkeypatch.setattr(ratios_module, "BOOTSTRAP_BUDGET", 10)
    result = compare(frame, "bare")
    assert result.method == "delta"
    assert result.resamples is None
    assert result.table["ci_method"].tolist() == ["delta"]


def test_delta_interval_by_hand() -> None:
    a = [9.0, 10.0, 11.0]  # mean 10, variance 1
    b = [4.0, 5.0, 6.0]  # mean 5, variance 1
    frame = build_frame([("bare", 1, lat(b)), ("vm", 2, lat(a))])
    (p,) = compare(frame, "bare", method="delta", policy=MEAN_WITHIN_RUN).points()
    va, vb = 1 / (3 * 10.0**2), 1 / (3 * 5.0**2)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)  # 2.94...: rounded down to 2
    assert math.floor(df) == 2
    t = 4.302652729911275  # Student t, 97.5 %, 2 degrees of freedom
    assert p.ratio_low == pytest.approx(2.0 * math.exp(-t * se))
    assert p.ratio_high == pytest.approx(2.0 * math.exp(t * se))


def test_summaries_are_geometric_means_per_category() -> None:
    entries: list[Entry] = []
    shared_perf = {1: 0.5, 2: 0.8}  # latency ratios 2 and 1.25
    for size, perf in shared_perf.items():
        entries.append(
            ("bare", 1, lat(around(10.0), pattern="pingpong", pair="intra-node", size=size))
        )
        entries.append(
            ("vm", 2, lat(around(10.0 / perf), pattern="pingpong", pair="intra-node", size=size))
        )
        # Bandwidth restates the latency: left out of the summary.
        entries.append(
            ("bare", 1, lat(around(100.0), metric="bandwidth", unit="MB/s", pattern="pingpong",
                            pair="intra-node", size=size))
        )  # fmt: skip
        entries.append(
            ("vm", 2, lat(around(10.0), metric="bandwidth", unit="MB/s", pattern="pingpong",
                          pair="intra-node", size=size))
        )  # fmt: skip
    entries.append(("bare", 1, lat(around(5.0), pattern="allreduce", size=8, metric="time")))
    entries.append(("vm", 2, lat(around(4.0), pattern="allreduce", size=8, metric="time")))
    result = compare(build_frame(entries), "bare", policy=WITHIN_RUN)
    shared = result.summary("vm", Category.SHARED_MEMORY)
    assert shared is not None
    assert shared.points == 2
    assert shared.metrics == ("latency",)
    assert shared.geomean == pytest.approx(math.sqrt(0.5 * 0.8))
    sd = np.std([math.log(0.5), math.log(0.8)], ddof=1)
    assert shared.geometric_sd == pytest.approx(math.exp(sd))
    assert shared.minimum == pytest.approx(0.5) and shared.maximum == pytest.approx(0.8)
    assert shared.slowdown == pytest.approx(1 / math.sqrt(0.4))
    assert shared.slower == 2 and shared.faster == 0
    collectives = result.summary("vm", Category.COLLECTIVES)
    assert collectives is not None
    assert collectives.geomean == pytest.approx(1.25)
    assert collectives.geometric_sd == 1.0
    assert collectives.overhead == pytest.approx(-0.2)
    assert collectives.faster == 1
    assert result.summary("vm", Category.STORAGE) is None


def test_categories() -> None:
    table = pd.DataFrame(
        {
            "benchmark": pd.Categorical(
                ["mpibench"] * 7 + ["npb", "fio", "gromacs", "other"] + ["hpcc"] * 3
            ),
            "metric": pd.Categorical(
                ["latency"] * 11 + ["hpl", "random_ring_latency", "pingpong_bandwidth_avg"]
            ),
            "pattern": pd.Categorical(
                ["pingpong", "pingpong", "natural_ring", "random_ring", "sendrecv",
                 "alltoall", "barrier", None, None, None, None, None, None, None]
            ),
            "pair": pd.Categorical(
                ["intra-node", "inter-node"] + [None] * 12
            ),
            "nodes": pd.array([2, 2, 1, 4, 1, 1, 8, 1, None, None, None, 2, 1, 2],
                              dtype="Int64"),
        }
    )  # fmt: skip
    names = [list(Category)[code] for code in categorize(table)]
    assert names == [
        Category.SHARED_MEMORY,
        Category.INTER_NODE,
        Category.SHARED_MEMORY,
        Category.INTER_NODE,
        Category.SHARED_MEMORY,
        Category.COLLECTIVES,
        Category.COLLECTIVES,
        Category.COMPUTE,
        Category.STORAGE,
        Category.APPLICATIONS,
        Category.OTHER,
        Category.COMPUTE,
        Category.SHARED_MEMORY,
        Category.INTER_NODE,
    ]


def test_origins_are_not_mixed_unless_asked() -> None:
    entries: list[Entry] = [
        ("bare", 1, lat(around(1.0))),
        ("cloud", 2, lat(around(2.0), origin=Origin.SIMULATED)),
        ("netns", 3, lat(around(3.0), origin=Origin.EMULATED)),
    ]
    frame = build_frame(entries)
    with pytest.raises(CrossOriginError, match=r"netns \(emulated\).*--allow-mixed-origins"):
        compare(frame, "bare")
    result = compare(frame, "bare", allow_mixed_origins=True)
    assert sorted(zip(result.table["platform"], result.table["origin"], strict=True)) == [
        ("cloud", "simulated"),
        ("netns", "emulated"),
    ]
    assert set(result.table["baseline_origin"]) == {"measured"}
    assert {s.origin for s in result.summaries} == {Origin.SIMULATED, Origin.EMULATED}
    assert set(result.unmatched) == {"cloud (simulated)", "netns (emulated)"}


def test_baseline_with_two_origins_needs_a_choice() -> None:
    frame = build_frame(
        [
            ("bare", 1, lat(around(1.0))),
            ("bare", 2, lat(around(1.1), origin=Origin.SIMULATED)),
            ("vm", 3, lat(around(2.0))),
        ]
    )
    with pytest.raises(CrossOriginError, match="choose one with --baseline-origin"):
        compare(frame, "bare")
    result = compare(frame, "bare", baseline_origin="measured", platforms=["vm"])
    assert result.table["ratio"].tolist() == pytest.approx([2.0])
    # The simulation of the baseline against its measurement, explicitly.
    sim = compare(
        frame, "bare", baseline_origin=Origin.MEASURED, platforms=["bare"], allow_mixed_origins=True
    )
    assert sim.table["origin"].tolist() == ["simulated"]
    assert sim.table["ratio"].tolist() == pytest.approx([1.1])


def test_unknown_platforms_and_unmatched_points() -> None:
    frame = build_frame(
        [
            ("bare", 1, lat(around(1.0), size=1)),
            ("bare", 1, lat(around(1.0), size=2)),
            ("vm", 2, lat(around(2.0), size=2)),
            ("vm", 2, lat(around(2.0), size=3)),
            ("vm", 2, lat(around(2.0), size=4)),
        ]
    )
    result = compare(frame, "bare")
    assert len(result.table) == 1
    assert result.unmatched == {"vm": 2}
    assert result.baseline_only == {"vm": 1}
    with pytest.raises(UserError, match="baseline platform 'nope'"):
        compare(frame, "nope")
    with pytest.raises(UserError, match="platform 'gone'"):
        compare(frame, "bare", platforms=["gone"])
    with pytest.raises(ValueError):
        compare(frame, "bare", policy=StatisticPolicy(confidence=1.5))


def test_parameter_named_like_a_result_column_keeps_its_value() -> None:
    frame = build_frame(
        [
            ("bare", 1, lat(around(1.0), ratio=7, size=1)),
            ("vm", 2, lat(around(3.0), ratio=7, size=1)),
        ]
    )
    result = compare(frame, "bare")
    assert result.table["ratio"].tolist() == pytest.approx([3.0])
    assert result.table["parameter.ratio"].tolist() == [7]
    (point,) = result.points()
    assert point.parameters == {"ratio": 7, "size": 1}
