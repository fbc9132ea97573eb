"""`hpceval db`: export, import and merge results (registered in cli.py as the `db` group).

Self-contained (cli.py imports this module, so it cannot import cli.py back).
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from hpceval.cli_common import DbOption, console, err, user_errors
from hpceval.store import ImportAction, database_url, shown_url
from hpceval.transfer import Transferred, export_runs, merge

db_app = typer.Typer(
    name="db",
    help="Move results between databases and files: export, import, merge.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = console()


def _print_run(item: Transferred) -> None:
    """One line per run, as soon as it is done: action, run, where it went, what it held."""
    started = datetime.datetime.fromtimestamp(item.started).strftime("%Y-%m-%d %H:%M")
    colour = {
        ImportAction.IMPORTED.value: "green",
        ImportAction.UPDATED.value: "cyan",
        ImportAction.CONFLICT.value: "red",
        "exported": "green",
    }.get(item.action, "yellow")
    where = f" → run {item.run_id}" if item.run_id is not None else ""
    out.print(
        Text.assemble(
            (f"{item.action:<8}", colour),
            f" {item.uid[:8]} {item.suite} on {item.platform}, "
            f"{started}, {item.status}{where}: {item.detail}",
        ),
        highlight=False,
    )


def _shown(target: str | None) -> str:
    """A destination as it may be printed: a URL without its password."""
    if target is None:
        return "hpceval.db"
    if "://" not in target:
        return target
    return shown_url(database_url(target))


def _summary(items: Sequence[Transferred], destination: str) -> None:
    counts = Counter(item.action for item in items)
    order = ["exported", *(action.value for action in ImportAction)]
    parts = [f"{counts[action]} {action}" for action in order if counts[action]]
    runs = "1 run" if len(items) == 1 else f"{len(items)} runs"
    out.print(f"{runs}: {', '.join(parts) or 'none'} → {destination}", highlight=False)
    if counts[ImportAction.CONFLICT.value]:
        err.print(
            "runs in conflict were left unchanged: the destination holds another copy "
            "of them that the source does not contain (see each line)",
            style="red",
            highlight=False,
        )
        raise typer.Exit(1)


@db_app.command("export")
@user_errors
def export_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="New file to write: FILE.jsonl (or .jsonl.gz, gzip-compressed) is a portable "
            "export file; FILE.db/.sqlite a SQLite results database. Never overwritten.",
            dir_okay=False,
        ),
    ],
    db: DbOption = None,
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            "-r",
            help="A run to export, by id or uid (or a uid's first 8+ characters); repeat for "
            "several (default: every run).",
        ),
    ] = None,
) -> None:
    """Export runs to a file (to carry them elsewhere).

    Each run goes with everything attached: platform, provenance, planned cases, executions
    and measurements with their raw samples, and a simulated run with its SMPI calibration.
    """
    items = export_runs(db, file, run, on_run=_print_run)
    _summary(items, str(file))


@db_app.command("import")
@user_errors
def import_command(
    file: Annotated[
        str,
        typer.Argument(
            help="An export file (hpceval db export), or a SQLite results database.",
        ),
    ],
    db: DbOption = None,
) -> None:
    """Import the runs of an export file into a results database.

    A run already there is not duplicated (runs are identified by their uid); a later state of
    it (resumed since) completes it. Each run is imported in one transaction.
    """
    items = merge([file], db, on_run=_print_run)
    _summary(items, _shown(db))


@db_app.command("merge")
@user_errors
def merge_command(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Results to merge: SQLite files, export files, postgresql://… URLs.",
            show_default=False,
        ),
    ],
    into: Annotated[
        str,
        typer.Option(
            "--into",
            help="Destination: a database (postgresql://…, or a SQLite file, created if "
            "missing) or an export file (an existing one, or a new name ending in .jsonl, "
            ".json or .gz).",
            show_default=False,
        ),
    ],
) -> None:
    """Merge results databases and export files into one.

    Provenance is kept; runs already in the destination are not duplicated (runs are identified
    by their uid); each run is imported in one transaction.
    """
    items = merge(sources, into, on_run=_print_run)
    _summary(items, _shown(into))
