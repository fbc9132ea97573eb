"""The study's figures (matplotlib, drawn in the report's styles: one colour per platform, one
line style per origin, so projections never look like measurements), with the published
figures of the same quantity as labelled black markers. Points that differ in a parameter the
figure does not name are never pooled into one line: such parameters split the lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import matplotlib
import numpy as np
from matplotlib import colormaps
from matplotlib.colors import to_hex
from matplotlib.figure import Figure as MplFigure

from hpceval.analysis.policy import StatisticPolicy, values_of_groups
from hpceval.model import Origin
from hpceval.report.figures import RenderedFigure, render
from hpceval.report.styles import Palette, mpl_text, origin_style
from hpceval.store import Store
from hpceval.study.published import PublishedFigure, published
from hpceval.study.recipe import Figure
from hpceval.study.tables import Column, differing_parameters, point_of, selected

# Units the published figures and the measurements are given in, in one base per quantity
# (seconds; bytes per second) so that a published point sits on the measured axis.
UNIT_SCALE: Final[dict[str, tuple[str, float]]] = {
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
    "µs": ("time", 1e-6),
    "ns": ("time", 1e-9),
    "B/s": ("rate", 1.0),
    "MB/s": ("rate", 1e6),
    "GB/s": ("rate", 1e9),
    "MiB/s": ("rate", 2.0**20),
    "GiB/s": ("rate", 2.0**30),
    "Mbps": ("rate", 1e6 / 8),
    "Gbps": ("rate", 1e9 / 8),
}
PUBLISHED_MARKERS: Final = ("*", "P", "X", "D", "v", "p")
PLATFORM_MARKERS: Final = ("o", "s", "D", "v", "<", ">")


def convert(value: float, unit: str, to: str) -> float | None:
    """`value` in `unit` expressed in `to`, or None when they measure different things."""
    a, b = UNIT_SCALE.get(unit), UNIT_SCALE.get(to)
    if a is None or b is None or a[0] != b[0]:
        return None
    return value * a[1] / b[1]


@dataclass
class Series:
    column: Column
    label: str  # the series' parameters ("pair=inter-node")
    key: tuple[str, ...]
    points: dict[float, float]  # x -> the policy's value of the point's measurements
    unit: str


def series_of(
    store: Store, spec: Figure, columns: Sequence[Column], policy: StatisticPolicy
) -> list[Series]:
    allowed = {k: {_text(v) for v in values} for k, values in spec.only.items()}
    found = []
    for c in columns:
        for m in selected(store, c, spec.select):
            point = point_of(m)
            if all(point.get(k) in v for k, v in allowed.items()):
                found.append((c, m, point))
    groups: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for c, _, point in found:
        key = (c.label, point.get(spec.x, ""), *(point.get(s, "") for s in spec.series))
        groups.setdefault(key, []).append(point)
    # A line spans the x values: (column, series values) without x.
    added = differing_parameters(groups, [spec.x, *spec.series], lambda k: (k[0], *k[2:]))
    names = [*spec.series, *added]
    out: dict[tuple[str, ...], Series] = {}
    at: list[tuple[tuple[str, ...], float]] = []
    for c, m, point in found:
        try:
            x = float(point.get(spec.x, ""))
        except ValueError:
            x = float("nan")
        key = (c.label, *(point.get(n, "") for n in names))
        label = ", ".join(f"{n}={point[n]}" for n in names if point.get(n, ""))
        out.setdefault(key, Series(c, label, key[1:], {}, m.unit))
        at.append((key, x))
    for (key, x), value in values_of_groups([m for _, m, _ in found], at, policy).items():
        out[key].points[x] = value
    return list(out.values())


def _text(value: str | int | float) -> str:
    """A value as point_of writes a stored parameter (3, not 3.0, for a whole number)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def draw(
    store: Store, spec: Figure, columns: Sequence[Column], policy: StatisticPolicy
) -> tuple[MplFigure, str] | None:
    """The figure and its caption, or None when the study has no point of it."""
    series = series_of(store, spec, columns, policy)
    if not series:
        return None
    palette = Palette(c.platform for c in columns)
    shades: dict[str, dict[tuple[str, ...], int]] = {}
    notes: list[str] = []
    fig = MplFigure(figsize=(9.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    unit = series[0].unit
    # One colour per series (its parameters), one marker per platform; projections keep the
    # report's simulated style (dotted, hollow triangles).
    keys = list(dict.fromkeys(s.key for s in series))
    cmap = colormaps["tab10" if len(keys) <= 10 else "tab20"]
    series_colors = {k: to_hex(cmap(i % cmap.N)) for i, k in enumerate(keys)}
    platforms = list(dict.fromkeys(c.platform for c in columns))
    platform_marker = {
        p: PLATFORM_MARKERS[i % len(PLATFORM_MARKERS)] for i, p in enumerate(platforms)
    }
    if spec.kind == "bars":
        _bars(ax, spec, series, palette, shades, series_colors if len(platforms) < 2 else {})
    else:
        speedup = spec.kind == "speedup"
        for s in series:
            xs = np.array(sorted(x for x in s.points if not np.isnan(x)))
            if not len(xs):
                continue
            ys = np.array([s.points[x] for x in xs])
            if speedup:
                base = _speedup_base(s, series)
                ys = base[1] / ys
                if s.column.simulated:
                    notes.append(
                        f"{s.column.label} {s.label}: speedup over "
                        f"{'the measured' if base[2] else 'its own'} time at {base[0]:g} "
                        f"{spec.x}"
                    )
            style = origin_style(Origin.SIMULATED.value if s.column.simulated else "measured")
            color = (
                palette.color(s.column.platform, 0)
                if len(series_colors) < 2
                else (series_colors[s.key])
            )
            ax.plot(
                xs,
                ys,
                linestyle=style.linestyle,
                marker=style.marker if s.column.simulated else platform_marker[s.column.platform],
                color=color,
                markerfacecolor=color if style.filled else "white",
                label=mpl_text(f"{s.column.label} {s.label}".strip()),
            )
        if spec.published and not speedup:
            notes += _overlay(ax, spec, series, unit)
        if spec.log_x:
            ax.set_xscale("log", base=2)
        if spec.log_y:
            ax.set_yscale("log")
        ax.set_xlabel(spec.x)
        ax.set_ylabel("speedup" if speedup else f"{spec.select.metric} ({unit})")
    ax.set_title(mpl_text(spec.title))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    caption = spec.title
    if any(c.simulated for c in columns):
        caption += (
            "; dotted lines, hollow triangles and hatched bars are SimGrid SMPI projections "
            "([projected]), not measurements"
        )
    if notes:
        caption += "; " + "; ".join(notes)
    return fig, caption


def _speedup_base(s: Series, series: Sequence[Series]) -> tuple[float, float, bool]:
    """(x, time) the series' speedups are over: the measured series of the same platform and
    parameters at its lowest x, else the series' own lowest; and whether it is measured."""
    measured = next(
        (
            m
            for m in series
            if not m.column.simulated
            and m.column.platform == s.column.platform
            and m.key == s.key
            and m.points
        ),
        None,
    )
    ref = measured or s
    x = min(ref.points)
    return x, ref.points[x], measured is not None


def _bars(
    ax: object, spec: Figure, series: Sequence[Series], palette: Palette,
    shades: dict[str, dict[tuple[str, ...], int]], colors: dict[tuple[str, ...], str],
) -> None:  # fmt: skip
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    categories = sorted({x for s in series for x in s.points})
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        shade = shades.setdefault(s.column.platform, {}).setdefault(
            s.key, len(shades.get(s.column.platform, {}))
        )
        style = origin_style(Origin.SIMULATED.value if s.column.simulated else "measured")
        xs = [categories.index(x) + i * width for x in s.points]
        ys = list(s.points.values())
        color = colors.get(s.key, palette.color(s.column.platform, shade))
        ax.bar(xs, ys, width=width, color=color,
               hatch=style.hatch, edgecolor="white",
               label=mpl_text(f"{s.column.label} {s.label}".strip()))  # fmt: skip
    ax.set_xticks(
        [i + 0.4 - width / 2 for i in range(len(categories))],
        [f"{c:g}" for c in categories],
    )
    ax.set_xlabel(spec.x)
    ax.set_ylabel(f"{spec.select.metric} ({series[0].unit})")


def _overlay(ax: object, spec: Figure, series: Sequence[Series], unit: str) -> list[str]:
    """The published values as markers at the x they were published at, one marker per
    published platform; a note when they cannot be placed."""
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    figure = published().find_figure(spec.published or "")
    if figure is None:
        return []
    x = _published_x(figure, spec)
    if x is None:
        return [f"published {figure.source} figures not placed (no {spec.x} given for them)"]
    labels = {v for s in series for v in s.key}
    shown = [p for p in figure.points if p in labels]
    for i, row in enumerate(figure.rows):
        converted = [convert(figure.value(row.platform, p), figure.unit, unit) for p in shown]
        values = [v for v in converted if v is not None]
        if len(values) < len(converted):
            return [f"published {figure.source} figures in {figure.unit}, not placed"]
        if not values:
            continue
        label = mpl_text(f"published {figure.source}: {row.platform}")
        marker = PUBLISHED_MARKERS[i % len(PUBLISHED_MARKERS)]
        ax.plot([x] * len(values), values, linestyle="none", color="black", marker=marker,
                markersize=7, label=label)  # fmt: skip
    if not shown:
        return []
    return [
        f"black markers at {spec.x} {x:g}: the published {', '.join(shown)} values of each "
        f"published platform ({figure.cite})"
    ]


def _published_x(figure: PublishedFigure, spec: Figure) -> float | None:
    if spec.published_at is not None:
        return spec.published_at
    value = figure.match.get(spec.x)
    if isinstance(value, (int, float)):
        return float(value)
    return None


def write_figures(
    store: Store,
    specs: Sequence[Figure],
    columns: Sequence[Column],
    directory: Path,
    stem: str,
    policy: StatisticPolicy | None = None,
) -> list[tuple[Figure, RenderedFigure, Path]]:
    """Each figure as SVG and PNG in `directory` (`STEM-FILE.svg`, `.png`); a point is the
    policy's statistic (default: median) of its measurements' samples."""
    written = []
    for spec in specs:
        drawn = draw(store, spec, columns, policy or StatisticPolicy())
        if drawn is None:
            continue
        fig, caption = drawn
        with matplotlib.rc_context({"svg.hashsalt": "hpceval-study", "svg.fonttype": "none"}):
            rendered = render(fig, f"{stem}-{spec.file}", spec.title, caption)
        svg = directory / f"{stem}-{spec.file}.svg"
        svg.write_bytes(rendered.svg)
        svg.with_suffix(".png").write_bytes(rendered.png)
        written.append((spec, rendered, svg))
    return written
