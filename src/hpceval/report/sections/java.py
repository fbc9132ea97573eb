"""Java overhead: Java ranks on MPJ Express against C MPI, point by point, with CIs.

A platform is a Java one when its runs' MPI (provenance) is MPJ Express (mpibench-java and
npb-java store their points as mpibench's and npb's, with the same parameters as the C
programs'). Each Java platform is compared with the C platforms that measured the same
points (the report's baseline alone when it is a C platform), by `analysis.compare`: the
ratio Java / C of the pooled means with its confidence interval and verdict. A second table
sets the first iteration in a fresh JVM (interpreted code) beside the JIT-warm figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpceval.analysis.compare import CrossOriginError, compare
from hpceval.report.figures import Bar, BarPanel, bar_figure
from hpceval.report.sections import register
from hpceval.report.sections.base import (
    MAX_BARS_PER_PANEL,
    Context,
    Section,
    export_columns,
    figure_set,
    plain,
    text_column,
)
from hpceval.report.styles import mpl_text
from hpceval.report.tables import ReportTable

JAVA_MPI: Final = "MPJ Express"
# The implementation label of the Java programs' measurements (java/mpj-express 0.44).
JAVA_IMPLEMENTATION: Final = "java/"
# The Java side of a platform that ran both (its Java rows under "NAME (Java)").
JAVA_SIDE: Final = " (Java)"
# The figures compared (the others restate them: Mop/s per process, bandwidth of a size).
COMPARED: Final = {
    "mpibench": ("latency", "bandwidth", "time"),
    "npb": ("mops_total", "time"),
}
# The first-iteration metric of mpibench-java beside its JIT-warm one.
FIRST_ITERATION: Final = {"first_iteration_latency": "latency", "first_iteration_time": "time"}
RATIO_COLUMNS: Final = (
    "java_platform", "c_platform", "origin", "baseline_origin", "benchmark", "metric", "unit",
)  # fmt: skip
POINT_PARAMETERS: Final = ("pattern", "pair", "size", "kernel", "class", "nodes", "ranks",
                           "ranks_per_node")  # fmt: skip


def java_platforms(provenance: pd.DataFrame, frame: pd.DataFrame | None = None) -> list[str]:
    """The platforms whose runs' MPI is MPJ Express, and those with Java measurements in
    `frame` (a suite's Java cases on `local`)."""
    found: set[str] = set()
    if frame is not None:
        found |= {str(p) for p in frame.loc[is_java(frame), "platform"].unique()}
    if provenance.empty or "mpi" not in provenance.columns:
        return sorted(found)
    java = provenance.loc[text_column(provenance, "mpi") == JAVA_MPI, "platform"]
    return sorted(found | {str(p) for p in java})


def _compared(frame: pd.DataFrame) -> pd.Series[bool]:
    keep = pd.Series(False, index=frame.index)
    for benchmark, metrics in COMPARED.items():
        keep |= (frame["benchmark"].astype(str) == benchmark) & frame["metric"].astype(str).isin(
            metrics
        )
    return keep


def is_java(frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """The rows a Java program measured (implementation java/...)."""
    if "implementation" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame["implementation"].astype(str).str.startswith(JAVA_IMPLEMENTATION).to_numpy()


def split_mixed_platforms(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """The frame with the Java rows of a platform that also ran the C programs (a suite with
    Java entries on `local`) under a platform of their own, "local (Java)", so that the two
    implementations face each other as two sides; and those names with their C platform."""
    java = is_java(frame)
    platform = frame["platform"].astype(str).to_numpy()
    mixed = sorted(set(platform[java]) & set(platform[~java]))
    if not mixed:
        return frame, {}
    renamed = {name: f"{name}{JAVA_SIDE}" for name in mixed}
    relabelled = np.where(java & np.isin(platform, mixed), [renamed.get(p, p) for p in platform],
                          platform)  # fmt: skip
    out = frame.copy()
    out["platform"] = pd.Categorical(relabelled)
    return out, {side: name for name, side in renamed.items()}


def java_vs_c(ctx: Context, javas: list[str], notes: list[str]) -> pd.DataFrame:
    """Every Java side against its C side: the C programs of the same platform (a suite with
    Java entries run on `local`), else every C platform with its points (or the baseline)."""
    frame, own_c = split_mixed_platforms(ctx.frame.loc[_compared(ctx.frame).to_numpy()])
    javas = sorted({*(j for j in javas if j not in own_c.values()), *own_c})
    natives = sorted({str(p) for p in frame["platform"].unique()} - set(javas))
    if ctx.baseline is not None and ctx.baseline in natives:
        natives = [ctx.baseline]
    parts = []
    for java in javas:
        for native in [own_c[java]] if java in own_c else natives:
            pair = frame.loc[frame["platform"].isin([java, native]).to_numpy()]
            try:
                # One implementation per side: Java on one, C on the other.
                result = compare(pair, native, platforms=[java], mix_implementations=True)
            except CrossOriginError:
                notes.append(
                    f"{java} vs {native}: not compared, their origins differ (measured vs "
                    "emulated); compare them with `hpceval compare --cross-origin`."
                )
                continue
            if result.table.empty:
                continue
            table = result.table.rename(columns={"platform": "java_platform"})
            table.insert(1, "c_platform", native)
            parts.append(table)
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    lead = [*RATIO_COLUMNS, *(c for c in POINT_PARAMETERS if c in table.columns)]
    # Each side's value is the statistics policy's statistic of its samples (compare's).
    renamed = {"baseline_value": "c_value", "value": "java_value"}
    table = table.rename(columns=renamed)
    stats = ["statistic", "c_value", "java_value", "ratio", "ratio_low", "ratio_high",
             "slowdown", "verdict", "samples", "baseline_samples", "ci_method", "note"]  # fmt: skip
    if "performance" in table.columns:
        with np.errstate(divide="ignore"):
            table["slowdown"] = 1.0 / table["performance"].astype(float)
    return table[[c for c in lead + stats if c in table.columns]].reset_index(drop=True)


def first_iterations(ctx: Context, javas: list[str]) -> pd.DataFrame:
    """Java points: the first iteration in a fresh JVM beside the JIT-warm mean."""
    frame = ctx.frame
    wanted = [*FIRST_ITERATION, *FIRST_ITERATION.values()]
    where = (frame["platform"].isin(javas) & frame["metric"].astype(str).isin(wanted)).to_numpy()
    if not where.any():
        return pd.DataFrame()
    points = ctx.points(lambda f: f["platform"].isin(javas) & f["metric"].astype(str).isin(wanted))
    points = points.loc[is_java(points)]  # (a platform that ran both: its C points out)
    params = [c for c in POINT_PARAMETERS if c in points.columns]
    # (the implementation is a point column only where the points hold more than one)
    implementation = ["implementation"] if "implementation" in points.columns else []
    key = ["platform", "origin", *implementation, "benchmark", *params]
    first = points.loc[points["metric"].astype(str).isin(list(FIRST_ITERATION))].copy()
    first["warm_metric"] = first["metric"].astype(str).map(FIRST_ITERATION)
    warm = points.loc[points["metric"].astype(str).isin(list(FIRST_ITERATION.values()))].copy()
    warm["warm_metric"] = warm["metric"].astype(str)
    merged = first.merge(
        warm[[*key, "warm_metric", "mean", "ci95", "samples"]],
        on=[*key, "warm_metric"],
        suffixes=("_first", "_warm"),
        how="inner",
    )
    if merged.empty:
        return merged
    key = [c for c in key if c != "implementation"]
    out = merged[[*key, "warm_metric", "unit"]].rename(columns={"warm_metric": "metric"})
    out["first_iteration"] = merged["mean_first"]
    out["jit_warm_mean"] = merged["mean_warm"]
    out["jit_warm_ci95"] = merged["ci95_warm"]
    out["first_over_warm"] = merged["mean_first"] / merged["mean_warm"]
    out["runs"] = merged["samples_first"]
    return out.reset_index(drop=True)


# The bars: one figure per kind of point (the others restate them).
BAR_METRICS: Final = {"mpibench": ("latency", "time"), "npb": ("time",)}


def _bar_label(row: Mapping[Any, Any]) -> str:
    ranks = f"{plain(row.get('ranks'))} ranks"
    if row["benchmark"] == "npb":
        return f"{str(row.get('kernel')).upper()}.{row.get('class')} {ranks}"
    size = plain(row.get("size"))
    return f"{row.get('pattern')} {size} B {ranks}"


def slowdown_panels(ratios: pd.DataFrame, notes: list[str]) -> list[BarPanel]:
    """Per Java and C platform pair and benchmark: the slowdown of every point (log axis)."""
    panels = []
    for (java, native, benchmark), part in ratios.groupby(
        ["java_platform", "c_platform", "benchmark"], sort=True, observed=True
    ):
        metrics = BAR_METRICS.get(str(benchmark), ())
        rows = [r for r in part.to_dict("records") if r["metric"] in metrics]
        rows = [r for r in rows if np.isfinite(float(r.get("slowdown", np.nan)))]
        if not rows:
            continue
        if len(rows) > MAX_BARS_PER_PANEL:
            notes.append(
                f"{java} vs {native}, {benchmark}: {len(rows) - MAX_BARS_PER_PANEL} more "
                "points not drawn; table java_vs_c holds them all."
            )
            rows = rows[:MAX_BARS_PER_PANEL]
        bars = [
            Bar(mpl_text(_bar_label(r)), float(r["slowdown"]), str(java), str(r["origin"]))
            for r in rows
        ]
        title = f"{benchmark}: {java} vs {native}"
        panels.append(BarPanel(title, "slowdown: Java time / C time (log)", bars, 1.0, True))
    return panels


def java_section(ctx: Context) -> Section:
    section = Section(
        "java",
        "Java overhead: MPJ Express against C MPI",
        "Java programs on MPJ Express (mpibench-java, the NPB kernels in Java) against the C "
        "programs on C MPI, point by point on the same placement: ratio Java / C of the "
        "two sides' values with its 95 % confidence interval, and the slowdown (how many times "
        "slower Java is; below 1: faster). The Java samples are JIT-warm; the first "
        "iteration in a fresh JVM (interpreted code, first touch of the buffers) is set "
        "beside them in the second table.",
    )
    javas = java_platforms(ctx.provenance, ctx.frame)
    if not javas:
        section.empty = (
            "No Java runs (platforms whose MPI is MPJ Express: run mpibench-java or npb-java on "
            "local-mpj, and the same entries named mpibench or npb on a C platform)."
        )
        return section
    ratios = java_vs_c(ctx, javas, section.notes)
    if not ratios.empty:
        section.figures += figure_set(
            slowdown_panels(ratios, section.notes),
            lambda g: bar_figure(g, ctx.palette),
            "java_slowdown",
            "Java slowdown against C, point by point",
            "How many times slower the Java program is than the C one at each point (1: "
            "equal, below 1: Java faster), from the ratio of the two sides' values; the table "
            "below gives its 95 % confidence interval.",
            section.notes,
        )
        section.tables.append(ReportTable("java_vs_c", "Java / C, point by point", ratios))
    else:
        section.notes.append(
            f"No C platform measured the points of {', '.join(javas)} (same benchmark entries "
            "with binding none on a C platform pair with them)."
        )
    first = first_iterations(ctx, javas)
    if not first.empty:
        section.tables.append(
            ReportTable(
                "java_first_iteration",
                "Java: first iteration in a fresh JVM vs JIT-warm",
                export_columns(first, ["platform", "origin", "benchmark", "metric", "unit"]),
            )
        )
    if not section.tables:
        section.empty = "Java runs found, but no point to compare or to set beside its first."
    return section


register("java", java_section)
