"""HPC Challenge in the terminal: `hpceval show`'s table and `hpceval run`'s headline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_value, placement_label
from hpceval.benchmarks.hpcc.parse import FIGURES, IN_CACHE_NOTE
from hpceval.model import Measurement


def figure_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """HPC Challenge: one row per figure, one column per problem size and placement."""
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, str] = {}
    in_cache: set[str] = set()
    for m in measurements:
        if m.benchmark != "hpcc":
            continue
        p = m.parameters
        column = f"N={p.get('n')} {placement_label(m)}"
        if p.get("stream_in") == "cache":
            in_cache.add(column)
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
            cell = format_value(best) if best is not None else ""
            if cell and fig.metric.startswith("stream_") and c in in_cache:
                cell += f" ({IN_CACHE_NOTE})"
            row.append(cell)
        t.add_row(*row)
    return [t]


def verified_figures(measurements: Sequence[Measurement]) -> str:
    """HPL, STREAM triad and (on 2+ ranks) the ping-pong latency of an hpcc case."""
    by = {m.metric: m.value for m in measurements if m.benchmark == "hpcc"}
    in_cache = any(
        m.parameters.get("stream_in") == "cache" for m in measurements if m.benchmark == "hpcc"
    )
    parts = []
    if "hpl" in by:
        parts.append(f"HPL {format_value(by['hpl'])} GFLOP/s")
    if "stream_triad_star" in by:
        flag = f" (WARNING {IN_CACHE_NOTE})" if in_cache else ""
        parts.append(f"triad {format_value(by['stream_triad_star'])} MB/s{flag}")
    if "pingpong_latency_avg" in by:
        parts.append(f"ping-pong {format_value(by['pingpong_latency_avg'])} µs")
    return ", ".join(parts) + (" (verified)" if parts else "")
