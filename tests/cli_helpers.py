"""What the CLI tests of the analysis commands and of the report share."""

from __future__ import annotations

import csv
from pathlib import Path

from typer.testing import CliRunner, Result

from hpceval.cli import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def one_line_error(result: Result, fragment: str) -> None:
    """Exit status 2 and one line on the output: "hpceval: error: ..." holding `fragment`."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("hpceval: error:") and fragment in lines[0], result.output
