"""NPB in the terminal: `hpceval show`'s table and `hpceval run`'s headline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table

from hpceval.benchmarks.display import format_value
from hpceval.model import Measurement, Origin
from hpceval.statistics import DISPLAY_STATISTIC, measurement_value, summary_value

# The metric `hpceval validate` stores (hpceval.analysis.validation.RATIO_METRIC).
RATIO_TO_OFFICIAL = "ratio_to_official"


def kernel_tables(
    measurements: Sequence[Measurement], kernels: Sequence[str], benchmark: str = "npb"
) -> list[Table]:
    """NPB kernels: one row per kernel (in the order of `kernels`), class and placement;
    repetitions summarized by the display statistic (each repetition by its own samples,
    then over the repetitions), with the fastest and slowest repetition beside. The title
    names the implementation (hpceval's own, or the official code and its version)."""
    rows: dict[tuple[str, str, int, int, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    # SMPI sampled/folded builds are accepted unverified: their details say "not checked (...)".
    unchecked: dict[tuple[str, str, int, int, int], str] = {}
    simulated = False
    implementations: set[str] = set()
    validation: dict[tuple[str, str, int, int, int], Measurement] = {}
    for m in measurements:
        if m.benchmark != benchmark:
            continue
        implementations.add(m.implementation)
        simulated = simulated or m.origin is Origin.SIMULATED
        p = m.parameters
        key = (
            str(p["kernel"]),
            str(p["class"]),
            int(p.get("ranks", 1)),
            int(p.get("threads_per_rank", 1)),
            int(p.get("nodes", 1)),
        )
        if m.metric == RATIO_TO_OFFICIAL:
            # `hpceval validate`'s figure: shown beside the results it qualifies.
            validation[key] = m
            continue
        rows[key][m.metric].append(measurement_value(m))
        if isinstance(m.details.get("verification"), str):
            unchecked[key] = str(m.details["verification"])
    if not rows:
        return []
    statistic = DISPLAY_STATISTIC.get()
    who = ", ".join(sorted(implementations))
    title = f"NPB kernels, {who} (verified runs; {statistic} of the repetitions)"
    if simulated:
        title = f"NPB kernels, SIMULATED (SimGrid SMPI; {statistic} of the repetitions)"
    t = Table(title=title, title_justify="left")
    for col in ("kernel", "class", "ranks", "threads", "nodes", "runs", f"time s ({statistic})",
                "min–max s", "Mop/s", "Mop/s/process"):  # fmt: skip
        t.add_column(col, justify="left" if col in ("kernel", "class") else "right")
    if validation:
        t.add_column("vs official (95 % CI)")
    if unchecked:
        t.add_column("verified")
        reasons = sorted(set(unchecked.values()))
        t.caption = f"verified no: {'; '.join(reasons)} (SMPI build)"
    order = {k: i for i, k in enumerate(kernels)}
    for key in sorted(rows, key=lambda k: (order.get(k[0], 99), k[0], k[1], k[2], k[3])):
        values = rows[key]
        times = values.get("time", [])
        mops = values.get("mops_total", [])
        per_process = values.get("mops_per_process", [])
        t.add_row(
            key[0].upper(),
            key[1],
            str(key[2]),
            str(key[3]),
            str(key[4]),
            str(len(times)),
            format_value(summary_value(times, "s")) if times else "",
            f"{format_value(min(times))}–{format_value(max(times))}" if times else "",
            format_value(summary_value(mops, "Mop/s")) if mops else "",
            format_value(summary_value(per_process, "Mop/s")) if per_process else "",
            *([validation_cell(validation.get(key))] if validation else []),
            *(["no" if key in unchecked else "yes"] if unchecked else []),
        )
    return [t]


def validation_cell(m: Measurement | None) -> str:
    """ "1.03x NPB 3.4 [0.99, 1.07]": own Mop/s over the official code's (hpceval validate)."""
    if m is None:
        return ""
    reference = str(m.details.get("reference", "official")).removeprefix("official/")
    s = m.statistics
    ci = "" if s is None or s.ci_low is None else f" [{s.ci_low:.2f}, {s.ci_high:.2f}]"
    return f"{m.value:.2f}x {reference}{ci}"


def best_run(ms: Sequence[Measurement]) -> str:
    """The Mop/s and time of a case's repetitions by the display statistic, with the
    repetitions' lowest and highest time (a simulated case's replays spread as the host's
    timing of their computation does)."""
    mops = [measurement_value(m) for m in ms if m.metric == "mops_total"]
    times = [measurement_value(m) for m in ms if m.metric == "time"]
    if not mops or not times:
        return ""
    statistic = DISPLAY_STATISTIC.get()
    spread = (f", {format_value(min(times))}-{format_value(max(times))} s"
              if len(times) > 1 else "")  # fmt: skip
    return (
        f"{format_value(summary_value(mops, 'Mop/s'))} Mop/s, "
        f"{format_value(summary_value(times, 's'))} s ({statistic} of {len(times)}{spread}, "
        "verified)"
    )
