"""Point-to-point: latency and bandwidth against message size, with the Hockney fits."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hpceval.analysis.network import HockneyFit, fit_network
from hpceval.analysis.validation import RATIO_METRIC, geometric_mean, log_t_interval
from hpceval.patterns import PATTERNS, POINT_TO_POINT
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
    export_columns,
    figure_set,
    matches,
    norm,
    placement_label,
    plain,
    platform_shades,
    present_columns,
    series_of,
    text_column,
)
from hpceval.report.styles import labelled
from hpceval.report.tables import ReportTable


def _fit_index(fits: Sequence[HockneyFit]) -> dict[tuple[str, str, frozenset[Any]], HockneyFit]:
    return {
        (f.platform, f.origin.value, frozenset((k, norm(v)) for k, v in f.placement.items())): f
        for f in fits
    }


def _model_curve(fit: HockneyFit, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Each segment of a piecewise fit over its own size range (NaN between segments, so
    that no line is drawn where no segment was fitted): time, or size / time."""
    xs: list[np.ndarray] = []
    for seg in fit.segments:
        lo = max(float(seg.first_size), 1.0)
        xs += [np.geomspace(lo, max(float(seg.last_size), lo), 24), np.array([np.nan])]
    x = np.concatenate(xs)
    t = np.asarray([fit.segment_for(v).predict(v) if np.isfinite(v) else np.nan for v in x])
    return x, (t if metric == "latency" else x / t)


def _pair_order(pair: str) -> tuple[int, str]:
    return ({"intra-node": 0, "inter-node": 1}.get(pair, 2), pair)


def point_to_point_section(
    ctx: Context, drawn: Collection[str] = POINT_TO_POINT, *, tables: bool = True
) -> Section:
    """The section, or the part of it that draws the figures of the `drawn` patterns (and,
    with `tables`, holds the Hockney fits and the table of every point): the report builds
    ping-pong and the other patterns in two workers, then joins them (`joined_sections`)."""
    section = Section(
        "point-to-point",
        "Point-to-point latency and bandwidth",
        "Latency (µs, half the round trip for ping-pong) and bandwidth (MB/s, 1 MB = 10⁶ B) "
        "against the message size, per platform and placement (log-log; 0 B is left off the "
        "log axis). Panels split intra-node and inter-node pairs. The thin lines are the "
        "piecewise Hockney models t(n) = α + n/β fitted to the ping-pong latency "
        "(breakpoints where the protocol changes), and n/t(n) for the bandwidth.",
    )
    pooled = sorted(POINT_TO_POINT if tables else set(drawn) & POINT_TO_POINT)
    sub = ctx.points(
        lambda p: (
            matches(p, "benchmark", ["mpibench"])
            & matches(p, "pattern", pooled)
            & matches(p, "metric", ["latency", "bandwidth"])
        )
    )
    if sub.empty or "size" not in sub.columns:
        section.empty = (
            "No point-to-point measurements (mpibench pingpong, pingping, sendrecv, exchange)."
        )
        return section
    fits = (
        fit_network(ctx.frame, patterns=("pingpong",), policy=ctx.policy)
        if tables or "pingpong" in drawn
        else []
    )
    index = _fit_index(fits)
    key = present_columns(sub, ["size", "pattern", "pair"])
    pair_text = text_column(sub, "pair")
    present = set(sub["pattern"].astype(str))
    for pattern in [x for x in PATTERNS if x in present and x in drawn]:
        part = sub.loc[sub["pattern"].astype(str) == pattern]
        pairs = sorted(set(pair_text.loc[part.index]), key=_pair_order)
        panels: list[Panel] = []
        for pair in pairs:
            in_pair = part.loc[pair_text.loc[part.index] == pair]
            for metric, unit in (("latency", "µs"), ("bandwidth", "MB/s")):
                rows = in_pair.loc[in_pair["metric"].astype(str) == metric]
                rows = rows.loc[rows["size"].astype(float) > 0]
                if rows.empty:
                    continue
                groups = series_of(rows, key, "size")
                shades = platform_shades([g[0] for g in groups])
                lines: list[Line] = []
                for (record, g), shade in zip(groups, shades, strict=True):
                    detail = placement_label(record, key)
                    x = g["size"].to_numpy(dtype=np.float64)
                    y = g["value"].to_numpy(dtype=np.float64)
                    fit_key = frozenset(
                        (k, norm(v))
                        for k, v in {**record, "pattern": pattern, "pair": pair or None}.items()
                        if k not in ("platform", "origin") and plain(v) is not None
                    )
                    fit = index.get((str(record["platform"]), str(record["origin"]), fit_key))
                    mx = my = None
                    if fit is not None:
                        mx, my = _model_curve(fit, metric)
                    lines.append(
                        Line(
                            str(record["platform"]),
                            str(record["origin"]),
                            labelled(str(record["platform"]), str(record["origin"]), detail),
                            x,
                            y,
                            shade,
                            mx,
                            my,
                        )
                    )
                where = f"{pattern} {pair} {metric}".replace("  ", " ")
                panels.append(
                    Panel(
                        f"{pattern}{', ' + pair if pair else ''}: {metric}",
                        "message size (bytes)",
                        f"{metric} ({unit})",
                        cap_lines(lines, where, section.notes),
                    )
                )
        if panels:
            section.figures += figure_set(
                panels,
                lambda group: line_figure(group, ctx.palette),
                f"p2p_{pattern}",
                f"{pattern}: latency and bandwidth vs message size",
                "Hockney models on ping-pong only." if pattern == "pingpong" else "",
                section.notes,
            )
    if not tables:
        return section
    fit_rows = [f.summary_row() for f in fits]
    if fit_rows:
        section.tables.append(
            ReportTable(
                "hockney_fits",
                "Hockney fits of the ping-pong latency: α (µs), β (MB/s), n½ = α·β (bytes)",
                pd.DataFrame(fit_rows),
            )
        )
    else:
        section.notes.append("No ping-pong series with at least 3 message sizes: no model.")
    section.tables.append(
        ReportTable(
            "point_to_point",
            f"Every point-to-point point ({ctx.policy.statistic} of the pooled samples; "
            "median, mean and min beside)",
            export_columns(sub, [*P2P_EXPORT_COLUMNS]),
            show=False,
        )
    )
    _validation(ctx.frame, section)
    return section


