"""fio in the terminal: `hpceval show`'s tables and `hpceval run`'s headline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_value
from hpceval.model import Measurement
from hpceval.units import format_bytes

COLUMNS: tuple[tuple[str, str], ...] = (
    ("bandwidth", "MiB/s"),
    ("iops", "IOPS"),
    ("clat_mean", "clat mean µs"),
    ("clat_p50", "p50 µs"),
    ("clat_p95", "p95 µs"),
    ("clat_p99", "p99 µs"),
)


def configuration_tables(
    measurements: Sequence[Measurement], workloads: Sequence[str]
) -> list[Table]:
    """Storage: one table per fio configuration, one row per workload (in the order of
    `workloads`; best repetition)."""
    groups: dict[tuple[str, ...], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    fallback: dict[tuple[str, ...], str] = {}
    directory: dict[tuple[str, ...], str] = {}
    for m in measurements:
        if m.benchmark != "fio":
            continue
        p = m.parameters
        key = tuple(
            str(p.get(k)) for k in ("preset", "size", "numjobs", "iodepth", "ioengine", "direct")
        )
        groups[key][str(p.get("workload"))][m.metric].append(m.value)
        fallback[key] = str(p.get("io_fallback", ""))
        directory[key] = str(m.details.get("directory", ""))
    tables = []
    for key, by_workload in groups.items():
        preset, size, jobs, depth, engine, direct = key
        per_job = format_bytes(int(size), exact=True)
        title = (
            f"fio on {directory[key] or '?'} ({preset}: {per_job} × {jobs} jobs, {engine}, "
            f"iodepth {depth}, {'direct' if direct == 'True' else 'buffered'}"
            + (f"; fallback: {fallback[key]}" if fallback[key] else "")
            + ")"
        )
        t = Table(title=title, title_justify="left", min_width=70)
        t.add_column("workload")
        for _, label in COLUMNS:
            t.add_column(label, justify="right")
        for workload in sorted(
            by_workload, key=lambda w: list(workloads).index(w) if w in workloads else 99
        ):
            metrics = by_workload[workload]
            cells = []
            for metric, _ in COLUMNS:
                values = metrics.get(metric, [])
                best = (min if metric.startswith("clat") else max)(values) if values else None
                cells.append(format_value(best) if best is not None else "")
            t.add_row(workload, *cells)
        tables.append(t)
    return tables


def workload_rates(measurements: Sequence[Measurement], workloads: Sequence[str]) -> str:
    """Sequential bandwidths (MiB/s) and random IOPS of a fio case's measurements."""
    parts = []
    for workload in workloads:
        metric, unit = ("bandwidth", "MiB/s") if workload.startswith("seq") else ("iops", "IOPS")
        values = [
            m.value
            for m in measurements
            if m.benchmark == "fio" and m.metric == metric and m.parameters["workload"] == workload
        ]
        if values:
            parts.append(f"{workload} {format_value(max(values))} {unit}")
    return ", ".join(parts)
