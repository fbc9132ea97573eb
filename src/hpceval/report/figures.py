"""The report's figures (matplotlib, no pyplot: plain Figure objects on the Agg/SVG canvases).

Every function takes data already aggregated to a few hundred points at most and returns a
`Figure`; `render` turns it into SVG and PNG bytes. The number of figures and of series per
panel is bounded by the caller (see `hpceval.report.sections`), never by the data size.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import matplotlib
import numpy as np
import numpy.typing as npt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from hpceval.report.styles import ORIGIN_ORDER, Palette, mpl_text, origin_style

FloatArray = npt.NDArray[np.float64]

PANEL_COLUMNS: Final = 3
PNG_DPI: Final = 110
# (typed Any: matplotlib types rc_context keys as a Literal of every rcParam name)
_RC: Final[Any] = {
    "svg.hashsalt": "hpceval-report",  # deterministic ids in the SVG files
    # Text stays text in the SVG (searchable, and drawing it as paths costs more than the
    # rest of the figure); the viewer's sans-serif font stands in where DejaVu Sans is missing.
    "svg.fonttype": "none",
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 8.5,
    "axes.titlesize": 9,
    "legend.fontsize": 7.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    # Titles at a fixed height: placing them automatically measures every tick label of the
    # axes again (a fifth of the drawing time), for x tick labels that are never on top.
    "axes.titley": 1.0,
    # The grid marks the ticks: no tick marks (two fewer line artists to draw per tick).
    "xtick.bottom": False,
    "ytick.left": False,
}


@dataclass(frozen=True)
class Line:
    """One series of a panel: x/y points drawn in the style of its origin."""

    platform: str
    origin: str
    label: str  # legend label, already safe for matplotlib (styles.labelled)
    x: FloatArray
    y: FloatArray
    shade: int = 0
    model_x: FloatArray | None = None  # a fitted model drawn as a thin line of the same colour
    model_y: FloatArray | None = None
    marked: FloatArray | None = None  # x values to ring (a scaling knee)
    crowded: FloatArray | None = None  # x values run oversubscribed (crossed)


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    lines: list[Line] = field(default_factory=list)
    xscale: str = "log"
    yscale: str = "log"
    xbase: float = 2
    ideal: tuple[FloatArray, FloatArray] | None = None  # reference curve (ideal speedup)
    hline: float | None = None
    mark_label: str = "knee (scaling stops)"  # what the rings of Line.marked are


@dataclass(frozen=True)
class Bar:
    label: str  # already safe for matplotlib
    value: float
    platform: str
    origin: str
    shade: int = 0
    emphasis: bool = False


@dataclass
class BarPanel:
    title: str
    xlabel: str
    bars: list[Bar] = field(default_factory=list)
    reference: float | None = None
    log: bool = False


@dataclass(frozen=True)
class ScatterPoint:
    x: float
    y: float
    platform: str
    origin: str
    front: bool


@dataclass
class ScatterPanel:
    title: str
    xlabel: str
    ylabel: str
    points: list[ScatterPoint] = field(default_factory=list)


@dataclass(frozen=True)
class RenderedFigure:
    name: str
    title: str
    caption: str
    svg: bytes
    png: bytes
    width: int  # CSS pixels (96 per inch)
    height: int


def _bytes(value: float, _position: object = None) -> str:
    """A tick label for a size in bytes: 1, 512, 4K, 2M (powers of 1024)."""
    for suffix, scale in (("G", 2.0**30), ("M", 2.0**20), ("K", 2.0**10)):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _plain_number(value: float, _position: object = None) -> str:
    return f"{value:g}"


def _log_axis(ax: Axes, which: str, base: float, *, sizes: bool = False) -> None:
    """A log axis with plain tick labels (the default ones go through mathtext, which costs
    more than drawing the rest of the figure)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    # Sizes: powers of two. Other values: 1-2-5 steps where the data span under two decades
    # (so that a narrow range still gets labelled ticks), 1-3 steps up to four, decades
    # above: a panel gets 4 to 8 labels, not up to 20 (each tick is a handful of artists).
    limits = ax.dataLim
    low, high = (limits.minposx, limits.x1) if which == "x" else (limits.minposy, limits.y1)
    decades = math.log10(high / low) if 0 < low <= high and math.isfinite(high) else math.inf
    subs: tuple[float, ...] = (1.0,)
    if not sizes and base == 10:
        subs = (1.0, 2.0, 5.0) if decades < 2 else (1.0, 3.0) if decades < 4 else (1.0,)
    axis.set_major_locator(LogLocator(base=base, subs=subs, numticks=8))
    axis.set_major_formatter(FuncFormatter(_bytes if sizes else _plain_number))
    # Minor ticks on log axes are dozens of artists each, for no label: left out.
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


