"""Other benchmarks: one dot plot per benchmark without a section of its own."""

from __future__ import annotations

import numpy as np

from hpceval.report.figures import (
    Line,
    dot_figure,
)
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    MAX_CATEGORIES_PER_PANEL,
    MAX_OTHER_BENCHMARKS,
    MAX_SERIES_PER_PANEL,
    Context,
    Section,
    export_columns,
    figure_set,
    matches,
    placement_label,
    present_columns,
    safe_name,
    series_of,
)
from hpceval.report.styles import labelled
from hpceval.report.tables import ReportTable


def other_section(ctx: Context) -> Section:
    section = Section(
        "other",
        "Storage, applications and other benchmarks",
        "Benchmarks other than mpibench and NPB (fio, GROMACS, LAMMPS, ...): the mean of each "
        "point per platform (one panel per metric), the full table beside each.",
    )
    sub = ctx.points(lambda p: ~matches(p, "benchmark", ["mpibench", "npb"]))
    if sub.empty:
        section.empty = "No other benchmark (storage, applications) in the data."
        return section
    if "stream_in" in sub.columns and (sub["stream_in"].astype(str) == "cache").any():
        section.notes.append(
            "HPCC STREAM figures with stream_in = cache: its arrays fit in the last-level "
            "cache (in cache: L3 bandwidth, not memory); the `stream` benchmark measures memory."
        )
    benchmarks = sorted(set(sub["benchmark"].astype(str)))
    if len(benchmarks) > MAX_OTHER_BENCHMARKS:
        section.notes.append(
            f"{len(benchmarks) - MAX_OTHER_BENCHMARKS} more benchmark(s) only in the tables."
        )
    for i, name in enumerate(benchmarks):
        part = sub.loc[sub["benchmark"].astype(str) == name]
        key = present_columns(part)
        records = [{str(k): v for k, v in r.items()} for r in part[key].to_dict("records")]
        part = part.assign(point=[placement_label(r, key) or "—" for r in records])
        section.tables.append(
            ReportTable(
                f"benchmark_{safe_name(name)}",
                f"{name}: every point",
                export_columns(part, ["platform", "origin", "metric", "unit", "point"]),
                show=len(part) <= 60,
            )
        )
        if i >= MAX_OTHER_BENCHMARKS:
            continue
        panels = []
        for (metric, unit), rows in part.groupby(["metric", "unit"], observed=True, sort=True):
            categories = sorted(set(rows["point"]))[:MAX_CATEGORIES_PER_PANEL]
            position = {c: j for j, c in enumerate(categories)}
            rows = rows.loc[rows["point"].isin(categories)]
            lines = []
            groups = series_of(rows, [], "point")
            for record, g in groups:
                lines.append(
                    Line(
                        str(record["platform"]),
                        str(record["origin"]),
                        labelled(str(record["platform"]), str(record["origin"])),
                        g["value"].to_numpy(dtype=np.float64),
                        np.asarray([position[c] for c in g["point"]], dtype=np.float64),
                    )
                )
            panels.append(
                (f"{name} {metric}", f"{metric} ({unit})", categories, lines[:MAX_SERIES_PER_PANEL])
            )
        if panels:
            section.figures += figure_set(
                panels,
                lambda g: dot_figure(g, ctx.palette),
                f"benchmark_{safe_name(name)}",
                f"{name} per platform",
                "",
                section.notes,
            )
    return section


register("other", other_section)
