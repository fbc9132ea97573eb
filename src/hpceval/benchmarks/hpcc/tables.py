"""HPC Challenge in the terminal: `hpceval show`'s table and `hpceval run`'s headline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_value, placement_label
from hpceval.benchmarks.hpcc.parse import FIGURES
from hpceval.model import Measurement


def figure_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """HPC Challenge: one row per figure, one column per problem size and placement."""
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, str] = {}
    for m in measurements:
        if m.benchmark != "hpcc":
            continue
        p = m.parameters
        column = f"N={p.get('n')} {placement_label(m)}"
        cells[m.metric][column].append(m.value)
        units[m.metric] = m.unit
    if not cells:
        return []
    columns = sorted({c for by in cells.values() for c in by})
    t = Table(
        title="HPC Challenge (best of the repetitions; MB/s = 10^6 B/s)", title_justify="left"
    )
    t.add_column("figure")
    t.add_column("unit")
    for c in columns:
        t.add_column(c, justify="right")
    for fig in FIGURES:
        if fig.metric not in cells:
            continue
        lower_better = units[fig.metric] == "us"
        row = [fig.metric, units[fig.metric].replace("us", "µs")]
        for c in columns:
            values = cells[fig.metric].get(c, [])
            best = (min if lower_better else max)(values) if values else None
            row.append(format_value(best) if best is not None else "")
        t.add_row(*row)
    return [t]


def verified_figures(measurements: Sequence[Measurement]) -> str:
    """HPL, STREAM triad and (on 2+ ranks) the ping-pong latency of an hpcc case."""
    by = {m.metric: m.value for m in measurements if m.benchmark == "hpcc"}
    parts = []
    if "hpl" in by:
        parts.append(f"HPL {format_value(by['hpl'])} GFLOP/s")
    if "stream_triad_star" in by:
        parts.append(f"triad {format_value(by['stream_triad_star'])} MB/s")
    if "pingpong_latency_avg" in by:
        parts.append(f"ping-pong {format_value(by['pingpong_latency_avg'])} µs")
    return ", ".join(parts) + (" (verified)" if parts else "")