P2P_EXPORT_COLUMNS = (
    "platform", "origin", "implementation", "pattern", "pair", "metric", "unit", "size",
)  # fmt: skip


def _validation(frame: pd.DataFrame, section: Section) -> None:
    """`hpceval validate --code osu|imb`'s figures beside the ping-pong they qualify: one
    line each and a table ("hpceval mpibench pingpong 8 B latency (median) on intra-node =
    1.02x official/OSU 7.4 (5 pairs, 95 % CI ...)")."""
    part = frame.loc[(frame["benchmark"] == "mpibench") & (frame["metric"] == RATIO_METRIC)]
    if part.empty or "compared" not in part.columns:
        return
    rows = []
    for record in part.to_dict("records"):
        ratios = [float(x) for x in record["samples"]]
        interval = log_t_interval(ratios)
        rows.append(
            {
                "platform": record["platform"],
                "compared": record["compared"],
                "size": plain(record["size"]),
                "pair": record.get("pair"),
                "reference": record.get("reference") or "the official code",
                "pairs": len(ratios),
                "ratio": geometric_mean(ratios),
                "ci_low": None if interval is None else interval[0],
                "ci_high": None if interval is None else interval[1],
            }
        )
    for row in rows:
        ci = "" if row["ci_low"] is None else f", 95 % CI {row['ci_low']:.2f}-{row['ci_high']:.2f}"
        section.notes.append(
            f"mpibench ping-pong {row['compared']} at {row['size']} B ({row['pair']}) = "
            f"{row['ratio']:.2f}x {row['reference']} on {row['platform']}{ci}, "
            f"{row['pairs']} interleaved pairs (hpceval validate)"
        )
    section.tables.append(
        ReportTable(
            "mpibench_validation",
            "mpibench's ping-pong against osu_latency / IMB PingPong (own statistic / the "
            "official mean over iterations; geometric mean of interleaved pairs, t-interval "
            "on the log ratios)",
            pd.DataFrame(rows),
        )
    )


def pingpong_part(ctx: Context) -> Section:
    return point_to_point_section(ctx, {"pingpong"})


def other_patterns_part(ctx: Context) -> Section:
    return point_to_point_section(ctx, POINT_TO_POINT - {"pingpong"}, tables=False)


# The longest section, built in two parts (ping-pong with the fits and the table, the other
# patterns) so that the workers finish together.
register("point_to_point", pingpong_part, part="pingpong")
register("point_to_point", other_patterns_part, part="others")
