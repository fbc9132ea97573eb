"""Terminal tables of a run's measurements (rich)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence

from rich.table import Table

from hpceval.analysis.statistics import quality_warnings
from hpceval.benchmarks.mpibench import COLLECTIVES, PATTERNS, RINGS
from hpceval.model import Measurement
from hpceval.store import CaseRow, RunRow, StoredMeasurement


def format_size(n: int) -> str:
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def format_value(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if v >= 0.01 else f"{v:.2e}"


def format_ci(m: Measurement) -> str:
    st = m.statistics
    if st is None or st.count < 2:
        return "n/a"
    return f"±{st.relative_ci:.1%}"


def _placement(m: Measurement) -> str:
    p = m.parameters
    label = f"{p.get('nodes')}×{p.get('ranks_per_node')} ranks"
    if p.get("threads_per_rank", 1) != 1:
        label += f" ×{p.get('threads_per_rank')} threads"
    if p.get("oversubscribed"):
        label += ", oversubscribed"
    return label


def _flags(m: Measurement, target_rci: float | None) -> str:
    if m.statistics is None:
        return ""
    return "⚠" if quality_warnings(m.statistics, target_rci=target_rci) else ""


def npb_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """NPB kernels: one row per kernel, class and placement; repetitions summarized."""
    rows: dict[tuple[str, str, int, int, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for m in measurements:
        if m.benchmark != "npb":
            continue
        p = m.parameters
        key = (
            str(p["kernel"]),
            str(p["class"]),
            int(p.get("ranks", 1)),
            int(p.get("threads_per_rank", 1)),
            int(p.get("nodes", 1)),
        )
        rows[key][m.metric].append(m.value)
    if not rows:
        return []
    t = Table(title="NPB kernels (verified runs; best of the repetitions)", title_justify="left")
    for col in ("kernel", "class", "ranks", "threads", "nodes", "runs", "time s", "Mop/s",
                "Mop/s/process"):  # fmt: skip
        t.add_column(col, justify="left" if col in ("kernel", "class") else "right")
    order = {k: i for i, k in enumerate(("ep", "is", "cg", "mg", "ft"))}
    for key in sorted(rows, key=lambda k: (order.get(k[0], 99), k[0], k[1], k[2], k[3])):
        values = rows[key]
        times = values.get("time", [])
        t.add_row(
            key[0].upper(),
            key[1],
            str(key[2]),
            str(key[3]),
            str(key[4]),
            str(len(times)),
            format_value(min(times)) if times else "",
            format_value(max(values.get("mops_total", [0.0]))),
            format_value(max(values.get("mops_per_process", [0.0]))),
        )
    return [t]


def point_to_point_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """One table per pattern, pair and placement: latency and bandwidth by message size."""
    groups: dict[tuple[str, str, str], dict[int, dict[str, Measurement]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for m in measurements:
        pattern = str(m.parameters.get("pattern"))
        if m.benchmark != "mpibench" or pattern in COLLECTIVES:
            continue
        key = (pattern, str(m.parameters.get("pair", "")), _placement(m))
        groups[key][int(m.parameters["size"])][m.metric] = m
    tables = []

    def order(key: tuple[str, str, str]) -> tuple[int, str, str]:
        return (PATTERNS.index(key[0]) if key[0] in PATTERNS else len(PATTERNS), key[1], key[2])

    for (pattern, pair, placement), by_size in sorted(groups.items(), key=lambda kv: order(kv[0])):
        kind = "HPCC ring" if pattern in RINGS else "point-to-point"
        title = f"{pattern} ({kind}{', ' + pair if pair else ''}, {placement})"
        t = Table(title=title, title_justify="left", min_width=70)
        t.add_column("size", justify="right")
        t.add_column("latency µs", justify="right")
        t.add_column("95% CI", justify="right")
        t.add_column("min µs", justify="right")
        t.add_column("bandwidth MB/s", justify="right")
        t.add_column("samples", justify="right")
        t.add_column("", justify="left")
        for size in sorted(by_size):
            lat = by_size[size].get("latency")
            bw = by_size[size].get("bandwidth")
            if lat is None:
                continue
            assert lat.statistics is not None
            t.add_row(
                format_size(size),
                format_value(lat.value),
                format_ci(lat),
                format_value(lat.statistics.minimum),
                format_value(bw.value) if bw else "",
                str(lat.statistics.count),
                _flags(lat, None),
            )
        tables.append(t)
    return tables


def collective_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """One table per collective: t_max (µs) by message size (rows) and rank count (columns)."""
    groups: dict[str, dict[int, dict[str, Measurement]]] = defaultdict(lambda: defaultdict(dict))
    for m in measurements:
        pattern = str(m.parameters.get("pattern"))
        if m.benchmark != "mpibench" or pattern not in COLLECTIVES or m.metric != "time":
            continue
        column = f"{m.parameters['ranks']} ranks"
        if m.parameters.get("oversubscribed"):
            column += "*"
        groups[pattern][int(m.parameters["size"])][column] = m
    tables = []
    for pattern in sorted(groups, key=PATTERNS.index):
        by_size = groups[pattern]
        columns = sorted(
            {c for row in by_size.values() for c in row}, key=lambda c: int(c.split()[0])
        )
        t = Table(
            title=f"{pattern} (collective, t_max µs; * = oversubscribed)",
            title_justify="left",
            min_width=70,
        )
        t.add_column("size", justify="right")
        for c in columns:
            t.add_column(c, justify="right")
        for size in sorted(by_size):
            row = [format_size(size)]
            for c in columns:
                cell = by_size[size].get(c)
                row.append(f"{format_value(cell.value)} {format_ci(cell)}" if cell else "")
            t.add_row(*row)
        tables.append(t)
    return tables


def runs_table(runs: Iterable[tuple[RunRow, Sequence[CaseRow]]]) -> Table:
    """One row per run: what ran where, how it ended, how many cases are done or failed."""
    t = Table(title="runs", title_justify="left")
    for col in ("id", "suite", "platform", "launcher", "status", "started", "wall", "cases"):
        t.add_column(col, justify="right" if col in ("id", "wall") else "left")
    for r, cases in runs:
        started = dt.datetime.fromtimestamp(r.started).strftime("%Y-%m-%d %H:%M:%S")
        wall = f"{r.ended - r.started:.0f} s" if r.ended is not None else ""
        done = sum(1 for c in cases if c.status == "done")
        failed = sum(1 for c in cases if c.status == "failed")
        summary = f"{done}/{len(cases)} done" + (f", {failed} failed" if failed else "")
        t.add_row(
            str(r.id), r.suite_name, r.platform_name, r.launcher, r.status, started, wall, summary
        )
    return t


def measurements_of(rows: Iterable[StoredMeasurement]) -> list[Measurement]:
    return [r.measurement for r in rows]
