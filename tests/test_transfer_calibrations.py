"""Simulated runs keep their SMPI calibration across export, import and merge.

The source database is built through the store API (a measured run, the calibration fitted on
it, simulated runs that name it, and a calibration no exported run names); nothing runs
smpirun. tests/data/transfer/format-v1.jsonl is a real export file written by the hpceval of
before format version 2 (see tests/data/transfer/README.md).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import hpceval
from hpceval.cli import app
from hpceval.errors import UserError
from hpceval.export_file import FORMAT_VERSION
from hpceval.model import Environment, Measurement, Origin, Status
from hpceval.store import CalibrationRow, RunRow, Store, open_store
from hpceval.transfer import export_runs, merge
from tests.test_transfer_refused import lines_of

pytest_plugins = ["tests.postgres_server"]  # postgres_url, empty_database (a real server)

DATA = Path(__file__).parent / "data" / "transfer"
V1_FILE = DATA / "format-v1.jsonl"
V1_CALIBRATION_UID = "0b7e7c1e-9f7a-4f55-8d1c-5f0c3b0a7e11"  # named by its simulated run
CASE = ("mpibench:pingpong:np=2", "mpibench", {"points": ["size=8"]})


def latency(value: float, origin: Origin) -> Measurement:
    return Measurement(
        benchmark="mpibench",
        metric="latency",
        value=value,
        unit="us",
        parameters={"pattern": "pingpong", "size": 8},
        samples=(value, value * 1.01),
        origin=origin,
    )


RESIDUALS = [
    {"path": "intra-node", "size": 8, "measured_us": 1.5, "simulated_us": 1.52,
     "residual": 0.0133, "calibrated": True},
    {"path": "compute", "kernel": "ep", "class": "S", "measured_s": 0.8, "simulated_s": 0.81,
     "residual": 0.0125, "calibrated": True},
]  # fmt: skip


def add_calibration(store: Store, name: str, source_run_ids: list[int]) -> CalibrationRow:
    return store.add_calibration(
        key=f"key-{name}",
        platform_name=name,
        source_kind="platform",
        source=f"runs {source_run_ids} on {name}",
        source_run_ids=source_run_ids,
        simgrid_version="3.35",
        parameters={
            "platform": {"name": name, "nodes": 2, "cores_per_node": 2},
            "smpi_config": {"smpi/lat-factor": "0:1.2;8:1.1", "smpi/bw-factor": "0:0.9"},
            "host_speed": {"speed_flops": 2.5e9, "how": "npb ep class S"},
            "history": [0.31, 0.04],
        },
        residuals=RESIDUALS,
        max_residual=0.0133,
        tolerance=0.05,
        iterations=2,
        converged=True,
    )


def new_run(
    store: Store, suite: str, config: dict[str, Any], origin: Origin, *, pid: int
) -> int:
    run_id = store.create_run(
        suite_name=suite,
        suite_config=config,
        platform_id=store.add_platform("site", {"name": "site", "nodes": ["n1", "n2"]}),
        environment_id=store.add_environment(Environment({"cpu": {"model": "x"}}, "fp-site")),
        launcher="smpi" if origin is Origin.SIMULATED else "local",
        cases=[CASE],
        hpceval_version=hpceval.__version__,
        git_revision=None,
        origin=origin,
        host="login01",
        pid=pid,
    )
    value = 1.52 if origin is Origin.SIMULATED else 1.5
    store.add_measurement(run_id, None, CASE[0], "size=8", latency(value + pid / 1e4, origin))
    store.set_run_status(run_id, Status.COMPLETED, ended=1_700_000_100.0 + pid)
    return run_id


def simulated_run(store: Store, calibration: CalibrationRow, *, pid: int) -> int:
    """A run as `hpceval simulate` writes it: its suite_config names its calibration."""
    config = {
        "simulate": {"bench": "mpibench", "pattern": "pingpong"},
        "calibration": calibration.run_reference(),
        "platform_xml": "<platform/>",
    }
    return new_run(store, "simulate", config, Origin.SIMULATED, pid=pid)


class Site:
    """The source database: what each run and calibration is."""

    def __init__(self, path: Path):
        self.path = path
        with open_store(str(path)) as store:
            self.measured = new_run(store, "measured", {"name": "m"}, Origin.MEASURED, pid=1)
            # Not named by any run: stays behind. Its id (1) differs from the used one's (2).
            self.unused = add_calibration(store, "unused", [])
            self.calibration = add_calibration(store, "site", [self.measured])
            self.simulated = [simulated_run(store, self.calibration, pid=p) for p in (2, 3)]
            self.measured_uid = store.run(self.measured).uid
            self.simulated_uids = [store.run(run_id).uid for run_id in self.simulated]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site.db")


def seeded(database: str) -> str:
    """A destination that already holds calibrations of its own (ids 1 and 2 are taken)."""
    with open_store(database) as store:
        add_calibration(store, "central-a", [])
        add_calibration(store, "central-b", [])
    return database


def runs_by_uid(database: str) -> dict[str, RunRow]:
    with open_store(database, create=False) as store:
        return {run.uid: run for run in store.runs()}


def calibrations_by_uid(database: str) -> dict[str, CalibrationRow]:
    with open_store(database, create=False) as store:
        return {row.uid: row for row in store.calibrations()}


def assert_carried(site: Site, database: str, *, with_source_run: bool = True) -> None:
    """`database` holds the site's calibration once, and its simulated runs name it by its id
    there."""
    original = calibrations_by_uid(str(site.path))[site.calibration.uid]
    here = calibrations_by_uid(database)
    assert site.unused.uid not in here
    copy = here[site.calibration.uid]
    assert len([row for row in here.values() if row.uid == original.uid]) == 1
    # Every column but the local ones: id and the ids of the runs it was fitted on.
    assert {**vars(copy), "id": 0, "source_run_ids": ()} == {
        **vars(original),
        "id": 0,
        "source_run_ids": (),
    }
    runs = runs_by_uid(database)
    if with_source_run:
        assert copy.source_run_ids == (runs[site.measured_uid].id,)
    for uid in site.simulated_uids:
        if uid not in runs:
            continue
        named = runs[uid].suite_config["calibration"]
        assert named["uid"] == original.uid
        assert named["id"] == copy.id
        assert named["max_residual"] == original.max_residual


# --------------------------------------------------------------------------- the file


def test_the_export_file_carries_each_named_calibration_once_before_its_runs(
    site: Site, tmp_path: Path
) -> None:
    exported = tmp_path / "site.jsonl.gz"
    export_runs(str(site.path), exported)
    with gzip.open(exported, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert records[0]["version"] == FORMAT_VERSION == 3
    kinds = [record.get("record") for record in records[1:]]
    assert kinds == ["platform", "environment", "run", "calibration", "run", "run"]
    measured, calibration, *simulated = records[3:]
    assert measured["calibration"] is None
    assert [run["calibration"] for run in simulated] == [site.calibration.uid] * 2
    assert calibration["uid"] == site.calibration.uid
    assert calibration["source_runs"] == [site.measured_uid]  # by uid, not by id
    assert "id" not in calibration and "source_run_ids" not in calibration
    assert calibration["converged"] is True
    assert calibration["parameters"]["smpi_config"]["smpi/lat-factor"] == "0:1.2;8:1.1"


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["site.jsonl", "site.jsonl.gz", "site-copy.db"])
def test_export_then_import_twice_carries_the_calibration_once(
    site: Site, tmp_path: Path, name: str
) -> None:
    exported = tmp_path / name
    export_runs(str(site.path), exported)
    central = seeded(str(tmp_path / "central.db"))
    first = merge([str(exported)], central)
    assert [item.action for item in first] == ["imported"] * 3
    assert "calibration" not in first[0].detail
    assert first[1].detail.endswith(f", calibration {site.calibration.uid[:8]} added as 3")
    assert "calibration" not in first[2].detail  # added once, with the first run naming it
    assert_carried(site, central)
    assert calibrations_by_uid(central)[site.calibration.uid].id == 3  # not the source's 2
    again = merge([str(exported)], central)
    assert [item.action for item in again] == ["skipped"] * 3
    assert len(calibrations_by_uid(central)) == 3
    assert_carried(site, central)


@pytest.fixture
def destination(empty_database: str) -> str:
    """A results database holding calibrations of its own: SQLite, or the test PostgreSQL."""
    return seeded(empty_database)


def test_merge_into_a_database_twice_and_back(
    site: Site, destination: str, tmp_path: Path
) -> None:
    merged = merge([str(site.path)], destination)
    assert [item.action for item in merged] == ["imported"] * 3
    assert_carried(site, destination)
    again = merge([str(site.path)], destination)
    assert [item.action for item in again] == ["skipped"] * 3
    assert len(calibrations_by_uid(destination)) == 3
    # And from there into a database of its own again: the ids follow, the uids stay.
    back = str(tmp_path / "back.db")
    assert [item.action for item in merge([destination], back)] == ["imported"] * 3
    assert_carried(site, back)
    assert calibrations_by_uid(back)[site.calibration.uid].id == 1
    # Into the site itself: nothing is added, nothing conflicts.
    home = merge([back], str(site.path))
    assert [item.action for item in home] == ["skipped"] * 3
    assert len(calibrations_by_uid(str(site.path))) == 2


def test_merge_into_an_export_file_keeps_one_calibration(site: Site, tmp_path: Path) -> None:
    combined = tmp_path / "combined.jsonl"
    merge([str(site.path)], str(combined))
    merge([str(site.path), str(combined)], str(combined))  # an existing file, merged again
    records = lines_of(combined)
    assert [r.get("record") for r in records[1:]].count("calibration") == 1
    central = str(tmp_path / "central.db")
    assert [item.action for item in merge([str(combined)], central)] == ["imported"] * 3
    assert_carried(site, central)


def test_a_run_exported_alone_takes_its_calibration_without_its_source_run(
    site: Site, tmp_path: Path
) -> None:
    exported = tmp_path / "one.jsonl"
    export_runs(str(site.path), exported, [site.simulated_uids[1]])
    central = str(tmp_path / "central.db")
    merge([str(exported)], central)
    assert_carried(site, central, with_source_run=False)
    # The measured run it was fitted on is not here: no id here can name it.
    assert calibrations_by_uid(central)[site.calibration.uid].source_run_ids == ()


# --------------------------------------------------------------------------- format version 1


def test_a_real_format_1_file_still_imports(tmp_path: Path) -> None:
    central = str(tmp_path / "central.db")
    items = merge([str(V1_FILE)], central)
    assert [(item.suite, item.action) for item in items] == [
        ("measured", "imported"),
        ("simulate", "imported"),
    ]
    simulated = next(run for run in runs_by_uid(central).values() if run.suite_name == "simulate")
    # The file does not carry the calibration: its uid stays, the source's id 7 (which would
    # name some other calibration here) does not.
    assert simulated.suite_config["calibration"]["uid"] == V1_CALIBRATION_UID
    assert simulated.suite_config["calibration"]["id"] is None
    assert calibrations_by_uid(central) == {}
    with open_store(central) as store:
        assert [m.measurement.value for m in store.measurements(simulated.id)] == [1.52]
    assert [item.action for item in merge([str(V1_FILE)], central)] == ["skipped"] * 2


def as_format_1(exported: Path, downgraded: Path) -> Path:
    """The same runs as version 1 wrote them: no calibration records, no run "calibration"."""
    records = lines_of(exported)
    records[0]["version"] = 1
    kept = []
    for record in records:
        if record.get("record") == "calibration":
            continue
        record.pop("calibration", None)
        kept.append(record)
    downgraded.write_text("".join(json.dumps(record) + "\n" for record in kept))
    return downgraded


def test_runs_imported_before_their_calibration_are_pointed_at_it(
    site: Site, tmp_path: Path
) -> None:
    exported = tmp_path / "site.jsonl"
    export_runs(str(site.path), exported)
    old = as_format_1(exported, tmp_path / "old.jsonl")
    central = seeded(str(tmp_path / "central.db"))
    assert [item.action for item in merge([str(old)], central)] == ["imported"] * 3
    runs = runs_by_uid(central)
    assert [runs[uid].suite_config["calibration"]["id"] for uid in site.simulated_uids] == [
        None,
        None,
    ]
    # The version 2 file brings the calibration: both runs name it now, neither conflicts.
    assert [item.action for item in merge([str(exported)], central)] == ["skipped"] * 3
    assert_carried(site, central)


# --------------------------------------------------------------------------- bad records


def calibration_line(records: list[Any]) -> dict[str, Any]:
    return next(r for r in records if r.get("record") == "calibration")


def sets(field: str, value: Any) -> Callable[[list[Any]], None]:
    def apply(records: list[Any]) -> None:
        calibration_line(records)[field] = value

    return apply


def drops(field: str) -> Callable[[list[Any]], None]:
    def apply(records: list[Any]) -> None:
        del calibration_line(records)[field]

    return apply


def names(uid: str) -> Callable[[list[Any]], None]:
    def apply(records: list[Any]) -> None:
        records[5]["calibration"] = uid

    return apply


def swapped(records: list[Any]) -> None:
    records[4], records[5] = records[5], records[4]  # the run before its calibration


def duplicated(records: list[Any]) -> None:
    records.insert(5, dict(calibration_line(records)))


BAD_CALIBRATIONS = [
    ("boolean", sets("converged", "yes"), r"line 5: calibration.converged: expected true or false"),
    ("vocabulary", sets("source_kind", "cloud"), r"line 5: calibration.source_kind: 'cloud' is"),
    ("number", sets("max_residual", "2%"), r"line 5: calibration.max_residual: expected a number"),
    ("missing", drops("residuals"), r"line 5: calibration: missing fields \['residuals'\]"),
    ("unknown", sets("id", 2), r"line 5: calibration: unknown fields \['id'\]"),
    ("empty uid", sets("uid", ""), r"line 5: calibration.uid: empty"),
    ("parameters", sets("parameters", [1]), r"line 5: calibration [0-9a-f-]+: parameters: exp"),
    ("runs", sets("source_runs", [3]), r"line 5: calibration [0-9a-f-]+: source_runs: expected a"),
    ("order", swapped, r"line 5: run [0-9a-f-]+: calibration '[0-9a-f-]+' has no record before"),
    ("twice", duplicated, r"line 6: calibration [0-9a-f-]+ appears twice"),
    ("mismatch", names("someone-else"), r"line 6: run [0-9a-f-]+: calibration 'someone-else' is"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("what", "damage", "message"), BAD_CALIBRATIONS, ids=[b[0] for b in BAD_CALIBRATIONS]
)
def test_a_bad_calibration_record_is_one_line_naming_file_line_and_field(
    site: Site,
    tmp_path: Path,
    what: str,
    damage: Callable[[list[Any]], None],
    message: str,
) -> None:
    good = tmp_path / "good.jsonl"
    export_runs(str(site.path), good)
    records = lines_of(good)
    assert records[4]["record"] == "calibration"
    damage(records)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(record) + "\n" for record in records))
    central = tmp_path / "central.db"
    with pytest.raises(UserError, match=message) as caught:
        merge([str(good), str(bad)], str(central))
    assert str(caught.value).startswith(f"{bad}: ")
    assert "\n" not in str(caught.value)
    assert not central.exists()  # checked before anything is written


def test_a_calibration_record_in_a_format_1_file_is_refused(site: Site, tmp_path: Path) -> None:
    exported = tmp_path / "site.jsonl"
    export_runs(str(site.path), exported)
    records = lines_of(exported)
    records[0]["version"] = 1
    for record in records[1:]:
        record.pop("calibration", None)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(record) + "\n" for record in records))
    with pytest.raises(UserError, match=r"line 5: unknown record 'calibration' \(expected"):
        merge([str(bad)], str(tmp_path / "central.db"))


def test_a_newer_format_is_refused(site: Site, tmp_path: Path) -> None:
    exported = tmp_path / "site.jsonl"
    export_runs(str(site.path), exported)
    records = lines_of(exported)
    records[0]["version"] = FORMAT_VERSION + 1
    newer = tmp_path / "newer.jsonl"
    newer.write_text("".join(json.dumps(record) + "\n" for record in records))
    with pytest.raises(UserError, match=r"line 1: format version 4 is newer .* upgrade hpceval"):
        merge([str(newer)], str(tmp_path / "central.db"))


# --------------------------------------------------------------------------- command line


def test_imported_calibrations_show_as_usual(site: Site, tmp_path: Path) -> None:
    runner = CliRunner()
    exported = tmp_path / "site.jsonl"
    central = str(tmp_path / "central.db")
    result = runner.invoke(app, ["db", "export", str(exported), "--db", str(site.path)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["db", "import", str(exported), "--db", central])
    assert result.exit_code == 0, result.output
    assert f"calibration {site.calibration.uid[:8]} added as 1" in result.output
    result = runner.invoke(app, ["calibrations", "--db", central])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if re.search(r"\bsite\b", line)]
    assert len(rows) == 1 and "1.3%" in rows[0] and "yes" in rows[0]
    assert "unused" not in result.output
    result = runner.invoke(app, ["calibrations", "--db", central, "--id", "1"])
    assert result.exit_code == 0, result.output
    assert "lat-factor 0:1.2;8:1.1" in result.output
    assert f"runs [{runs_by_uid(central)[site.measured_uid].id}]" in result.output


def test_a_platform_name_in_markup_shows_as_typed(tmp_path: Path) -> None:
    """A platform's name is the user's: `calibrations` prints it, never renders it."""
    database = str(tmp_path / "markup.db")
    with open_store(database) as store:
        add_calibration(store, "[u]q[/u]", [])
    runner = CliRunner()
    for args in (["calibrations"], ["calibrations", "--id", "1"]):
        result = runner.invoke(app, [*args, "--db", database])
        assert result.exit_code == 0, result.output
        assert "[u]q[/u]" in result.output, result.output
