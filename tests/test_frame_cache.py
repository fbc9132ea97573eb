"""The frame cache (hpceval.analysis.loading.FrameCache, `load_frame(..., cache=True)`).

A cached frame must be the frame a fresh SQL load gives, and a stale one must never come back:
a new measurement, an import (merge) of another database's runs, other filters each make a
new entry; a corrupt entry or an entry of another state is a miss, never an error; the cache
is bounded and can be turned off. On SQLite and on a real PostgreSQL server.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from hpceval.analysis import loading as loading_module
from hpceval.analysis.loading import (
    FRAME_CACHE_ENTRIES,
    FrameCache,
    database_state,
    load_frame,
)
from hpceval.cli import app
from hpceval.store import Store, open_store
from hpceval.transfer import merge
from tests.test_frame_bulk import assert_same_frame, fill_mixed, measurement

pytest_plugins = ["tests.postgres_server"]  # postgres_url, empty_database (a real server)


@pytest.fixture
def database(empty_database: str) -> str:
    return empty_database


@pytest.fixture
def store(database: str) -> Iterator[Store]:
    with open_store(database) as opened:
        fill_mixed(opened)
        yield opened


def cache_files() -> list[Path]:
    root = Path(os.environ["HPCEVAL_CACHE"]) / "frames"
    return sorted(root.glob("frame-*.pickle")) if root.is_dir() else []


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HPCEVAL_FRAME_CACHE", raising=False)


def no_sql_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, a frame can only come from the cache."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the measurements were read from the database")

    monkeypatch.setattr(Store, "measurement_columns", refuse)


def test_cached_frame_is_the_fresh_frame(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = load_frame(store)
    first = load_frame(store, cache=True)  # a miss: loaded, then written
    assert len(cache_files()) == 1
    assert_same_frame(first, fresh)
    no_sql_load(monkeypatch)
    second = load_frame(store, cache=True)  # a hit
    assert_same_frame(second, fresh)
    pd.testing.assert_frame_equal(
        second.drop(columns="samples"), fresh.drop(columns="samples"), check_exact=True
    )
    assert list(second.dtypes) == list(fresh.dtypes)


def test_a_new_measurement_invalidates(store: Store) -> None:
    load_frame(store, cache=True)
    run = store.runs()[0].id
    store.add_measurement(run, None, "p2p", "point",
                          measurement("mpibench", "latency", 9.0, "us", (8.0, 10.0),
                                      pattern="pingpong", size=4096))  # fmt: skip
    cached = load_frame(store, cache=True)
    assert_same_frame(cached, load_frame(store))
    assert 9.0 in set(cached["value"])
    assert len(cache_files()) == 2


def test_an_import_invalidates(store: Store, tmp_path: Path) -> None:
    before = load_frame(store, cache=True)
    other = tmp_path / "other.db"
    with open_store(str(other)) as source:
        fill_mixed(source)
    merge([str(other)], store.url if "://" in store.url else str(tmp_path / "results.db"))
    cached = load_frame(store, cache=True)
    fresh = load_frame(store)
    assert len(fresh) == 2 * len(before)
    assert_same_frame(cached, fresh)


def test_filters_are_part_of_the_key(store: Store) -> None:
    whole = load_frame(store, cache=True)
    npb = load_frame(store, benchmark="npb", cache=True)
    bare = load_frame(store, platforms=["bare"], cache=True)
    first_run = load_frame(store, runs=[store.runs()[0].id], cache=True)
    assert len(cache_files()) == 4
    assert_same_frame(npb, load_frame(store, benchmark="npb"))
    assert_same_frame(bare, load_frame(store, platforms=["bare"]))
    assert_same_frame(first_run, load_frame(store, runs=[store.runs()[0].id]))
    assert len(npb) < len(whole) and len(bare) < len(whole)
    assert_same_frame(load_frame(store, cache=True), whole)  # each entry its own


@pytest.mark.parametrize(
    "damage",
    [b"", b"not a pickle at all", pickle.dumps({"state": "another"}), pickle.dumps([1, 2])],
    ids=["empty", "garbage", "other state", "not an entry"],
)
def test_a_corrupt_entry_is_a_miss(store: Store, damage: bytes) -> None:
    load_frame(store, cache=True)
    (entry,) = cache_files()
    entry.write_bytes(damage)
    assert_same_frame(load_frame(store, cache=True), load_frame(store))
    # Rewritten (or removed and rewritten): the next load is a hit again.
    assert cache_files() == [entry] and entry.read_bytes() != damage


def test_a_truncated_entry_is_a_miss(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    load_frame(store, cache=True)
    (entry,) = cache_files()
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])
    assert_same_frame(load_frame(store, cache=True), load_frame(store))
    no_sql_load(monkeypatch)
    load_frame(store, cache=True)


def test_an_entry_of_another_state_is_ignored(store: Store) -> None:
    """A file at the right name whose recorded state differs (a hash collision, a copied
    cache) is not taken."""
    load_frame(store, cache=True)
    (entry,) = cache_files()
    with entry.open("rb") as fh:
        content = pickle.load(fh)
    content["frame"] = content["frame"].iloc[:0]  # a frame of another content...
    content["lengths"] = content["lengths"][:0]
    content["flat"] = content["flat"][:0]
    content["state"] = {**content["state"], "measurements": [0, 0]}  # ...and state
    entry.write_bytes(pickle.dumps(content, protocol=5))
    assert_same_frame(load_frame(store, cache=True), load_frame(store))


def test_the_state_names_the_database(store: Store, tmp_path: Path) -> None:
    state = database_state(store, {})
    assert state["measurements"][0] == len(load_frame(store))
    with open_store(str(tmp_path / "twin.db")) as twin:
        fill_mixed(twin)
        assert database_state(twin, {}) != state


def test_the_cache_is_bounded(store: Store) -> None:
    platforms = ["bare", "sim", "vm é\x1f|"]
    for i in range(FRAME_CACHE_ENTRIES + 3):
        load_frame(store, platforms=platforms[: 1 + i % 3], metric=None if i < 3 else "time",
                   benchmark=None if i < 6 else "npb", cache=True)  # fmt: skip
    assert len(cache_files()) == FRAME_CACHE_ENTRIES


def test_the_cache_can_be_turned_off(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCEVAL_FRAME_CACHE", "off")
    load_frame(store, cache=True)
    assert cache_files() == []


def test_an_unwritable_cache_is_no_error(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("HPCEVAL_CACHE", str(blocker))  # cache root below a plain file
    assert_same_frame(load_frame(store, cache=True), load_frame(store))


def test_commands_share_the_cache_and_no_cache_bypasses_it(tmp_path: Path) -> None:
    db = str(tmp_path / "results.db")
    with open_store(db) as opened:
        fill_mixed(opened, official=False)  # two NPB versions: compare refuses them
    runner = CliRunner()
    compare = ["compare", "--baseline", "bare", "--allow-mixed-origins", "--db", db]
    outcome = runner.invoke(app, [*compare, "--no-cache"])
    assert outcome.exit_code == 0, outcome.output
    assert cache_files() == []
    outcome = runner.invoke(app, compare)
    assert outcome.exit_code == 0, outcome.output
    (entry,) = cache_files()
    written = entry.stat().st_mtime_ns
    outcome = runner.invoke(app, ["report", "--db", db, "--out", str(tmp_path / "report"),
                                  "--baseline", "bare"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert cache_files() == [entry]  # the frame compare cached, not a second entry
    assert entry.stat().st_mtime_ns >= written


def test_default_root_is_under_the_cache_root(tmp_path: Path) -> None:
    assert FrameCache().root == tmp_path / "cache" / "frames"
    assert loading_module.frame_cache_enabled()
