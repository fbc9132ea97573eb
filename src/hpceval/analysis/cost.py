"""What a result costs: run cost, price per GOPS-hour, break-even, cost tables.

Prices, money and catalogs live in hpceval.analysis.prices. Metrics (methodology §4):

- cost of a run = instances × price per instance-hour × billed hours, the wall time rounded
  up to the price's billing granularity (per second, per minute, per started hour: 2012 EC2
  billed every started hour, so a 10 s run cost a full hour of each instance);
- price per GOPS-hour (EC2-CC's "USD per GOPS") = hourly price of the instances used / GOPS
  achieved, GOPS = Mop/s / 1000: the price of one hour of 1 GOPS, independent of the core
  count, lower is better;
- price per normalized node-hour (CSC) = hourly price of a node / (its peak GFLOPS / 1000):
  the price of one hour of 1 TFLOPS of theoretical peak;
- price per GB-hour = hourly price of a node / its memory (GB);
- break-even on-premise price per core-hour = cost of the run in the cloud / (cores × wall
  hours of the same run on premise): an on-premise core-hour dearer than that makes the
  cloud cheaper for this run.

Times and rates are the statistics policy's (hpceval.analysis.policy): the same named
statistic as compare, per repetition then over repetitions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from hpceval.analysis.frame import group_codes, numeric, point_columns, select
from hpceval.analysis.policy import StatisticPolicy, summarize_groups
from hpceval.analysis.prices import (
    BILLING_SECONDS,
    _check_positive,
)
from hpceval.analysis.prices import (
    CATALOG_FORMAT as CATALOG_FORMAT,
)
from hpceval.analysis.prices import (
    Catalog as Catalog,
)
from hpceval.analysis.prices import (
    CatalogEntry as CatalogEntry,
)
from hpceval.analysis.prices import (
    CurrencyError as CurrencyError,
)
from hpceval.analysis.prices import (
    ExchangeRates as ExchangeRates,
)
from hpceval.analysis.prices import (
    HourlyPrice as HourlyPrice,
)
from hpceval.analysis.prices import (
    Money as Money,
)
from hpceval.analysis.prices import (
    PriceFigure as PriceFigure,
)
from hpceval.analysis.prices import (
    convert as convert,
)
from hpceval.analysis.prices import (
    load_catalog as load_catalog,
)
from hpceval.analysis.prices import (
    parse_catalog as parse_catalog,
)
from hpceval.analysis.prices import (
    per_gb_hour as per_gb_hour,
)
from hpceval.analysis.prices import (
    per_normalized_node_hour as per_normalized_node_hour,
)
from hpceval.analysis.prices import (
    shipped_catalogs as shipped_catalogs,
)
from hpceval.errors import UserError
from hpceval.labels import PLACEMENT_PARAMETERS, placement_label
from hpceval.store import Store

# --------------------------------------------------------------------------- metrics


def run_cost(price: HourlyPrice, instances: int | float, wall_seconds: float) -> Money:
    """instances × price per instance-hour × billed hours (the wall time rounded up to the
    price's billing granularity)."""
    _check_positive(instances=instances)
    if not wall_seconds >= 0:
        raise ValueError(f"wall time {wall_seconds} s is negative")
    billed = price.billed_seconds(wall_seconds)
    return Money(instances * price.amount * billed / 3600, price.currency)


def price_per_gops(price: HourlyPrice, instances: int | float, mops: float) -> Money:
    """EC2-CC's productivity: hourly price of the instances used / GOPS (= Mop/s / 1000)."""
    _check_positive(instances=instances, mops=mops)
    return Money(instances * price.amount / (mops / 1000), price.currency)


def per_core_hour(price: HourlyPrice, cores: int) -> Money:
    """Hourly price of a node / its cores."""
    _check_positive(cores=cores)
    return Money(price.amount / cores, price.currency)


@dataclass(frozen=True)
class BreakEven:
    """A run in the cloud against the same run on premise.

    `break_even_core_hour` is the on-premise price per core-hour at which both cost the same;
    with an on-premise price given, `cheaper` says which one costs less ("equal" within
    1e-9 relative).
    """

    cloud_cost: Money
    on_premise_core_hours: float
    break_even_core_hour: Money
    on_premise_core_hour: Money | None = None
    on_premise_cost: Money | None = None
    cheaper: Literal["cloud", "on-premise", "equal"] | None = None


def break_even(
    cloud_price: HourlyPrice,
    instances: int | float,
    cloud_seconds: float,
    on_premise_cores: int,
    on_premise_seconds: float,
    *,
    on_premise_core_hour: Money | None = None,
    rates: ExchangeRates | None = None,
) -> BreakEven:
    """The break-even on-premise price per core-hour of one run (see the module docstring)."""
    _check_positive(on_premise_cores=on_premise_cores, on_premise_seconds=on_premise_seconds)
    cloud = run_cost(cloud_price, instances, cloud_seconds)
    core_hours = on_premise_cores * on_premise_seconds / 3600
    even = cloud / core_hours
    if on_premise_core_hour is None:
        return BreakEven(cloud, core_hours, even)
    local = convert(on_premise_core_hour, cloud.currency, rates)
    on_premise = local * core_hours
    if math.isclose(on_premise.amount, cloud.amount, rel_tol=1e-9):
        cheaper: Literal["cloud", "on-premise", "equal"] = "equal"
    else:
        cheaper = "cloud" if cloud.amount < on_premise.amount else "on-premise"
    return BreakEven(cloud, core_hours, even, on_premise_core_hour, on_premise, cheaper)


# --------------------------------------------------------------------------- frames

PriceMap = Mapping[str, HourlyPrice | Sequence[HourlyPrice]]


@dataclass(frozen=True)
class CostTable:
    """Cost of every measured point of a benchmark, per platform and price.

    `table` columns: platform, origin, pricing, instance (the priced instance type),
    placement (nodes×ranks per node×threads), the point's parameters, statistic, time_s (the
    policy's statistic of the time), time_min, time_median, time_mean, repetitions, samples,
    nodes (instances), hourly (price per hour of the instances used), billing, billed_s (the
    time rounded up to the billing granularity), run_cost (= hourly × billed_s / 3600), mops
    (Mop/s total by the same statistic, where the benchmark reports it), gops,
    price_per_gops_hour (= hourly / gops: the price of one GOPS for one hour), currency,
    price_basis. Amounts are in `currency`. `unpriced` lists platforms with measurements but no
    price; points without a node count get NaN costs.
    """

    currency: str
    table: pd.DataFrame
    policy: StatisticPolicy = field(default_factory=StatisticPolicy)
    unpriced: tuple[str, ...] = field(default=())


def placement_labels(keys: pd.DataFrame) -> list[str]:
    """The placement of each row in the one notation (hpceval.labels), once per distinct
    placement."""
    columns = [c for c in sorted(PLACEMENT_PARAMETERS) if c in keys.columns]
    if not columns or keys.empty:
        return [""] * len(keys)
    codes, first = group_codes(keys, columns)
    names = [placement_label({c: keys[c].iloc[int(i)] for c in columns}) for i in first]
    return [names[int(c)] for c in codes]


def cost_table(
    frame: pd.DataFrame,
    prices: PriceMap,
    *,
    benchmark: str = "npb",
    time_metric: str = "time",
    mops_metric: str = "mops_total",
    currency: str | None = None,
    rates: ExchangeRates | None = None,
    policy: StatisticPolicy | None = None,
) -> CostTable:
    """Run cost and price per GOPS-hour of every point of `benchmark` (vectorized).

    `prices` maps a platform to its price per node-hour (one, or several pricing models).
    The run time is the benchmark's measured time (start-up excluded), by the statistics
    `policy` (default: median over repetitions). Amounts are converted to `currency`
    (default: the first price's) with `rates`; a price in another currency without rates
    raises CurrencyError.
    """
    policy = policy or StatisticPolicy()
    listed = {p: ([v] if isinstance(v, HourlyPrice) else list(v)) for p, v in prices.items()}
    all_prices = [hp for values in listed.values() for hp in values]
    if not all_prices:
        raise UserError("no prices given")
    target = currency or all_prices[0].currency
    times = select(frame, benchmark=benchmark, metrics=[time_metric])
    keys_columns = [c for c in point_columns(times) if c not in ("metric", "unit")]
    by = ["platform", "origin", *keys_columns]
    rows, first = group_codes(times, by)
    time_summary = summarize_groups(times, rows, first, by, policy)
    keys = time_summary.keys
    mops_value = np.full(len(keys), np.nan)
    mops_rows = select(frame, benchmark=benchmark, metrics=[mops_metric])
    if not mops_rows.empty and not keys.empty:
        m_rows, m_first = group_codes(mops_rows, by)
        mops_summary = summarize_groups(mops_rows, m_rows, m_first, by, policy)
        both = pd.concat([keys[by], mops_summary.keys[by]], ignore_index=True)
        codes, _ = group_codes(both, by)
        position = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
        position[codes[len(keys) :]] = np.arange(len(mops_summary.keys))
        found = position[codes[: len(keys)]]
        mops_value = np.where(found >= 0, mops_summary.value[found], np.nan)
    platforms = keys["platform"].astype(object).to_numpy()
    nodes = numeric(keys, "nodes")
    placements = np.asarray(placement_labels(keys), dtype=object)
    parts: list[pd.DataFrame] = []
    for platform, values in listed.items():
        mask = platforms == platform
        if not mask.any():
            continue
        for hp in values:
            hourly_one = convert(hp.money, target, rates).amount
            hourly = nodes[mask] * hourly_one
            seconds = time_summary.value[mask]
            unit = BILLING_SECONDS[hp.billing]
            billed = np.ceil(seconds / unit - 1e-9) * unit
            gops = mops_value[mask] / 1000
            with np.errstate(divide="ignore", invalid="ignore"):
                part = (
                    keys.loc[mask]
                    .reset_index(drop=True)
                    .assign(
                        pricing=hp.pricing,
                        instance=hp.instance,
                        placement=placements[mask],
                        statistic=policy.statistic,
                        time_s=seconds,
                        time_min=time_summary.minimum[mask],
                        time_median=time_summary.median[mask],
                        time_mean=time_summary.mean[mask],
                        repetitions=time_summary.repetitions[mask],
                        samples=time_summary.samples[mask],
                        nodes=nodes[mask],
                        hourly=hourly,
                        billing=hp.billing,
                        billed_s=billed,
                        run_cost=hourly * billed / 3600,
                        mops=mops_value[mask],
                        gops=gops,
                        price_per_gops_hour=hourly / gops,
                        currency=target,
                        price_basis=hp.basis,
                    )
                )
            parts.append(part)
    unpriced = tuple(sorted(set(str(p) for p in platforms) - set(listed)))
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not table.empty:
        first_columns = ["platform", "origin", "pricing", "instance", "placement"]
        table = table[first_columns + [c for c in table.columns if c not in first_columns]]
    return CostTable(target, table, policy, unpriced)


def prices_from_store(store: Store) -> dict[str, HourlyPrice]:
    """Each platform's price per node-hour from its configuration (`price` in the platform
    file), as recorded with its newest run; platforms without a price are left out."""
    out: dict[str, HourlyPrice] = {}
    configs: dict[int, Mapping[str, Any]] = {}  # one read per platform, not per run
    for run in sorted(store.runs(), key=lambda r: r.started):
        if run.platform_id not in configs:
            configs[run.platform_id] = store.platform_config(run.platform_id)[1]
        price = configs[run.platform_id].get("price")
        if not isinstance(price, Mapping) or "per_node_hour" not in price:
            continue
        out[run.platform_name] = HourlyPrice(
            amount=float(price["per_node_hour"]),
            currency=str(price.get("currency", "USD")),
            pricing=str(price.get("pricing", "on-demand")),
            instance=run.platform_name,
            catalog=str(price.get("source", "")),
            date=str(price.get("date", "")),
            billing=price.get("billing", "per-second"),
        )
    return out