# Margins (inches) of the figures laid out by hand: constrained layout measures every text
# of a figure again on each pass, which costs more than drawing it.
_LEFT, _RIGHT, _TOP, _BOTTOM, _WSPACE, _HSPACE = 0.8, 0.2, 0.35, 0.55, 0.85, 0.8


@dataclass(frozen=True)
class _Grid:
    rows: int
    cols: int
    fixed: bool  # laid out by hand (_fixed_layout) rather than by constrained layout


def _wide(values: Sequence[FloatArray]) -> bool:
    """Whether positive values span more than 20x (a log axis then reads better; below, its
    few ticks fall back to long unreadable labels)."""
    finite = [v[np.isfinite(v) & (v > 0)] for v in values]
    kept = [v for v in finite if len(v)]
    if not kept:
        return False
    joined = np.concatenate(kept)
    return bool(joined.max() > 20 * joined.min())


def _grid(
    count: int, width: float = 4.3, height: float = 3.3, *, fixed: bool = False
) -> tuple[Figure, list[Axes], _Grid]:
    cols = min(count, PANEL_COLUMNS)
    rows = math.ceil(count / cols)
    if fixed:
        fig = Figure(figsize=(width * cols, height * rows))
    else:
        fig = Figure(figsize=(width * cols, height * rows + 0.9), layout="constrained")
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(count)]
    return fig, axes, _Grid(rows, cols, fixed)


def _fixed_layout(fig: Figure, grid: _Grid, legend_rows: int) -> None:
    """Fixed margins in inches, and room below the panels for a legend of `legend_rows`."""
    width, height = (float(v) for v in fig.get_size_inches())
    legend = 0.1 + 0.17 * legend_rows if legend_rows else 0.0
    total = height + legend
    fig.set_size_inches(width, total)
    panel_w = (width - _LEFT - _RIGHT - (grid.cols - 1) * _WSPACE) / grid.cols
    panel_h = (height - _TOP - _BOTTOM - (grid.rows - 1) * _HSPACE) / grid.rows
    fig.subplots_adjust(
        left=_LEFT / width,
        right=1 - _RIGHT / width,
        bottom=(_BOTTOM + legend) / total,
        top=1 - _TOP / total,
        wspace=_WSPACE / panel_w,
        hspace=_HSPACE / panel_h,
    )


def _origin_handles(origins: Sequence[str]) -> list[tuple[Artist, str]]:
    """Legend keys explaining the origin styles present in a figure."""
    out: list[tuple[Artist, str]] = []
    for origin in ORIGIN_ORDER:
        if origin not in origins:
            continue
        s = origin_style(origin)
        handle = Line2D(
            [],
            [],
            color="#333333",
            linestyle=cast(Any, s.linestyle),
            marker=s.marker,
            markersize=4,
            markerfacecolor="#333333" if s.filled else "white",
        )
        out.append((handle, f"{origin} data"))
    return out


def _finish_legend(fig: Figure, entries: dict[str, Artist], origins: set[str], grid: _Grid) -> None:
    handles = list(entries.values())
    labels = list(entries)
    if len(origins) > 1 or origins - {"measured"}:
        for handle, label in _origin_handles(sorted(origins)):
            handles.append(handle)
            labels.append(label)
    columns = _legend_columns(fig, labels)
    if grid.fixed:
        _fixed_layout(fig, grid, math.ceil(len(handles) / columns) if handles else 0)
    if not handles:
        return
    if grid.fixed:
        fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.005), ncols=columns)
    else:
        fig.legend(handles, labels, loc="outside lower center", ncols=columns)


def _legend_columns(fig: Figure, labels: Sequence[str]) -> int:
    """As many legend columns (at most 3) as fit the figure's width (about 13 characters of
    legend text per inch, plus the key)."""
    column = (max((len(label) for label in labels), default=10) + 6) / 13
    fits = int(float(fig.get_size_inches()[0]) / column)
    return max(1, min(3, len(labels), fits))


