"""Collectives: time against message size and against rank count."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from hpceval.patterns import COLLECTIVES, PATTERNS
from hpceval.report.figures import (
    Panel,
    line_figure,
)
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    Context,
    Section,
    cap_lines,
    export_columns,
    figure_set,
    matches,
    mean_lines,
    present_columns,
)
from hpceval.report.tables import ReportTable


def _closest_size(sizes: Sequence[float], target: float = 1024.0) -> float:
    def distance(s: float) -> float:
        return abs(math.log2(max(s, 0.5)) - math.log2(target))

    return min(sizes, key=distance)


def size_sweep_points(part: pd.DataFrame) -> pd.DataFrame:
    """The points of one collective drawn against the message size (sizes above 0): each
    platform's (and origin's) largest rank count, and a projection (simulated, emulated) also
    at its platform's largest measured rank count, so that the projected curve is overlaid on
    the measured one at the same rank count."""
    largest = part.groupby(["platform", "origin"], observed=True)["ranks"].transform("max")
    platform = part["platform"].astype(str)
    measured = part["origin"].astype(str) == "measured"
    measured_largest = platform.map(part.loc[measured].groupby(platform[measured])["ranks"].max())
    at_measured = ~measured & (part["ranks"] == measured_largest)
    return part.loc[((part["ranks"] == largest) | at_measured) & (part["size"].astype(float) > 0)]


def collectives_section(ctx: Context) -> Section:
    section = Section(
        "collectives",
        "Collectives",
        "Time per call (µs, IMB t_max: the slowest rank) against the message size at each "
        "platform's largest rank count, and against the rank count at one message size "
        "(the size nearest 1 KiB measured at two rank counts or more).",
    )
    sub = ctx.points(
        lambda p: (
            matches(p, "benchmark", ["mpibench"])
            & matches(p, "pattern", sorted(COLLECTIVES))
            & matches(p, "metric", ["time"])
        )
    )
    if sub.empty or "size" not in sub.columns or "ranks" not in sub.columns:
        section.empty = "No collective measurements (mpibench bcast, reduce, allreduce, ...)."
        return section
    patterns = [x for x in PATTERNS if x in set(sub["pattern"].astype(str))]
    key = present_columns(sub, ["size", "pattern"])
    by_size: list[Panel] = []
    by_ranks: list[Panel] = []
    # Against the rank count, a series keeps what does not change with it (threads, binding);
    # nodes and ranks per node grow with the ranks.
    rank_key = [c for c in key if c not in ("ranks", "nodes", "ranks_per_node")]
    for pattern in patterns:
        part = sub.loc[sub["pattern"].astype(str) == pattern]
        top = size_sweep_points(part)
        if not top.empty:
            lines = mean_lines(top, key, "size")
            by_size.append(
                Panel(
                    pattern,
                    "message size (bytes)",
                    "time per call (µs)",
                    cap_lines(lines, f"{pattern} vs size", section.notes),
                )
            )
        # vs ranks: one size measured at several rank counts
        counts = part.groupby("size", observed=True)["ranks"].nunique()
        candidates = [float(str(s)) for s, n in counts.items() if n >= 2]
        if not candidates:
            continue
        size = _closest_size(candidates)
        at = part.loc[part["size"].astype(float) == size]
        lines = mean_lines(at, rank_key, "ranks")
        by_ranks.append(
            Panel(
                f"{pattern}, {int(size)} B",
                "ranks",
                "time per call (µs)",
                cap_lines(lines, f"{pattern} vs ranks", section.notes),
            )
        )
    if by_size:
        section.figures += figure_set(
            by_size,
            lambda g: line_figure(g, ctx.palette),
            "collectives_vs_size",
            "Collectives vs message size",
            "",
            section.notes,
        )
    if by_ranks:
        section.figures += figure_set(
            by_ranks,
            lambda g: line_figure(g, ctx.palette),
            "collectives_vs_ranks",
            "Collectives vs rank count",
            "",
            section.notes,
        )
    else:
        section.notes.append("No collective was measured at two rank counts: no scaling plot.")
    section.tables.append(
        ReportTable(
            "collectives",
            "Every collective point (µs, mean of the pooled samples)",
            export_columns(sub, ["platform", "origin", "pattern", "size", "ranks"]),
            show=False,
        )
    )
    return section


register("collectives", collectives_section)
