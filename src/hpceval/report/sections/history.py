"""History: each platform's runs over time, per point, with the change points found in each
series (hpceval.history: ruptures' binary segmentation with a permutation test)."""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pandas as pd

from hpceval.analysis.frame import point_columns
from hpceval.history import DEFAULT_ALPHA, DEFAULT_MIN_SIZE, detect
from hpceval.report.figures import Line, Panel, line_figure
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    MAX_FIGURES_PER_KIND,
    MAX_PANELS_PER_FIGURE,
    Context,
    Section,
    figure_set,
    placement_label,
)
from hpceval.report.styles import labelled
from hpceval.report.tables import ReportTable

# Series shorter than this have no change point to find (DEFAULT_MIN_SIZE runs each side).
MIN_RUNS: Final = 2 * DEFAULT_MIN_SIZE
# The most series searched for change points (each costs a few ms of permutations).
MAX_SERIES: Final = 400


def run_values(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The mean value of every (platform, origin, point, run): one row per run of a series."""
    key = ["platform", "origin", *point_columns(frame)]
    rows = frame.loc[frame["run"].notna(), [*key, "run", "value"]]
    per_run = rows.groupby([*key, "run"], observed=True, sort=True, dropna=False)["value"].mean()
    return per_run.reset_index(), key


def history_section(ctx: Context) -> Section:
    section = Section(
        "history",
        "History and change points",
        "Each platform's stored runs over time, one value per run and point (the mean of the "
        "run's measurements). A change point is where the level of a series moved: "
        "binary segmentation (ruptures, mean-shift cost) kept by a permutation test at "
        f"p ≤ {DEFAULT_ALPHA:g} (the false-alarm rate per stationary series), with the ratio "
        "after/before and its 95 % CI. `hpceval history PLATFORM` names the provenance that "
        "changed at each one.",
    )
    if ctx.frame.empty or "run" not in ctx.frame.columns:
        section.empty = "No stored runs."
        return section
    values, key = run_values(ctx.frame)
    dates = dict(zip(ctx.runs["run"], ctx.runs["started"], strict=True)) if len(ctx.runs) else {}
    grouped = [(k, g) for k, g in values.groupby(key, observed=True, sort=True, dropna=False)]
    long_enough = [(k, g) for k, g in grouped if len(g) >= MIN_RUNS]
    if not long_enough:
        section.empty = (
            f"No point was measured in {MIN_RUNS} runs or more of one platform: a history needs "
            "repeated runs (a cron job of `hpceval run`)."
        )
        return section
    if len(long_enough) > MAX_SERIES:
        section.notes.append(f"{len(long_enough) - MAX_SERIES} more series not searched.")
        long_enough = long_enough[:MAX_SERIES]
    summary: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    panels: list[tuple[int, Panel]] = []
    for k, g in long_enough:
        record = dict(zip(key, k, strict=True))
        point = placement_label(record, key[5:]) or "—"
        runs = g["run"].to_numpy(dtype=np.int64)
        y = g["value"].to_numpy(dtype=np.float64)
        found = detect(y)
        name = f"{record['benchmark']} {record['metric']} [{record['unit']}] {point}"
        summary.append(
            {
                "platform": record["platform"],
                "origin": record["origin"],
                "series": name,
                "runs": len(y),
                "first": dates.get(int(runs[0]), ""),
                "last": dates.get(int(runs[-1]), ""),
                "run_to_run_cv": float(np.std(y, ddof=1) / np.mean(y)) if np.mean(y) else None,
                "changes": len(found),
            }
        )
        for c in found:
            changes.append(
                {
                    "platform": record["platform"],
                    "series": name,
                    "run": int(runs[c.index]),
                    "date": dates.get(int(runs[c.index]), ""),
                    "ratio": c.ratio,
                    "ci_low": c.ratio_low,
                    "ci_high": c.ratio_high,
                    "p_value": c.p_value,
                }
            )
        x = runs.astype(np.float64)
        line = Line(
            str(record["platform"]),
            str(record["origin"]),
            labelled(str(record["platform"]), str(record["origin"])),
            x,
            y,
            marked=x[[c.index for c in found]] if found else None,
        )
        panel = Panel(
            name,
            "run",
            str(record["unit"]),
            [line],
            xscale="linear",
            yscale="linear",
            mark_label="change point",
        )
        panels.append((len(found), panel))
    section.tables.append(
        ReportTable(
            "history_series", "Series over the runs", pd.DataFrame(summary), show=len(summary) <= 60
        )
    )
    if changes:
        section.tables.append(
            ReportTable("history_changes", "Change points", pd.DataFrame(changes))
        )
    else:
        section.notes.append("No change point in any series.")
    # Series with changes first: those are the ones to look at.
    drawn = [p for _, p in sorted(panels, key=lambda item: -item[0])]
    drawn = drawn[: MAX_PANELS_PER_FIGURE * MAX_FIGURES_PER_KIND]
    section.figures += figure_set(
        drawn,
        lambda group: line_figure(group, ctx.palette),
        "history",
        "Runs over time",
        "One value per run (x: run id, in time order); rings: change points.",
        section.notes,
    )
    return section


register("history", history_section)
