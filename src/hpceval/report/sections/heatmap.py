"""Overhead against the baseline: a heat map of each platform's relative performance."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hpceval.analysis.categories import SUMMARY_METRICS, Category
from hpceval.analysis.compare import Comparison, compare
from hpceval.report.figures import (
    heatmap_figure,
    render,
)
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    MAX_HEATMAP_ROWS,
    Context,
    Section,
    baseline_origin,
    text_column,
)
from hpceval.report.styles import ORIGIN_ORDER, origin_style
from hpceval.report.tables import ReportTable


def _row_labels(table: pd.DataFrame) -> pd.Series[str]:
    """A heat-map row per category and benchmark detail: mpibench pattern and pair, NPB
    kernel.class, otherwise the benchmark, its first distinguishing parameter and metric."""
    bench = text_column(table, "benchmark")
    pattern = text_column(table, "pattern")
    pair = text_column(table, "pair")
    kernel = text_column(table, "kernel").str.upper()
    klass = text_column(table, "class")
    metric = text_column(table, "metric")
    other = pd.Series([""] * len(table), index=table.index, dtype=object)
    for name in ("kernel", "pattern", "workload", "input", "system", "test", "rw", "mode"):
        values = text_column(table, name)
        other = other.where(other != "", values)
    mpi = bench + " " + pattern + np.where(pair != "", " " + pair, "")
    npb: pd.Series[str] = "npb " + kernel + np.where(klass != "", "." + klass, "")
    generic = bench + np.where(other != "", " " + other, "") + " " + metric
    label = np.where(bench == "mpibench", mpi, np.where(bench == "npb", npb, generic))
    return pd.Series(label, index=table.index, dtype=object)


def heatmap_section(ctx: Context) -> Section:
    section = Section(
        "overhead",
        "Overhead against the baseline",
        "Each cell is the geometric mean, over the points of a row (message sizes, rank "
        "counts, classes...), of the platform's performance relative to the baseline "
        "(> 1: better; time and latency inverted). Bold with * : most of its points differ "
        "significantly (95 % confidence interval of the ratio from the raw samples) in the "
        "direction shown; grey italic: not significant. Columns of emulated or simulated data "
        "say so; they are compared with the baseline's own origin, never pooled with it. Points "
        "are paired by workload (benchmark, size or class, rank count), each platform at its "
        "default placement, as a user would run it: a cluster's inter-node points face the "
        "baseline's single-node ones (compare --placement, docs/compare.md).",
    )
    if ctx.baseline is None:
        section.empty = "No baseline: give --baseline PLATFORM to compare the platforms with it."
        return section
    base_origin = ctx.baseline_origin or baseline_origin(ctx.frame, ctx.baseline)
    # Only the metrics the heat map shows (the others restate the same points: bandwidth =
    # size / latency, Mop/s = operations / time), which halves the work of the intervals.
    bench = ctx.frame["benchmark"].astype(str).to_numpy()
    metric = ctx.frame["metric"].astype(str).to_numpy()
    shown = np.ones(len(ctx.frame), dtype=bool)
    for name, metrics in SUMMARY_METRICS.items():
        shown &= (bench != name) | np.isin(metric, list(metrics))
    frame = ctx.frame.loc[shown]
    names = sorted(str(x) for x in frame["platform"].unique())
    if ctx.baseline not in names:
        section.empty = f"The baseline {ctx.baseline} has no comparable measurement."
        return section
    result: Comparison = compare(
        frame,
        ctx.baseline,
        platforms=names,
        baseline_origin=base_origin,
        allow_mixed_origins=True,
        policy=ctx.policy,
        platform_configs=ctx.platform_configs,
    )
    table = result.table
    if table.empty:
        section.empty = (
            f"No point was measured on both the baseline {ctx.baseline} ({base_origin}) "
            "and another platform."
        )
        return section
    perf = table["performance"].to_numpy(dtype=np.float64)
    use = np.isfinite(perf) & (perf > 0)
    part = table.loc[use]
    section.intro += (
        f" Baseline: {ctx.baseline} ({base_origin}); {ctx.policy.describe()}; intervals by "
        f"{result.method}."
    )
    if part.empty:
        section.empty = "No comparable point with a positive value on both sides."
        return section
    verdict = part["verdict"].astype(str)
    cells = pd.DataFrame(
        {
            "category": part["category"].astype(str),
            "row": _row_labels(part),
            "platform": part["platform"].astype(str),
            "origin": part["origin"].astype(str),
            "log_performance": np.log(part["performance"].to_numpy(dtype=np.float64)),
            "faster": (verdict == "faster").astype(int),
            "slower": (verdict == "slower").astype(int),
            "not_significant": (verdict == "no significant difference").astype(int),
            "undetermined": verdict.isin(["undetermined", "too few repetitions"]).astype(int),
        }
    )
    grouped = (
        cells.groupby(["category", "row", "platform", "origin"], sort=False)
        .agg(
            points=("log_performance", "size"),
            log_performance=("log_performance", "mean"),
            faster=("faster", "sum"),
            slower=("slower", "sum"),
            not_significant=("not_significant", "sum"),
            undetermined=("undetermined", "sum"),
        )
        .reset_index()
    )
    grouped["performance"] = np.exp(grouped.pop("log_performance"))
    grouped["significant"] = (
        (grouped["performance"] > 1) & (grouped["faster"] * 2 > grouped["points"])
    ) | ((grouped["performance"] < 1) & (grouped["slower"] * 2 > grouped["points"]))
    grouped["column"] = grouped["platform"] + grouped["origin"].map(
        lambda o: origin_style(o).suffix
    )
    category_rank = {c.value: i for i, c in enumerate(Category)}
    grouped["rank"] = grouped["category"].map(category_rank)
    grouped = grouped.sort_values(["rank", "row", "platform", "origin"]).drop(columns="rank")
    row_names = list(dict.fromkeys(grouped["category"] + " · " + grouped["row"]))
    if len(row_names) > MAX_HEATMAP_ROWS:
        section.notes.append(
            f"{len(row_names) - MAX_HEATMAP_ROWS} more heat-map rows not drawn; "
            "tables/overhead_heatmap.csv holds them."
        )
        row_names = row_names[:MAX_HEATMAP_ROWS]
    origin_rank = {o: i for i, o in enumerate(ORIGIN_ORDER)}
    column_names = [
        c
        for _, _, c in sorted(
            {
                (p, origin_rank.get(o, 9), c)
                for p, o, c in zip(
                    grouped["platform"], grouped["origin"], grouped["column"], strict=True
                )
            }
        )
    ]
    r_index = {r: i for i, r in enumerate(row_names)}
    c_index = {c: j for j, c in enumerate(column_names)}
    values = np.full((len(row_names), len(column_names)), np.nan)
    significant = np.zeros(values.shape, dtype=bool)
    full = grouped["category"] + " · " + grouped["row"]
    for r, c, v, s in zip(
        full, grouped["column"], grouped["performance"], grouped["significant"], strict=True
    ):
        if r in r_index:
            values[r_index[r], c_index[c]] = v
            significant[r_index[r], c_index[c]] = bool(s)
    fig = heatmap_figure(
        row_names,
        column_names,
        values,
        significant,
        title=f"performance relative to {ctx.baseline} ({base_origin})",
    )
    section.figures.append(
        render(
            fig,
            "overhead_heatmap",
            "Overhead heat map",
            f"Performance relative to the baseline {ctx.baseline}.",
        )
    )
    section.tables.append(
        ReportTable(
            "overhead_heatmap", "Heat-map cells", grouped.drop(columns="column"), show=False
        )
    )
    summary = pd.DataFrame(
        [
            {
                "platform": s.platform,
                "origin": s.origin.value,
                "baseline_origin": s.baseline_origin.value,
                "category": s.category.value,
                "points": s.points,
                "geomean_performance": s.geomean,
                "overhead": s.overhead,
                "geometric_sd": s.geometric_sd,
                "faster": s.faster,
                "slower": s.slower,
                "not_significant": s.no_difference,
                "undetermined": s.undetermined,
            }
            for s in result.summaries
        ]
    )
    if not summary.empty:
        section.tables.append(
            ReportTable(
                "overhead_by_category",
                "Overhead per category (overhead = 1/geomean - 1: 0.15 is 15 % slower)",
                summary,
            )
        )
    section.tables.append(
        ReportTable(
            "comparison", "Every compared point (the heat map's metrics)", table, show=False
        )
    )
    if not result.unmatched_points.empty:
        section.tables.append(
            ReportTable(
                "without_counterpart",
                "Points without counterpart, and why",
                result.unmatched_points,
            )
        )
    return section


register("heatmap", heatmap_section)
