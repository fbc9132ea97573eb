"""The sections of the report, each built from the measurement frame by the analysis library.

Everything is aggregated before it is drawn: `pooled_points` pools the raw samples of every
(platform, origin, point) once, column-wise, and the sections select from that table; the
analyses (`fit_network`, `scaling`, `placement_sweeps`, `compare`, `cost_table`) do their own
vectorized pooling. Loops run over series, panels and figures, which are bounded by the
`MAX_*` constants below, never over measurements.

A section without data has an `empty` line saying what would fill it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from hpceval.analysis.compare import (
    SUMMARY_METRICS,
    Category,
    Comparison,
    compare,
)
from hpceval.analysis.cost import CurrencyError, ExchangeRates, HourlyPrice, cost_table
from hpceval.analysis.frame import point_columns, pool
from hpceval.analysis.network import HockneyFit, fit_network
from hpceval.analysis.recommend import pareto_indices
from hpceval.analysis.scaling import ScalingCurve, placement_sweeps, scaling
from hpceval.patterns import COLLECTIVES, PATTERNS, POINT_TO_POINT
from hpceval.report.figures import (
    Bar,
    BarPanel,
    Line,
    Panel,
    RenderedFigure,
    ScatterPanel,
    ScatterPoint,
    bar_figure,
    dot_figure,
    heatmap_figure,
    line_figure,
    render,
    scatter_figure,
)
from hpceval.report.styles import ORIGIN_ORDER, Palette, labelled, mpl_text, origin_style
from hpceval.report.tables import ReportTable

MAX_SERIES_PER_PANEL: Final = 12
MAX_PANELS_PER_FIGURE: Final = 9
MAX_FIGURES_PER_KIND: Final = 2
MAX_HEATMAP_ROWS: Final = 45
MAX_BARS_PER_PANEL: Final = 16
MAX_CATEGORIES_PER_PANEL: Final = 15
MAX_OTHER_BENCHMARKS: Final = 6
HPCC_LATENCY_SIZE: Final = 8
HPCC_BANDWIDTH_SIZE: Final = 2_000_000
# The bandwidth column takes the measured size nearest 2,000,000 B within this factor
# (mpibench's power-of-two sweeps have 2 MiB), and says which size it took.
HPCC_SIZE_TOLERANCE: Final = 1.1
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    figures: list[RenderedFigure] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    empty: str = ""


@dataclass(frozen=True)
class PriceSource:
    """Prices per platform from one place: the platform files, or one catalog."""

    label: str
    prices: Mapping[str, Sequence[HourlyPrice]]
    currency: str | None = None
    rates: ExchangeRates | None = None
    short: str = ""  # in figure labels (default: label)


@dataclass
class Context:
    frame: pd.DataFrame
    palette: Palette
    baseline: str | None = None
    price_sources: Sequence[PriceSource] = ()
    price_notes: Sequence[str] = ()

    def points(self, where: Callable[[pd.DataFrame], pd.Series[bool]]) -> pd.DataFrame:
        """The pooled points (`pooled_points`) for which `where` holds.

        `where` tests columns of a point (benchmark, metric, parameters): it selects the same
        points in the frame as in the pooled table, so only the frame rows it selects are
        pooled. Each section pools its own rows, in the worker that builds it.
        """
        return pooled_points(self.frame.loc[where(self.frame).to_numpy()])


# --------------------------------------------------------------------------- helpers


def baseline_origin(frame: pd.DataFrame, baseline: str) -> str:
    """The origin the baseline is compared in: measured when it has measured data."""
    origins = sorted({str(o) for o in frame.loc[frame["platform"] == baseline, "origin"].unique()})
    return "measured" if "measured" in origins or not origins else origins[0]


def pooled_points(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per platform, origin and point: its parameters, and the mean, sample count,
    standard deviation and 95 % confidence half-width (Student) of the pooled raw samples."""
    by = ["platform", "origin", *point_columns(frame)]
    pooled = pool(frame, by)
    out = pooled.keys.copy()
    n = pooled.count.astype(np.float64)
    sd = np.sqrt(pooled.var)
    with np.errstate(invalid="ignore", divide="ignore"):
        distinct, position = np.unique(np.maximum(n - 1, 1), return_inverse=True)
        t = np.asarray(stdtrit(distinct, 0.975))[position].reshape(n.shape)
        ci = np.where(n > 1, t * sd / np.sqrt(n), np.nan)
    out["mean"] = pooled.mean
    # mpibench's bandwidth is bytes / mean(time) (IMB's convention), not the mean of the
    # per-sample bandwidths: pooled, that is the harmonic mean of the samples. The plain mean
    # is pulled up by the fastest samples and would disagree with the latency curve and with
    # the Hockney model n/t(n) drawn over it (by 2x and more on a loaded machine).
    bandwidth = np.asarray(
        (out["benchmark"].astype(str) == "mpibench") & (out["metric"].astype(str) == "bandwidth")
    ) & (pooled.count > 0)
    if bandwidth.any():
        with np.errstate(divide="ignore"):
            inverse_sums = np.add.reduceat(1.0 / pooled.values, pooled.offsets[pooled.count > 0])
        harmonic = np.full(len(out), np.nan)
        harmonic[pooled.count > 0] = pooled.count[pooled.count > 0] / inverse_sums
        out["mean"] = np.where(bandwidth, harmonic, pooled.mean)
    out["samples"] = pooled.count
    out["measurements"] = pooled.measurements
    out["stdev"] = sd
    out["ci95"] = ci
    return out


