"""What a result costs: price catalogs, money with explicit currency, cost metrics.

A price catalog (TOML, `data/catalogs/*.toml` shipped, or a file) lists instance types or
nodes with their prices per hour by pricing model (on-demand, reserved, spot...), in the
catalog's currency, with the date and source of the prices, the cores, memory and peak
GFLOPS of a node, and the exchange rates the source used. Where a source gives prices per
normalized node-hour and per GB-hour instead of hourly prices (CSC 2016), the catalog holds
those, and no hourly price is made up from them.

Metrics (methodology §4):

- cost of a run = instances × price per instance-hour × wall hours;
- price per GOPS (EC2-CC's "USD per GOPS") = hourly price of the instances used / GOPS
  achieved, GOPS = Mop/s / 1000: a price per hour per GOPS, independent of the core count,
  lower is better;
- price per normalized node-hour (CSC) = hourly price of a node / (its peak GFLOPS / 1000):
  the price of one hour of 1 TFLOPS of theoretical peak;
- price per GB-hour = hourly price of a node / its memory (GB);
- break-even on-premise price per core-hour = cost of the run in the cloud / (cores × wall
  hours of the same run on premise): an on-premise core-hour dearer than that makes the
  cloud cheaper for this run.

Money never changes currency silently: adding or comparing amounts of two currencies, or
converting without a rate, raises `CurrencyError`; rates come from a catalog (`[rates]`:
1 unit of the catalog currency = RATE units of the other).
"""

from __future__ import annotations

import importlib.resources
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError, field_validator, model_validator

from hpceval.analysis.frame import group_codes, numeric, point_columns, pool, select
from hpceval.config import StrictModel, read_toml, validation_message
from hpceval.errors import ConfigError, UserError
from hpceval.store import Store

CATALOG_FORMAT: Final = 1
Pricing = Literal[
    "on-demand",
    "reserved",
    "spot",
    "preemptible",
    "subscription",
    "academic",
    "on-premise",
    "unspecified",  # the source gives one price without saying under which model
]
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


class CurrencyError(UserError):
    """Amounts in different currencies met without an exchange rate."""


# --------------------------------------------------------------------------- money


@dataclass(frozen=True)
class Money:
    """An amount in one currency (ISO 4217 code)."""

    amount: float
    currency: str

    def __add__(self, other: Money) -> Money:
        self._same(other, "add")
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._same(other, "subtract")
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor: float) -> Money:
        return Money(self.amount * factor, self.currency)

    __rmul__ = __mul__

    def __truediv__(self, divisor: float) -> Money:
        return Money(self.amount / divisor, self.currency)

    def __lt__(self, other: Money) -> bool:
        self._same(other, "compare")
        return self.amount < other.amount

    def __le__(self, other: Money) -> bool:
        self._same(other, "compare")
        return self.amount <= other.amount

    def _same(self, other: Money, verb: str) -> None:
        if self.currency != other.currency:
            raise CurrencyError(
                f"cannot {verb} {self.currency} and {other.currency} without an exchange rate"
            )

    def __str__(self) -> str:
        return f"{self.amount:.4g} {self.currency}"


@dataclass(frozen=True)
class ExchangeRates:
    """1 `base` = rates[X] X, as a catalog states them; conversions go through `base`."""

    base: str
    rates: Mapping[str, float]
    source: str = ""

    def rate(self, from_currency: str, to_currency: str) -> float:
        """Units of `to_currency` for one unit of `from_currency`."""
        if from_currency == to_currency:
            return 1.0
        known = {self.base: 1.0, **self.rates}
        if from_currency not in known or to_currency not in known:
            where = f" in {self.source}" if self.source else ""
            raise CurrencyError(f"no exchange rate from {from_currency} to {to_currency}{where}")
        return known[to_currency] / known[from_currency]

    def convert(self, money: Money, to_currency: str) -> Money:
        return Money(money.amount * self.rate(money.currency, to_currency), to_currency)


def convert(money: Money, to_currency: str, rates: ExchangeRates | None) -> Money:
    """`money` in `to_currency`; a different currency needs `rates` (CurrencyError without)."""
    if money.currency == to_currency:
        return money
    if rates is None:
        raise CurrencyError(
            f"{money.currency} amount where {to_currency} is wanted: give exchange rates "
            "(a catalog's [rates])"
        )
    return rates.convert(money, to_currency)


# --------------------------------------------------------------------------- catalogs


