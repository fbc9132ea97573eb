"""Container overhead, paired: each container platform's runs against the baseline's (the
host), run by run in time order, as perf/container_overhead.py pairs them."""

from __future__ import annotations

from itertools import pairwise
from typing import Any, Final

import numpy as np
import pandas as pd

from hpceval.analysis.paired import median_interval, paired_ratios
from hpceval.report.sections import register
from hpceval.report.sections.base import Context, Section, placement_label
from hpceval.report.sections.history import run_values
from hpceval.report.tables import ReportTable
from hpceval.units import HIGHER_IS_BETTER

NOT_A_CONTAINER: Final = (None, "", "none")


def container_platforms(provenance: pd.DataFrame) -> list[str]:
    """The platforms whose runs were measured inside a container (provenance)."""
    if provenance.empty or "container" not in provenance.columns:
        return []
    inside = provenance.loc[~provenance["container"].isin(NOT_A_CONTAINER), "platform"]
    return sorted({str(p) for p in inside if pd.notna(p)})


def interleaved(host_runs: np.ndarray, container_runs: np.ndarray) -> bool:
    """Whether the runs alternate in time: between two pairs (the i-th run of each side) lies
    no other run of either side. Run ids are given in creation (start) order."""
    n = min(len(host_runs), len(container_runs))
    spans = sorted(
        (min(h, c), max(h, c)) for h, c in zip(host_runs[:n], container_runs[:n], strict=True)
    )
    return all(a[1] < b[0] for a, b in pairwise(spans))


def container_section(ctx: Context) -> Section:
    section = Section(
        "container",
        "Container overhead (paired runs)",
        "Each container platform against the baseline (the host): for every point both "
        "measured, the i-th run of the container is paired with the i-th run of the host "
        "(each side's runs in time order; run them alternately, host, container, host, ...), "
        "and the ratio container / host of the pair's values (each run's mean) is taken. The "
        "median of the paired ratios is given with a bootstrap 95 % interval over the pairs: "
        "the load of the moment is shared by the two runs of a pair and divides out, which an "
        "unpaired comparison (the heat map) cannot do. Overhead: the container's loss (+5 %: "
        "5 % worse), whichever direction the unit is better in.",
    )
    containers = container_platforms(ctx.provenance)
    if not containers:
        section.empty = "No platform measured inside a container (docs/containers.md)."
        return section
    host = ctx.baseline
    if host is None or host in containers:
        section.empty = (
            "Container platforms measured, but no host to pair them with: give the host "
            "platform as the report's --baseline."
        )
        return section
    values, key = run_values(ctx.frame)
    values = values.loc[values["platform"].isin([host, *containers])]
    point_key = key[2:]
    rows: list[dict[str, Any]] = []
    not_alternated: set[str] = set()
    for k, g in values.groupby(point_key, observed=True, sort=True, dropna=False):
        record = dict(zip(point_key, k if isinstance(k, tuple) else (k,), strict=True))
        on_host = g.loc[g["platform"] == host].sort_values("run")
        for container in containers:
            inside = g.loc[g["platform"] == container].sort_values("run")
            ratios = paired_ratios(
                inside["value"].to_numpy(dtype=np.float64),
                on_host["value"].to_numpy(dtype=np.float64),
            )
            if len(ratios) == 0:
                continue
            host_runs = on_host["run"].to_numpy(dtype=np.int64)
            container_runs = inside["run"].to_numpy(dtype=np.int64)
            if not interleaved(host_runs, container_runs):
                not_alternated.add(container)
            ratio, low, high = median_interval(ratios)
            higher_is_better = HIGHER_IS_BETTER.get(str(record["unit"]), False)
            rows.append(
                {
                    "container": container,
                    "benchmark": record["benchmark"],
                    "metric": record["metric"],
                    "unit": record["unit"],
                    "point": placement_label(record, point_key[3:]) or "—",
                    "pairs": len(ratios),
                    "host": float(np.median(on_host["value"])),
                    "in_container": float(np.median(inside["value"])),
                    "ratio": ratio,
                    "ci_low": low,
                    "ci_high": high,
                    "overhead": (1 / ratio - 1) if higher_is_better else (ratio - 1),
                }
            )
    if not rows:
        section.empty = (
            f"No point measured both on {host} and in a container platform "
            f"({', '.join(containers)}): nothing to pair."
        )
        return section
    table = pd.DataFrame(rows)
    if (table["pairs"] < 3).any():
        section.notes.append(
            "Points with fewer than 3 pairs have no bootstrap interval: their range is the "
            "smallest and largest paired ratio."
        )
    for container in sorted(not_alternated):
        section.notes.append(
            f"The runs of {container} and {host} were not alternated in time (a pair's two "
            "runs have others between them): the pairs do not share the load of one moment, "
            "and the paired ratio is no better than an unpaired one."
        )
    section.tables.append(
        ReportTable("container_overhead", f"Container / host ({host}), paired by run", table)
    )
    return section


register("container", container_section)
