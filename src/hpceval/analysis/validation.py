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

Point-to-point (mpibench against osu_latency or IMB PingPong): a pair is one run of
mpibench's ping-pong over the message sizes and one run of the official program, per size
own / official of the latency (or the bandwidth, IMB's n / half round trip: osu_bw streams
a window of messages, another quantity). The own side is the chosen statistic of its
samples (default the median; "mean" is IMB's and OSU's convention: their tables print the
mean over the iterations, the only figure they give).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import stdtrit

from hpceval.benchmarks.npb.tables import RATIO_TO_OFFICIAL
from hpceval.model import Measurement, ParamValue, Statistics
from hpceval.statistics import describe, summary_value
from hpceval.units import RATIO, format_bytes

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


# A point-to-point pair's identity: the message size, the compared metric and the placement.
POINT_PAIR_PARAMETERS = ("compared", "size", "ranks", "nodes", "ranks_per_node", "threads_per_rank")


def paired_point_figures(
    own: Sequence[tuple[int, Measurement]],
    official: Sequence[tuple[int, Measurement]],
    *,
    statistic: str,
    metrics: Sequence[str],
) -> list[PairedFigure]:
    """Figures per message size, compared metric and placement from the (round,
    measurement) of both sides: mpibench's point of round i against the official table's
    row of round i. The own value is `statistic` of its samples (a bandwidth through its
    times: bytes / statistic(time)); the official value is its printed mean."""

    def by_pair(
        side: Sequence[tuple[int, Measurement]], of_samples: bool
    ) -> dict[tuple[ParamValue, ...], dict[int, tuple[float, Measurement]]]:
        out: dict[tuple[ParamValue, ...], dict[int, tuple[float, Measurement]]] = {}
        for round_index, m in side:
            if m.metric not in metrics:
                continue
            value = summary_value(m.samples or (m.value,), m.unit, statistic) if of_samples \
                else m.value  # fmt: skip
            key = pair_key_of(m)
            out.setdefault(key, {})[round_index] = (value, m)
        return out

    own_by, official_by = by_pair(own, True), by_pair(official, False)
    figures = []
    by_metric_and_size = lambda k: (str(k[0]), int(str(k[1]) or 0), str(k[2:]))  # noqa: E731
    for key in sorted(own_by.keys() & official_by.keys(), key=by_metric_and_size):
        rounds = sorted(own_by[key].keys() & official_by[key].keys())
        if not rounds:
            continue
        mine = tuple(own_by[key][r][0] for r in rounds)
        theirs = tuple(official_by[key][r][0] for r in rounds)
        figures.append(
            PairedFigure(
                parameters=dict(zip(POINT_PAIR_PARAMETERS, key, strict=True)),
                ratios=tuple(a / b for a, b in zip(mine, theirs, strict=True)),
                official_implementation=official_by[key][rounds[0]][1].implementation,
                own=mine,
                official=theirs,
            )
        )
    return figures


def pair_key_of(m: Measurement) -> tuple[ParamValue, ...]:
    p = {**m.parameters, "compared": m.metric}
    return tuple(p.get(name, "") for name in POINT_PAIR_PARAMETERS)


def figure_measurement(
    figure: PairedFigure,
    benchmark: str,
    confidence: float = 0.95,
    *,
    compared_metric: str = COMPARED_METRIC,
    own_statistic: str | None = None,
    extra_parameters: Mapping[str, ParamValue] | None = None,
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
        parameters={**figure.parameters, **(extra_parameters or {})},
        samples=figure.ratios,
        statistics=stats,
        statistic="geometric mean",
        details={
            "reference": figure.official_implementation,
            "compared_metric": compared_metric,
            "ci_method": CI_METHOD,
            **({"own_statistic": own_statistic} if own_statistic else {}),
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
    if "compared" in p:
        own = m.details.get("own_statistic", "median")
        return (
            f"hpceval mpibench {p.get('pattern', 'pingpong')} {format_bytes(int(p['size']))} "
            f"{p['compared']} ({own}) on {p.get('pair') or str(p.get('ranks', '?')) + ' ranks'}"
            f" = {m.value:.2f}x {reference} ({len(m.samples)} pairs{ci})"
        )
    return (
        f"hpceval {str(p.get('kernel', '?')).upper()} class {p.get('class', '?')} on "
        f"{p.get('ranks', '?')} ranks = {m.value:.2f}x {reference} "
        f"({len(m.samples)} pairs{ci})"
    )