class CatalogEntry(StrictModel):
    """One instance type or node. Prices are in the catalog's currency."""

    name: str = Field(min_length=1)
    provider: str = ""
    group: str = ""
    description: str = ""
    cores: int | None = Field(None, ge=1)  # physical cores of the instance/node
    hardware_threads: int | None = Field(None, ge=1)
    memory_gb: float | None = Field(None, gt=0)
    peak_gflops: float | None = Field(None, gt=0)  # double-precision theoretical peak
    peak_basis: str = ""  # how peak_gflops was obtained (quoted, or computed from what)
    hourly: dict[Pricing, float] = Field(default_factory=dict)  # per instance-hour
    per_normalized_node_hour: dict[Pricing, float] = Field(default_factory=dict)
    per_gb_hour: dict[Pricing, float] = Field(default_factory=dict)
    note: str = ""

    @field_validator("hourly", "per_normalized_node_hour", "per_gb_hour")
    @classmethod
    def _non_negative(cls, prices: dict[Pricing, float]) -> dict[Pricing, float]:
        for pricing, value in prices.items():
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{pricing}: price {value} is not a non-negative number")
        return prices

    @model_validator(mode="after")
    def _has_a_price(self) -> CatalogEntry:
        if not (self.hourly or self.per_normalized_node_hour or self.per_gb_hour):
            raise ValueError(
                "hourly: no price (give hourly, per_normalized_node_hour or per_gb_hour)"
            )
        return self


class CatalogFile(StrictModel):
    """The TOML layout of a price catalog."""

    format: int
    name: str = Field(min_length=1)
    title: str = ""
    source: str = Field(min_length=1)
    date: str
    currency: str
    rates: dict[str, float] = Field(default_factory=dict)
    note: str = ""
    entry: list[CatalogEntry] = Field(min_length=1)

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: int) -> int:
        if v != CATALOG_FORMAT:
            raise ValueError(
                f"catalog format {v} is not known (this hpceval reads {CATALOG_FORMAT})"
            )
        return v

    @field_validator("date")
    @classmethod
    def _date(cls, v: str) -> str:
        if not _DATE.match(v):
            raise ValueError(f"{v!r} is not a date (YYYY-MM or YYYY-MM-DD)")
        return v

    @field_validator("currency")
    @classmethod
    def _currency(cls, v: str) -> str:
        if not _CURRENCY.match(v):
            raise ValueError(f"{v!r} is not a currency code (three capitals, e.g. USD)")
        return v

    @field_validator("rates")
    @classmethod
    def _rates(cls, rates: dict[str, float]) -> dict[str, float]:
        for code, rate in rates.items():
            if not _CURRENCY.match(code):
                raise ValueError(f"{code!r} is not a currency code (three capitals, e.g. USD)")
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"{code}: rate {rate} is not a positive number")
        return rates


@dataclass(frozen=True)
class HourlyPrice:
    """The price of one instance (node) for one hour under one pricing model."""

    amount: float
    currency: str
    pricing: str
    instance: str
    catalog: str = ""
    date: str = ""

    @property
    def money(self) -> Money:
        return Money(self.amount, self.currency)


@dataclass(frozen=True)
class PriceFigure:
    """A derived price with how it was obtained ("catalog" or the computation)."""

    value: Money
    basis: str


