"""How measurements are written in the terminal: the number formats the benchmarks' tables
and headlines share, and the tables and headline of a benchmark that defines none."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval import labels
from hpceval.model import HPCEVAL_IMPLEMENTATION, Measurement, ParamValue
from hpceval.statistics import DISPLAY_STATISTIC, measurement_value, summary_value
from hpceval.units import HIGHER_IS_BETTER

# Parameters that say where a measurement ran, shown in their own column.
PLACEMENT_PARAMETERS = frozenset(
    {"nodes", "ranks", "ranks_per_node", "threads_per_rank", "binding", "oversubscribed"}
)


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


def placement_label(m: Measurement) -> str:
    """Where the measurement ran, in the one placement notation (hpceval.labels)."""
    return labels.placement_label(m.parameters)


def best(values: Sequence[float], unit: str) -> float:
    """The best of repeated values in the unit's direction (the largest rate, the least time)."""
    return max(values) if HIGHER_IS_BETTER.get(unit, True) else min(values)


def _input_label(parameters: dict[str, ParamValue]) -> str:
    return " ".join(
        f"{k}={v}" for k, v in sorted(parameters.items()) if k not in PLACEMENT_PARAMETERS
    )


def generic_tables(benchmark: str, measurements: Sequence[Measurement]) -> list[Table]:
    """One row per metric, input parameters and placement: runs and the best value."""
    rows: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    implementations: set[str] = set()
    for m in measurements:
        if m.benchmark != benchmark:
            continue
        implementations.add(m.implementation)
        key = (m.metric, m.unit, _input_label(dict(m.parameters)), placement_label(m))
        rows[key].append(measurement_value(m))
    if not rows:
        return []
    statistic = DISPLAY_STATISTIC.get()
    # An official code's tables name it and its version ("osu, official/OSU 7.2").
    who = "".join(f", {i}" for i in sorted(implementations) if i != HPCEVAL_IMPLEMENTATION)
    t = Table(title=f"{benchmark}{who} ({statistic} of the repetitions)", title_justify="left")
    for column in ("metric", "unit", "input", "placement", "runs", statistic, "best", "worst"):
        left = column in ("metric", "unit", "input", "placement")
        t.add_column(column, justify="left" if left else "right")
    for (metric, unit, label, placement), values in sorted(rows.items()):
        worst = min(values) if HIGHER_IS_BETTER.get(unit, True) else max(values)
        t.add_row(
            metric, unit, label, placement, str(len(values)),
            format_value(summary_value(values, unit)), format_value(best(values, unit)),
            format_value(worst),
        )  # fmt: skip
    return [t]


def generic_headline(measurements: Sequence[Measurement]) -> str:
    """The best value of each metric, in the order the benchmark reported them."""
    by_metric: dict[tuple[str, str], list[float]] = defaultdict(list)
    for m in measurements:
        by_metric[(m.metric, m.unit)].append(m.value)
    return ", ".join(
        f"{metric} {format_value(best(values, unit))} {unit}"
        for (metric, unit), values in by_metric.items()
    )


def application_table(
    measurements: Sequence[Measurement],
    *,
    benchmark: str,
    title: str,
    figures: tuple[tuple[str, str], tuple[str, str]],
    size_keys: Sequence[str],
) -> list[Table]:
    """An application's table: one row per input (`size_keys`) and placement, with the best
    repetition of its two `figures` (metric, column label); the title gets the version the
    measurements carry in parameter `<benchmark>_version`."""
    (metric, label), (second, second_label) = figures
    rows: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    version = ""
    units: dict[str, str] = {}
    for m in measurements:
        if m.benchmark != benchmark:
            continue
        p = m.parameters
        size = " ".join(f"{k}={p[k]}" for k in size_keys if k in p)
        rows[(size, placement_label(m))][m.metric].append(m.value)
        units[m.metric] = m.unit
        version = str(p.get(f"{benchmark}_version", version))
    if not rows:
        return []
    t = Table(title=f"{title} {version} (best of the repetitions)", title_justify="left")
    for column in ("input", "placement", "runs", label, second_label):
        t.add_column(column, justify="left" if column in ("input", "placement") else "right")
    for (size, placement), metrics in sorted(rows.items()):
        firsts, seconds = metrics.get(metric, []), metrics.get(second, [])
        t.add_row(
            size,
            placement,
            str(len(firsts)),
            format_value(max(firsts)) if firsts else "",
            format_value(best(seconds, units[second])) if seconds else "",
        )
    return [t]


def application_headline(measurements: Sequence[Measurement], metric: str, label: str) -> str:
    """`12.3 ns/day (verified)`: the best value of an application's main figure."""
    values = [m.value for m in measurements if m.metric == metric]
    return f"{format_value(max(values))} {label} (verified)" if values else ""
