"""`hpceval study`: the published evaluations as recipes run on the user's platforms
(registered in cli.py as the `study` group; the recipes are hpceval.study)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from hpceval.cli_common import DbOption, console, err, user_errors
from hpceval.cli_policy import StatisticOption, policy_option
from hpceval.errors import UserError

if TYPE_CHECKING:
    from hpceval.study.recipe import Recipe

study_app = typer.Typer(
    name="study",
    help="Reproduce a published evaluation (ec2-cc, magellan, csc, aist) on your platforms.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = console()


@study_app.command("list")
@user_errors
def study_list() -> None:
    """The shipped study recipes."""
    from hpceval.study.recipe import load_recipe, study_names, unavailable

    t = Table(title="study recipes", title_justify="left")
    for col in ("name", "source", "parts", "questions", "waiting for"):
        t.add_column(col, overflow="fold")
    for name in study_names():
        recipe = load_recipe(name).config
        missing = unavailable(recipe)
        t.add_row(
            name,
            recipe.source,
            str(len(recipe.part)),
            str(len(recipe.question)),
            "; ".join(f"{p}: {', '.join(w)}" for p, w in missing.items()),
        )
    out.print(t)


@study_app.command("show")
@user_errors
def study_show(name: Annotated[str, typer.Argument(help="Recipe name or TOML file.")]) -> None:
    """A recipe: its parts, what it asks, and what this hpceval cannot run of it yet."""
    from hpceval.study.recipe import load_recipe, unavailable

    recipe = load_recipe(name).config
    out.print(f"{recipe.title}\n{recipe.reference}\n{recipe.description}", highlight=False)
    missing = unavailable(recipe)
    for part in recipe.part:
        out.print(f"\npart {part.name}: {part.title}", highlight=False)
        for entry in part.benchmark:
            options = ", ".join(
                f"{k}={v}" for k, v in entry.items() if k not in ("name", "smallest")
            )
            out.print(f"  {entry['name']}: {options}", highlight=False)
        for why in missing.get(part.name, []):
            out.print(f"  not runnable yet: {why}", style="yellow", highlight=False)
    if recipe.extend:
        from hpceval.study.extend import describe

        out.print("\nprojections (SimGrid SMPI on each platform's calibration):", highlight=False)
        for ext in recipe.extend:
            small = f"; --smallest: {describe(ext.smallest)}" if ext.smallest else ""
            out.print(f"  {ext.name}: {describe(ext)}{small}", highlight=False)
    if recipe.cost is not None:
        priced = f", each node priced as {recipe.cost.instance}" if recipe.cost.instance else ""
        out.print(f"\ncost: catalog {recipe.cost.catalog}{priced}", highlight=False)
    out.print("\nquestions:", highlight=False)
    for q in recipe.question:
        out.print(f"  {q.id}: {q.text}", highlight=False)


@study_app.command("run")
@user_errors
def study_run(
    name: Annotated[str, typer.Argument(help="Recipe name or TOML file.")],
    platform: Annotated[
        list[str] | None,
        typer.Option("--platform", "-p", help="A platform to run on (repeat the option)."),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="The platform the others are compared with.")
    ] = None,
    smallest: Annotated[
        bool, typer.Option("--smallest", help="The recipe's smallest sizes: a time-boxed run.")
    ] = False,
    max_ranks: Annotated[
        int | None, typer.Option("--max-ranks", min=1, help="Run no case on more ranks.")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue this recipe's latest unfinished study.")
    ] = False,
    source: Annotated[
        list[str] | None,
        typer.Option(
            "--source",
            help="BENCHMARK=PATH: the source tree of a benchmark the recipe builds from the "
            "user's code (milc=/path/to/milc_qcd); repeat the option.",
        ),
    ] = None,
    extend: Annotated[
        bool,
        typer.Option(
            "--extend/--no-extend",
            help="Project the recipe's curves beyond the machines at hand (SimGrid SMPI).",
        ),
    ] = True,
    accept_curve: Annotated[
        bool,
        typer.Option(
            "--accept-curve",
            help="Projections: calibrate on a PingPong curve simulate's input checks refuse "
            "(its points flagged in the projection's note).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Run a study on the platforms named (the baseline first), scaled to what they have,
    then project its curves beyond them on each platform's calibration (labelled)."""
    from hpceval.campaign import Interrupted
    from hpceval.cli_run import RichReporter
    from hpceval.store import open_store
    from hpceval.study.recipe import load_recipe
    from hpceval.study.runner import resume_study, run_study

    recipe = load_recipe(name)
    sources = parse_sources(source or [], recipe.config)

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False)

    started = time.monotonic()
    try:
        if resume:
            store = open_store(db, create=False)
            outcome = resume_study(store, recipe, reporter=lambda: RichReporter(err), say=say)
        else:
            platforms = platform or ["local"]
            base = baseline or platforms[0]
            if base not in platforms:
                raise UserError(f"--baseline {base!r} is not one of the --platform options")
            store = open_store(db)
            outcome = run_study(
                store,
                recipe,
                platforms,
                base,
                smallest=smallest,
                max_ranks=max_ranks,
                reporter=lambda: RichReporter(err),
                say=say,
                extend=extend,
                sources=sources,
                accept_curve=accept_curve,
            )
    except Interrupted as e:
        err.print(f"study {e}; continue with: hpceval study run {name} --resume", style="yellow")
        raise typer.Exit(128 + e.signum) from None
    failed = sum(len(r.failed) for r in outcome.results.values())
    out.print(
        f"study {outcome.study_id}: runs {', '.join(f'{p}={r}' for p, r in outcome.runs.items())}"
        f" in {time.monotonic() - started:.0f} s; {failed} failed cases; the report: "
        f"hpceval study report {recipe.config.name} --study {outcome.study_id}",
        highlight=False,
    )
    if failed:
        raise typer.Exit(1)


