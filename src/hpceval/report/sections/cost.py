"""Cost: price per unit of work, and the Pareto front of time against price."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hpceval.analysis.cost import CurrencyError, cost_table
from hpceval.analysis.recommend import pareto_indices
from hpceval.report.figures import (
    Bar,
    BarPanel,
    ScatterPanel,
    ScatterPoint,
    bar_figure,
    scatter_figure,
)
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    MAX_BARS_PER_PANEL,
    Context,
    Section,
    figure_set,
    problem_label,
    text_column,
)
from hpceval.report.styles import labelled
from hpceval.report.tables import ReportTable


def cost_section(ctx: Context) -> Section:
    section = Section(
        "cost",
        "Cost",
        "Cost of each NPB run = nodes × price per node-hour × billed hours (the time rounded "
        "up to the price's billing granularity: per second, minute or started hour), and the "
        "price per GOPS-hour = hourly price of the nodes used / (Mop/s / 1000) (EC2-CC's "
        "productivity metric, e.g. USD per GOPS-hour; lower is better), per platform, "
        "placement, pricing model and price source. The Pareto "
        "front of time against cost (per problem, currency and origin) holds the runs that no "
        "other beats on both.",
    )
    section.notes.extend(ctx.price_notes)
    has_npb = bool((ctx.frame["benchmark"] == "npb").any())
    if not has_npb:
        section.empty = "No NPB measurements to cost."
        return section
    if not ctx.price_sources:
        section.empty = (
            "No prices: give --catalog NAME|FILE (entries named like the platforms, or "
            "--instance PLATFORM=ENTRY) or a `price` table in the platform files."
        )
        return section
    parts = []
    for source in ctx.price_sources:
        try:
            result = cost_table(
                ctx.frame, source.prices, currency=source.currency, rates=source.rates,
                policy=ctx.policy,
            )  # fmt: skip
        except CurrencyError as e:
            section.notes.append(f"{source.label}: {e}")
            continue
        if not result.table.empty:
            parts.append(result.table.assign(price_source=source.label))
    if not parts:
        section.empty = "No NPB time measurement of a priced platform with a node count."
        return section
    table = pd.concat(parts, ignore_index=True)
    table["problem"] = [
        problem_label({"kernel": k, "class": c})
        for k, c in zip(text_column(table, "kernel"), text_column(table, "class"), strict=True)
    ]
    table["pareto"] = False
    finite = np.isfinite(table["run_cost"].to_numpy(dtype=np.float64))
    for _, group in table.loc[finite].groupby(["problem", "currency", "origin"], observed=True):
        front = pareto_indices(group["time_s"].tolist(), group["run_cost"].tolist())
        table.loc[group.index[front], "pareto"] = True
    first = [
        "platform",
        "origin",
        "problem",
        "pricing",
        "instance",
        "price_source",
        "placement",
        "nodes",
        "statistic",
        "time_s",
        "repetitions",
        "hourly",
        "billing",
        "billed_s",
        "run_cost",
        "mops",
        "price_per_gops_hour",
        "currency",
        "pareto",
    ]
    table = table[[c for c in first if c in table] + [c for c in table if c not in first]]
    # Parameters of other benchmarks (size, pair...) are empty here; the cost columns stay
    # (no Mop/s measured: an empty price per GOPS-hour, not a missing column).
    empty = [c for c in table.columns if c not in first and table[c].isna().all()]
    table = table.drop(columns=empty)
    gops_panels: list[BarPanel] = []
    pareto_panels: list[ScatterPanel] = []
    several_sources = len({s.label for s in ctx.price_sources}) > 1
    short = {s.label: s.short or s.label for s in ctx.price_sources}
    kernel = [problem_label({"kernel": k} if k else {}) for k in text_column(table, "kernel")]
    klass = text_column(table, "class")
    # Price per GOPS: one panel per kernel and currency, a bar per platform, pricing and class.
    per_gops = table.assign(kernel_label=kernel, class_label=klass)
    finite = np.isfinite(per_gops["price_per_gops_hour"].to_numpy(dtype=np.float64))
    for (name, currency), group in per_gops.loc[finite].groupby(
        ["kernel_label", "currency"], sort=True
    ):
        best = (
            group.groupby(
                ["platform", "origin", "pricing", "price_source", "class_label"], observed=True
            )["price_per_gops_hour"]
            .min()
            .reset_index()
            .sort_values(["class_label", "price_per_gops_hour"])
        )
        several_classes = best["class_label"].nunique() > 1
        bars = [
            Bar(
                labelled(
                    str(r.platform),
                    str(r.origin),
                    str(r.pricing)
                    + (f" · {short[str(r.price_source)]}" if several_sources else "")
                    + (f" · class {r.class_label}" if several_classes else ""),
                ),
                float(r.price_per_gops_hour),
                str(r.platform),
                str(r.origin),
            )
            for r in best.itertuples()
        ]
        if len(bars) > MAX_BARS_PER_PANEL:
            section.notes.append(
                f"price per GOPS, {name}: {len(bars) - MAX_BARS_PER_PANEL} more bar(s) only in "
                "tables/cost.csv."
            )
        gops_panels.append(
            BarPanel(
                f"{name} ({currency})",
                f"{currency} per GOPS (lowest over runs)",
                bars[:MAX_BARS_PER_PANEL],
            )
        )
    # Pareto fronts: one panel per problem and currency, the largest class of each kernel.
    class_rank = {c: i for i, c in enumerate("SWABCDEF")}
    largest: dict[str, str] = {}
    for k, c in zip(kernel, klass, strict=True):
        if class_rank.get(c, -1) >= class_rank.get(largest.get(k, ""), -1):
            largest[k] = c
    shown = np.asarray([largest[k] == c for k, c in zip(kernel, klass, strict=True)])
    if not shown.all():
        section.notes.append(
            "Pareto fronts are drawn for the largest class of each kernel; the column pareto "
            "of tables/cost.csv has every class."
        )
    for (problem, currency), group in table.loc[shown].groupby(["problem", "currency"], sort=True):
        priced = group.loc[np.isfinite(group["run_cost"].to_numpy(dtype=np.float64))]
        points = [
            ScatterPoint(
                float(r.time_s), float(r.run_cost), str(r.platform), str(r.origin), bool(r.pareto)
            )
            for r in priced.itertuples()
        ]
        if points:
            pareto_panels.append(
                ScatterPanel(
                    f"{problem} ({currency})", "time (s)", f"cost of a run ({currency})", points
                )
            )
    if gops_panels:
        section.figures += figure_set(
            gops_panels,
            lambda g: bar_figure(g, ctx.palette),
            "cost_per_gops",
            "Price per GOPS by platform and pricing model",
            "",
            section.notes,
        )
    if pareto_panels:
        section.figures += figure_set(
            pareto_panels,
            lambda g: scatter_figure(g, ctx.palette),
            "cost_pareto",
            "Time against cost: the Pareto front",
            "",
            section.notes,
        )
    section.tables.append(ReportTable("cost", "Cost of the NPB runs", table))
    prices = pd.DataFrame(
        [
            {
                "price_source": s.label,
                "platform": platform,
                "instance": hp.instance,
                "pricing": hp.pricing,
                "per_node_hour": hp.amount,
                "currency": hp.currency,
                "catalog": hp.catalog,
                "date": hp.date,
            }
            for s in ctx.price_sources
            for platform, values in sorted(s.prices.items())
            for hp in values
        ]
    )
    section.tables.append(ReportTable("prices", "Prices used (per node-hour)", prices))
    return section


register("cost", cost_section)