def _text_column(table: pd.DataFrame, column: str) -> pd.Series[Any]:
    """A column as strings ('' where missing or absent)."""
    if column not in table.columns:
        return pd.Series([""] * len(table), index=table.index, dtype=object)
    values = table[column].astype(object)
    return values.where(values.notna(), "").astype(str)


def _is(table: pd.DataFrame, column: str, values: Sequence[str]) -> pd.Series[bool]:
    if column not in table.columns:
        return pd.Series(False, index=table.index)
    return table[column].isin(list(values))  # (on a categorical: compares its codes)


def _present(table: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
    """Parameter columns of a points table that have a value somewhere in it."""
    core = {"platform", "origin", "benchmark", "metric", "unit", "mean", "samples",
            "measurements", "stdev", "ci95", *exclude}
    return [str(c) for c in table.columns if c not in core and table[c].notna().any()]


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def placement_label(record: Mapping[str, Any], columns: Sequence[str]) -> str:
    """A short description of a series' parameters: 2×4 (nodes × ranks per node), threads,
    binding other than core, oversubscription, then any other parameter as name=value."""
    values = {c: _plain(record.get(c)) for c in columns}
    parts: list[str] = []
    nodes, rpn, ranks = values.pop("nodes", None), values.pop("ranks_per_node", None), None
    ranks = values.pop("ranks", None)
    if nodes is not None and rpn is not None:
        parts.append(f"{nodes}×{rpn}")
    elif ranks is not None:
        parts.append(f"{ranks} ranks")
    threads = values.pop("threads_per_rank", None)
    if threads not in (None, 1):
        parts.append(f"{threads} threads")
    binding = values.pop("binding", None)
    if binding not in (None, "core"):
        parts.append(f"bind {binding}")
    if values.pop("oversubscribed", None):
        parts.append("oversubscribed")
    parts.extend(f"{k}={v}" for k, v in values.items() if v is not None)
    return " ".join(str(p) for p in parts)


def _series(
    table: pd.DataFrame, key: Sequence[str], x: str
) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The groups of `table` by platform, origin and `key`, each sorted by `x`."""
    columns = ["platform", "origin", *key]
    out: list[tuple[dict[str, Any], pd.DataFrame]] = []
    ordered = table.sort_values(x)
    for values, part in ordered.groupby(columns, dropna=False, observed=True, sort=True):
        record = {c: _plain(v) for c, v in zip(columns, values, strict=True)}
        out.append((record, part))
    origin_rank = {o: i for i, o in enumerate(ORIGIN_ORDER)}
    out.sort(key=lambda item: (str(item[0]["platform"]), origin_rank.get(item[0]["origin"], 9)))
    return out


def _shades(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """0 for the first series of a platform in a panel, 1 for its second, ..."""
    seen: dict[str, int] = {}
    out = []
    for r in records:
        platform = str(r["platform"])
        out.append(seen.get(platform, 0))
        seen[platform] = seen.get(platform, 0) + 1
    return out


def _mean_lines(table: pd.DataFrame, key: Sequence[str], x: str) -> list[Line]:
    """One line of the pooled means against `x` per series (_series), shaded per platform."""
    groups = _series(table, key, x)
    shades = _shades([g[0] for g in groups])
    return [
        Line(str(r["platform"]), str(r["origin"]),
             labelled(str(r["platform"]), str(r["origin"]), placement_label(r, key)),
             g[x].to_numpy(dtype=np.float64), g["mean"].to_numpy(dtype=np.float64), shade)
        for (r, g), shade in zip(groups, shades, strict=True)
    ]  # fmt: skip


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _figure_set(
    panels: Sequence[Any],
    draw: Callable[[Sequence[Any]], Any],
    name: str,
    title: str,
    caption: str,
    notes: list[str],
) -> list[RenderedFigure]:
    """Figures of at most MAX_PANELS_PER_FIGURE panels, at most MAX_FIGURES_PER_KIND of them."""
    groups = _chunks(panels, MAX_PANELS_PER_FIGURE)
    if len(groups) > MAX_FIGURES_PER_KIND:
        shown = MAX_FIGURES_PER_KIND * MAX_PANELS_PER_FIGURE
        notes.append(
            f"{title}: {len(panels) - shown} more panel(s) not drawn "
            f"(first {shown} shown); the tables hold every point."
        )
        groups = groups[:MAX_FIGURES_PER_KIND]
    out = []
    for i, group in enumerate(groups):
        suffix = f"_{i + 1}" if len(groups) > 1 else ""
        heading = title + (f" ({i + 1}/{len(groups)})" if len(groups) > 1 else "")
        out.append(render(draw(group), name + suffix, heading, caption))
    return out


def _cap_lines(lines: list[Line], where: str, notes: list[str]) -> list[Line]:
    if len(lines) > MAX_SERIES_PER_PANEL:
        notes.append(
            f"{where}: {len(lines) - MAX_SERIES_PER_PANEL} more series not drawn "
            f"(first {MAX_SERIES_PER_PANEL} by platform shown); the tables hold them."
        )
        return lines[:MAX_SERIES_PER_PANEL]
    return lines


def safe_name(text: str) -> str:
    return _SAFE_NAME.sub("_", text).strip("_") or "x"


def _export_columns(table: pd.DataFrame, first: Sequence[str]) -> pd.DataFrame:
    """`first` columns (those present), the present parameters, then the statistics."""
    lead = [c for c in first if c in table.columns]
    stats = [c for c in ("mean", "samples", "measurements", "stdev", "ci95") if c in table]
    params = [c for c in _present(table, lead) if c not in stats]
    return table[lead + params + stats].reset_index(drop=True)


def _norm(v: Any) -> Any:
    v = _plain(v)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return v
    return float(v)


# --------------------------------------------------------------------------- summary


def summary_section(ctx: Context, runs: pd.DataFrame) -> Section:
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


# --------------------------------------------------------------------------- point-to-point


def _fit_index(fits: Sequence[HockneyFit]) -> dict[tuple[str, str, frozenset[Any]], HockneyFit]:
    return {
        (f.platform, f.origin.value, frozenset((k, _norm(v)) for k, v in f.placement.items())): f
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


def joined_sections(first: Section, *rest: Section) -> Section:
    """One section of parts built apart (the first one's title, intro, tables, and whether
    it is empty): figures and notes in the parts' order."""
    for part in rest:
        first.figures += part.figures
        first.tables += part.tables
        first.notes += [note for note in part.notes if note not in first.notes]
    return first


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
        lambda p: _is(p, "benchmark", ["mpibench"])
        & _is(p, "pattern", pooled)
        & _is(p, "metric", ["latency", "bandwidth"])
    )
    if sub.empty or "size" not in sub.columns:
        section.empty = (
            "No point-to-point measurements (mpibench pingpong, pingping, sendrecv, exchange)."
        )
        return section
    fits = fit_network(ctx.frame, patterns=("pingpong",)) if tables or "pingpong" in drawn else []
    index = _fit_index(fits)
    key = _present(sub, ["size", "pattern", "pair"])
    pair_text = _text_column(sub, "pair")
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
                groups = _series(rows, key, "size")
                shades = _shades([g[0] for g in groups])
                lines: list[Line] = []
                for (record, g), shade in zip(groups, shades, strict=True):
                    detail = placement_label(record, key)
                    x = g["size"].to_numpy(dtype=np.float64)
                    y = g["mean"].to_numpy(dtype=np.float64)
                    fit_key = frozenset(
                        (k, _norm(v))
                        for k, v in {**record, "pattern": pattern, "pair": pair or None}.items()
                        if k not in ("platform", "origin") and _plain(v) is not None
                    )
                    fit = index.get((str(record["platform"]), str(record["origin"]), fit_key))
                    mx = my = None
                    if fit is not None:
                        mx, my = _model_curve(fit, metric)
                    lines.append(
                        Line(str(record["platform"]), str(record["origin"]),
                             labelled(str(record["platform"]), str(record["origin"]), detail),
                             x, y, shade, mx, my)
                    )
                where = f"{pattern} {pair} {metric}".replace("  ", " ")
                panels.append(
                    Panel(
                        f"{pattern}{', ' + pair if pair else ''}: {metric}",
                        "message size (bytes)",
                        f"{metric} ({unit})",
                        _cap_lines(lines, where, section.notes),
                    )
                )
        if panels:
            section.figures += _figure_set(
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
            "Every point-to-point point (mean of the pooled samples)",
            _export_columns(sub, ["platform", "origin", "pattern", "pair", "metric", "unit",
                                  "size"]),
            show=False,
        )
    )
    return section