def line_figure(panels: Sequence[Panel], palette: Palette) -> Figure:
    """Panels of series (log-log by default), with models, ideal curves and knee marks."""
    with matplotlib.rc_context(_RC):
        fig, axes, grid = _grid(len(panels), fixed=True)
        entries: dict[str, Artist] = {}
        origins: set[str] = set()
        model_drawn = False
        for ax, panel in zip(axes, panels, strict=True):
            for line in panel.lines:
                s = origin_style(line.origin)
                color = palette.color(line.platform, line.shade)
                origins.add(line.origin)
                (handle,) = ax.plot(
                    line.x,
                    line.y,
                    linestyle=s.linestyle,
                    marker=s.marker,
                    markersize=3.5,
                    linewidth=1.3,
                    color=color,
                    markerfacecolor=color if s.filled else "white",
                )
                entries.setdefault(line.label, handle)
                if line.model_x is not None and line.model_y is not None:
                    ax.plot(line.model_x, line.model_y, color=color, linewidth=0.9, alpha=0.55)
                    model_drawn = True
                if line.marked is not None and len(line.marked):
                    where = np.isin(line.x, line.marked)
                    ax.plot(
                        line.x[where],
                        line.y[where],
                        linestyle="none",
                        marker="o",
                        markersize=10,
                        markerfacecolor="none",
                        markeredgecolor="#d62728",
                    )
                if line.crowded is not None and len(line.crowded):
                    where = np.isin(line.x, line.crowded)
                    ax.plot(line.x[where], line.y[where], linestyle="none", marker="x",
                            markersize=7, color="#333333")  # fmt: skip
            if panel.ideal is not None:
                (ideal,) = ax.plot(*panel.ideal, color="black", linewidth=0.8, alpha=0.6)
                entries.setdefault("ideal", ideal)
            if panel.hline is not None:
                ax.axhline(panel.hline, color="black", linewidth=0.8, alpha=0.5)
            if panel.xscale == "log":
                _log_axis(ax, "x", panel.xbase, sizes="bytes" in panel.xlabel)
            if panel.yscale == "log" and _wide([line.y for line in panel.lines]):
                _log_axis(ax, "y", 10)
            ax.set_title(mpl_text(panel.title))
            ax.set_xlabel(panel.xlabel)
            ax.set_ylabel(panel.ylabel)
        if model_drawn:
            entries["Hockney model (thin line)"] = Line2D([], [], color="#777777", linewidth=0.9)
        marking = [
            p for p in panels if any(ln.marked is not None and len(ln.marked) for ln in p.lines)
        ]
        if marking:
            entries[marking[0].mark_label] = Line2D(
                [],
                [],
                linestyle="none",
                marker="o",
                markersize=8,
                markerfacecolor="none",
                markeredgecolor="#d62728",
            )
        if any(line.crowded is not None and len(line.crowded) for p in panels for line in p.lines):
            entries["oversubscribed (× : more ranks than cores)"] = Line2D(
                [], [], linestyle="none", marker="x", markersize=7, color="#333333"
            )
        _finish_legend(fig, entries, origins, grid)
    return fig


def bar_figure(panels: Sequence[BarPanel], palette: Palette) -> Figure:
    """Horizontal bars per panel; the origin shows as hatching and in the label."""
    with matplotlib.rc_context(_RC):
        tallest = max((len(p.bars) for p in panels), default=1)
        longest = max((len(b.label) for p in panels for b in p.bars), default=10)
        # Room for the bar labels beside a plot area of about 3 inches.
        width = 3.2 + 0.065 * min(longest, 60)
        fig, axes, _ = _grid(len(panels), width=width, height=0.9 + 0.28 * tallest)
        origins: set[str] = set()
        for ax, panel in zip(axes, panels, strict=True):
            y = np.arange(len(panel.bars))
            for i, bar in enumerate(panel.bars):
                s = origin_style(bar.origin)
                origins.add(bar.origin)
                ax.barh(
                    y[i],
                    bar.value,
                    color=palette.color(bar.platform, bar.shade),
                    hatch=s.hatch,
                    edgecolor="black" if bar.emphasis else "white",
                    linewidth=1.2 if bar.emphasis else 0.5,
                )
            ax.set_yticks(y, [b.label for b in panel.bars])
            ax.invert_yaxis()
            if panel.reference is not None:
                ax.axvline(panel.reference, color="black", linewidth=0.8)
            if panel.log:
                _log_axis(ax, "x", 10)
            ax.set_title(mpl_text(panel.title))
            ax.set_xlabel(panel.xlabel)
            ax.grid(axis="y", visible=False)
        entries: dict[str, Artist] = {}
        if origins - {"measured"}:
            for origin in ORIGIN_ORDER:
                if origin in origins:
                    entries[f"{origin} data"] = Patch(
                        facecolor="#bbbbbb", hatch=origin_style(origin).hatch, edgecolor="white"
                    )
        if entries:
            fig.legend(
                list(entries.values()),
                list(entries),
                loc="outside lower center",
                ncols=_legend_columns(fig, list(entries)),
            )
    return fig


