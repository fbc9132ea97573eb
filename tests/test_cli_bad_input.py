"""Every command against a table of hostile inputs (issue 22): binary files, rich markup,
option-like strings, huge numbers, NaN, unreadable, immutable and read-only paths. Each
ends with exit status 2, exactly one line on stderr, no traceback, and not one file changed
(the database included), nothing created."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import DATA
from .test_cli import hpceval
from .test_faults import PINGPONG_SUITE, immutable, measured, remount_read_only, tmpfs

__all__ = ["measured"]  # the fixture, imported to be found here

BINARY = b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01 name = \x80\x81\n"
MARKUP = "[/bad] [bold red]x[/bold red]"
OPTION = "-oProxyCommand=touch pwned"
HUGE = "99999999999999999999"

DB = ["--db", "{w}/r.db"]
# (test id, argv; "{w}" is the work directory with the files below).
HOSTILE: list[tuple[str, list[str]]] = [
    # run
    ("run-binary-suite", ["run", "-s", "{w}/binary.toml", *DB]),
    ("run-binary-platform", ["run", "-p", "{w}/binary.toml", *DB]),
    ("run-directory-suite", ["run", "-s", "{w}/folder.toml", *DB]),
    ("run-option-platform", ["run", "-p", OPTION, *DB]),
    ("run-markup-suite", ["run", "-s", MARKUP, *DB]),
    ("run-option-host", ["run", "-p", "{w}/option-host.toml", "-s", "smoke", *DB]),
    ("run-markup-host", ["run", "-p", "{w}/markup-host.toml", "-s", "smoke", *DB]),
    ("run-nan-budget", ["run", "-s", "{w}/nan-budget.toml", *DB]),
    ("run-huge-ranks", ["run", "-s", "{w}/huge-ranks.toml", *DB]),
    ("run-huge-size", ["run", "-s", "{w}/huge-size.toml", *DB]),
    ("run-immutable-db", ["run", "-s", "{w}/pingpong.toml", "--db", "{w}/immutable.db"]),
    ("run-read-only-db", ["run", "-s", "{w}/pingpong.toml", "--db", "{w}/ro/r.db"]),
    ("run-binary-db", ["run", "-s", "{w}/pingpong.toml", "--db", "{w}/binary.db"]),
    ("run-option-db", ["run", "-s", "{w}/pingpong.toml", "--db", OPTION + "/x.db"]),
    ("resume-immutable-db", ["run", "--resume", "--db", "{w}/immutable.db"]),
    # study recipes
    ("study-show-binary-recipe", ["study", "show", "{w}/binary.toml"]),
    ("study-run-markup-recipe", ["study", "run", MARKUP, *DB]),
    ("study-run-option-platform", ["study", "run", "magellan", "-p", OPTION, *DB]),
    ("study-report-binary-db", ["study", "report", "magellan", "--db", "{w}/binary.db"]),
    # reading commands
    ("show-huge-run", ["show", "--run", HUGE, *DB]),
    ("show-negative-run", ["show", "--run", "-" + HUGE, *DB]),
    ("show-binary-db", ["show", "--db", "{w}/binary.db"]),
    ("show-markup-db", ["show", "--db", MARKUP]),
    ("runs-binary-db", ["runs", "--db", "{w}/binary.db"]),
    ("runs-option-db", ["runs", "--db", OPTION]),
    ("compare-markup-baseline", ["compare", "--baseline", MARKUP, *DB]),
    ("compare-huge-top", ["compare", "-b", "local", "--top", HUGE, *DB]),
    ("compare-binary-db", ["compare", "-b", "local", "--db", "{w}/binary.db"]),
    ("fit-binary-db", ["fit", "--db", "{w}/binary.db"]),
    ("cost-binary-catalog", ["cost", "--catalog", "{w}/binary.toml", *DB]),
    ("cost-option-instance", ["cost", "--instance", OPTION, *DB]),
    ("recommend-option-workload", ["recommend", "-w", OPTION, *DB]),
    ("recommend-nan-deadline", ["recommend", "-w", "cg.A", "--deadline", "nan", *DB]),
    ("recommend-inf-deadline", ["recommend", "-w", "cg.A", "--deadline", "inf", *DB]),
    ("calibrations-huge-id", ["calibrations", "--id", HUGE, *DB]),
    ("history-markup-platform", ["history", MARKUP, *DB]),
    ("history-binary-db", ["history", "local", "--db", "{w}/binary.db"]),
    ("history-json-read-only", ["history", "local", "--json", "{w}/ro/h.json", *DB]),
    ("check-option-platform", ["check", "--against", "history", "-p", OPTION, *DB]),
    ("check-huge-window", ["check", "--against", "history", "-p", "local", "--window", HUGE,
                           *DB]),
    ("check-nan-alpha", ["check", "--against", "history", "-p", "local", "--alpha", "nan", *DB]),
    # simulate
    ("simulate-nan-tolerance",
     ["simulate", "--bench", "mpibench", "--ranks", "2", "--profile", "ec2-cc-2012-10gbe",
      "--tolerance", "nan", *DB]),
    ("simulate-nan-backbone",
     ["simulate", "--bench", "mpibench", "--ranks", "2", "--backbone-gbps", "nan", *DB]),
    ("simulate-inf-time-limit",
     ["simulate", "--bench", "mpibench", "--ranks", "2", "--time-limit", "inf", *DB]),
    ("simulate-huge-ppn",
     ["simulate", "--bench", "mpibench", "--ranks", "2", "--ppn", HUGE, *DB]),
    ("simulate-option-ranks", ["simulate", "--bench", "mpibench", "--ranks", OPTION, *DB]),
    ("simulate-markup-bench", ["simulate", "--bench", MARKUP, "--ranks", "2", *DB]),
    ("simulate-binary-profile",
     ["simulate", "--bench", "mpibench", "--ranks", "2", "--profile", "{w}/binary.toml",
      *DB]),
    # report
    ("report-out-is-a-file", ["report", "--out", "{w}/binary.toml", *DB]),
    ("report-binary-catalog", ["report", "--out", "{w}/new", "--catalog", "{w}/binary.toml",
                               *DB]),
    ("report-markup-baseline", ["report", "--out", "{w}/new", "-b", MARKUP, *DB]),
    ("report-read-only-out", ["report", "--out", "{w}/ro/report", *DB]),
    # import, export, merge, build
    ("import-binary-output", ["import", "npb", "{w}/binary.toml", "-p", "x", *DB]),
    ("import-option-file", ["import", "npb", "-p", "x", *DB, "--", OPTION]),
    ("import-immutable-db", ["import", "npb", "{w}/cg.txt", "-p", "x", "--db", "{w}/immutable.db"]),
    ("import-read-only-db", ["import", "npb", "{w}/cg.txt", "-p", "x", "--db", "{w}/ro/r.db"]),
    ("export-huge-run", ["db", "export", "{w}/out.json", "--run", HUGE, *DB]),
    ("export-into-read-only", ["db", "export", "{w}/ro/out.json", *DB]),
    ("db-import-binary", ["db", "import", "{w}/binary.toml", *DB]),
    ("db-import-into-immutable", ["db", "import", "{w}/other.db", "--db", "{w}/immutable.db"]),
    ("db-import-into-read-only", ["db", "import", "{w}/other.db", "--db", "{w}/ro/r.db"]),
    ("merge-binary-source", ["db", "merge", "{w}/binary.db", "--into", "{w}/merged.db"]),
    ("build-binary-platform", ["build", "-p", "{w}/binary.toml"]),
    # the official codes' sources (nothing may be built or run)
    ("run-option-source", ["run", "-s", "{w}/pingpong.toml", "--source", OPTION, *DB]),
    ("run-markup-source-kind", ["run", "-s", "{w}/pingpong.toml", "--source", f"{MARKUP}=x", *DB]),
    ("validate-option-source", ["validate", "--source", f"npb-mpi={OPTION}", *DB]),
    ("validate-directory-source", ["validate", "--source", "npb-mpi={w}/folder.toml", *DB]),
    ("validate-binary-source", ["validate", "--source", "npb-mpi={w}/binary.toml", *DB]),
    # the clusters hpceval starts (nothing may start)
    ("cluster-markup-name", ["cluster", "slurm", "status", "--name", MARKUP]),
    ("cluster-option-name", ["cluster", "slurm", "down", "--name", OPTION]),
    ("cluster-huge-nodes", ["cluster", "slurm", "up", "--nodes", HUGE, "--name", "hostile"]),
]  # fmt: skip


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` by relative path, with its content hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def work(measured: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The hostile files beside a real database, an immutable copy of it and a copy on a
    read-only file system."""
    w = tmp_path_factory.mktemp("hostile")
    shutil.copyfile(measured, w / "r.db")
    shutil.copyfile(measured, w / "immutable.db")
    (w / "binary.toml").write_bytes(BINARY)
    (w / "binary.db").write_bytes(BINARY * 100)
    (w / "folder.toml").mkdir()
    (w / "pingpong.toml").write_text(PINGPONG_SUITE)
    mpibench = 'name = "s"\n[[benchmark]]\nname = "mpibench"\npatterns = ["pingpong"]\n'
    (w / "nan-budget.toml").write_text(mpibench + "budget_s = nan\n")
    (w / "huge-ranks.toml").write_text(mpibench + f"ranks = [{HUGE[:18]}]\n")
    (w / "huge-size.toml").write_text(mpibench + f"sizes = [{HUGE[:18]}]\n")
    hostfile = 'name = "h"\nnodes = 1\nhosts = ["{}"]\n[launcher]\nkind = "hostfile"\n'
    (w / "option-host.toml").write_text(hostfile.format(OPTION))
    (w / "markup-host.toml").write_text(hostfile.format(MARKUP))
    shutil.copyfile(DATA / "npb-official" / "npb3.2-mpi-cg.A.2.txt", w / "cg.txt")
    # A database with a run the others do not hold (an import: no benchmark to run).
    hpceval("import", "npb", "cg.txt", "-p", "other", "--db", "other.db", cwd=w, check=True)
    with immutable(w / "immutable.db"), tmpfs(w / "ro", "8m") as ro:
        shutil.copyfile(measured, ro / "r.db")
        remount_read_only(ro)
        yield w


