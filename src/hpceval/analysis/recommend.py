"""Recommendations: where and how to run a workload, by time, by cost, under a deadline.

Definitions:

- a workload is a benchmark, its problem (NPB kernel and class, an application's input...:
  parameters that must match exactly) and optionally a rank count; a set of workloads is
  run one after the other on one configuration;
- a configuration is a platform and origin with one set of the remaining parameters
  (nodes, ranks_per_node, threads_per_rank, binding, ranks, ...); it qualifies for a set
  when every workload of the set was measured with it;
- its time is the sum over the workloads of their times by the statistics policy
  (hpceval.analysis.policy: median over repetitions by default), in s;
- its cost under a price (per node-hour, one pricing model) is nodes × price × billed time /
  3600 (the time of each workload rounded up to the price's billing granularity), converted
  to one currency with explicit rates; a configuration without a node count or a platform
  without a price has no cost (it can still be the fastest);
- a configuration is *eligible* when it was measured with at least the policy's
  ``min_repetitions`` repetitions of every workload and is not oversubscribed (more ranks
  than cores: its time says nothing about the hardware) unless `allow_oversubscribed`;
  only eligible configurations are named fastest, cheapest or deadline choice; the others
  are listed with the reason (`excluded`);
- the fastest is the configuration of shortest time (ties: the cheaper), the cheapest the
  one of lowest cost (ties: the faster);
- the Pareto front of time against cost holds the priced configurations that no other beats
  on both (one at least as fast and as cheap, and better on one), by increasing time;
- under a deadline, the choice is the cheapest priced configuration whose time is within
  it; when none is, `within_deadline` is None and `deadline_message` says so, with the
  fastest time available.

Measured, emulated and simulated candidates are not mixed unless `allow_mixed_origins`,
and every candidate carries its origin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from hpceval.analysis.compare import CrossOriginError
from hpceval.analysis.cost import ExchangeRates, HourlyPrice, Money, PriceMap, convert
from hpceval.analysis.frame import group_codes, point_columns, select
from hpceval.analysis.policy import StatisticPolicy, summarize_groups
from hpceval.errors import UserError
from hpceval.labels import described
from hpceval.model import Origin, ParamValue

ConfigKey = tuple[str, str, tuple[tuple[str, ParamValue], ...]]


@dataclass(frozen=True)
class Workload:
    """A benchmark problem, optionally at one rank count, whose `metric` is a time in s."""

    benchmark: str
    problem: Mapping[str, ParamValue]
    ranks: int | None = None
    metric: str = "time"

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.problem.items()]
        if self.ranks is not None:
            parts.append(f"ranks={self.ranks}")
        return f"{self.benchmark}({', '.join(parts)})"


@dataclass(frozen=True)
class Candidate:
    """A configuration with its time for the workload(s) and, when priced, its cost."""

    platform: str
    origin: Origin
    configuration: Mapping[str, ParamValue]
    time_s: float
    samples: int  # fewest pooled samples among the workloads
    repetitions: int = 1  # fewest repetitions among the workloads
    price: HourlyPrice | None = None
    cost: Money | None = None
    excluded: str = ""  # why it cannot be recommended ("" when eligible)
    time_low: float = math.nan  # the interval of the time (the policy's), summed
    time_high: float = math.nan

    @property
    def nodes(self) -> int | None:
        v = self.configuration.get("nodes")
        return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def label(self) -> str:
        place = described(self.configuration)
        priced = f", {self.price.pricing}" if self.price else ""
        return f"{self.platform} ({self.origin.value}) [{place}{priced}]"


@dataclass(frozen=True)
class PlatformChoice:
    platform: str
    origin: Origin
    fastest: Candidate
    cheapest: Candidate | None


@dataclass(frozen=True)
class Recommendation:
    workloads: tuple[Workload, ...]
    currency: str | None
    candidates: tuple[Candidate, ...]  # by increasing time, then cost
    fastest: Candidate | None
    cheapest: Candidate | None
    pareto: tuple[Candidate, ...]
    by_platform: tuple[PlatformChoice, ...]
    deadline_s: float | None
    within_deadline: Candidate | None
    deadline_message: str
    unpriced: tuple[str, ...]  # platforms with candidates but no price
    policy: StatisticPolicy = field(default_factory=StatisticPolicy)
    excluded: tuple[Candidate, ...] = ()  # measured but not eligible (see `Candidate.excluded`)

    def deadline_answer(self) -> dict[str, Any]:
        """The deadline answer as data, for a report to state: the deadline, the choice (or
        None), its time, cost and origin, what was left out and under which statistic."""
        choice = self.within_deadline
        return {
            "workload": ", ".join(w.label() for w in self.workloads),
            "deadline_s": self.deadline_s,
            "statistic": self.policy.statistic,
            "min_repetitions": self.policy.min_repetitions,
            "choice": choice.label() if choice else None,
            "platform": choice.platform if choice else None,
            "origin": choice.origin.value if choice else None,
            "configuration": dict(choice.configuration) if choice else None,
            "time_s": choice.time_s if choice else None,
            "cost": choice.cost.amount if choice and choice.cost else None,
            "currency": choice.cost.currency if choice and choice.cost else None,
            "pricing": choice.price.pricing if choice and choice.price else None,
            "message": self.deadline_message,
            "excluded": [f"{c.label()}: {c.excluded}" for c in self.excluded],
        }


def recommend(
    frame: pd.DataFrame,
    workloads: Workload | Sequence[Workload],
    *,
    prices: PriceMap | None = None,
    currency: str | None = None,
    rates: ExchangeRates | None = None,
    deadline_s: float | None = None,
    origin: Origin | str | None = None,
    allow_mixed_origins: bool = False,
    allow_oversubscribed: bool = False,
    policy: StatisticPolicy | None = None,
) -> Recommendation:
    """Fastest, cheapest, Pareto front and deadline choice for one workload or a set."""
    policy = policy or StatisticPolicy()
    items = (workloads,) if isinstance(workloads, Workload) else tuple(workloads)
    if not items:
        raise UserError("no workload given")
    if deadline_s is not None and not deadline_s > 0:
        raise ValueError(f"deadline {deadline_s} s is not positive")
    per_workload = [_configurations(frame, w, origin, policy) for w in items]
    common = set(per_workload[0])
    for found in per_workload[1:]:
        common &= set(found)
    for w, found in zip(items, per_workload, strict=True):
        if not found:
            raise UserError(f"no measurements of {w.label()}")
    if not common:
        raise UserError(
            "no configuration was measured with every workload of the set "
            f"({', '.join(w.label() for w in items)})"
        )
    origins = sorted({key[1] for key in common})
    if len(origins) > 1 and not allow_mixed_origins:
        raise CrossOriginError(
            f"the candidates are {' and '.join(origins)}: choose one with --origin, or put "
            "them side by side deliberately with --allow-mixed-origins"
        )
    listed: dict[str, list[HourlyPrice]] = {}
    for platform, given in (prices or {}).items():
        listed[platform] = [given] if isinstance(given, HourlyPrice) else list(given)
    all_prices = [p for values in listed.values() for p in values]
    target = currency or (all_prices[0].currency if all_prices else None)

    candidates: list[Candidate] = []
    excluded: list[Candidate] = []
    unpriced: set[str] = set()
    for key in sorted(common, key=str):
        platform, origin_name, configuration = key
        times = [found[key].time_s for found in per_workload]
        repetitions = min(found[key].repetitions for found in per_workload)
        base = Candidate(
            platform,
            Origin(origin_name),
            dict(configuration),
            sum(times),
            min(found[key].samples for found in per_workload),
            repetitions,
            time_low=sum(found[key].low for found in per_workload),
            time_high=sum(found[key].high for found in per_workload),
        )
        reasons = []
        if repetitions < policy.min_repetitions:
            reasons.append(policy.too_few(repetitions))
        if dict(configuration).get("oversubscribed") and not allow_oversubscribed:
            reasons.append("oversubscribed (more ranks than cores; --allow-oversubscribed)")
        platform_prices = listed.get(platform, [])
        if not platform_prices:
            unpriced.add(platform)
        variants = [base]
        if platform_prices and base.nodes is not None and target is not None:
            variants = []
            for price in platform_prices:
                hourly = convert(price.money, target, rates)
                billed = sum(price.billed_seconds(t) for t in times)
                variants.append(replace(base, price=price,
                                        cost=hourly * (base.nodes * billed / 3600)))  # fmt: skip
        if reasons:
            excluded += [replace(v, excluded="; ".join(reasons)) for v in variants]
        else:
            candidates += variants
    candidates.sort(key=_time_then_cost)
    excluded.sort(key=_time_then_cost)
    priced = [c for c in candidates if c.cost is not None]
    fastest = candidates[0] if candidates else None
    cheapest = min(priced, key=_cost_then_time) if priced else None
    by_platform = []
    for platform, origin_name in sorted({(c.platform, c.origin.value) for c in candidates}):
        mine = [c for c in candidates if c.platform == platform and c.origin == origin_name]
        mine_priced = [c for c in mine if c.cost is not None]
        by_platform.append(
            PlatformChoice(
                platform,
                Origin(origin_name),
                min(mine, key=_time_then_cost),
                min(mine_priced, key=_cost_then_time) if mine_priced else None,
            )
        )
    within, message = _deadline_choice(candidates, deadline_s)
    if deadline_s is not None and excluded:
        message += f" ({len(excluded)} configuration(s) not eligible: see the excluded list)"
    return Recommendation(
        workloads=items,
        currency=target,
        candidates=tuple(candidates),
        fastest=fastest,
        cheapest=cheapest,
        pareto=tuple(pareto_front(priced)),
        by_platform=tuple(by_platform),
        deadline_s=deadline_s,
        within_deadline=within,
        deadline_message=message,
        unpriced=tuple(sorted(unpriced)),
        policy=policy,
        excluded=tuple(excluded),
    )


def pareto_front(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The priced candidates that no other is at least as good as on time and cost, and
    better on one; by increasing time. Equal (time, cost) pairs are all kept."""
    priced = sorted((c for c in candidates if c.cost is not None), key=_time_then_cost)
    indices = pareto_indices(
        [c.time_s for c in priced], [c.cost.amount for c in priced if c.cost is not None]
    )
    return [priced[i] for i in indices]


