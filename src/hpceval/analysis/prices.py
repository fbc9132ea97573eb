"""Prices: money with an explicit currency, exchange rates, and price catalogs.

A price catalog (TOML, `data/catalogs/*.toml` shipped, or a file) lists instance types or
nodes with their prices per hour by pricing model (on-demand, reserved, spot...), in the
catalog's currency, with the date and source of the prices, how the provider bills
(`billing`: per second, per minute or per started hour), the cores, memory and peak GFLOPS
of a node, and the exchange rates the source used. Where a source gives prices per
normalized node-hour and per GB-hour instead of hourly prices (CSC 2016), the catalog holds
those; an hourly price is derived from them only with a node's peak TFLOPS, given by the
user (`node_tflops`) or by the entry (`peak_gflops`), and the basis says so.

Money never changes currency silently: adding or comparing amounts of two currencies, or
converting without a rate, raises `CurrencyError`; rates come from a catalog (`[rates]`:
1 unit of the catalog currency = RATE units of the other).
"""

from __future__ import annotations

import importlib.resources
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from hpceval.config import StrictModel, read_toml, validation_message
from hpceval.errors import ConfigError, UserError

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
# How a provider rounds the time it bills: 2012 EC2 billed every started instance-hour.
Billing = Literal["per-second", "per-minute", "per-started-hour"]
BILLING_SECONDS: Final[dict[str, int]] = {
    "per-second": 1,
    "per-minute": 60,
    "per-started-hour": 3600,
}
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
    billing: Billing | None = None  # the catalog's `billing` unless this entry differs
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
    billing: Billing
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
    billing: Billing = "per-second"
    basis: str = ""  # how the amount was obtained, when the source did not give it as such

    @property
    def money(self) -> Money:
        return Money(self.amount, self.currency)

    def billed_seconds(self, wall_seconds: float) -> float:
        """The wall time rounded up to the billing granularity (a started unit is paid)."""
        unit = BILLING_SECONDS[self.billing]
        return float(math.ceil(wall_seconds / unit - 1e-9) * unit) if wall_seconds > 0 else 0.0


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
    billing: Billing = "per-second"

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def entry(self, name: str) -> CatalogEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise UserError(
            f"catalog {self.name} has no entry {name!r} (entries: {', '.join(self.names())})"
        )

    def pricings(self, name: str) -> list[str]:
        """The pricing models an entry has a price of (hourly, else per normalized node-hour)."""
        e = self.entry(name)
        return list(e.hourly or e.per_normalized_node_hour)

    def hourly(
        self, name: str, pricing: Pricing = "on-demand", *, node_tflops: float | None = None
    ) -> HourlyPrice:
        """The hourly price of an entry: given, or its price per normalized node-hour × the
        node's peak TFLOPS (`node_tflops`, else the entry's peak_gflops / 1000); a UserError
        naming what is missing otherwise."""
        e = self.entry(name)
        billing = e.billing or self.billing
        if pricing in e.hourly:
            return HourlyPrice(e.hourly[pricing], self.currency, pricing, name, self.name,
                               self.date, billing)  # fmt: skip
        if pricing in e.per_normalized_node_hour:
            tflops = node_tflops if node_tflops is not None else (
                e.peak_gflops / 1000 if e.peak_gflops else None
            )  # fmt: skip
            if tflops is None:
                raise UserError(
                    f"catalog {self.name}: {name!r} is priced per normalized node-hour "
                    "(1 TFLOPS of peak): give the node's peak with --node-tflops PLATFORM=TFLOPS"
                )
            normalized = e.per_normalized_node_hour[pricing]
            return HourlyPrice(
                normalized * tflops, self.currency, pricing, name, self.name, self.date, billing,
                basis=f"{normalized:g} {self.currency} per normalized node-hour × "
                f"{tflops:g} TFLOPS node peak",
            )  # fmt: skip
        given = ", ".join([*e.hourly, *e.per_normalized_node_hour]) or "none"
        raise UserError(f"catalog {self.name}: no {pricing} price for {name!r} (prices: {given})")

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
        billing=data.billing,
    )


def per_normalized_node_hour(price: HourlyPrice, peak_gflops: float) -> Money:
    """Hourly price of a node / (its peak GFLOPS / 1000): the price of 1 TFLOPS-hour of peak."""
    _check_positive(peak_gflops=peak_gflops)
    return Money(price.amount / (peak_gflops / 1000), price.currency)


def per_gb_hour(price: HourlyPrice, memory_gb: float) -> Money:
    """Hourly price of a node / its memory in GB."""
    _check_positive(memory_gb=memory_gb)
    return Money(price.amount / memory_gb, price.currency)


def _check_positive(**values: float) -> None:
    for name, v in values.items():
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be positive, got {v}")