@pytest.mark.parametrize(("name", "argv"), HOSTILE, ids=[name for name, _ in HOSTILE])
def test_hostile_input(work: Path, name: str, argv: list[str]) -> None:
    before = snapshot(work)
    proc = hpceval(*(a.replace("{w}", str(work)) for a in argv), cwd=work)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hpceval: error: "), proc.stderr
    assert snapshot(work) == before, "a file was changed or created"
    assert not (work / "pwned").exists()


def test_every_command_is_in_the_table() -> None:
    from typer.main import get_command

    from hpceval.cli import app

    group = get_command(app)
    commands: set[str] = set()
    stack: list[tuple[str, Callable[..., object]]] = [("", group)]
    while stack:
        prefix, cmd = stack.pop()
        subcommands = getattr(cmd, "commands", None)
        if subcommands:
            stack += [(f"{prefix}{n} ", c) for n, c in subcommands.items()]
        else:
            commands.add(prefix.strip())
    # Commands that take no user input, or none a file or a name could make hostile.
    without_input = {"suites", "platforms", "doctor", "profiles", "netns cleanup", "study list"}
    words = {"db": 2, "import": 2, "cluster": 3, "study": 2}  # words that name a command
    covered = {" ".join(argv[: words.get(argv[0], 1)]) for _, argv in HOSTILE}
    assert commands - without_input <= covered, sorted(commands - without_input - covered)