# --------------------------------------------------------------------------- collectives


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
        lambda p: _is(p, "benchmark", ["mpibench"])
        & _is(p, "pattern", sorted(COLLECTIVES))
        & _is(p, "metric", ["time"])
    )
    if sub.empty or "size" not in sub.columns or "ranks" not in sub.columns:
        section.empty = "No collective measurements (mpibench bcast, reduce, allreduce, ...)."
        return section
    patterns = [x for x in PATTERNS if x in set(sub["pattern"].astype(str))]
    key = _present(sub, ["size", "pattern"])
    by_size: list[Panel] = []
    by_ranks: list[Panel] = []
    # Against the rank count, a series keeps what does not change with it (threads, binding);
    # nodes and ranks per node grow with the ranks.
    rank_key = [c for c in key if c not in ("ranks", "nodes", "ranks_per_node")]
    for pattern in patterns:
        part = sub.loc[sub["pattern"].astype(str) == pattern]
        top = size_sweep_points(part)
        if not top.empty:
            lines = _mean_lines(top, key, "size")
            by_size.append(
                Panel(pattern, "message size (bytes)", "time per call (µs)",
                      _cap_lines(lines, f"{pattern} vs size", section.notes))
            )
        # vs ranks: one size measured at several rank counts
        counts = part.groupby("size", observed=True)["ranks"].nunique()
        candidates = [float(str(s)) for s, n in counts.items() if n >= 2]
        if not candidates:
            continue
        size = _closest_size(candidates)
        at = part.loc[part["size"].astype(float) == size]
        lines = _mean_lines(at, rank_key, "ranks")
        by_ranks.append(
            Panel(f"{pattern}, {int(size)} B", "ranks", "time per call (µs)",
                  _cap_lines(lines, f"{pattern} vs ranks", section.notes))
        )
    if by_size:
        section.figures += _figure_set(
            by_size, lambda g: line_figure(g, ctx.palette), "collectives_vs_size",
            "Collectives vs message size", "", section.notes,
        )
    if by_ranks:
        section.figures += _figure_set(
            by_ranks, lambda g: line_figure(g, ctx.palette), "collectives_vs_ranks",
            "Collectives vs rank count", "", section.notes,
        )
    else:
        section.notes.append("No collective was measured at two rank counts: no scaling plot.")
    section.tables.append(
        ReportTable(
            "collectives",
            "Every collective point (µs, mean of the pooled samples)",
            _export_columns(sub, ["platform", "origin", "pattern", "size", "ranks"]),
            show=False,
        )
    )
    return section


