"""What every command module of the CLI shares: the error console, the --db option and the
wrapper that turns bad input into one line on stderr and exit status 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from hpceval.errors import UserError


def console(*, stderr: bool = False) -> Console:
    """A console that prints every string as it is: names, case keys, hosts and errors come
    from users and benchmarks, and `[/x]` in one must not be read as markup (nor crash).
    Colour is given with `style=` or rich.text.Text, never inside a string."""
    return Console(stderr=stderr, soft_wrap=True, markup=False)


err = console(stderr=True)


def status_text(status: str) -> Text:
    """An execution status for a table cell: ok in green, anything else in red."""
    return Text(status, "green" if status == "ok" else "red")

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
            err.print(Text.assemble(("hpceval: error:", "bold red"), f" {e}"), highlight=False)
            raise typer.Exit(e.exit_code) from None

    return wrapper
