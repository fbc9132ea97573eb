"""STREAM in the terminal: `hpceval show`'s table and `hpceval run`'s headline."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_value, placement_label
from hpceval.model import Measurement
from hpceval.units import format_bytes

KERNEL_ORDER = {"copy": 0, "scale": 1, "add": 2, "triad": 3}


def bandwidths(measurements: Sequence[Measurement]) -> list[Measurement]:
    rows = [
        m
        for m in measurements
        if m.benchmark == "stream" and m.metric.endswith("_bandwidth") and m.statistics
    ]
    return sorted(
        rows,
        key=lambda m: (
            m.parameters.get("ranks", 0),
            KERNEL_ORDER.get(str(m.parameters.get("kernel")), 9),
        ),
    )


def stream_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """One row per process count and kernel: bytes / median time (the headline), STREAM's
    best rate (bytes / min time) and bytes / mean time, trials counted, array size."""
    rows = bandwidths(measurements)
    if not rows:
        return []
    t = Table(
        title="STREAM, MB/s = 10^6 B/s: bytes / median, min (STREAM's best) and mean of the "
        "trial times (the first trial left out)",
        title_justify="left",
    )
    for column in ("kernel", "placement", "array", "trials"):
        t.add_column(column)
    for column in ("median", "best", "mean"):
        t.add_column(column, justify="right")
    for m in rows:
        st = m.statistics
        assert st is not None
        t.add_row(
            str(m.parameters.get("kernel")),
            placement_label(m),
            format_bytes(float(m.parameters.get("array_bytes") or 0)),
            str(st.count),
            format_value(m.value),
            format_value(st.maximum),
            format_value(st.mean),
        )
    return [t]


def headline(measurements: Sequence[Measurement]) -> str:
    """Triad per process count: bytes / median time, with STREAM's best and the mean beside."""
    parts = []
    for m in bandwidths(measurements):
        if m.parameters.get("kernel") != "triad" or m.statistics is None:
            continue
        st = m.statistics
        parts.append(
            f"triad {format_value(m.value)} MB/s x{m.parameters.get('ranks', '?')} "
            f"(median of {st.count}; best {format_value(st.maximum)}, "
            f"mean {format_value(st.mean)})"
        )
    return "; ".join(parts)