# --------------------------------------------------------------------------- HPCC table


def hpcc_section(ctx: Context) -> Section:
    section = Section(
        "hpcc",
        "HPCC-style b_eff table",
        "As HPCC reports them (Magellan's Table 1): latency (µs) of 8-byte messages and "
        "bandwidth (MB/s; per process for the rings) of 2,000,000-byte messages for ping-pong, "
        "the naturally ordered ring and the randomly ordered ring, per platform and rank count. "
        "Where 2,000,000 B was not measured the nearest size within 10 % is used and named in "
        "the *_size columns (mpibench's power-of-two sweeps have 2,097,152 B).",
    )
    wanted = ["pingpong", "natural_ring", "random_ring"]
    sub = ctx.points(
        lambda p: _is(p, "benchmark", ["mpibench"])
        & _is(p, "pattern", wanted)
        & _is(p, "metric", ["latency", "bandwidth"])
    )
    if sub.empty or "size" not in sub.columns:
        section.empty = "No ping-pong or HPCC ring measurements."
        return section
    sub = sub.assign(
        column=_text_column(sub, "pattern").str.replace("_", " ")
        + np.where(_text_column(sub, "pair") != "", " (" + _text_column(sub, "pair") + ")", ""),
        size_f=sub["size"].astype(float),
    )
    row_key = [c for c in ("ranks", "nodes", "threads_per_rank", "binding", "oversubscribed")
               if c in sub.columns and sub[c].notna().any()]
    lat = sub.loc[(sub["metric"].astype(str) == "latency") & (sub["size_f"] == HPCC_LATENCY_SIZE)]
    bw = sub.loc[sub["metric"].astype(str) == "bandwidth"].copy()
    bw["distance"] = np.abs(np.log(bw["size_f"].clip(lower=1) / HPCC_BANDWIDTH_SIZE))
    bw = bw.loc[bw["distance"] <= math.log(HPCC_SIZE_TOLERANCE)]
    bw = bw.sort_values("distance").drop_duplicates(
        ["platform", "origin", *row_key, "column"], keep="first"
    )
    keys = ["platform", "origin", *row_key]
    wide: pd.DataFrame | None = None
    for part, metric, unit in ((lat, "latency", "us"), (bw, "bandwidth", "MB/s")):
        if part.empty:
            continue
        part = part.assign(platform=part["platform"].astype(str), origin=part["origin"].astype(str))
        values = part.pivot_table(index=keys, columns="column", values="mean", aggfunc="first",
                                  dropna=False, observed=True)
        values = values.dropna(how="all")
        values.columns = [f"{c} {metric} {unit}" for c in values.columns]
        if metric == "bandwidth":
            sizes = part.pivot_table(index=keys, columns="column", values="size_f",
                                     aggfunc="first", dropna=False, observed=True)
            sizes = sizes.dropna(how="all")
            sizes.columns = [f"{c} bandwidth_size B" for c in sizes.columns]
            values = values.join(sizes)
        wide = values if wide is None else wide.join(values, how="outer")
    if wide is None or wide.empty:
        section.empty = (
            "No latency at 8 B nor bandwidth near 2,000,000 B for ping-pong or the rings."
        )
        return section
    table = wide.reset_index()
    order = ["platform", "origin", *row_key]
    pattern_rank = {"pingpong": 0, "natural ring": 1, "random ring": 2}
    metric_rank = {"latency": 0, "bandwidth": 1, "bandwidth_size": 2}

    def reading_order(column: str) -> tuple[int, int, str, int]:
        # "<pattern[ (pair)]> <latency|bandwidth|bandwidth_size> <unit>"
        head, metric, _unit = column.rsplit(" ", 2)
        pair = 0 if "(intra-node)" in head else 1
        return (pattern_rank.get(head.split(" (")[0], 3), pair, head, metric_rank.get(metric, 3))

    rest = sorted((c for c in table.columns if c not in order), key=reading_order)
    table = table[order + rest].sort_values(order).reset_index(drop=True)
    section.tables.append(ReportTable("hpcc_beff", "HPCC-style table", table))
    return section


