"""What every command module of the CLI shares: the error console, the --db option and the
wrapper that turns bad input into one line on stderr and exit status 2."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import typing
from collections.abc import Callable
from typing import Annotated, Any, ParamSpec, TypeVar

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

SourceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        help="Sources of an official code, KIND=PATH (a directory or .tar.gz), e.g. "
        "npb-mpi=/opt/src/NPB3.4-MPI; adds to the platform's [sources]. See docs/official.md.",
    ),
]


# The largest integer a database column holds (SQLite and PostgreSQL BIGINT).
LARGEST_INTEGER = 2**63 - 1


def option_names(fn: Callable[..., object]) -> dict[str, str]:
    """Parameter name -> the option as users type it (`run_id` -> `--run`)."""
    names: dict[str, str] = {}
    with contextlib.suppress(Exception):  # an annotation it cannot resolve: the plain name
        for name, hint in typing.get_type_hints(fn, include_extras=True).items():
            for meta in getattr(hint, "__metadata__", ()):
                # typer keeps the first declaration of Option("--run", "-r") as `default`.
                first = getattr(meta, "default", None)
                decls = [first] if isinstance(first, str) and first.startswith("-") else []
                decls += [d for d in getattr(meta, "param_decls", None) or () if d]
                if decls:
                    names[name] = next((d for d in decls if d.startswith("--")), decls[0])
    return names


def check_numbers(options: dict[str, object], names: dict[str, str]) -> None:
    """Every number given on the command line is finite and fits a database integer: typer
    takes `nan`, `inf` and 10**30 as they are, and they would reach SQL or arithmetic."""
    for name, given in options.items():
        for value in given if isinstance(given, list | tuple) else (given,):
            option = names.get(name, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"{option}: {value} is not a number")
            if isinstance(value, int) and abs(value) > LARGEST_INTEGER:
                raise UserError(f"{option}: {value} is out of range")


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Bad input ends the command with one line on stderr and exit status 2."""

    names: dict[str, str] = {}

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            names.update(names or option_names(fn))
            check_numbers(kwargs, names)
            return fn(*args, **kwargs)
        except UserError as e:
            err.print(Text.assemble(("hpceval: error:", "bold red"), f" {e}"), highlight=False)
            raise typer.Exit(e.exit_code) from None

    return wrapper


class OptionGroup:
    """Base of a frozen dataclass whose fields are options several commands take (each field
    annotated with a typer Annotated alias, with its default). A command names the group
    once, as one parameter; `expand_option_groups` gives typer the fields in its place."""


def expand_option_groups(fn: Callable[..., R]) -> Callable[..., R]:
    """`fn` as typer should see it: each parameter annotated with an OptionGroup subclass is
    replaced, at its position, by the group's fields (so --help lists them in that order),
    and the wrapper gathers their values back into the group before calling `fn`."""
    hints = typing.get_type_hints(fn, include_extras=True)
    parameters: list[inspect.Parameter] = []
    groups: dict[str, tuple[type[OptionGroup], list[str]]] = {}
    for parameter in inspect.signature(fn).parameters.values():
        hint = hints.get(parameter.name, parameter.annotation)
        if not (isinstance(hint, type) and issubclass(hint, OptionGroup)):
            parameters.append(parameter.replace(annotation=hint))
            continue
        field_hints = typing.get_type_hints(hint, include_extras=True)
        fields = dataclasses.fields(typing.cast(Any, hint))  # an OptionGroup is a dataclass
        groups[parameter.name] = (hint, [f.name for f in fields])
        parameters += [
            inspect.Parameter(
                f.name, parameter.kind, default=f.default, annotation=field_hints[f.name]
            )
            for f in fields
        ]

    @functools.wraps(fn)
    def wrapper(**options: Any) -> R:
        for name, (group, fields) in groups.items():
            options[name] = group(**{f: options.pop(f) for f in fields})
        return fn(**options)

    wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper
