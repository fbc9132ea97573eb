"""Summary: measurements, runs and benchmarks per platform and origin, and the runs."""

from __future__ import annotations

from hpceval.report.sections import register
from hpceval.report.sections.base import (
    Context,
    Section,
    baseline_origin,
)
from hpceval.report.tables import ReportTable


def summary_section(ctx: Context) -> Section:
    runs = ctx.runs
    f = ctx.frame
    counts = (
        f.groupby(["platform", "origin"], observed=True)
        .agg(
            measurements=("value", "size"),
            runs=("run", "nunique"),
            benchmarks=("benchmark", lambda s: ", ".join(sorted(map(str, s.unique())))),
        )
        .reset_index()
    )
    counts["platform"] = counts["platform"].astype(str)
    counts["origin"] = counts["origin"].astype(str)
    counts["baseline"] = False
    if ctx.baseline is not None:
        counts["baseline"] = (counts["platform"] == ctx.baseline) & (
            counts["origin"] == baseline_origin(ctx.frame, ctx.baseline)
        )
    origins = sorted(set(counts["origin"]))
    intro = (
        f"{len(f):,} measurements of {counts['platform'].nunique()} platform(s); origins: "
        f"{', '.join(origins)}. Measured data are drawn with solid lines and circles, "
        "emulated data (real programs on an emulated cluster) with dashed lines and squares, "
        "simulated data (SimGrid projections) with dotted lines and hollow triangles; tables "
        "carry an origin badge. Origins are never pooled together."
    )
    return Section(
        "summary",
        "Platforms and data",
        intro,
        tables=[
            ReportTable("platforms", "Platforms", counts),
            ReportTable("runs", "Runs", runs),
        ],
    )


register("summary", summary_section)