def pareto_indices(times: Sequence[float], costs: Sequence[float]) -> list[int]:
    """Positions of the non-dominated (time, cost) points (both lower is better), by time."""
    t = np.asarray(times, dtype=np.float64)
    c = np.asarray(costs, dtype=np.float64)
    if t.shape != c.shape:
        raise ValueError("times and costs differ in length")
    order = np.lexsort((c, t))
    front: list[int] = []
    best_cost = math.inf
    last: tuple[float, float] | None = None
    for i in order.tolist():
        point = (float(t[i]), float(c[i]))
        if point[1] < best_cost or point == last:
            front.append(i)
            best_cost = min(best_cost, point[1])
            last = point
    return front


def _deadline_choice(
    candidates: Sequence[Candidate], deadline_s: float | None
) -> tuple[Candidate | None, str]:
    if deadline_s is None:
        return None, ""
    priced = [c for c in candidates if c.cost is not None]
    if not candidates:
        return None, "no configuration to choose from"
    fastest = min(candidates, key=_time_then_cost)
    meeting = [c for c in priced if c.time_s <= deadline_s]
    if meeting:
        choice = min(meeting, key=_cost_then_time)
        return choice, (
            f"{choice.label()} meets the {deadline_s:g} s deadline in {choice.time_s:.4g} s "
            f"for {choice.cost}"
        )
    unpriced_meeting = [c for c in candidates if c.cost is None and c.time_s <= deadline_s]
    message = (
        f"none of the {len(priced)} priced configurations meets the {deadline_s:g} s deadline; "
        f"the fastest, {fastest.label()}, takes {fastest.time_s:.4g} s"
    )
    if unpriced_meeting:
        message += (
            f" ({len(unpriced_meeting)} configuration(s) without a price would meet it, "
            f"e.g. {unpriced_meeting[0].label()})"
        )
    return None, message


