"""What the report's sections share: the Section each builds, the Context it is built from,
and the helpers of several sections."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from hpceval import labels
from hpceval.analysis.cost import ExchangeRates, HourlyPrice
from hpceval.analysis.frame import IntArray, point_columns, pool
from hpceval.analysis.policy import StatisticPolicy, summarize_groups
from hpceval.config import PlatformConfig
from hpceval.report.figures import (
    Line,
    RenderedFigure,
    render,
)
from hpceval.report.styles import ORIGIN_ORDER, Palette, labelled
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
    # What qualifies the results shown (emulation limits, projections), set by the builder.
    caveats: list[str] = field(default_factory=list)


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
    # The runs (summary) and the environments (provenance) of the frame's measurements.
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    provenance: pd.DataFrame = field(default_factory=pd.DataFrame)
    # The statistics policy of every value, interval and ratio (--statistic), and the origin
    # the baseline is compared in (--baseline-origin; None: measured where it has such data).
    policy: StatisticPolicy = field(default_factory=StatisticPolicy)
    baseline_origin: str | None = None
    # The platform files of the runs (default placements) and each platform's caveats
    # (hpceval.analysis.platforms): emulation limits, projections.
    platform_configs: Mapping[str, PlatformConfig] = field(default_factory=dict)
    caveats: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # --deadline: the findings name the cheapest configuration that finishes within it.
    deadline_s: float | None = None

    def points(self, where: Callable[[pd.DataFrame], pd.Series[bool]]) -> pd.DataFrame:
        """The pooled points (`pooled_points`) for which `where` holds.

        `where` tests columns of a point (benchmark, metric, parameters): it selects the same
        points in the frame as in the pooled table, so only the frame rows it selects are
        pooled. Each section pools its own rows, in the worker that builds it.
        """
        return pooled_points(self.frame.loc[where(self.frame).to_numpy()], self.policy)


# --------------------------------------------------------------------------- helpers


def _first_rows(rows: IntArray) -> IntArray:
    """The first row of each group, groups numbered 0..G-1 (`Pooled.rows`)."""
    _, first = np.unique(rows, return_index=True)
    return np.asarray(first, dtype=np.int64)


def baseline_origin(frame: pd.DataFrame, baseline: str) -> str:
    """The origin the baseline is compared in: measured when it has measured data."""
    origins = sorted({str(o) for o in frame.loc[frame["platform"] == baseline, "origin"].unique()})
    return "measured" if "measured" in origins or not origins else origins[0]


def pooled_points(frame: pd.DataFrame, policy: StatisticPolicy | None = None) -> pd.DataFrame:
    """One row per platform, origin and point: its parameters, its value by the statistics
    `policy` (`value`, `statistic`; default median over repetitions), the median, mean and
    min computed the same way (rates from times: bytes / statistic(time), never a mean of
    per-sample bandwidths, which the fastest samples pull up), the sample count, and the
    standard deviation and 95 % confidence half-width (Student) of the pooled raw samples.
    The implementation (hpceval's own program or an official code and its version) is part
    of the key: two implementations are never pooled into one point."""
    policy = policy or StatisticPolicy()
    by = ["platform", "origin", *point_columns(frame, implementation=True)]
    pooled = pool(frame, by)
    summary = summarize_groups(frame, pooled.rows, _first_rows(pooled.rows), by, policy)
    out = pooled.keys.copy()
    n = pooled.count.astype(np.float64)
    sd = np.sqrt(pooled.var)
    with np.errstate(invalid="ignore", divide="ignore"):
        distinct, position = np.unique(np.maximum(n - 1, 1), return_inverse=True)
        t = np.asarray(stdtrit(distinct, 0.975))[position].reshape(n.shape)
        ci = np.where(n > 1, t * sd / np.sqrt(n), np.nan)
    out["statistic"] = policy.statistic
    out["value"] = summary.value
    out["median"] = summary.median
    out["mean"] = summary.mean
    out["min"] = summary.minimum
    out["samples"] = pooled.count
    out["measurements"] = pooled.measurements
    out["stdev"] = sd
    out["ci95"] = ci
    return out


def text_column(table: pd.DataFrame, column: str) -> pd.Series[Any]:
    """A column as strings ('' where missing or absent)."""
    if column not in table.columns:
        return pd.Series([""] * len(table), index=table.index, dtype=object)
    values = table[column].astype(object)
    return values.where(values.notna(), "").astype(str)


def matches(table: pd.DataFrame, column: str, values: Sequence[str]) -> pd.Series[bool]:
    if column not in table.columns:
        return pd.Series(False, index=table.index)
    return table[column].isin(list(values))  # (on a categorical: compares its codes)


def present_columns(table: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
    """Parameter columns of a points table that have a value somewhere in it."""
    core = {
        "platform",
        "origin",
        "benchmark",
        "metric",
        "unit",
        "statistic",
        "implementation",
        "value",
        "median",
        "mean",
        "min",
        "samples",
        "measurements",
        "stdev",
        "ci95",
        *exclude,
    }
    return [str(c) for c in table.columns if c not in core and table[c].notna().any()]


def plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def placement_label(record: Mapping[str, Any], columns: Sequence[str]) -> str:
    """A short description of a series' parameters: the placement in the report's one
    notation (hpceval.labels), then any other parameter as name=value."""
    return labels.described({c: plain(record.get(c)) for c in columns})


def series_of(
    table: pd.DataFrame, key: Sequence[str], x: str
) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The groups of `table` by platform, origin and `key`, each sorted by `x`."""
    columns = ["platform", "origin", *key]
    out: list[tuple[dict[str, Any], pd.DataFrame]] = []
    ordered = table.sort_values(x)
    for values, part in ordered.groupby(columns, dropna=False, observed=True, sort=True):
        record = {c: plain(v) for c, v in zip(columns, values, strict=True)}
        out.append((record, part))
    origin_rank = {o: i for i, o in enumerate(ORIGIN_ORDER)}
    out.sort(key=lambda item: (str(item[0]["platform"]), origin_rank.get(item[0]["origin"], 9)))
    return out


def platform_shades(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """0 for the first series of a platform in a panel, 1 for its second, ..."""
    seen: dict[str, int] = {}
    out = []
    for r in records:
        platform = str(r["platform"])
        out.append(seen.get(platform, 0))
        seen[platform] = seen.get(platform, 0) + 1
    return out


def mean_lines(table: pd.DataFrame, key: Sequence[str], x: str) -> list[Line]:
    """One line of the points' values (the policy's statistic) against `x` per series
    (series_of), shaded per platform."""
    groups = series_of(table, key, x)
    shades = platform_shades([g[0] for g in groups])
    return [
        Line(str(r["platform"]), str(r["origin"]),
             labelled(str(r["platform"]), str(r["origin"]), placement_label(r, key)),
             g[x].to_numpy(dtype=np.float64), g["value"].to_numpy(dtype=np.float64), shade)
        for (r, g), shade in zip(groups, shades, strict=True)
    ]  # fmt: skip


def chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def figure_set(
    panels: Sequence[Any],
    draw: Callable[[Sequence[Any]], Any],
    name: str,
    title: str,
    caption: str,
    notes: list[str],
) -> list[RenderedFigure]:
    """Figures of at most MAX_PANELS_PER_FIGURE panels, at most MAX_FIGURES_PER_KIND of them."""
    groups = chunks(panels, MAX_PANELS_PER_FIGURE)
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


def cap_lines(lines: list[Line], where: str, notes: list[str]) -> list[Line]:
    if len(lines) > MAX_SERIES_PER_PANEL:
        notes.append(
            f"{where}: {len(lines) - MAX_SERIES_PER_PANEL} more series not drawn "
            f"(first {MAX_SERIES_PER_PANEL} by platform shown); the tables hold them."
        )
        return lines[:MAX_SERIES_PER_PANEL]
    return lines


def safe_name(text: str) -> str:
    return _SAFE_NAME.sub("_", text).strip("_") or "x"


def export_columns(table: pd.DataFrame, first: Sequence[str]) -> pd.DataFrame:
    """`first` columns (those present), the present parameters, then the statistics."""
    lead = [c for c in first if c in table.columns]
    stats = [c for c in ("statistic", "value", "median", "mean", "min", "samples",
                         "measurements", "stdev", "ci95") if c in table]  # fmt: skip
    params = [c for c in present_columns(table, lead) if c not in stats]
    return table[lead + params + stats].reset_index(drop=True)


def norm(v: Any) -> Any:
    v = plain(v)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return v
    return float(v)


def problem_label(problem: Mapping[str, Any]) -> str:
    """CG.C (kernel.class), or CG without a class, then the other parameters (a flag that is
    false says nothing and is left out)."""
    kernel, klass = problem.get("kernel"), problem.get("class")
    head = str(kernel).upper() if kernel is not None else ""
    if klass is not None:
        head = f"{head}.{klass}" if head else f"class {klass}"
    rest = " ".join(
        f"{k}={plain(v)}" if not isinstance(plain(v), bool) else k
        for k, v in problem.items()
        if k not in ("kernel", "class") and plain(v) not in (None, False)
    )
    return " ".join(x for x in (head, rest) if x) or "all"


def joined_sections(first: Section, *rest: Section) -> Section:
    """One section of parts built apart (the first one's title, intro, tables, and whether
    it is empty): figures and notes in the parts' order."""
    for part in rest:
        first.figures += part.figures
        first.tables += part.tables
        first.notes += [note for note in part.notes if note not in first.notes]
    return first
