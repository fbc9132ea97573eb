"""Export files refused before anything is imported: damaged, foreign, unreadable, cut; export
refusals; runs selected by id, uid or uid prefix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpceval.errors import UserError
from hpceval.store import open_store
from hpceval.transfer import export_runs, merge
from tests.test_transfer import site as site  # the fixture


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def edit_run(edit: Callable[[dict[str, Any]], None]) -> Callable[[list[Any]], None]:
    def apply(records: list[Any]) -> None:
        edit(records[3])

    return apply


def set_path(path: str, value: Any) -> Callable[[list[Any]], None]:
    """Set records[i].a.b... (integers index lists) to `value`."""

    def apply(records: list[Any]) -> None:
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
        target = records
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return apply


BAD_FILES: list[tuple[str, Callable[[list[Any]], None], str]] = [
    ("not ours", set_path("0.format", "pyperf"), r"line 1: not an hpceval export file"),
    ("newer", set_path("0.version", 4), r"line 1: format version 4 is newer .* upgrade hpceval"),
    ("older", set_path("0.version", 0), r"line 1: unknown format version 0"),
    ("header key", set_path("0.compressed", True), r"line 1: header: unknown fields"),
    ("truncated", lambda r: r.pop(), r"header announces 3 runs but the file holds 2 \(truncated"),
    ("record", set_path("1.record", "plat"), r"line 2: unknown record 'plat'"),
    (
        "hash",
        set_path("1.config.nodes", ["n01"]),
        r"line 2: platform 'site-cluster': config_hash does not match its config",
    ),
    ("field", set_path("3.run.owner", "me"), r"line 4: run: unknown fields \['owner'\]"),
    ("missing", edit_run(lambda r: r["run"].pop("pid")), r"line 4: run: missing fields \['pid'\]"),
    ("type", set_path("3.run.pid", "42"), r"line 4: run.pid: expected an integer, not '42'"),
    ("status", set_path("3.run.status", "done"), r"line 4: run.status: 'done' is not one of"),
    (
        "unit",
        set_path("3.measurements.0.unit", "GB"),
        r"line 4: run [0-9a-f-]+: measurements\[0\]: unit 'GB' is not in hpceval's vocabulary",
    ),
    (
        "samples",
        set_path("3.measurements.1.samples", ["fast"]),
        r"line 4: run [0-9a-f-]+: measurements\[1\]\.samples: expected a list of numbers, "
        r"found 'fast'",
    ),
    (
        "index",
        set_path("3.measurements.2.execution", 5),
        r"line 4: run [0-9a-f-]+: measurements\[2\].execution: 5 is not an execution's index",
    ),
    (
        "case",
        set_path("3.executions.0.case_key", "mpibench:bcast"),
        r"line 4: run [0-9a-f-]+: executions\[0\]: case 'mpibench:bcast' is not planned",
    ),
    (
        "reference",
        set_path("3.environment", "elsewhere"),
        r"line 4: run [0-9a-f-]+: environment 'elsewhere' has no record before it",
    ),
    ("twice", lambda r: r.append(r[3]), r"line 7: run [0-9a-f-]+ appears twice"),
    ("null", set_path("3.run.started", None), r"line 4: run.started: must not be null"),
    ("array", lambda r: r.insert(2, [1, 2]), r"line 3: expected a JSON object"),
]


@pytest.mark.parametrize(("what", "damage", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_damaged_or_foreign_file_is_refused_before_anything_is_imported(
    site: Path,
    tmp_path: Path,
    what: str,
    damage: Callable[[list[Any]], None],
    message: str,
) -> None:
    good = tmp_path / "good.jsonl"
    export_runs(str(site), good)
    records = lines_of(good)
    damage(records)
    bad = write_lines(tmp_path / "bad.jsonl", records)
    central = tmp_path / "central.db"
    with pytest.raises(UserError, match=message) as caught:
        merge([str(good), str(bad)], str(central))
    assert str(caught.value).startswith(f"{bad}: ")
    assert "\n" not in str(caught.value)
    assert not central.exists()  # every source is checked before the destination is opened


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty; not an hpceval export file"),
        (b"{not json\n", "line 1: not JSON"),
        (b'{"format": "hpceval-results", "version": NaN}\n', "line 1: not JSON"),
        (b"\xff\xfe\n", "line 1: not UTF-8"),
    ],
)
def test_unreadable_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    with pytest.raises(UserError, match=message):
        merge([str(bad)], str(tmp_path / "central.db"))


def test_a_cut_gzip_file_is_refused(site: Path, tmp_path: Path) -> None:
    exported = tmp_path / "site.jsonl.gz"
    export_runs(str(site), exported)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(exported.read_bytes()[:-40])
    with pytest.raises(UserError, match=r"cut\.jsonl\.gz: line \d+: unreadable"):
        merge([str(cut)], str(tmp_path / "central.db"))


def test_export_refusals(site: Path, tmp_path: Path) -> None:
    existing = tmp_path / "exists.jsonl"
    existing.write_text("precious\n")
    with pytest.raises(UserError, match="already exists; an export never overwrites"):
        export_runs(str(site), existing)
    assert existing.read_text() == "precious\n"
    with pytest.raises(UserError, match="no run with id or uid '9'"):
        export_runs(str(site), tmp_path / "x.jsonl", ["1", "9"])
    assert not (tmp_path / "x.jsonl").exists()
    with pytest.raises(UserError, match="no such results database"):
        export_runs(str(tmp_path / "none.db"), tmp_path / "x.jsonl")
    open_store(str(tmp_path / "empty.db")).close()
    with pytest.raises(UserError, match="holds no runs to export"):
        export_runs(str(tmp_path / "empty.db"), tmp_path / "x.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "exists.jsonl", "site.db"]


def test_runs_are_selected_by_id_uid_or_uid_prefix(site: Path) -> None:
    with open_store(str(site)) as store:
        uids = {run.id: run.uid for run in store.runs()}
        assert store.select_runs() == [1, 2, 3]
        assert store.select_runs(["3", uids[1], uids[2][:8], "1"]) == [3, 1, 2]
        with pytest.raises(UserError, match="no run with id or uid 'abc'"):
            store.select_runs(["abc"])  # a prefix shorter than 8 characters is no name
