"""The statistics policy (hpceval.analysis.policy): one named statistic, rates from times,
per repetition then over repetitions, intervals over repetitions, verdicts that need enough
of them."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpceval.analysis.compare import Verdict, compare
from hpceval.analysis.frame import Entry, build_frame, group_codes, point_columns
from hpceval.analysis.policy import (
    StatisticPolicy,
    point_intervals,
    policy_from_environment,
    summarize_groups,
)
from hpceval.errors import UserError
from hpceval.model import Measurement

times_st = st.lists(
    st.floats(min_value=0.05, max_value=1e4, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=12,
)
repetitions_st = st.lists(times_st, min_size=1, max_size=5)
statistic_st = st.sampled_from(["median", "mean", "min"])
REDUCE = {"median": statistics.median, "mean": statistics.fmean, "min": min}


def measurement(samples: list[float], metric: str = "latency", unit: str = "us",
                size: int = 8) -> Measurement:  # fmt: skip
    return Measurement("mpibench", metric, statistics.fmean(samples), unit,
                       {"pattern": "pingpong", "size": size}, tuple(samples))  # fmt: skip


def summarize(entries: list[Entry], policy: StatisticPolicy):  # type: ignore[no-untyped-def]
    frame = build_frame(entries)
    by = ["platform", "origin", *point_columns(frame)]
    codes, first = group_codes(frame, by)
    return summarize_groups(frame, codes, first, by, policy)


@given(repetitions_st, statistic_st)
@settings(max_examples=60, deadline=None)
def test_value_is_the_statistic_of_the_per_repetition_statistics(
    reps: list[list[float]], name: str
) -> None:
    summary = summarize([("p", 1, measurement(r)) for r in reps], StatisticPolicy(name))  # type: ignore[arg-type]
    per_rep = [REDUCE[name](r) for r in reps]
    expected = REDUCE[name](per_rep) if len(reps) > 1 else per_rep[0]
    assert summary.value[0] == pytest.approx(expected, rel=1e-12)
    assert summary.repetitions[0] == len(reps)
    assert summary.samples[0] == sum(map(len, reps))
    everything = [t for r in reps for t in r]
    assert min(everything) <= summary.value[0] * (1 - 1e-12) or summary.value[0] >= min(everything)
    assert summary.value[0] <= max(everything) * (1 + 1e-12)
    assert bool(summary.over_repetitions[0]) == (len(reps) > 1)


@given(repetitions_st, statistic_st, st.integers(min_value=1, max_value=1 << 22))
@settings(max_examples=60, deadline=None)
def test_a_rate_is_the_amount_over_the_statistic_of_the_times(
    reps: list[list[float]], name: str, nbytes: int
) -> None:
    """Bandwidth samples n/t summarize to n / stat(t): never a mean of per-sample rates."""
    policy = StatisticPolicy(name)  # type: ignore[arg-type]
    latency = summarize([("p", 1, measurement(r)) for r in reps], policy)
    bandwidth = summarize(
        [("p", 1, measurement([nbytes / t for t in r], "bandwidth", "MB/s")) for r in reps],
        policy,
    )
    assert bandwidth.value[0] == pytest.approx(nbytes / latency.value[0], rel=1e-9)
    assert bandwidth.mean[0] == pytest.approx(nbytes / latency.mean[0], rel=1e-9)
    assert bandwidth.minimum[0] == pytest.approx(nbytes / latency.minimum[0], rel=1e-9)
    low_t, high_t = point_intervals(latency, policy)
    low_b, high_b = point_intervals(bandwidth, policy)
    if np.isfinite(low_t[0]):
        assert low_b[0] == pytest.approx(nbytes / high_t[0], rel=1e-9)
        assert high_b[0] == pytest.approx(nbytes / low_t[0], rel=1e-9)


@given(st.lists(times_st, min_size=2, max_size=4), st.lists(times_st, min_size=2, max_size=4),
       statistic_st)  # fmt: skip
@settings(max_examples=30, deadline=None)
def test_latency_and_bandwidth_verdicts_agree(
    a: list[list[float]], b: list[list[float]], name: str
) -> None:
    """The issue's 8 B case: a latency ratio and its bandwidth ratio are reciprocal, with
    reciprocal intervals and the same verdict."""
    entries: list[Entry] = []
    for platform, reps in (("vm", a), ("bare", b)):
        for r in reps:
            entries.append((platform, 1, measurement(r)))
            entries.append((platform, 1, measurement([8 / t for t in r], "bandwidth", "MB/s")))
    result = compare(build_frame(entries), "bare", policy=StatisticPolicy(name, 2))  # type: ignore[arg-type]
    rows = {p.metric: p for p in result.points()}
    lat, bw = rows["latency"], rows["bandwidth"]
    assert bw.ratio == pytest.approx(1 / lat.ratio, rel=1e-9)
    assert bw.performance == pytest.approx(lat.performance, rel=1e-9)
    assert bw.verdict == lat.verdict
    if lat.ratio_low is not None and lat.ratio_high is not None:
        assert bw.ratio_low == pytest.approx(1 / lat.ratio_high, rel=1e-9)


@given(st.permutations(list(range(6))))
@settings(max_examples=20, deadline=None)
def test_the_order_of_the_rows_does_not_matter(order: list[int]) -> None:
    reps = [[1.0, 2.0, 3.0], [2.0, 5.0], [0.5], [4.0, 4.5, 9.0, 1.0], [3.0], [2.5, 2.6]]
    entries: list[Entry] = [("p", 1, measurement(reps[i])) for i in order]
    base = summarize([("p", 1, measurement(r)) for r in reps], StatisticPolicy())
    shuffled = summarize(entries, StatisticPolicy())
    assert shuffled.value[0] == base.value[0]
    assert shuffled.mean[0] == base.mean[0]
    low_a, high_a = point_intervals(base, StatisticPolicy())
    low_b, high_b = point_intervals(shuffled, StatisticPolicy())
    # The units are the same multiset; resampling them in another order gives the same
    # distribution, not the same draws: the bounds agree to the bootstrap's resolution.
    assert low_b[0] == pytest.approx(low_a[0], rel=0.25)
    assert high_b[0] == pytest.approx(high_a[0], rel=0.25)


def test_run_to_run_variance_widens_the_interval() -> None:
    """Each repetition is tight (±0.1 %), but repetitions disagree by ±20 %: within-run
    samples alone would call a 5 % difference significant; over repetitions it is not."""
    entries: list[Entry] = []
    for level in (0.8, 1.0, 1.2):
        tight = [level * (1 + d) for d in (-0.001, 0.0, 0.001)]
        entries.append(("bare", 1, measurement([10 * t for t in tight])))
        entries.append(("vm", 2, measurement([10.5 * t for t in tight])))
    (point,) = compare(build_frame(entries), "bare").points()
    assert point.repetitions == 3 and point.ci_over == "repetitions"
    assert point.ratio == pytest.approx(1.05)
    assert point.verdict is Verdict.NO_DIFFERENCE
    assert point.ratio_low is not None and point.ratio_low < 1 < (point.ratio_high or 0)


def test_too_few_repetitions_is_said_with_the_numbers() -> None:
    entries: list[Entry] = []
    for rep in range(2):
        entries.append(("bare", 1, measurement([10.0 + rep, 10.1 + rep, 9.9 + rep])))
        entries.append(("vm", 2, measurement([27.8 + rep, 28.0 + rep, 27.9 + rep])))
    (point,) = compare(build_frame(entries), "bare").points()
    assert point.ratio == pytest.approx(28.4 / 10.5)  # medians of the repetition medians
    assert point.verdict is Verdict.TOO_FEW
    assert point.note == "too few repetitions (n=2, need ≥3)"
    assert point.ratio_low is not None  # the interval is still given
    lenient = compare(build_frame(entries), "bare", policy=StatisticPolicy(min_repetitions=2))
    assert next(lenient.points()).verdict is Verdict.SLOWER
    summary = compare(build_frame(entries), "bare").summaries[0]
    assert summary.too_few == 1 and summary.slower == 0


def test_the_median_resists_a_descheduled_sample_where_the_mean_does_not() -> None:
    # One sample in ten hit by a 50x descheduling (the 3.5-4.6x mean under load).
    samples = [0.12] * 9 + [6.0]
    summary = summarize([("p", 1, measurement(samples))], StatisticPolicy())
    assert summary.value[0] == pytest.approx(0.12)
    assert summary.mean[0] == pytest.approx(0.708)
    assert summary.minimum[0] == pytest.approx(0.12)


def test_policy_from_options_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert policy_from_environment() == StatisticPolicy("median", 3)
    monkeypatch.setenv("HPCEVAL_STATISTIC", "mean")
    monkeypatch.setenv("HPCEVAL_MIN_REPETITIONS", "5")
    assert policy_from_environment() == StatisticPolicy("mean", 5)
    assert policy_from_environment("min", 2) == StatisticPolicy("min", 2)
    monkeypatch.setenv("HPCEVAL_STATISTIC", "average")
    with pytest.raises(UserError, match=r"\$HPCEVAL_STATISTIC 'average'"):
        policy_from_environment()
    with pytest.raises(UserError, match="--statistic 'mode'"):
        policy_from_environment("mode")
    monkeypatch.setenv("HPCEVAL_STATISTIC", "mean")
    monkeypatch.setenv("HPCEVAL_MIN_REPETITIONS", "three")
    with pytest.raises(UserError, match="HPCEVAL_MIN_REPETITIONS 'three'"):
        policy_from_environment()
    with pytest.raises(UserError, match="--min-repetitions 0"):
        StatisticPolicy(min_repetitions=0)
    assert "verdicts need ≥3 repetitions" in StatisticPolicy().describe()
