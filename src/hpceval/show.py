"""Terminal tables of the runs and of a run's measurements (rich)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from rich.table import Table

from hpceval.catalog import BenchmarkCategory, declaration
from hpceval.model import Measurement
from hpceval.store import CaseRow, RunRow

_CATEGORY_ORDER = list(BenchmarkCategory)


def _display_order(benchmark: str) -> tuple[int, str]:
    """Benchmarks by category (communication first, applications last), then by name."""
    declared = declaration(benchmark)
    rank = _CATEGORY_ORDER.index(declared.category) if declared else len(_CATEGORY_ORDER)
    return rank, benchmark


def measurement_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """Each benchmark's own tables of its measurements (a benchmark not installed here gets
    the generic table)."""
    from hpceval.benchmarks import find_benchmark
    from hpceval.benchmarks.display import generic_tables

    by_benchmark: dict[str, list[Measurement]] = defaultdict(list)
    for m in measurements:
        by_benchmark[m.benchmark].append(m)
    tables = []
    for name in sorted(by_benchmark, key=_display_order):
        bench = find_benchmark(name)
        ms = by_benchmark[name]
        tables += bench.tables(ms) if bench is not None else generic_tables(name, ms)
    return tables


def runs_table(
    runs: Iterable[tuple[RunRow, Sequence[CaseRow]]],
    skip_reasons: Callable[[int], Sequence[str]] | None = None,
) -> Table:
    """One row per run: what ran where, how it ended, how many cases are done, failed or
    skipped (with the distinct reasons, from `skip_reasons(run id)`)."""
    t = Table(title="runs", title_justify="left")
    for col in ("id", "suite", "platform", "launcher", "status", "started", "wall", "cases"):
        t.add_column(col, justify="right" if col in ("id", "wall") else "left")
    for r, cases in runs:
        started = dt.datetime.fromtimestamp(r.started).strftime("%Y-%m-%d %H:%M:%S")
        wall = f"{r.ended - r.started:.0f} s" if r.ended is not None else ""
        done = sum(1 for c in cases if c.status == "done")
        failed = sum(1 for c in cases if c.status == "failed")
        summary = f"{done}/{len(cases)} done" + (f", {failed} failed" if failed else "")
        skipped = sum(1 for c in cases if c.status == "skipped")
        if skipped:
            summary += f", {skipped} skipped"
            reasons = sorted(set(skip_reasons(r.id))) if skip_reasons is not None else []
            if reasons:
                summary += f" ({'; '.join(reasons)})"
        t.add_row(
            str(r.id), r.suite_name, r.platform_name, r.launcher, r.status, started, wall, summary
        )
    return t
