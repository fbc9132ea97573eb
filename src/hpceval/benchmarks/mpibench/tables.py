"""mpibench in the terminal: `hpceval show`'s tables and `hpceval run`'s headline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_ci, format_value, placement_label
from hpceval.benchmarks.npb.tables import RATIO_TO_OFFICIAL, validation_cell
from hpceval.model import Measurement
from hpceval.patterns import COLLECTIVES, PATTERNS, RINGS
from hpceval.statistics import DISPLAY_STATISTIC, measurement_value, quality_warnings
from hpceval.units import format_bytes


def _flags(m: Measurement, target_rci: float | None) -> str:
    if m.statistics is None:
        return ""
    return "⚠" if quality_warnings(m.statistics, target_rci=target_rci) else ""


def point_to_point_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """One table per pattern, pair and placement: latency and bandwidth by message size."""
    groups: dict[tuple[str, str, str], dict[int, dict[str, Measurement]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for m in measurements:
        pattern = str(m.parameters.get("pattern"))
        if m.benchmark != "mpibench" or pattern in COLLECTIVES:
            continue
        key = (pattern, str(m.parameters.get("pair", "")), placement_label(m))
        metric = m.metric
        if metric == RATIO_TO_OFFICIAL:
            # `hpceval validate --code osu|imb`: shown beside the point it qualifies.
            metric = f"{RATIO_TO_OFFICIAL}:{m.parameters.get('compared', '')}"
        groups[key][int(m.parameters["size"])][metric] = m
    tables = []

    def order(key: tuple[str, str, str]) -> tuple[int, str, str]:
        return (PATTERNS.index(key[0]) if key[0] in PATTERNS else len(PATTERNS), key[1], key[2])

    for (pattern, _pair, placement), by_size in sorted(groups.items(), key=lambda kv: order(kv[0])):
        kind = "HPCC ring" if pattern in RINGS else "point-to-point"
        # The placement notation names the pair kind (intra-node, inter-node) itself.
        title = f"{pattern} ({kind}, {placement})"
        statistic = DISPLAY_STATISTIC.get()
        t = Table(title=title, title_justify="left", min_width=70)
        t.add_column("size", justify="right")
        t.add_column(f"latency µs ({statistic})", justify="right")
        t.add_column("min µs", justify="right")
        t.add_column("mean µs", justify="right")
        t.add_column("mean 95% CI", justify="right")
        t.add_column(f"bandwidth MB/s (n/{statistic}(t))", justify="right")
        t.add_column("samples", justify="right")
        checked = [
            compared
            for compared in ("latency", "bandwidth")
            if any(f"{RATIO_TO_OFFICIAL}:{compared}" in row for row in by_size.values())
        ]
        for compared in checked:
            t.add_column(f"{compared} vs official (95 % CI)", justify="right")
        t.add_column("", justify="left")
        for size in sorted(by_size):
            lat = by_size[size].get("latency")
            bw = by_size[size].get("bandwidth")
            if lat is None:
                continue
            assert lat.statistics is not None
            t.add_row(
                format_bytes(size, exact=True),
                format_value(measurement_value(lat)),
                format_value(lat.statistics.minimum),
                format_value(lat.statistics.mean),
                format_ci(lat),
                format_value(measurement_value(bw)) if bw else "",
                str(lat.statistics.count),
                *(validation_cell(by_size[size].get(f"{RATIO_TO_OFFICIAL}:{c}")) for c in checked),
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
        # One column per placement (not per rank count: 4 ranks on 4 nodes and on one are
        # different measurements), in the one notation.
        column = placement_label(m)
        groups[pattern][int(m.parameters["size"])][column] = m
    tables = []
    for pattern in sorted(groups, key=PATTERNS.index):
        by_size = groups[pattern]
        columns = sorted(
            {c for row in by_size.values() for c in row}, key=lambda c: (_ranks_of(c), c)
        )
        t = Table(
            title=f"{pattern} (collective, t_max µs, {DISPLAY_STATISTIC.get()}; "
            "± the mean's 95% CI)",
            title_justify="left",
            min_width=70,
        )
        t.add_column("size", justify="right")
        for c in columns:
            t.add_column(c, justify="right", overflow="fold")
        for size in sorted(by_size):
            row = [format_bytes(size, exact=True)]
            for c in columns:
                cell = by_size[size].get(c)
                row.append(
                    f"{format_value(measurement_value(cell))} {format_ci(cell)}" if cell else ""
                )
            t.add_row(*row)
        tables.append(t)
    return tables


def smallest_and_best(ms: Sequence[Measurement]) -> str:
    """The latency (or collective time) at the smallest message and the largest bandwidth
    over the sizes, each point by the display statistic (named in the headline)."""
    statistic = DISPLAY_STATISTIC.get()
    parts = []
    # A 0-byte collective returns at once in most MPIs: quote the smallest real message.
    times = [
        m
        for m in ms
        if m.metric == "latency" or (m.metric == "time" and int(m.parameters["size"]) > 0)
    ] or [m for m in ms if m.metric == "time"]
    if times:
        smallest = min(times, key=lambda m: int(m.parameters["size"]))
        parts.append(
            f"{statistic} {smallest.metric} {format_value(measurement_value(smallest))} µs @ "
            f"{format_bytes(int(smallest.parameters['size']), exact=True)}"
        )
    bws = [m for m in ms if m.metric == "bandwidth"]
    if bws:
        values = [measurement_value(m) for m in bws]
        best = max(range(len(bws)), key=values.__getitem__)
        at = format_bytes(int(bws[best].parameters["size"]), exact=True)
        parts.append(f"{statistic} bandwidth up to {format_value(values[best])} MB/s @ {at}")
    return "; ".join(parts)


def _ranks_of(label: str) -> int:
    """The rank count of a placement label (`2 nodes × 2 ranks × ...`: 4), for ordering."""
    numbers = [int(word) for word in label.replace(",", " ").split() if word.isdigit()]
    return numbers[0] * numbers[1] if len(numbers) >= 2 else numbers[0] if numbers else 0