@dataclass(frozen=True)
class Catalog:
    """A validated price catalog."""

    name: str
    title: str
    source: str
    date: str
    currency: str
    rates: ExchangeRates
    note: str
    entries: tuple[CatalogEntry, ...]
    file: str = ""

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def entry(self, name: str) -> CatalogEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise UserError(
            f"catalog {self.name} has no entry {name!r} (entries: {', '.join(self.names())})"
        )

    def hourly(self, name: str, pricing: Pricing = "on-demand") -> HourlyPrice:
        """The hourly price of an entry; a UserError when the catalog does not give one."""
        e = self.entry(name)
        if pricing not in e.hourly:
            given = ", ".join(e.hourly) or "none"
            other = ""
            if e.per_normalized_node_hour or e.per_gb_hour:
                other = " (this catalog gives it per normalized node-hour and per GB-hour only)"
            raise UserError(
                f"catalog {self.name}: no {pricing} hourly price for {name!r} "
                f"(hourly prices: {given}){other}"
            )
        return HourlyPrice(e.hourly[pricing], self.currency, pricing, name, self.name, self.date)

    def normalized_node_hour(self, name: str, pricing: Pricing = "on-demand") -> PriceFigure:
        """Price per node-hour normalized to 1 TFLOPS peak: given, or hourly / (peak/1000)."""
        e = self.entry(name)
        if pricing in e.per_normalized_node_hour:
            return PriceFigure(Money(e.per_normalized_node_hour[pricing], self.currency), "catalog")
        if pricing in e.hourly and e.peak_gflops:
            return PriceFigure(
                per_normalized_node_hour(self.hourly(name, pricing), e.peak_gflops),
                f"hourly price / ({e.peak_gflops:g} GFLOPS / 1000)",
            )
        raise UserError(
            f"catalog {self.name}: no {pricing} price per normalized node-hour for {name!r} "
            "(neither given, nor an hourly price and a peak GFLOPS to compute it from)"
        )

    def gb_hour(self, name: str, pricing: Pricing = "on-demand") -> PriceFigure:
        """Price per GB-hour: given, or hourly / memory GB."""
        e = self.entry(name)
        if pricing in e.per_gb_hour:
            return PriceFigure(Money(e.per_gb_hour[pricing], self.currency), "catalog")
        if pricing in e.hourly and e.memory_gb:
            return PriceFigure(
                per_gb_hour(self.hourly(name, pricing), e.memory_gb),
                f"hourly price / {e.memory_gb:g} GB",
            )
        raise UserError(
            f"catalog {self.name}: no {pricing} price per GB-hour for {name!r} "
            "(neither given, nor an hourly price and a memory size to compute it from)"
        )

    def convert(self, money: Money, to_currency: str) -> Money:
        """`money` in `to_currency` with this catalog's rates (CurrencyError without one)."""
        return self.rates.convert(money, to_currency)


def shipped_catalogs() -> list[str]:
    """Names of the catalogs shipped with hpceval."""
    folder = importlib.resources.files("hpceval") / "data" / "catalogs"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_catalog(name_or_file: str) -> Catalog:
    """A shipped catalog by name, or a catalog file; errors name the file and the field."""
    candidate = Path(name_or_file)
    if name_or_file.endswith(".toml") or os.sep in name_or_file or candidate.is_file():
        if not candidate.is_file():
            raise UserError(f"{name_or_file}: no such catalog file")
        return parse_catalog(read_toml(candidate, str(candidate)), str(candidate))
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name_or_file):
        raise UserError(f"{name_or_file!r} is not a valid catalog name")
    shipped = importlib.resources.files("hpceval") / "data" / "catalogs" / f"{name_or_file}.toml"
    if not shipped.is_file():
        raise UserError(
            f"unknown catalog {name_or_file!r} (shipped: {', '.join(shipped_catalogs())}; "
            "or give a file)"
        )
    source = f"catalogs/{name_or_file}.toml"
    with importlib.resources.as_file(shipped) as path:
        return parse_catalog(read_toml(Path(path), source), source)


def parse_catalog(raw: Mapping[str, Any], source: str) -> Catalog:
    """Validate a catalog's TOML content; `source` names it in errors."""
    try:
        data = CatalogFile.model_validate(raw)
    except ValidationError as error:
        where, message = validation_message(error)
        if where.endswith(".[key]"):  # a key of a price table: a pricing model
            where = where.removesuffix(".[key]")
            message = f"unknown pricing model ({message})"
        raise ConfigError(message, source=source, field=where) from error
    seen: dict[str, int] = {}
    for i, entry in enumerate(data.entry):
        if entry.name in seen:
            raise ConfigError(
                f"{entry.name!r} repeats entry[{seen[entry.name]}].name",
                source=source,
                field=f"entry[{i}].name",
            )
        seen[entry.name] = i
    if data.currency in data.rates:
        raise ConfigError(
            f"a rate for the catalog's own currency {data.currency}",
            source=source,
            field=f"rates.{data.currency}",
        )
    return Catalog(
        name=data.name,
        title=data.title,
        source=data.source,
        date=data.date,
        currency=data.currency,
        rates=ExchangeRates(data.currency, dict(data.rates), source),
        note=data.note,
        entries=tuple(data.entry),
        file=source,
    )


# --------------------------------------------------------------------------- metrics


def run_cost(price: HourlyPrice, instances: int | float, wall_seconds: float) -> Money:
    """instances × price per instance-hour × wall hours."""
    _check_positive(instances=instances)
    if not wall_seconds >= 0:
        raise ValueError(f"wall time {wall_seconds} s is negative")
    return Money(instances * price.amount * wall_seconds / 3600, price.currency)


