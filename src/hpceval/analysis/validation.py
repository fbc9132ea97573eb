"""`hpceval validate`'s figures: hpceval's own benchmark held against its official
counterpart on one platform, pair by pair.

A *pair* is one run of the own program and one of the official program of the same kernel,
class and placement, started one after the other (interleaved rounds: own, official, own,
official, ...), so that both see the same state of the machine. Its ratio is own Mop/s /
official Mop/s (> 1: hpceval's program is faster). Over the rounds the figure is the
geometric mean of the ratios, with a Student-t confidence interval computed on the log
ratios (exponentiated back: asymmetric around the geometric mean); one pair has none.

The figure is stored as a measurement of the own benchmark (metric RATIO_METRIC, unit
"ratio", the pairs' ratios as samples), so that `show` and the report find it beside the
own results it qualifies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import stdtrit

from hpceval.benchmarks.npb.tables import RATIO_TO_OFFICIAL
from hpceval.model import Measurement, ParamValue, Statistics
from hpceval.statistics import describe
from hpceval.units import RATIO

RATIO_METRIC = RATIO_TO_OFFICIAL
CI_METHOD = "Student t on the log ratios"
COMPARED_METRIC = "mops_total"
# The pair's identity: the problem and the placement (everything but the repetition).
PAIR_PARAMETERS = ("kernel", "class", "ranks", "nodes", "ranks_per_node", "threads_per_rank")


@dataclass(frozen=True)
class PairedFigure:
    """The validation figure of one kernel, class and placement."""

    parameters: Mapping[str, ParamValue]
    ratios: tuple[float, ...]
    official_implementation: str
    own: tuple[float, ...]
    official: tuple[float, ...]

    @property
    def geometric_mean(self) -> float:
        return geometric_mean(self.ratios)

    def interval(self, confidence: float = 0.95) -> tuple[float, float] | None:
        """The t-interval of the geometric mean ratio (None with a single pair)."""
        return log_t_interval(self.ratios, confidence)


def geometric_mean(ratios: Sequence[float]) -> float:
    return float(math.exp(np.mean(np.log(np.asarray(ratios, dtype=np.float64)))))


def log_t_interval(ratios: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval of the mean log ratio, exponentiated (None below two ratios)."""
    n = len(ratios)
    if n < 2:
        return None
    logs = np.log(np.asarray(ratios, dtype=np.float64))
    half = float(stdtrit(n - 1, 0.5 + confidence / 2) * logs.std(ddof=1) / math.sqrt(n))
    mean = float(logs.mean())
    return math.exp(mean - half), math.exp(mean + half)


def pair_key(parameters: Mapping[str, ParamValue]) -> tuple[ParamValue, ...]:
    return tuple(parameters.get(name, "") for name in PAIR_PARAMETERS)


def paired_figures(
    own: Sequence[tuple[str, Measurement]], official: Sequence[tuple[str, Measurement]]
) -> list[PairedFigure]:
    """Figures from the (point key, measurement) of both sides: the repetition "rep=i" of
    the own program is paired with "rep=i" of the official one (the same round)."""

    def by_pair(
        side: Sequence[tuple[str, Measurement]],
    ) -> dict[tuple[ParamValue, ...], dict[str, Measurement]]:
        out: dict[tuple[ParamValue, ...], dict[str, Measurement]] = {}
        for point, m in side:
            if m.metric == COMPARED_METRIC:
                out.setdefault(pair_key(m.parameters), {})[point] = m
        return out

    own_by, official_by = by_pair(own), by_pair(official)
    figures = []
    for key in sorted(own_by.keys() & official_by.keys(), key=str):
        rounds = sorted(own_by[key].keys() & official_by[key].keys())
        if not rounds:
            continue
        mine = tuple(own_by[key][r].value for r in rounds)
        theirs = tuple(official_by[key][r].value for r in rounds)
        first = own_by[key][rounds[0]]
        figures.append(
            PairedFigure(
                parameters={
                    n: first.parameters[n] for n in PAIR_PARAMETERS if n in first.parameters
                },
                ratios=tuple(a / b for a, b in zip(mine, theirs, strict=True)),
                official_implementation=official_by[key][rounds[0]].implementation,
                own=mine,
                official=theirs,
            )
        )
    return figures


def figure_measurement(
    figure: PairedFigure, benchmark: str, confidence: float = 0.95
) -> Measurement:
    """The figure as a measurement of the own benchmark (value: the geometric mean ratio;
    statistics: those of the ratios, with the interval of the geometric mean)."""
    stats: Statistics = describe(list(figure.ratios), confidence=confidence)
    interval = figure.interval(confidence)
    stats = replace(
        stats,
        ci_low=None if interval is None else interval[0],
        ci_high=None if interval is None else interval[1],
    )
    return Measurement(
        benchmark=benchmark,
        metric=RATIO_METRIC,
        value=figure.geometric_mean,
        unit=RATIO,
        parameters=dict(figure.parameters),
        samples=figure.ratios,
        statistics=stats,
        statistic="geometric mean",
        details={
            "reference": figure.official_implementation,
            "compared_metric": COMPARED_METRIC,
            "ci_method": CI_METHOD,
            "own": list(figure.own),
            "official": list(figure.official),
        },
    )


def describe_figure(m: Measurement) -> str:
    """ "hpceval CG = 1.03x official/NPB 3.4 on this platform (95 % CI 0.99-1.07, 3 pairs)"."""
    p = m.parameters
    reference = str(m.details.get("reference", "official"))
    ci = ""
    if m.statistics is not None and m.statistics.ci_low is not None:
        ci = f", 95 % CI {m.statistics.ci_low:.2f}-{m.statistics.ci_high:.2f}"
    return (
        f"hpceval {str(p.get('kernel', '?')).upper()} class {p.get('class', '?')} on "
        f"{p.get('ranks', '?')} ranks = {m.value:.2f}x {reference} "
        f"({len(m.samples)} pairs{ci})"
    )
