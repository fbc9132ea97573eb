"""NPB: Mop/s and speedup against cores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hpceval.analysis.scaling import ScalingCurve, scaling
from hpceval.analysis.validation import RATIO_METRIC, geometric_mean, log_t_interval
from hpceval.report.figures import (
    Line,
    Panel,
    line_figure,
)
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    Context,
    Section,
    cap_lines,
    figure_set,
    platform_shades,
    problem_label,
)
from hpceval.report.styles import labelled
from hpceval.report.tables import ReportTable


def _curve_panels(
    curves: Sequence[ScalingCurve], ylabel: str, value: str, notes: list[str]
) -> list[Panel]:
    """One panel per kernel (problem less its class), one series per platform and class."""
    by_kernel: dict[str, list[ScalingCurve]] = {}
    for c in curves:
        rest = {k: v for k, v in c.problem.items() if k != "class"}
        by_kernel.setdefault(problem_label(rest), []).append(c)
    panels = []
    for kernel in sorted(by_kernel):
        members = sorted(
            by_kernel[kernel],
            key=lambda c: (c.platform, c.origin.value, str(c.problem.get("class", ""))),
        )
        shades = platform_shades([{"platform": c.platform} for c in members])
        lines = []
        for c, shade in zip(members, shades, strict=True):
            x = np.asarray([pt.cores for pt in c.points], dtype=np.float64)
            y = np.asarray(
                [pt.value if value == "value" else pt.speedup for pt in c.points], dtype=np.float64
            )
            marked = (
                np.asarray([c.knee.cores], dtype=np.float64)
                if c.knee is not None and value == "speedup"
                else None
            )
            detail = f"class {c.problem['class']}" if "class" in c.problem else ""
            crowded = np.asarray(
                [pt.cores for pt in c.points if pt.oversubscribed], dtype=np.float64
            )
            lines.append(
                Line(
                    c.platform,
                    c.origin.value,
                    labelled(c.platform, c.origin.value, detail),
                    x,
                    y,
                    shade,
                    marked=marked,
                    crowded=crowded if len(crowded) else None,
                )
            )
        panel = Panel(
            kernel, "cores (ranks × threads)", ylabel, cap_lines(lines, f"{kernel} {ylabel}", notes)
        )
        references = {c.reference.cores for c in members}
        if value == "speedup" and len(references) == 1:
            lo = float(references.pop())
            grid = np.asarray(sorted({float(pt.cores) for c in members for pt in c.points}))
            panel.ideal = (grid, grid / lo)
        panels.append(panel)
    return panels


def npb_section(ctx: Context) -> Section:
    section = Section(
        "npb",
        "NAS Parallel Benchmarks: Mop/s and speedup",
        "Mop/s total (official operation counts) and speedup against the run with the fewest "
        "cores of the same kernel and class, per platform, over the rank counts: at each core "
        "count the platform's default placement (as a user would run it; its best measured "
        "placement where the default was not measured or its platform file is unknown). A "
        "cross marks an oversubscribed point (more ranks than cores): part of the same "
        "curve, not a problem of its own. The black line is the ideal speedup; a red ring marks "
        "the knee, where efficiency drops below 0.5 or the speedup stops growing.",
    )
    try:
        configs = ctx.platform_configs
        times = scaling(ctx.frame, benchmark="npb", metric="time", platform_configs=configs)
        mops = scaling(ctx.frame, benchmark="npb", metric="mops_total", platform_configs=configs)
    except KeyError as e:  # a unit outside HIGHER_IS_BETTER
        section.empty = f"NPB scaling could not be computed: unknown unit {e}."
        return section
    if not times and not mops:
        section.empty = "No NPB measurements (time, Mop/s with a rank count)."
        return section
    if mops:
        section.figures += figure_set(
            _curve_panels(mops, "Mop/s total", "value", section.notes),
            lambda g: line_figure(g, ctx.palette),
            "npb_mops",
            "NPB Mop/s vs cores",
            "",
            section.notes,
        )
    if times:
        section.figures += figure_set(
            _curve_panels(times, "speedup", "speedup", section.notes),
            lambda g: line_figure(g, ctx.palette),
            "npb_speedup",
            "NPB speedup vs cores",
            "",
            section.notes,
        )
    mops_of: dict[tuple[str, str, str, int], float] = {}
    for c in mops:
        for pt in c.points:
            mops_of[(c.platform, c.origin.value, problem_label(c.problem), pt.cores)] = pt.value
    rows = []
    for c in times:
        label = problem_label(c.problem)
        for pt in c.points:
            # Key numbers first; the long placement label last.
            rows.append(
                {
                    "platform": c.platform,
                    "origin": c.origin.value,
                    "problem": label,
                    "cores": pt.cores,
                    "time_s": pt.value,
                    "speedup": pt.speedup,
                    "efficiency": pt.efficiency,
                    "mops_total": mops_of.get((c.platform, c.origin.value, label, pt.cores)),
                    "knee": c.knee is not None and pt.cores == c.knee.cores,
                    "scales_to_cores": c.scales_to,
                    "samples": pt.samples,
                    "placement": pt.label(),
                }
            )
    if rows:
        section.tables.append(
            ReportTable(
                "npb_scaling",
                "NPB scaling (default placement per core count, else the best)",
                pd.DataFrame(rows),
            )
        )
    _validation(ctx.frame, section)
    _official(ctx.frame, section)
    return section


def _validation(frame: pd.DataFrame, section: Section) -> None:
    """`hpceval validate`'s figures, beside the own results they qualify: one line each
    ("hpceval CG class A on 1 rank = 1.03x official NPB on this platform, +4 %/-4 %")."""
    part = frame.loc[(frame["benchmark"] == "npb") & (frame["metric"] == RATIO_METRIC)]
    rows = []
    for record in part.to_dict("records"):
        ratios = [float(x) for x in record["samples"]]
        interval = log_t_interval(ratios)
        value = geometric_mean(ratios)
        rows.append(
            {
                "platform": record["platform"],
                "kernel": str(record["kernel"]).upper(),
                "class": record["class"],
                "ranks": record["ranks"],
                "pairs": len(ratios),
                "ratio": value,
                "ci_low": None if interval is None else interval[0],
                "ci_high": None if interval is None else interval[1],
            }
        )
        spread = (
            "" if interval is None
            else f", {interval[1] / value - 1:+.0%}/{interval[0] / value - 1:+.0%} (95 % CI)"
        )  # fmt: skip
        section.notes.append(
            f"hpceval {str(record['kernel']).upper()} class {record['class']} on "
            f"{record['ranks']} ranks = {value:.2f}x official NPB on {record['platform']}"
            f"{spread}, {len(ratios)} interleaved pairs (hpceval validate)"
        )
    if rows:
        section.tables.append(
            ReportTable(
                "npb_validation",
                "hpceval's NPB against the official NPB (own / official Mop/s, geometric mean "
                "of interleaved pairs, t-interval on the log ratios)",
                pd.DataFrame(rows),
            )
        )


def _official(frame: pd.DataFrame, section: Section) -> None:
    """Results of the official NPB (`npb-official`), in a table of their own: never mixed
    with hpceval's own kernels."""
    part = frame.loc[(frame["benchmark"] == "npb-official") & (frame["metric"] == "mops_total")]
    if part.empty:
        return
    table = (
        part.assign(mops_total=part["value"])
        .groupby(
            ["platform", "origin", "implementation", "kernel", "class", "ranks"], observed=True
        )["mops_total"]
        .agg(["count", "median", "max"])
        .reset_index()
    )
    section.tables.append(
        ReportTable(
            "npb_official",
            "The official NPB (npb-official, built from the user's sources; implementation: "
            "the code and the version it printed): Mop/s total",
            table,
        )
    )


register("npb", npb_section)
