"""Change points with their context, and the regression gate of `hpceval check --against
history`: is the newest run significantly worse than the platform's recent runs?

The gate compares the newest run's value of each series with the values of the `window`
runs before it (run-to-run variation, not the newest run's own samples, is the noise a site's
cron sees): a one-sided prediction-interval t test,

    t = (x_new - mean(window)) / (sd(window) sqrt(1 + 1/n)),  n - 1 degrees of freedom,

in the direction that is worse for the unit (slower, less bandwidth). A series fails when its
p-value is below alpha / (series tested) (Bonferroni: a suite of 40 points does not fail
every other night by chance) and the newest run is worse by at least `min_effect`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from hpceval.history.changepoints import DEFAULT_ALPHA, ChangePoint, detect
from hpceval.history.series import Series, changed_fields

DEFAULT_WINDOW = 10
DEFAULT_GATE_ALPHA = 0.01
DEFAULT_MIN_EFFECT = 0.05
MIN_WINDOW = 3


@dataclass(frozen=True)
class DatedChange:
    series: Series
    change: ChangePoint
    run_id: int
    date: str  # UTC, of the first run after the change
    changed: dict[str, tuple[str | None, str | None]]

    @property
    def worse(self) -> bool:
        up = self.change.ratio > 1
        return up != self.series.higher_is_better


def utc(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M")


def series_changes(
    series: Sequence[Series], *, alpha: float = DEFAULT_ALPHA, seed: int = 0
) -> list[DatedChange]:
    """Every change point of every series, with its run, date and changed provenance."""
    found = []
    for s in series:
        for change in detect(s.values, alpha=alpha, seed=seed):
            before, after = s.points[change.index - 1], s.points[change.index]
            found.append(
                DatedChange(
                    s, change, after.run_id, utc(after.started), changed_fields(before, after)
                )
            )
    return found


@dataclass(frozen=True)
class GateResult:
    series: Series
    newest: float
    baseline_mean: float
    baseline_runs: int
    effect: float  # relative change, signed so that > 0 is worse
    p_value: float
    threshold: float  # the p-value below which it fails (alpha / series tested)
    min_effect: float

    @property
    def regressed(self) -> bool:
        return self.p_value < self.threshold and self.effect >= self.min_effect


def check_against_history(
    series: Sequence[Series],
    *,
    window: int = DEFAULT_WINDOW,
    alpha: float = DEFAULT_GATE_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> tuple[list[GateResult], list[Series]]:
    """The gate's verdict on each series whose newest run has `MIN_WINDOW` earlier runs or
    more, and the series it could not judge (too short)."""
    if window < MIN_WINDOW:
        raise ValueError(f"window must be >= {MIN_WINDOW} runs")
    testable = [s for s in series if len(s.points) > MIN_WINDOW]
    short = [s for s in series if len(s.points) <= MIN_WINDOW]
    threshold = alpha / max(1, len(testable))
    results = []
    for s in testable:
        values = s.values
        newest, base = float(values[-1]), values[-1 - window : -1]
        mean, sd, n = float(np.mean(base)), float(np.std(base, ddof=1)), base.size
        sign = -1.0 if s.higher_is_better else 1.0
        effect = sign * (newest - mean) / abs(mean) if mean else 0.0
        if sd == 0:
            p = 0.0 if sign * (newest - mean) > 0 else 1.0
        else:
            t = sign * (newest - mean) / (sd * np.sqrt(1 + 1 / n))
            p = float(stats.t.sf(t, df=n - 1))
        results.append(GateResult(s, newest, mean, n, effect, p, threshold, min_effect))
    return results, short