@dataclass(frozen=True)
class _Timed:
    """A configuration's time for one workload, by the policy, and what it rests on."""

    time_s: float
    low: float
    high: float
    samples: int
    repetitions: int


def _configurations(
    frame: pd.DataFrame, workload: Workload, origin: Origin | str | None, policy: StatisticPolicy
) -> dict[ConfigKey, _Timed]:
    """Configuration -> its time of one workload (the policy's statistic and interval)."""
    from hpceval.analysis.policy import point_intervals

    rows = select(
        frame,
        benchmark=workload.benchmark,
        metrics=[workload.metric],
        origins=None if origin is None else [origin],
    )
    mask = np.ones(len(rows), dtype=bool)
    for name, value in workload.problem.items():
        if name not in rows.columns:
            return {}
        mask &= (rows[name] == value).fillna(False).to_numpy(dtype=bool)
    if workload.ranks is not None:
        if "ranks" not in rows.columns:
            return {}
        mask &= (rows["ranks"] == workload.ranks).fillna(False).to_numpy(dtype=bool)
    rows = rows.loc[mask].reset_index(drop=True)
    if rows.empty:
        return {}
    columns = [
        c
        for c in point_columns(rows)
        if c not in ("benchmark", "metric", "unit") and c not in workload.problem
    ]
    by = ["platform", "origin", *columns]
    codes, first = group_codes(rows, by)
    summary = summarize_groups(rows, codes, first, by, policy)
    low, high = point_intervals(summary, policy)
    out: dict[ConfigKey, _Timed] = {}
    for i, record in enumerate(summary.keys.to_dict("records")):
        configuration = tuple(
            (str(k), _plain(v)) for k, v in record.items() if k in columns and not _missing(v)
        )
        key = (str(record["platform"]), str(record["origin"]), configuration)
        out[key] = _Timed(float(summary.value[i]), float(low[i]), float(high[i]),
                          int(summary.samples[i]), int(summary.repetitions[i]))  # fmt: skip
    return out


def _time_then_cost(c: Candidate) -> tuple[float, float]:
    return (c.time_s, c.cost.amount if c.cost is not None else math.inf)


def _cost_then_time(c: Candidate) -> tuple[float, float]:
    return (c.cost.amount if c.cost is not None else math.inf, c.time_s)


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _plain(v: Any) -> ParamValue:
    value: ParamValue = v.item() if isinstance(v, np.generic) else v
    return value