def parse_sources(values: list[str], recipe: Recipe) -> dict[str, str]:
    """`--source BENCHMARK=PATH` for benchmarks of the recipe built from the user's sources
    (an official-code kind of the same name, hpceval.sources: milc); the study adds them to
    each platform's `[sources]`."""
    from hpceval.sources import SOURCE_KINDS

    names = {str(e["name"]) for p in recipe.part for e in p.benchmark}
    sources: dict[str, str] = {}
    for value in values:
        bench, sep, path = value.partition("=")
        if not sep or not bench or not path:
            raise UserError(f"--source: {value!r} is not BENCHMARK=PATH")
        if bench not in names:
            raise UserError(f"--source: the {recipe.name} study runs no benchmark {bench!r}")
        if bench not in SOURCE_KINDS:
            raise UserError(f"--source: {bench} takes no source tree")
        given = Path(path).expanduser()
        if not (given.is_dir() or (given.is_file() and given.name.endswith((".tar.gz", ".tgz")))):
            raise UserError(f"--source: {path} is not a directory or .tar.gz (the {bench} sources)")
        sources[bench] = path
    return sources


@study_app.command("report")
@user_errors
def study_report(
    name: Annotated[str, typer.Argument(help="Recipe name or TOML file.")],
    study: Annotated[
        int | None, typer.Option("--study", help="The study run (default: the latest).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the Markdown here (and the figures beside it)."),
    ] = None,
    catalog: Annotated[
        str | None,
        typer.Option(
            "--catalog",
            help="Price catalog of the cost section: a shipped name (ec2-cc-2012, csc-2016) "
            "or a TOML file \\[default: the study's].",
        ),
    ] = None,
    instance: Annotated[
        str | None,
        typer.Option(
            "--instance", help="The catalog entry a node is priced as \\[default: the study's]."
        ),
    ] = None,
    statistic: StatisticOption = None,
    db: DbOption = None,
) -> None:
    """The study's tables with your platforms (and projections, labelled), the published
    figures beside them, its figures, its cost figures, and its conclusions as questions
    answered from your data (Markdown)."""
    from hpceval.store import open_store
    from hpceval.study.recipe import load_recipe
    from hpceval.study.report import render_report

    recipe = load_recipe(name).config
    store = open_store(db, create=False)
    if study is None:
        rows = store.studies(recipe.name)
        if not rows:
            raise UserError(f"{store.url}: no study run of {recipe.name!r}")
        row = rows[0]
    else:
        row = store.study(study)
        if row.name != recipe.name:
            raise UserError(f"study run {study} is a {row.name!r} study, not {recipe.name!r}")
    if catalog is not None and recipe.cost is None:
        raise UserError(f"--catalog: the {recipe.name} study has no cost section")
    figures_in = None if output is None else output.resolve().parent
    try:
        text = render_report(
            store,
            row,
            recipe,
            catalog=catalog,
            instance=instance,
            figures_in=figures_in,
            stem=output.stem if output is not None else "study",
            policy=policy_option(statistic),
        )
    except OSError as e:
        raise UserError(f"cannot write a figure: {e.strerror}", source=str(figures_in)) from None
    if output is None:
        out.print(text, highlight=False, markup=False)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as e:
            raise UserError(f"cannot write: {e.strerror}", source=str(output)) from None
        err.print(f"wrote {output}", highlight=False)