# --------------------------------------------------------------------------- NPB


def _problem_label(problem: Mapping[str, Any]) -> str:
    """CG.C (kernel.class), or CG without a class, then the other parameters (a flag that is
    false says nothing and is left out)."""
    kernel, klass = problem.get("kernel"), problem.get("class")
    head = str(kernel).upper() if kernel is not None else ""
    if klass is not None:
        head = f"{head}.{klass}" if head else f"class {klass}"
    rest = " ".join(
        f"{k}={_plain(v)}" if not isinstance(_plain(v), bool) else k
        for k, v in problem.items()
        if k not in ("kernel", "class") and _plain(v) not in (None, False)
    )
    return " ".join(x for x in (head, rest) if x) or "all"


def _curve_panels(
    curves: Sequence[ScalingCurve], ylabel: str, value: str, notes: list[str]
) -> list[Panel]:
    """One panel per kernel (problem less its class), one series per platform and class."""
    by_kernel: dict[str, list[ScalingCurve]] = {}
    for c in curves:
        rest = {k: v for k, v in c.problem.items() if k != "class"}
        by_kernel.setdefault(_problem_label(rest), []).append(c)
    panels = []
    for kernel in sorted(by_kernel):
        members = sorted(
            by_kernel[kernel],
            key=lambda c: (c.platform, c.origin.value, str(c.problem.get("class", ""))),
        )
        shades = _shades([{"platform": c.platform} for c in members])
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
            lines.append(
                Line(c.platform, c.origin.value, labelled(c.platform, c.origin.value, detail),
                     x, y, shade, marked=marked)
            )
        panel = Panel(kernel, "cores (ranks × threads)", ylabel,
                      _cap_lines(lines, f"{kernel} {ylabel}", notes))
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
        "cores of the same kernel and class, per platform (best placement at each core count). "
        "The black line is the ideal speedup; a red ring marks the knee, where efficiency drops "
        "below 0.5 or the speedup stops growing.",
    )
    try:
        times = scaling(ctx.frame, benchmark="npb", metric="time")
        mops = scaling(ctx.frame, benchmark="npb", metric="mops_total")
    except KeyError as e:  # a unit outside HIGHER_IS_BETTER
        section.empty = f"NPB scaling could not be computed: unknown unit {e}."
        return section
    if not times and not mops:
        section.empty = "No NPB measurements (time, Mop/s with a rank count)."
        return section
    if mops:
        section.figures += _figure_set(
            _curve_panels(mops, "Mop/s total", "value", section.notes),
            lambda g: line_figure(g, ctx.palette), "npb_mops", "NPB Mop/s vs cores", "",
            section.notes,
        )
    if times:
        section.figures += _figure_set(
            _curve_panels(times, "speedup", "speedup", section.notes),
            lambda g: line_figure(g, ctx.palette), "npb_speedup", "NPB speedup vs cores", "",
            section.notes,
        )
    mops_of: dict[tuple[str, str, str, int], float] = {}
    for c in mops:
        for pt in c.points:
            mops_of[(c.platform, c.origin.value, _problem_label(c.problem), pt.cores)] = pt.value
    rows = []
    for c in times:
        label = _problem_label(c.problem)
        for pt in c.points:
            rows.append(
                {
                    "platform": c.platform,
                    "origin": c.origin.value,
                    "problem": label,
                    "cores": pt.cores,
                    "placement": pt.label(),
                    "time_s": pt.value,
                    "mops_total": mops_of.get((c.platform, c.origin.value, label, pt.cores)),
                    "speedup": pt.speedup,
                    "efficiency": pt.efficiency,
                    "samples": pt.samples,
                    "knee": c.knee is not None and pt.cores == c.knee.cores,
                    "scales_to_cores": c.scales_to,
                }
            )
    if rows:
        section.tables.append(
            ReportTable("npb_scaling", "NPB scaling (best placement per core count)",
                        pd.DataFrame(rows))
        )
    return section


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
        problem = _problem_label(sw.problem)
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
                Bar(mpl_text(ch.point.label() + (" (full node)" if ch.full_node else "")),
                    ch.gain, sw.platform, sw.origin.value, emphasis=ch is sw.best)
            )
        panels.append(
            BarPanel(
                f"{sw.platform}{origin_style(sw.origin.value).suffix}: {problem}, {sw.cores} cores",
                "gain over the full-node placement",
                bars[:MAX_BARS_PER_PANEL],
                reference=1.0,
            )
        )
    section.figures += _figure_set(
        panels, lambda g: bar_figure(g, ctx.palette), "placement_gain",
        "Placement gain over the full-node placement", "", section.notes,
    )
    section.tables.append(ReportTable("placement", "Placement sweeps", pd.DataFrame(rows)))
    return section


