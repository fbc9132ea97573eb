"""What every command module of the CLI shares: the error console, the --db option and the
wrapper that turns bad input into one line on stderr and exit status 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console

from hpceval.errors import UserError

err = Console(stderr=True, soft_wrap=True)

P = ParamSpec("P")
R = TypeVar("R")

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="HPCEVAL_DB",
        help="Results database: a SQLite file path or URL, or postgresql://… "
        "\\[default: ./hpceval.db]",
    ),
]


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Bad input ends the command with one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            err.print(f"[bold red]hpceval: error:[/] {e}", highlight=False, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None

    return wrapper
