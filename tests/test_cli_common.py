"""cli_common.expand_option_groups: options several commands share, declared once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from typer.testing import CliRunner

from hpceval.cli_common import OptionGroup, expand_option_groups, user_errors

from .test_cli import hpceval

LimitOption = Annotated[float | None, typer.Option("--limit", help="A limit.")]
NameOption = Annotated[str, typer.Option("--name", help="A name.")]


@dataclass(frozen=True)
class Shared(OptionGroup):
    limit: LimitOption = None
    name: NameOption = "x"


def _app() -> tuple[typer.Typer, list[tuple[str, Shared, bool]]]:
    calls: list[tuple[str, Shared, bool]] = []
    app = typer.Typer()

    def first(
        word: Annotated[str, typer.Option("--word")] = "w",
        shared: Shared = Shared(),  # typer never sees it: the group is expanded
        flag: Annotated[bool, typer.Option("--flag")] = False,
    ) -> None:
        calls.append((word, shared, flag))

    def second(shared: Shared, flag: Annotated[bool, typer.Option("--flag")] = False) -> None:
        calls.append(("second", shared, flag))

    app.command("first")(user_errors(expand_option_groups(first)))
    app.command("second")(user_errors(expand_option_groups(second)))
    return app, calls


def test_the_group_is_gathered_from_its_options() -> None:
    app, calls = _app()
    runner = CliRunner()
    done = runner.invoke(app, ["first", "--limit", "2.5", "--name", "n", "--flag"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["second"])
    assert done.exit_code == 0, done.output
    assert calls == [("w", Shared(2.5, "n"), True), ("second", Shared(None, "x"), False)]


def test_help_lists_the_group_in_its_place() -> None:
    app, _ = _app()
    done = CliRunner().invoke(app, ["first", "--help"], env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.output
    listed = re.findall(r"--(word|limit|name|flag)\b", done.output)
    assert listed == ["word", "limit", "name", "flag"]


def test_errors_name_the_group_option() -> None:
    """user_errors' check of numbers names the option as typed, inside a group too."""
    app, calls = _app()
    done = CliRunner().invoke(app, ["second", "--limit", "nan"])
    assert done.exit_code == 2
    assert "--limit: nan is not a number" in done.output
    assert calls == []


def test_cost_and_recommend_list_the_pricing_options_where_they_were(tmp_path: Path) -> None:
    pricing = ["catalog", "instance", "node-tflops", "db", "currency", "origin",
               "allow-mixed-origins"]  # fmt: skip
    expected = {
        "cost": [*pricing, "statistic", "min-repetitions", "csv", "json", "benchmark"],
        "recommend": [
            *("workload", "deadline", *pricing, "allow-oversubscribed"),
            *("statistic", "min-repetitions", "csv", "json"),
        ],
    }
    for command, options in expected.items():
        done = hpceval(command, "--help", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        listed = re.findall(r"^│\s*\*?\s*--([a-z-]+)", done.stdout, flags=re.MULTILINE)
        assert [o for o in listed if o != "help"] == options, command
