"""The study's conclusions as questions answered from the user's data: the ratio of one
quantity on a platform to the same quantity on the baseline (or to another quantity on the
same platform), with its bootstrap confidence interval, and a verdict only when the interval
clears the recipe's threshold. No data, or too little for an interval, is "not answered" with
the reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from hpceval.benchmarks import find_benchmark
from hpceval.store import Store
from hpceval.study.published import published
from hpceval.study.recipe import Question, Selection

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20131
# Fewer samples than this give a bootstrap interval too ragged to decide on.
MIN_SAMPLES = 3
# Parameters that tell repetitions of one point apart, not different points.
REPETITION_KEYS = frozenset({"rep", "repetition"})

Verdict = Literal["yes", "no", "inconclusive", "not answered"]


@dataclass(frozen=True)
class Answer:
    question: str  # the question's id
    platform: str
    verdict: Verdict
    text: str
    ratio: float | None = None
    low: float | None = None
    high: float | None = None


class NoData(Exception):
    """Why a selection has no samples to compare."""


def samples_of(store: Store, run_id: int, selection: Selection) -> np.ndarray:
    """The samples of the one point the selection names in a run (its repetitions pooled)."""
    if find_benchmark(selection.benchmark) is None:
        raise NoData(f"benchmark {selection.benchmark!r} is not in this hpceval yet")
    points: dict[frozenset[tuple[str, str]], list[float]] = {}
    for stored in store.measurements(
        run_id, benchmark=selection.benchmark, metric=selection.metric
    ):
        m = stored.measurement
        if all(_same(m.parameters.get(k), v) for k, v in selection.where.items()):
            key = frozenset(
                (k, str(v)) for k, v in m.parameters.items() if k not in REPETITION_KEYS
            )
            points.setdefault(key, []).extend(m.samples or (m.value,))
    where = ", ".join(f"{k}={v}" for k, v in selection.where.items())
    what = f"{selection.benchmark} {selection.metric}" + (f" at {where}" if where else "")
    if not points:
        raise NoData(f"no {what} in run {run_id}")
    if len(points) > 1:
        raise NoData(f"{len(points)} different points match {what} in run {run_id}")
    return np.asarray(next(iter(points.values())), dtype=float)


def _same(stored: object, wanted: object) -> bool:
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return stored is wanted
    if isinstance(wanted, (int, float)) and isinstance(stored, (int, float)):
        return float(stored) == float(wanted)
    return str(stored) == str(wanted)


def ratio_ci(of: np.ndarray, versus: np.ndarray) -> tuple[float, float, float]:
    """mean(of) / mean(versus) with its percentile bootstrap interval (sides independent)."""
    if len(of) < MIN_SAMPLES or len(versus) < MIN_SAMPLES:
        raise NoData(
            f"too few samples for an interval ({len(of)} and {len(versus)}; "
            f"at least {MIN_SAMPLES} each)"
        )
    ratio = float(np.mean(of) / np.mean(versus))
    if np.ptp(of) == 0 and np.ptp(versus) == 0:
        return ratio, ratio, ratio
    result = stats.bootstrap(
        (of, versus),
        lambda a, b, axis: np.mean(a, axis=axis) / np.mean(b, axis=axis),
        paired=False,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=CONFIDENCE,
        method="percentile",
        random_state=np.random.default_rng(SEED),
    )
    return ratio, float(result.confidence_interval.low), float(result.confidence_interval.high)


def answer(
    store: Store, question: Question, runs: Mapping[str, int], baseline: str
) -> list[Answer]:
    """The question answered on every platform it applies to (see Question)."""
    if question.versus is None:
        targets = [p for p in runs if p != baseline]
        if baseline not in runs:
            return [
                Answer(
                    question.id,
                    "-",
                    "not answered",
                    f"not answered: baseline {baseline!r} has no run",
                )
            ]
        if not targets:
            return [
                Answer(
                    question.id,
                    baseline,
                    "not answered",
                    "not answered: only the baseline was measured; name another platform",
                )
            ]
    else:
        targets = list(runs)
    return [_answer_on(store, question, runs, baseline, p) for p in targets]


def _answer_on(
    store: Store, question: Question, runs: Mapping[str, int], baseline: str, platform: str
) -> Answer:
    try:
        of = samples_of(store, runs[platform], question.of)
        if question.versus is None:
            versus = samples_of(store, runs[baseline], question.of)
        else:
            versus = samples_of(store, runs[platform], question.versus)
        ratio, low, high = ratio_ci(of, versus)
    except NoData as e:
        return Answer(question.id, platform, "not answered", f"not answered: {e}")
    side, threshold = question.threshold()
    if side == "above":
        verdict: Verdict = (
            "yes" if low > threshold else "no" if high < threshold else "inconclusive"
        )
    else:
        verdict = "yes" if high < threshold else "no" if low > threshold else "inconclusive"
    against = "" if question.versus is not None else f" of {baseline}'s"
    text = (
        f"{verdict.capitalize()}: {question.quantity} {ratio:.3g}× ± "
        f"{(high - low) / 2:.2g}{against} ({CONFIDENCE:.0%} CI {low:.3g}–{high:.3g}, "
        f"n={len(of)}/{len(versus)}; threshold {side} {threshold:g}×)"
    )
    if question.published and (pub := published().ratio_value(question.published)):
        text += f"; published {pub[0]:.3g}× ({pub[1]})"
    return Answer(question.id, platform, verdict, text, ratio, low, high)


def answer_all(
    store: Store, questions: Sequence[Question], runs: Mapping[str, int], baseline: str
) -> list[Answer]:
    return [a for q in questions for a in answer(store, q, runs, baseline)]
