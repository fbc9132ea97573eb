"""Placement: the gain of each rank placement over the full-node one, per NPB problem."""

from __future__ import annotations

import pandas as pd

from hpceval.analysis.scaling import placement_sweeps
from hpceval.report.figures import (
    Bar,
    BarPanel,
    bar_figure,
)
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    MAX_BARS_PER_PANEL,
    Context,
    Section,
    figure_set,
    problem_label,
)
from hpceval.report.styles import mpl_text, origin_style
from hpceval.report.tables import ReportTable


def placement_section(ctx: Context) -> Section:
    section = Section(
        "placement",
        "Placement strategies",
        "For each NPB problem and core count measured with several placements (nodes × ranks "
        "per node × threads per rank), the gain of each placement over the full-node one "
        "(fewest nodes, pure MPI): time(full node) / time(placement); above 1 it is faster, "
        "usually on more nodes, at a higher price. The best placement has a black outline.",
    )
    sweeps = placement_sweeps(ctx.frame, benchmark="npb", metric="time")
    if not sweeps:
        section.empty = (
            "No placement sweep (an NPB problem at one core count on several placements)."
        )
        return section
    panels: list[BarPanel] = []
    rows = []
    for sw in sweeps:
        problem = problem_label(sw.problem)
        bars = []
        for ch in sw.choices:
            rows.append(
                {
                    "platform": sw.platform,
                    "origin": sw.origin.value,
                    "problem": problem,
                    "cores": sw.cores,
                    "placement": ch.point.label(),
                    "time_s": ch.point.value,
                    "gain_vs_full_node": ch.gain,
                    "nodes_vs_full_node": ch.extra_nodes,
                    "full_node": ch.full_node,
                    "best": ch is sw.best,
                }
            )
            bars.append(
                Bar(
                    mpl_text(ch.point.label() + (" (full node)" if ch.full_node else "")),
                    ch.gain,
                    sw.platform,
                    sw.origin.value,
                    emphasis=ch is sw.best,
                )
            )
        panels.append(
            BarPanel(
                f"{sw.platform}{origin_style(sw.origin.value).suffix}: {problem}, {sw.cores} cores",
                "gain over the full-node placement",
                bars[:MAX_BARS_PER_PANEL],
                reference=1.0,
            )
        )
    section.figures += figure_set(
        panels,
        lambda g: bar_figure(g, ctx.palette),
        "placement_gain",
        "Placement gain over the full-node placement",
        "",
        section.notes,
    )
    section.tables.append(ReportTable("placement", "Placement sweeps", pd.DataFrame(rows)))
    return section


register("placement", placement_section)
