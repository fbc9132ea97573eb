"""Findings: the study's answers at the top of the report (docs/report.md, "Findings").

- overhead per category against the baseline, each platform at its default placement (as
  a user would run it): the geometric mean of the points' performance with a 95 % interval
  (Student's t over the points' log performance; a single point's own interval);
- best placement: for each problem measured at several placements of one core count, the
  fastest one and how it compares with the platform's default;
- cheapest configuration: per NPB problem, the priced run of lowest cost (where prices are
  known) — with --deadline, the cheapest that finishes within it, or "no configuration meets
  the deadline" — and the fastest beside it;
- scaling limit: per platform and NPB problem, the core count beyond which it stops scaling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from hpceval.analysis.categories import summarized_rows
from hpceval.analysis.compare import Comparison, compare
from hpceval.analysis.cost import CurrencyError, cost_table
from hpceval.analysis.scaling import placement_sweeps, scaling
from hpceval.config import PlatformConfig
from hpceval.report.sections import register
from hpceval.report.sections.base import Context, Section, baseline_origin, problem_label
from hpceval.report.tables import ReportTable

MAX_FINDINGS_PER_KIND = 8


@dataclass(frozen=True)
class Finding:
    question: str
    platform: str
    answer: str
    detail: str = ""


def overhead_findings(result: Comparison) -> list[Finding]:
    """Per platform and category: the slowdown (x slower) with its 95 % interval."""
    table = result.table
    if table.empty:
        return []
    out: list[Finding] = []
    part = table.loc[summarized_rows(table)]
    for (platform, origin, category), group in part.groupby(
        ["platform", "origin", "category"], observed=True, sort=True
    ):
        logs = np.log(group["performance"].to_numpy(dtype=np.float64))
        n = len(logs)
        centre = float(logs.mean())
        if n >= 2:
            half = float(stdtrit(n - 1, 0.975)) * float(logs.std(ddof=1)) / math.sqrt(n)
            low, high = math.exp(centre - half), math.exp(centre + half)
        else:
            low = float(group["performance_low"].iloc[0])
            high = float(group["performance_high"].iloc[0])
        slowdown = 1 / math.exp(centre)
        interval = (
            f"95 % CI {1 / high:.3g}–{1 / low:.3g}×"
            if np.isfinite(low) and np.isfinite(high) and low > 0
            else "no interval"
        )
        placements = ", ".join(sorted({str(p) for p in group["placement"].unique()})[:3])
        out.append(
            Finding(
                f"overhead: {category}",
                f"{platform} ({origin})"
                if origin != result.baseline_origin.value
                else str(platform),
                f"{_times(slowdown)} ({interval}, {n} point{'s' if n > 1 else ''})",
                f"at {placements}; against {result.baseline}",
            )
        )
    return out


def _times(slowdown: float) -> str:
    if slowdown >= 1:
        return f"{slowdown:.3g}× slower"
    return f"{1 / slowdown:.3g}× faster"


def placement_findings(frame: pd.DataFrame, configs: Mapping[str, PlatformConfig]) -> list[Finding]:
    out: list[Finding] = []
    for sweep in placement_sweeps(frame)[:MAX_FINDINGS_PER_KIND]:
        best = sweep.best.point
        config = configs.get(sweep.platform)
        default = None
        if config is not None:
            want = config.default_placement(best.ranks, best.threads_per_rank)
            default = next(
                (
                    ch
                    for ch in sweep.choices
                    if (ch.point.nodes, ch.point.ranks_per_node)
                    == (want.nodes, want.ranks_per_node)
                ),
                None,
            )
        detail = ""
        if default is not None and default.point is not best:
            gain = sweep.best.gain / default.gain
            detail = f"{gain:.3g}× faster than its default ({default.point.label()})"
        elif default is not None:
            detail = "its default placement"
        out.append(
            Finding(
                f"best placement: {problem_label(sweep.problem)}, {sweep.cores} cores",
                sweep.platform,
                best.label(),
                detail,
            )
        )
    return out


def scaling_findings(frame: pd.DataFrame, configs: Mapping[str, PlatformConfig]) -> list[Finding]:
    out: list[Finding] = []
    for curve in scaling(frame, benchmark="npb", metric="time", platform_configs=configs):
        if len(curve.points) < 2:
            continue
        last = curve.points[-1]
        if curve.knee is None:
            answer = f"scales to {curve.scales_to} cores (the most measured)"
        else:
            answer = f"stops at {curve.scales_to} cores"
        over = " (oversubscribed)" if last.oversubscribed else ""
        out.append(
            Finding(
                f"scaling limit: {problem_label(curve.problem)}",
                curve.platform,
                answer,
                f"speedup {last.speedup:.3g} at {last.cores} cores{over}"
                + (f"; {curve.knee_reason}" if curve.knee_reason else ""),
            )
        )
    return out[: MAX_FINDINGS_PER_KIND * 2]


def cost_findings(ctx: Context) -> list[Finding]:
    if not ctx.price_sources:
        return [
            Finding(
                "cheapest configuration",
                "—",
                "no prices: give --catalog, or a price in the platform files",
            )
        ]
    out: list[Finding] = []
    source = ctx.price_sources[0]
    try:
        table = cost_table(ctx.frame, source.prices, currency=source.currency, rates=source.rates)
    except CurrencyError as e:
        return [Finding("cheapest configuration", "—", str(e))]
    rows = table.table
    if rows.empty or "run_cost" not in rows.columns:
        return out
    problem_cols = [c for c in ("kernel", "class", "ranks") if c in rows.columns]
    by_problem: dict[str, list[dict[str, object]]] = {}
    for record in rows.loc[rows["run_cost"].notna()].to_dict("records"):
        problem = " ".join(f"{c}={record[c]}" for c in problem_cols)
        by_problem.setdefault(problem, []).append({str(k): v for k, v in record.items()})
    deadline = ctx.deadline_s
    for problem, records in sorted(by_problem.items()):
        fastest = min(records, key=lambda r: float(str(r["time_s"])))
        beside = f"{source.label}; the fastest: {fastest['platform']} " + (
            f"{float(str(fastest['time_s'])):.3g} s"
        )
        if deadline is None:
            question = f"cheapest configuration: npb {problem}"
        else:
            question = f"cheapest within {deadline:g} s: npb {problem}"
            records = [r for r in records if float(str(r["time_s"])) <= deadline]
        if not records:
            out.append(Finding(question, "—", "no configuration meets the deadline", beside))
            continue
        cheapest = min(records, key=lambda r: float(str(r["run_cost"])))
        out.append(
            Finding(
                question,
                str(cheapest["platform"]),
                f"{float(str(cheapest['run_cost'])):.4g} {table.currency} per run "
                f"({float(str(cheapest['time_s'])):.3g} s)",
                beside,
            )
        )
    return out[:MAX_FINDINGS_PER_KIND]


def findings(ctx: Context) -> list[Finding]:
    """Every finding the report's data answer (see the module docstring)."""
    out: list[Finding] = []
    names = sorted(str(p) for p in ctx.frame["platform"].unique())
    if ctx.baseline is not None and ctx.baseline in names and len(names) > 1:
        result = compare(
            ctx.frame,
            ctx.baseline,
            platforms=names,
            baseline_origin=ctx.baseline_origin or baseline_origin(ctx.frame, ctx.baseline),
            allow_mixed_origins=True,
            policy=ctx.policy,
            platform_configs=ctx.platform_configs,
        )
        out += overhead_findings(result)
    out += placement_findings(ctx.frame, ctx.platform_configs)
    out += cost_findings(ctx)
    out += scaling_findings(ctx.frame, ctx.platform_configs)
    return out


def findings_section(ctx: Context) -> Section:
    section = Section(
        "findings",
        "Findings",
        "What the measurements answer, each platform as a user would run it (its default "
        "placement): the overhead per category against the baseline with its 95 % interval, "
        "the best placement, the cheapest configuration, where scaling stops. The sections "
        "below hold the evidence; placements are written nodes × ranks per node × threads.",
    )
    rows = findings(ctx)
    if not rows:
        section.empty = "Nothing to summarize yet (no baseline, no placement sweep, no NPB)."
        return section
    if ctx.baseline is None:
        section.notes.append("No baseline: give --baseline PLATFORM for the overheads.")
    table = pd.DataFrame(
        [
            {"question": f.question, "platform": f.platform, "answer": f.answer,
             "detail": f.detail}
            for f in rows
        ]
    )  # fmt: skip
    section.tables.append(ReportTable("findings", "Findings", table))
    return section


def findings_lines(ctx: Context) -> list[str]:
    """The findings as text lines (perf/study_compare.py prints them)."""
    return [f"{f.question} | {f.platform} | {f.answer} | {f.detail}" for f in findings(ctx)]


register("findings", findings_section)
