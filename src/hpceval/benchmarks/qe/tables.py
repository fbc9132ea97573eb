"""How `qe` measurements are shown: the median over the repetitions (robust to a run that
was descheduled), with the FFT and exchange shares from pw.x's own timing report."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_value, placement_label
from hpceval.model import Measurement


def _median(values: Sequence[float]) -> str:
    return format_value(statistics.median(values)) if values else ""


def _share(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.0%}" if values else ""


def qe_headline(measurements: Sequence[Measurement]) -> str:
    """`3.11 s per SCF run, 0.41 s per iteration (median, verified)`."""
    walls = [m.value for m in measurements if m.metric == "wall_time"]
    iterations = [m.value for m in measurements if m.metric == "scf_iteration_time"]
    if not walls:
        return ""
    text = f"{_median(walls)} s per SCF run"
    if iterations:
        text += f", {_median(iterations)} s per iteration"
    return text + " (median, verified)"


def qe_table(measurements: Sequence[Measurement]) -> list[Table]:
    """One row per system and placement: medians of the repetitions."""
    rows: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    version = ""
    for m in measurements:
        if m.benchmark != "qe":
            continue
        p = m.parameters
        key = (f"{p.get('system')} ({p.get('atoms')} atoms)", placement_label(m))
        rows[key][m.metric].append(m.value)
        if m.metric == "wall_time":
            for detail in ("fft_share", "fft_exchange_share", "scf_iterations"):
                value = m.details.get(detail)
                if isinstance(value, (int, float)):
                    rows[key][detail].append(float(value))
        version = str(p.get("qe_version", version))
    if not rows:
        return []
    t = Table(
        title=f"Quantum ESPRESSO pw.x {version} (median of the repetitions)",
        title_justify="left",
    )
    columns = ("input", "placement", "runs", "s per run", "s per SCF iteration", "iterations",
               "FFT share", "FFT exchange share")  # fmt: skip
    for column in columns:
        t.add_column(column, justify="left" if column in ("input", "placement") else "right")
    for (system, placement), metrics in sorted(rows.items()):
        walls = metrics.get("wall_time", [])
        t.add_row(
            system,
            placement,
            str(len(walls)),
            _median(walls),
            _median(metrics.get("scf_iteration_time", [])),
            _median(metrics.get("scf_iterations", [])),
            _share(metrics.get("fft_share", [])),
            _share(metrics.get("fft_exchange_share", [])),
        )
    return [t]