def price_per_gops(price: HourlyPrice, instances: int | float, mops: float) -> Money:
    """EC2-CC's productivity: hourly price of the instances used / GOPS (= Mop/s / 1000)."""
    _check_positive(instances=instances, mops=mops)
    return Money(instances * price.amount / (mops / 1000), price.currency)


def per_normalized_node_hour(price: HourlyPrice, peak_gflops: float) -> Money:
    """Hourly price of a node / (its peak GFLOPS / 1000): the price of 1 TFLOPS-hour of peak."""
    _check_positive(peak_gflops=peak_gflops)
    return Money(price.amount / (peak_gflops / 1000), price.currency)


def per_gb_hour(price: HourlyPrice, memory_gb: float) -> Money:
    """Hourly price of a node / its memory in GB."""
    _check_positive(memory_gb=memory_gb)
    return Money(price.amount / memory_gb, price.currency)


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
    the point's parameters, time_s (mean of the pooled time samples), samples, nodes
    (instances), hourly (price per hour of the instances used), run_cost (= hourly × time_s /
    3600), mops (mean Mop/s total where the benchmark reports it), gops, price_per_gops
    (= hourly / gops), currency. Amounts are in `currency`. `unpriced` lists platforms with
    measurements but no price; points without a node count get NaN costs.
    """

    currency: str
    table: pd.DataFrame
    unpriced: tuple[str, ...] = field(default=())


def cost_table(
    frame: pd.DataFrame,
    prices: PriceMap,
    *,
    benchmark: str = "npb",
    time_metric: str = "time",
    mops_metric: str = "mops_total",
    currency: str | None = None,
    rates: ExchangeRates | None = None,
) -> CostTable:
    """Run cost and price per GOPS of every point of `benchmark` (vectorized over the frame).

    `prices` maps a platform to its price per node-hour (one, or several pricing models).
    The run time is the benchmark's measured time (start-up excluded). Amounts are converted
    to `currency` (default: the first price's) with `rates`; a price in another currency
    without rates raises CurrencyError.
    """
    listed = {p: ([v] if isinstance(v, HourlyPrice) else list(v)) for p, v in prices.items()}
    all_prices = [hp for values in listed.values() for hp in values]
    if not all_prices:
        raise UserError("no prices given")
    target = currency or all_prices[0].currency
    times = select(frame, benchmark=benchmark, metrics=[time_metric])
    keys_columns = [c for c in point_columns(times) if c not in ("metric", "unit")]
    by = ["platform", "origin", *keys_columns]
    time_pool = pool(times, by)
    keys = time_pool.keys
    mops_mean = np.full(len(keys), np.nan)
    mops_rows = select(frame, benchmark=benchmark, metrics=[mops_metric])
    if not mops_rows.empty and not keys.empty:
        mops_pool = pool(mops_rows, by)
        both = pd.concat([keys[by], mops_pool.keys[by]], ignore_index=True)
        codes, _ = group_codes(both, by)
        position = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
        position[codes[len(keys) :]] = np.arange(len(mops_pool.keys))
        found = position[codes[: len(keys)]]
        mops_mean = np.where(found >= 0, mops_pool.mean[found], np.nan)
    platforms = keys["platform"].astype(object).to_numpy()
    nodes = numeric(keys, "nodes")
    parts: list[pd.DataFrame] = []
    for platform, values in listed.items():
        mask = platforms == platform
        if not mask.any():
            continue
        for hp in values:
            hourly_one = convert(hp.money, target, rates).amount
            hourly = nodes[mask] * hourly_one
            seconds = time_pool.mean[mask]
            gops = mops_mean[mask] / 1000
            with np.errstate(divide="ignore", invalid="ignore"):
                part = (
                    keys.loc[mask]
                    .reset_index(drop=True)
                    .assign(
                        pricing=hp.pricing,
                        instance=hp.instance,
                        time_s=seconds,
                        samples=time_pool.count[mask],
                        nodes=nodes[mask],
                        hourly=hourly,
                        run_cost=hourly * seconds / 3600,
                        mops=mops_mean[mask],
                        gops=gops,
                        price_per_gops=hourly / gops,
                        currency=target,
                    )
                )
            parts.append(part)
    unpriced = tuple(sorted(set(str(p) for p in platforms) - set(listed)))
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not table.empty:
        first = ["platform", "origin", "pricing", "instance"]
        table = table[first + [c for c in table.columns if c not in first]]
    return CostTable(target, table, unpriced)


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
        )
    return out


def _check_positive(**values: float) -> None:
    for name, v in values.items():
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be positive, got {v}")