def scatter_figure(panels: Sequence[ScatterPanel], palette: Palette) -> Figure:
    """Time against cost per panel, the Pareto front joined by a line (log-log)."""
    with matplotlib.rc_context(_RC):
        fig, axes, grid = _grid(len(panels), fixed=True)
        entries: dict[str, Artist] = {}
        origins: set[str] = set()
        for ax, panel in zip(axes, panels, strict=True):
            for p in panel.points:
                s = origin_style(p.origin)
                origins.add(p.origin)
                color = palette.color(p.platform)
                handle = ax.scatter(
                    [p.x],
                    [p.y],
                    marker=s.marker,
                    s=42 if p.front else 22,
                    facecolors=color if s.filled else "white",
                    edgecolors="black" if p.front else color,
                    linewidths=1.0,
                )
                entries.setdefault(mpl_text(p.platform), handle)
            for origin in sorted({p.origin for p in panel.points}):
                front = sorted((p.x, p.y) for p in panel.points if p.front and p.origin == origin)
                if len(front) > 1:
                    xs, ys = zip(*front, strict=True)
                    ax.step(
                        xs,
                        ys,
                        where="post",
                        color="black",
                        linewidth=0.8,
                        linestyle=origin_style(origin).linestyle,
                    )
            for which in ("x", "y"):
                values = np.asarray([p.x if which == "x" else p.y for p in panel.points])
                if _wide([values]):
                    _log_axis(ax, which, 10)
            ax.set_title(mpl_text(panel.title))
            ax.set_xlabel(panel.xlabel)
            ax.set_ylabel(panel.ylabel)
        entries["Pareto front (black outline, step line)"] = Line2D(
            [], [], color="black", linewidth=0.8, marker="o", markerfacecolor="white"
        )
        _finish_legend(fig, entries, origins, grid)
    return fig


def dot_figure(
    panels: Sequence[tuple[str, str, list[str], list[Line]]], palette: Palette
) -> Figure:
    """Panels (title, x label, category names, series): one dot per category and series;
    a Line's `x` holds values and its `y` the category positions."""
    with matplotlib.rc_context(_RC):
        tallest = max((len(p[2]) for p in panels), default=1)
        longest = max((len(c) for p in panels for c in p[2]), default=10)
        width = 3.2 + 0.065 * min(longest, 60)
        fig, axes, grid = _grid(len(panels), width=width, height=1.0 + 0.3 * tallest)
        entries: dict[str, Artist] = {}
        origins: set[str] = set()
        for ax, (title, xlabel, categories, lines) in zip(axes, panels, strict=True):
            offsets = np.linspace(-0.25, 0.25, len(lines)) if len(lines) > 1 else [0.0]
            values: list[float] = []
            for line, offset in zip(lines, offsets, strict=True):
                s = origin_style(line.origin)
                origins.add(line.origin)
                color = palette.color(line.platform, line.shade)
                handle = ax.scatter(
                    line.x,
                    line.y + offset,
                    marker=s.marker,
                    s=24,
                    facecolors=color if s.filled else "white",
                    edgecolors=color,
                )
                entries.setdefault(line.label, handle)
                values.extend(float(v) for v in line.x if v > 0)
            ax.set_yticks(np.arange(len(categories)), [mpl_text(c) for c in categories])
            ax.invert_yaxis()
            if values and max(values) / min(values) > 100:
                _log_axis(ax, "x", 10)
            ax.set_title(mpl_text(title))
            ax.set_xlabel(xlabel)
        _finish_legend(fig, entries, origins, grid)
    return fig


