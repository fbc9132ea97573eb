"""The study's cost section (hpceval.analysis.cost), labelled with the catalog and its date:

- with an `instance` (EC2-CC): every node of the user's platforms priced as that catalog
  entry: cost per run and price per GOPS-hour ("USD per GOPS") of the benchmark's points,
  measured and projected (labelled);
- without (CSC): the catalog's price per normalized node-hour and per GB-hour of its systems,
  and the user's platforms beside them where their platform file gives a price (and a memory
  size, for the GB-hour)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hpceval.analysis.cost import (
    Catalog,
    HourlyPrice,
    PriceFigure,
    cost_table,
    load_catalog,
    per_gb_hour,
)
from hpceval.analysis.frame import build_frame
from hpceval.errors import UserError
from hpceval.store import Store
from hpceval.study.recipe import Cost
from hpceval.study.tables import PROJECTED, Column, sort_key

POINT_COLUMNS = ("kernel", "class", "ranks", "ranks_per_node", "threads_per_rank")


def catalog_label(catalog: Catalog) -> str:
    return f"catalog {catalog.name} ({catalog.title}; prices of {catalog.date}, {catalog.currency})"


def cost_lines(
    store: Store,
    cost: Cost,
    columns: Sequence[Column],
    *,
    catalog_name: str | None = None,
    instance: str | None = None,
) -> list[str]:
    catalog = load_catalog(catalog_name or cost.catalog)
    lines = [f"Prices from {catalog_label(catalog)}; source: {catalog.source}."]
    if catalog.note:
        lines.append(f"Note of the catalog: {catalog.note}")
    entry = instance or cost.instance
    if entry is not None:
        return [*lines, "", *_run_costs(store, cost, catalog, entry, columns)]
    return [*lines, "", *_normalized_prices(store, cost, catalog, columns)]


def _run_costs(
    store: Store, cost: Cost, catalog: Catalog, entry: str, columns: Sequence[Column]
) -> list[str]:
    benchmark = cost.benchmark or "npb"
    price: HourlyPrice = catalog.hourly(entry, cost.pricing)  # type: ignore[arg-type]
    frame = build_frame(
        (c.label, run_id, sm.measurement)
        for c in columns
        for run_id in c.run_ids
        for sm in store.measurements(run_id, benchmark=benchmark)
    )
    if frame.empty:
        return [f"No {benchmark} point to price."]
    table = cost_table(frame, {c.label: price for c in columns}, benchmark=benchmark).table
    if table.empty:
        return [f"No {benchmark} point to price."]
    points = [c for c in POINT_COLUMNS if c in table.columns]
    header = [
        "platform",
        *points,
        "nodes",
        f"time s ({'median'})",
        "billed s",
        f"run cost {price.currency}",
        "GOPS",
        f"{price.currency} per GOPS-hour",
    ]
    lines = [
        f"Each node priced as **{entry}** ({price.pricing}, {price.amount:g} {price.currency} "
        f"per hour, billed {price.billing}).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    rows = []
    for _, r in table.iterrows():
        key = [str(r["platform"]), *(_text(r[c]) for c in points)]
        cells = [
            *key,
            _text(r["nodes"]),
            f"{r['time_s']:.4g}",
            f"{r['billed_s']:.0f}",
            _money(r["run_cost"]),
            "—" if np.isnan(r["gops"]) else f"{r['gops']:.4g}",
            _money(r["price_per_gops_hour"]),
        ]
        rows.append((key, cells))
    for _, cells in sorted(rows, key=lambda kc: sort_key(kc[0])):
        lines.append("| " + " | ".join(cells) + " |")
    if any(c.simulated for c in columns):
        lines += ["", f"Rows of platforms marked {PROJECTED} price SimGrid projections."]
    return lines


def _normalized_prices(
    store: Store, cost: Cost, catalog: Catalog, columns: Sequence[Column]
) -> list[str]:
    header = ["system", "provider", "pricing", "per normalized node-hour", "per GB-hour"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in catalog.names():
        e = catalog.entry(name)
        for pricing in dict.fromkeys([*e.per_normalized_node_hour, *e.hourly, *e.per_gb_hour]):
            lines.append(
                f"| {name} | {e.provider} | {pricing} | "
                f"{_figure(catalog.normalized_node_hour, name, pricing)} | "
                f"{_figure(catalog.gb_hour, name, pricing)} |"
            )
    lines += ["", "Your platforms (the price in the platform file):", ""]
    for c in columns:
        if c.simulated:
            continue
        run = store.run(c.run_ids[0])
        config = store.platform_config(run.platform_id)[1]
        price = config.get("price")
        if not isinstance(price, dict) or "per_node_hour" not in price:
            lines.append(f"- {c.platform}: no price in its platform file (a `price` table)")
            continue
        hourly = HourlyPrice(
            float(price["per_node_hour"]),
            str(price.get("currency", "USD")),
            str(price.get("pricing", "on-demand")),
            c.platform,
        )
        memory = config.get("memory_gb_per_node")
        per_gb = (
            f"{per_gb_hour(hourly, float(memory)).amount:.4g} {hourly.currency} per GB-hour"
            if memory
            else "per GB-hour not computed (no memory_gb_per_node)"
        )
        lines.append(
            f"- {c.platform}: {hourly.amount:g} {hourly.currency} per node-hour; {per_gb}; "
            "per normalized node-hour not computed (no node peak is known)"
        )
    return lines


def _figure(compute: Callable[[str, Any], PriceFigure], name: str, pricing: str) -> str:
    try:
        figure = compute(name, pricing)
    except UserError:
        return "—"
    basis = "" if figure.basis == "catalog" else f" ({figure.basis})"
    return f"{figure.value.amount:.4g} {figure.value.currency}{basis}"


def _money(value: float) -> str:
    return "—" if value is None or np.isnan(value) else f"{value:.4g}"


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if pd.isna(value) else str(value)  # type: ignore[call-overload]