# --------------------------------------------------------------------------- overhead heat map


def _row_labels(table: pd.DataFrame) -> pd.Series[str]:
    """A heat-map row per category and benchmark detail: mpibench pattern and pair, NPB
    kernel.class, otherwise the benchmark, its first distinguishing parameter and metric."""
    bench = _text_column(table, "benchmark")
    pattern = _text_column(table, "pattern")
    pair = _text_column(table, "pair")
    kernel = _text_column(table, "kernel").str.upper()
    klass = _text_column(table, "class")
    metric = _text_column(table, "metric")
    other = pd.Series([""] * len(table), index=table.index, dtype=object)
    for name in ("kernel", "pattern", "workload", "input", "system", "test", "rw", "mode"):
        values = _text_column(table, name)
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
        "say so; they are compared with the baseline's own origin, never pooled with it.",
    )
    if ctx.baseline is None:
        section.empty = "No baseline: give --baseline PLATFORM to compare the platforms with it."
        return section
    base_origin = baseline_origin(ctx.frame, ctx.baseline)
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
        frame, ctx.baseline, platforms=names, baseline_origin=base_origin,
        allow_cross_origin=True,
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
        f" Baseline: {ctx.baseline} ({base_origin}); intervals by {result.method}."
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
            "undetermined": (verdict == "undetermined").astype(int),
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
        c for _, _, c in sorted(
            {(p, origin_rank.get(o, 9), c) for p, o, c in
             zip(grouped["platform"], grouped["origin"], grouped["column"], strict=True)}
        )
    ]
    r_index = {r: i for i, r in enumerate(row_names)}
    c_index = {c: j for j, c in enumerate(column_names)}
    values = np.full((len(row_names), len(column_names)), np.nan)
    significant = np.zeros(values.shape, dtype=bool)
    full = grouped["category"] + " · " + grouped["row"]
    for r, c, v, s in zip(full, grouped["column"], grouped["performance"],
                          grouped["significant"], strict=True):
        if r in r_index:
            values[r_index[r], c_index[c]] = v
            significant[r_index[r], c_index[c]] = bool(s)
    fig = heatmap_figure(
        row_names, column_names, values, significant,
        title=f"performance relative to {ctx.baseline} ({base_origin})",
    )
    section.figures.append(
        render(fig, "overhead_heatmap", "Overhead heat map",
               f"Performance relative to the baseline {ctx.baseline}.")
    )
    section.tables.append(
        ReportTable("overhead_heatmap", "Heat-map cells", grouped.drop(columns="column"),
                    show=False)
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
        ReportTable("comparison", "Every compared point (the heat map's metrics)", table,
                    show=False)
    )
    return section


# --------------------------------------------------------------------------- cost