def heatmap_figure(
    rows: Sequence[str],
    columns: Sequence[str],
    performance: FloatArray,
    significant: npt.NDArray[np.bool_],
    *,
    title: str,
) -> Figure:
    """Performance against the baseline (> 1 better), red slower, blue faster, log2 colour
    scale clipped at 4x; significant cells bold with '*', the others italic; the text white
    on the darkest cells.

    Laid out by hand (margins from the label lengths): constrained layout would measure the
    few hundred cell texts again on each pass, which doubles the drawing time."""
    with matplotlib.rc_context(_RC):
        longest_row = min(max((len(r) for r in rows), default=10), 70)
        longest_column = min(max((len(c) for c in columns), default=10), 40)
        left = 0.3 + 0.068 * longest_row  # inches: row labels at 8.5 pt
        bottom = 0.35 + 0.068 * longest_column * 0.5  # column labels turned 30 degrees
        top, right, bar = 0.4, 1.3, 0.22  # title; colour bar and its labels
        width = left + 1.15 * max(len(columns), 1) + right
        height = bottom + 0.3 * max(len(rows), 1) + top
        fig = Figure(figsize=(width, height))
        ax = fig.add_axes((left / width, bottom / height, 1 - (left + right) / width,
                           1 - (bottom + top) / height))  # fmt: skip
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.clip(np.log2(performance), -2, 2)
        image = ax.imshow(np.ma.masked_invalid(scaled), cmap="RdBu", vmin=-2, vmax=2, aspect="auto")
        for i in range(len(rows)):
            for j in range(len(columns)):
                v = performance[i, j]
                if not math.isfinite(v):
                    ax.text(j, i, "—", ha="center", va="center", color="#999999")
                    continue
                sig = bool(significant[i, j])
                dark = abs(float(scaled[i, j])) > 1.3  # beyond 2.5x: a deep red or blue
                ax.text(
                    j,
                    i,
                    f"{v:.2f}" + ("*" if sig else ""),
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    fontweight="bold" if sig else "normal",
                    fontstyle="normal" if sig else "italic",
                    color=("white" if dark else "black")
                    if sig
                    else ("#dddddd" if dark else "#555555"),
                )
        ax.set_xticks(
            np.arange(len(columns)), [mpl_text(c) for c in columns], rotation=30, ha="right"
        )
        ax.set_yticks(np.arange(len(rows)), [mpl_text(r) for r in rows])
        ax.grid(False)
        ax.set_title(mpl_text(title))
        bar_axes = fig.add_axes(
            ((width - right + 0.2) / width, (bottom + 0.1 * (height - bottom - top)) / height,
             bar / width, 0.8 * (height - bottom - top) / height)
        )  # fmt: skip
        colour_bar = fig.colorbar(image, cax=bar_axes)
        ticks = [-2, -1, 0, 1, 2]
        colour_bar.set_ticks(ticks, labels=[f"×{2.0**t:g}" for t in ticks])
        colour_bar.set_label("performance vs baseline (> 1: better)")
    return fig


def render(fig: Figure, name: str, title: str, caption: str) -> RenderedFigure:
    """SVG and PNG bytes of a figure (no timestamps, so a report is reproducible).

    The PNG is the SVG rasterized by librsvg's rsvg-convert where it is installed: the same
    drawing, at less than half the cost of drawing the figure a second time with Agg (which
    is the fallback, and the choice when $HPCEVAL_PNG_RASTERIZER=matplotlib)."""
    with matplotlib.rc_context(_RC):
        svg_buffer = io.BytesIO()
        fig.savefig(svg_buffer, format="svg", metadata={"Date": None})
        svg = svg_buffer.getvalue()
        png = rasterize(svg)
        if png is None:
            # The layout found for the SVG holds for the PNG: skip the second (costly) pass.
            fig.set_layout_engine("none")
            png_buffer = io.BytesIO()
            fig.savefig(png_buffer, format="png", dpi=PNG_DPI, metadata={"Software": None})
            png = png_buffer.getvalue()
    width, height = (round(float(v) * 96) for v in fig.get_size_inches())  # CSS px
    return RenderedFigure(name, title, caption, svg, png, width, height)


RASTERIZER_ENV: Final = "HPCEVAL_PNG_RASTERIZER"  # rsvg (default where installed) | matplotlib
_RASTERIZE_TIMEOUT_S: Final = 60.0


def rasterizer() -> str | None:
    """The rsvg-convert that rasterizes the figures, or None (matplotlib's Agg draws them)."""
    if os.environ.get(RASTERIZER_ENV, "").strip().lower() == "matplotlib":
        return None
    return shutil.which("rsvg-convert")


def rasterize(svg: bytes) -> bytes | None:
    """PNG bytes of a figure's SVG at PNG_DPI, or None where rsvg-convert is missing or fails
    (the caller then draws the PNG with matplotlib)."""
    command = rasterizer()
    if command is None:
        return None
    dpi = str(PNG_DPI)
    try:
        done = subprocess.run(
            [command, "--dpi-x", dpi, "--dpi-y", dpi, "--format", "png"],
            input=svg, capture_output=True, timeout=_RASTERIZE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    return done.stdout
