from __future__ import annotations

import math

import pytest

from hpceval.statistics import describe, outlier_count, quality_warnings


def test_describe_matches_hand_computation() -> None:
    st = describe([1.0, 2.0, 3.0, 4.0])
    assert st.count == 4
    assert st.mean == 2.5
    assert st.median == 2.5
    assert st.minimum == 1.0 and st.maximum == 4.0
    assert st.stdev == pytest.approx(math.sqrt(5 / 3))
    # t(0.975, 3) = 3.182446305
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert st.ci_low == pytest.approx(2.5 - half)
    assert st.ci_high == pytest.approx(2.5 + half)
    assert st.relative_ci == pytest.approx(half / 2.5)


def test_single_sample_has_no_confidence_interval() -> None:
    st = describe([5.0])
    assert st.ci_low is None and st.ci_high is None
    assert math.isinf(st.relative_ci)
    assert "single sample" in quality_warnings(st)[0]


def test_describe_rejects_empty_and_non_finite() -> None:
    with pytest.raises(ValueError):
        describe([])
    with pytest.raises(ValueError):
        describe([1.0, float("nan")])


def test_outliers_by_modified_z_score() -> None:
    assert outlier_count([10.0, 10.1, 9.9, 10.0, 10.05, 50.0]) == 1
    assert outlier_count([1.0, 1.0, 1.0]) == 0


def test_quality_warnings_name_a_remedy() -> None:
    noisy = describe([1.0, 2.0, 1.0, 2.0, 1.0, 2.0])
    warnings = quality_warnings(noisy, target_rci=0.02)
    assert any("raise the budget" in w for w in warnings)
    assert any("not quiet" in w for w in warnings)
    assert quality_warnings(describe([1.0, 1.0001, 0.9999, 1.0]), target_rci=0.02) == []


def test_rate_statistics_derive_from_the_time_statistics() -> None:
    """bandwidth = n / statistic(time): the median rate is n / median(t) and the mean rate
    n / mean(t), not the mean of n / t (which a descheduled sample would not pull down)."""
    from hpceval.statistics import rate_statistics

    times = [1.0, 1.0, 1.0, 1.0, 6.0]  # one descheduled sample
    st = rate_statistics(100.0, times)
    assert st.median == 100.0
    assert st.mean == pytest.approx(100.0 / 2.0)  # n / mean(t) = 100 / 2
    assert st.mean != pytest.approx(sum(100.0 / t for t in times) / 5)  # not mean(n / t)
    assert st.maximum == 100.0 and st.minimum == pytest.approx(100.0 / 6.0)
    # the time interval reaches below 0: the rate's would be unbounded, so there is none
    assert st.ci_low is None and st.ci_high is None
    steady = rate_statistics(100.0, [1.0, 1.1, 0.9, 1.0])
    assert steady.ci_low is not None and steady.ci_high is not None
    assert steady.ci_low < steady.mean < steady.ci_high
