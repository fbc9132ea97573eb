"""A study's report as Markdown: the study's tables with the user's platforms (and their
projections, labelled) as columns and the published figures of the same quantity beside them
(labelled with their source), the study's figures (SVG and PNG beside the Markdown), its cost
figures with the catalog and its date, what was scaled down on each platform, and the study's
questions answered from the data."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hpceval.analysis.policy import DESCRIPTIONS, StatisticPolicy
from hpceval.store import Store
from hpceval.store.studies import StudyRow
from hpceval.study.answers import answer_all
from hpceval.study.costs import cost_lines
from hpceval.study.recipe import Recipe
from hpceval.study.runner import measured_runs, projected_runs
from hpceval.study.tables import Column, study_columns, table_lines


def render_report(
    store: Store,
    study: StudyRow,
    recipe: Recipe,
    *,
    catalog: str | None = None,
    instance: str | None = None,
    figures_in: Path | None = None,
    stem: str = "study",
    policy: StatisticPolicy | None = None,
) -> str:
    """The Markdown; with `figures_in`, the figures are written there (STEM-NAME.svg/.png)
    and shown in the Markdown by their file names. Table cells and figure points are the
    policy's statistic (default: median) of their measurements' samples."""
    policy = policy or StatisticPolicy()
    runs = measured_runs(store, study.id)
    projections = projected_runs(store, study.id)
    columns = study_columns(runs, projections)
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
        f"- tables and figures: {policy.statistic} ({DESCRIPTIONS[policy.statistic]})",
    ]
    if projections:
        lines.append(
            "- projections (SimGrid SMPI, origin simulated): "
            + ", ".join(f"{p} = runs {', '.join(map(str, r))}" for p, r in projections.items())
        )
    lines += ["", "## What was scaled down or left out", ""]
    notes = [(r.platform, n) for r in store.study_runs(study.id) for n in r.notes]
    lines += [f"- {p}: {n}" for p, n in notes] or ["- nothing"]
    missing = [p for p in platforms if p not in runs]
    lines += [f"- {p}: no run (nothing of the study could run there)" for p in missing]
    for table in recipe.table:
        lines += ["", f"## {table.title}", ""]
        lines += table_lines(store, table, columns, study.baseline, policy)
    if recipe.figure:
        lines += ["", "## Figures", ""]
        lines += _figure_lines(store, recipe, columns, figures_in, stem, policy)
    if recipe.cost is not None:
        lines += ["", "## Cost", ""]
        lines += cost_lines(store, recipe.cost, columns, catalog_name=catalog, instance=instance)
    lines += ["", "## The study's conclusions, answered from your data", ""]
    answers = answer_all(store, recipe.question, runs, study.baseline)
    texts = {q.id: q.text for q in recipe.question}
    for a in answers:
        lines.append(f"- **{texts[a.question]}** ({a.platform}) {a.text}")
    if not answers:
        lines.append("- the recipe asks no question")
    return "\n".join(lines) + "\n"


def _figure_lines(
    store: Store,
    recipe: Recipe,
    columns: Sequence[Column],
    figures_in: Path | None,
    stem: str,
    policy: StatisticPolicy,
) -> list[str]:
    if figures_in is None:
        return ["Figures are written with `--output FILE.md` (SVG and PNG beside it)."]
    from hpceval.study.figures import write_figures

    lines: list[str] = []
    written = write_figures(store, recipe.figure, columns, figures_in, stem, policy)
    for spec, rendered, path in written:
        png = path.with_suffix(".png").name
        lines += [f"![{spec.title}]({path.name})", "", f"*{rendered.caption}* (PNG: {png})", ""]
    drawn = {spec.file for spec, _, _ in written}
    lines += [f"- {f.title}: no data in this run" for f in recipe.figure if f.file not in drawn]
    return lines
