"""`hpceval db export | import | merge` on the command line: help, a round trip, bad input in
one line with exit status 2, a conflict with exit status 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from hpceval.cli import app
from hpceval.store import open_store
from hpceval.transfer import export_runs
from tests.test_transfer import CASES, bundles, execute, point
from tests.test_transfer import site as site  # the fixture


def hpceval_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpceval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )


def in_process(*args: str) -> Result:
    """The CLI in this process (a fresh `python -m hpceval` costs seconds of imports)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_db_commands_have_help(tmp_path: Path) -> None:
    listed = hpceval_cli("db", "--help", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for command in ("export", "import", "merge"):
        assert command in listed.stdout
        sub = in_process("db", command, "--help")
        assert sub.exit_code == 0, sub.output
        assert "Usage: hpceval db " + command in sub.stdout


def test_db_export_import_merge_on_the_command_line(site: Path, tmp_path: Path) -> None:
    exported = hpceval_cli("db", "export", "out.jsonl.gz", "--db", str(site), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert lines[0].startswith("exported ") and "site-suite on site-cluster" in lines[0]
    assert lines[-1] == "3 runs: 3 exported → out.jsonl.gz"

    imported = hpceval_cli("db", "import", "out.jsonl.gz", cwd=tmp_path)  # into ./hpceval.db
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.splitlines()[-1] == "3 runs: 3 imported → hpceval.db"
    assert "completed → run 1: 2 cases, 2 executions, 5 measurements" in imported.stdout

    merged = hpceval_cli(
        "db", "merge", str(site), "out.jsonl.gz", "--into", "hpceval.db", cwd=tmp_path
    )
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.splitlines()[-1] == "6 runs: 6 skipped → hpceval.db"
    assert bundles(str(tmp_path / "hpceval.db")) == bundles(str(site))


def test_db_bad_input_is_one_line_and_exit_2(site: Path, tmp_path: Path) -> None:
    missing = in_process("db", "import", str(tmp_path / "nowhere.jsonl"))
    assert missing.exit_code == 2
    assert missing.stderr == f"hpceval: error: {tmp_path / 'nowhere.jsonl'}: no such file\n"
    existing = in_process("db", "export", str(site), "--db", str(site))
    assert existing.exit_code == 2
    assert "already exists; an export never overwrites a file" in existing.stderr
    assert len(existing.stderr.splitlines()) == 1


def test_a_conflict_exits_1(site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    export_runs(str(site), copy, ["3"])
    with open_store(str(copy)) as store:
        execute(store, 1, CASES[0][0], 1.0, {"size=0": [point(1.0)]})
    with open_store(str(site)) as store:
        execute(store, 3, CASES[0][0], 2.0, {"size=0": [point(2.0)]})
    result = in_process("db", "merge", str(copy), "--into", str(site))
    assert result.exit_code == 1
    assert result.stdout.startswith("conflict ")
    assert "left unchanged" in result.stderr
