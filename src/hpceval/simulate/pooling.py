"""Figures pooled over a platform's runs: which runs, their median, and how to say so.

On a shared or virtual host one run's figures move by tens of per cent from round to round
(docs/simulation.md, "Runs pooled"), so the calibration and --validate take each figure as
the median over the runs that measured it, each run counting as the median of its samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from hpceval.errors import UserError


def runs_text(origins: Iterable[str], run_ids: Sequence[int]) -> str:
    """`emulated run 3`, `emulated runs 1, 2, 3` or `6 emulated runs, 1 to 9` (no origin
    given: `run 3`...)."""
    origin = "/".join(sorted(set(origins) - {""}))
    run = f"{origin} run" if origin else "run"
    ids = sorted(run_ids)
    if len(ids) == 1:
        return f"{run} {ids[0]}"
    if len(ids) <= 4:
        return f"{run}s " + ", ".join(map(str, ids))
    return f"{len(ids)} {run}s, {ids[0]} to {ids[-1]}"


def check_pool_runs(pool_runs: int | None) -> None:
    if pool_runs is not None and pool_runs < 1:
        raise UserError(f"runs to pool: {pool_runs} is not a positive count")


def newest(run_ids: Iterable[int], pool_runs: int | None) -> list[int]:
    """The latest `pool_runs` of `run_ids` (None: all), newest first."""
    ordered = sorted(run_ids, reverse=True)
    return ordered if pool_runs is None else ordered[:pool_runs]


def median_over_runs(per_run: Iterable[Sequence[float]]) -> float:
    """The median over runs of each run's median (a run that measured a figure several
    times pools those samples first)."""
    return statistics.median([statistics.median(samples) for samples in per_run])


def range_over_runs(per_run: Iterable[Sequence[float]]) -> tuple[float, float] | None:
    """The lowest and highest of the runs' medians; None with fewer than two runs (no
    run-to-run spread)."""
    medians = [statistics.median(samples) for samples in per_run]
    return (min(medians), max(medians)) if len(medians) >= 2 else None
