"""A study's report as Markdown: the study's tables with the user's platforms as columns and
the published figures of the same quantity beside them (labelled with their source), what was
scaled down on each platform, and the study's questions answered from the data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hpceval.store import Store
from hpceval.store.studies import StudyRow
from hpceval.study.answers import _same, answer_all
from hpceval.study.published import PublishedFigure, published
from hpceval.study.recipe import Recipe, Table


def study_runs_by_platform(store: Store, study_id: int) -> dict[str, int]:
    return {r.platform: r.run_id for r in store.study_runs(study_id)}


def render_report(store: Store, study: StudyRow, recipe: Recipe) -> str:
    runs = study_runs_by_platform(store, study.id)
    platforms = list(study.options.get("platforms", runs))
    lines = [
        f"# {recipe.title}: study run {study.id}",
        "",
        f"Reproduces {recipe.source}: {recipe.reference}",
        "",
        f"- platforms: {', '.join(platforms)} (baseline **{study.baseline}**)",
        f"- status: {study.status}"
        + (f", wall time {study.ended - study.started:.0f} s" if study.ended else ""),
        f"- runs: {', '.join(f'{p} = run {r}' for p, r in runs.items()) or 'none'}",
        f"- smallest sizes: {'yes' if study.options.get('smallest') else 'no'}"
        + (
            f", at most {study.options['max_ranks']} ranks"
            if study.options.get("max_ranks")
            else ""
        ),
        "",
        "## What was scaled down or left out",
        "",
    ]
    notes = [(r.platform, n) for r in store.study_runs(study.id) for n in r.notes]
    lines += [f"- {p}: {n}" for p, n in notes] or ["- nothing"]
    missing = [p for p in platforms if p not in runs]
    lines += [f"- {p}: no run (nothing of the study could run there)" for p in missing]
    for table in recipe.table:
        lines += ["", f"## {table.title}", ""]
        lines += table_lines(store, table, runs)
    lines += ["", "## The study's conclusions, answered from your data", ""]
    answers = answer_all(store, recipe.question, runs, study.baseline)
    texts = {q.id: q.text for q in recipe.question}
    for a in answers:
        lines.append(f"- **{texts[a.question]}** ({a.platform}) {a.text}")
    if not answers:
        lines.append("- the recipe asks no question")
    return "\n".join(lines) + "\n"


def table_values(
    store: Store, table: Table, runs: Mapping[str, int]
) -> dict[tuple[str, ...], dict[str, tuple[float, str]]]:
    """Row (the `by` values) -> platform -> (mean, unit)."""
    pooled: dict[tuple[str, ...], dict[str, list[float]]] = {}
    units: dict[str, str] = {}
    sel = table.select
    for platform, run_id in runs.items():
        for stored in store.measurements(run_id, benchmark=sel.benchmark, metric=sel.metric):
            m = stored.measurement
            if not all(_same(m.parameters.get(k), v) for k, v in sel.where.items()):
                continue
            row = tuple(str(m.parameters.get(b, "")) for b in table.by)
            pooled.setdefault(row, {}).setdefault(platform, []).append(m.value)
            units[platform] = m.unit
    return {
        row: {p: (float(np.mean(v)), units[p]) for p, v in by_platform.items()}
        for row, by_platform in pooled.items()
    }


def table_lines(store: Store, table: Table, runs: Mapping[str, int]) -> list[str]:
    values = table_values(store, table, runs)
    figure = published().find_figure(table.published) if table.published else None
    platforms = list(runs)
    pub_rows = figure.rows if figure is not None else []
    header = [*table.by, *platforms, *(f"published: {r.platform}" for r in pub_rows)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in sorted(values, key=_sort_key):
        cells = [*row]
        for p in platforms:
            v = values[row].get(p)
            cells.append(f"{v[0]:.4g} {v[1]}" if v else "—")
        cells += _published_cells(figure, table.by, row)
        lines.append("| " + " | ".join(cells) + " |")
    if not values:
        lines.append("| " + " | ".join(["no data"] + [""] * (len(header) - 1)) + " |")
    if figure is not None:
        lines += ["", f"Published ({figure.source}, {figure.unit}): {figure.cite}."]
        lines += _published_table(figure)
    return lines


def _published_cells(
    figure: PublishedFigure | None, by: Sequence[str], row: Sequence[str]
) -> list[str]:
    """The published values of the row's point (the row's cell that names one), where the
    row has the parameters the figure was published at."""
    if figure is None:
        return []
    label = next((c for c in row if c in figure.points), None)
    if label is None or not figure.matches(list(by), list(row)):
        return ["—"] * len(figure.rows)
    return [f"{figure.value(r.platform, label):.4g} {figure.unit}" for r in figure.rows]


def _published_table(figure: PublishedFigure) -> list[str]:
    lines = [
        "",
        "| platform (published) | " + " | ".join(figure.points) + " |",
        "|" + "---|" * (len(figure.points) + 1),
    ]
    for r in figure.rows:
        lines.append(f"| {r.platform} | " + " | ".join(f"{v:.4g}" for v in r.values) + " |")
    return lines


def _sort_key(row: Sequence[str]) -> tuple[Any, ...]:
    return tuple((0, float(c), "") if _is_number(c) else (1, 0.0, c) for c in row)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