def cost_section(ctx: Context) -> Section:
    section = Section(
        "cost",
        "Cost",
        "Cost of each NPB run = nodes × price per node-hour × wall hours, and the price per "
        "GOPS = hourly price of the nodes used / (Mop/s / 1000) (EC2-CC's productivity "
        "metric; lower is better), per platform, pricing model and price source. The Pareto "
        "front of time against cost (per problem, currency and origin) holds the runs that no "
        "other beats on both.",
    )
    section.notes.extend(ctx.price_notes)
    has_npb = bool((ctx.frame["benchmark"] == "npb").any())
    if not has_npb:
        section.empty = "No NPB measurements to cost."
        return section
    if not ctx.price_sources:
        section.empty = (
            "No prices: give --catalog NAME|FILE (entries named like the platforms, or "
            "--instance PLATFORM=ENTRY) or a `price` table in the platform files."
        )
        return section
    parts = []
    for source in ctx.price_sources:
        try:
            result = cost_table(ctx.frame, source.prices, currency=source.currency,
                                rates=source.rates)
        except CurrencyError as e:
            section.notes.append(f"{source.label}: {e}")
            continue
        if not result.table.empty:
            parts.append(result.table.assign(price_source=source.label))
    if not parts:
        section.empty = "No NPB time measurement of a priced platform with a node count."
        return section
    table = pd.concat(parts, ignore_index=True)
    table["problem"] = [
        _problem_label({"kernel": k, "class": c})
        for k, c in zip(_text_column(table, "kernel"), _text_column(table, "class"), strict=True)
    ]
    table["pareto"] = False
    finite = np.isfinite(table["run_cost"].to_numpy(dtype=np.float64))
    for _, group in table.loc[finite].groupby(["problem", "currency", "origin"], observed=True):
        front = pareto_indices(group["time_s"].tolist(), group["run_cost"].tolist())
        table.loc[group.index[front], "pareto"] = True
    first = ["platform", "origin", "problem", "pricing", "instance", "price_source", "nodes",
             "time_s", "hourly", "run_cost", "mops", "price_per_gops", "currency", "pareto"]
    table = table[[c for c in first if c in table] + [c for c in table if c not in first]]
    table = table.dropna(axis=1, how="all")  # parameters of other benchmarks (size, pair...)
    gops_panels: list[BarPanel] = []
    pareto_panels: list[ScatterPanel] = []
    several_sources = len({s.label for s in ctx.price_sources}) > 1
    short = {s.label: s.short or s.label for s in ctx.price_sources}
    kernel = [
        _problem_label({"kernel": k} if k else {})
        for k in _text_column(table, "kernel")
    ]
    klass = _text_column(table, "class")
    # Price per GOPS: one panel per kernel and currency, a bar per platform, pricing and class.
    per_gops = table.assign(kernel_label=kernel, class_label=klass)
    finite = np.isfinite(per_gops["price_per_gops"].to_numpy(dtype=np.float64))
    for (name, currency), group in per_gops.loc[finite].groupby(
        ["kernel_label", "currency"], sort=True
    ):
        best = (
            group.groupby(["platform", "origin", "pricing", "price_source", "class_label"],
                          observed=True)["price_per_gops"]
            .min()
            .reset_index()
            .sort_values(["class_label", "price_per_gops"])
        )
        several_classes = best["class_label"].nunique() > 1
        bars = [
            Bar(labelled(str(r.platform), str(r.origin),
                         str(r.pricing)
                         + (f" · {short[str(r.price_source)]}" if several_sources else "")
                         + (f" · class {r.class_label}" if several_classes else "")),
                float(r.price_per_gops), str(r.platform), str(r.origin))
            for r in best.itertuples()
        ]
        if len(bars) > MAX_BARS_PER_PANEL:
            section.notes.append(
                f"price per GOPS, {name}: {len(bars) - MAX_BARS_PER_PANEL} more bar(s) only in "
                "tables/cost.csv."
            )
        gops_panels.append(
            BarPanel(f"{name} ({currency})", f"{currency} per GOPS (lowest over runs)",
                     bars[:MAX_BARS_PER_PANEL])
        )
    # Pareto fronts: one panel per problem and currency, the largest class of each kernel.
    class_rank = {c: i for i, c in enumerate("SWABCDEF")}
    largest: dict[str, str] = {}
    for k, c in zip(kernel, klass, strict=True):
        if class_rank.get(c, -1) >= class_rank.get(largest.get(k, ""), -1):
            largest[k] = c
    shown = np.asarray([largest[k] == c for k, c in zip(kernel, klass, strict=True)])
    if not shown.all():
        section.notes.append(
            "Pareto fronts are drawn for the largest class of each kernel; the column pareto "
            "of tables/cost.csv has every class."
        )
    for (problem, currency), group in table.loc[shown].groupby(["problem", "currency"],
                                                               sort=True):
        priced = group.loc[np.isfinite(group["run_cost"].to_numpy(dtype=np.float64))]
        points = [
            ScatterPoint(float(r.time_s), float(r.run_cost), str(r.platform), str(r.origin),
                         bool(r.pareto))
            for r in priced.itertuples()
        ]
        if points:
            pareto_panels.append(
                ScatterPanel(f"{problem} ({currency})", "time (s)", f"cost of a run ({currency})",
                             points)
            )
    if gops_panels:
        section.figures += _figure_set(
            gops_panels, lambda g: bar_figure(g, ctx.palette), "cost_per_gops",
            "Price per GOPS by platform and pricing model", "", section.notes,
        )
    if pareto_panels:
        section.figures += _figure_set(
            pareto_panels, lambda g: scatter_figure(g, ctx.palette), "cost_pareto",
            "Time against cost: the Pareto front", "", section.notes,
        )
    section.tables.append(ReportTable("cost", "Cost of the NPB runs", table))
    prices = pd.DataFrame(
        [
            {
                "price_source": s.label,
                "platform": platform,
                "instance": hp.instance,
                "pricing": hp.pricing,
                "per_node_hour": hp.amount,
                "currency": hp.currency,
                "catalog": hp.catalog,
                "date": hp.date,
            }
            for s in ctx.price_sources
            for platform, values in sorted(s.prices.items())
            for hp in values
        ]
    )
    section.tables.append(ReportTable("prices", "Prices used (per node-hour)", prices))
    return section


# --------------------------------------------------------------------------- other benchmarks


def other_section(ctx: Context) -> Section:
    section = Section(
        "other",
        "Storage, applications and other benchmarks",
        "Benchmarks other than mpibench and NPB (fio, GROMACS, LAMMPS, ...): the mean of each "
        "point per platform (one panel per metric), the full table beside each.",
    )
    sub = ctx.points(lambda p: ~_is(p, "benchmark", ["mpibench", "npb"]))
    if sub.empty:
        section.empty = "No other benchmark (storage, applications) in the data."
        return section
    benchmarks = sorted(set(sub["benchmark"].astype(str)))
    if len(benchmarks) > MAX_OTHER_BENCHMARKS:
        section.notes.append(
            f"{len(benchmarks) - MAX_OTHER_BENCHMARKS} more benchmark(s) only in the tables."
        )
    for i, name in enumerate(benchmarks):
        part = sub.loc[sub["benchmark"].astype(str) == name]
        key = _present(part)
        records = [{str(k): v for k, v in r.items()} for r in part[key].to_dict("records")]
        part = part.assign(point=[placement_label(r, key) or "—" for r in records])
        section.tables.append(
            ReportTable(f"benchmark_{safe_name(name)}", f"{name}: every point",
                        _export_columns(part, ["platform", "origin", "metric", "unit", "point"]),
                        show=len(part) <= 60)
        )
        if i >= MAX_OTHER_BENCHMARKS:
            continue
        panels = []
        for (metric, unit), rows in part.groupby(["metric", "unit"], observed=True, sort=True):
            categories = sorted(set(rows["point"]))[:MAX_CATEGORIES_PER_PANEL]
            position = {c: j for j, c in enumerate(categories)}
            rows = rows.loc[rows["point"].isin(categories)]
            lines = []
            groups = _series(rows, [], "point")
            for record, g in groups:
                lines.append(
                    Line(str(record["platform"]), str(record["origin"]),
                         labelled(str(record["platform"]), str(record["origin"])),
                         g["mean"].to_numpy(dtype=np.float64),
                         np.asarray([position[c] for c in g["point"]], dtype=np.float64))
                )
            panels.append((f"{name} {metric}", f"{metric} ({unit})", categories,
                           lines[:MAX_SERIES_PER_PANEL]))
        if panels:
            section.figures += _figure_set(
                panels, lambda g: dot_figure(g, ctx.palette), f"benchmark_{safe_name(name)}",
                f"{name} per platform", "", section.notes,
            )
    return section


# --------------------------------------------------------------------------- provenance


PROVENANCE_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("cpu", "cpu.model"),
    ("sockets", "cpu.sockets"),
    ("cores", "cpu.cores"),
    ("threads", "cpu.threads"),
    ("memory_gb", "memory.total_bytes"),
    ("hypervisor", "virtualization.kind"),
    ("container", "container.kind"),
    ("nic_io_path", "network.path"),
    ("mpi", "mpi.implementation"),
    ("mpi_version", "mpi.version"),
    ("compiler", "compiler.version"),
    ("cflags", "compiler.cflags"),
    ("os", "os.name"),
    ("kernel", "os.kernel"),
    ("hpceval", "hpceval.version"),
)


def fact(facts: Mapping[str, Any], dotted: str) -> Any:
    value: Any = facts
    for key in dotted.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def provenance_row(facts: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column, dotted in PROVENANCE_FIELDS:
        v = fact(facts, dotted)
        if column == "memory_gb" and isinstance(v, int | float):
            v = round(v / 1e9, 1)
        elif isinstance(v, list):
            v = " ".join(str(x) for x in v)
        elif isinstance(v, Mapping):
            v = ", ".join(f"{k}={x}" for k, x in v.items())
        row[column] = v
    if row["hypervisor"] in (None, "none") and fact(facts, "virtualization.vm") is False:
        row["hypervisor"] = "none (bare metal)"
    return row


def provenance_section(table: pd.DataFrame) -> Section:
    section = Section(
        "provenance",
        "Appendix: provenance",
        "The machine each platform's runs were measured on (one row per platform and distinct "
        "environment): CPU, hypervisor, NIC driver class (I/O path: native, paravirtual, "
        "SR-IOV, emulated), MPI and compiler.",
    )
    if table.empty:
        section.empty = "No provenance recorded."
    else:
        section.tables.append(ReportTable("provenance", "Provenance per platform", table))
    return section

