"""Loading the measurement frame of a store: one bulk read (`Store.measurement_columns`),
decoded column-wise (`frame_from_columns`), and kept in the frame cache on disk when asked."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import pandas as pd
import sqlalchemy as sa

import hpceval
from hpceval.analysis.frame import FloatArray, IntArray, flatten_samples, frame_from_columns
from hpceval.analysis.samples import SamplesArray
from hpceval.store import Store


def load_frame(
    store: Store,
    *,
    runs: Sequence[int] | None = None,
    platforms: Sequence[str] | None = None,
    benchmark: str | None = None,
    metric: str | None = None,
    cache: bool = False,
) -> pd.DataFrame:
    """Every measurement of the store (or of the given runs / platforms / benchmark / metric).

    The platform of a row is its run's platform name; its origin is the measurement's own.
    Rows come run by run (in run id order), each run's in the order they were stored. One
    query (`Store.measurement_columns`, filters in SQL) and column-wise decoding: the frame
    is the one `build_frame` makes of the same Measurements, without building them.

    `cache`: keep the frame in the frame cache (see `FrameCache`) and take it from there
    when the database has not changed since (unless $HPCEVAL_FRAME_CACHE is off).
    """
    if cache and frame_cache_enabled():
        filters = {
            "runs": sorted(set(runs)) if runs is not None else None,
            "platforms": sorted(set(platforms)) if platforms is not None else None,
            "benchmark": benchmark,
            "metric": metric,
        }
        return FrameCache().load(
            store,
            filters,
            lambda: load_frame(
                store, runs=runs, platforms=platforms, benchmark=benchmark, metric=metric
            ),
        )
    with paused_garbage_collection():
        columns = store.measurement_columns(
            run_ids=runs, platform_names=platforms, benchmark=benchmark, metric=metric
        )
        return frame_from_columns(columns)


@contextlib.contextmanager
def paused_garbage_collection() -> Iterator[None]:
    """No cyclic garbage collection inside: bulk decoding makes millions of lists and rows
    that hold no reference cycles, and the collector's passes over them (triggered by the
    allocations alone) would double the time taken."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# --------------------------------------------------------------------------- frame cache

# Bump when the frame's layout or the cache file's layout changes: old entries then miss.
FRAME_CACHE_FORMAT: Final = 2  # 2: a run's Java and C rows of one series told apart
# Entries kept (the most recently used); each is about 150 bytes per measurement.
FRAME_CACHE_ENTRIES: Final = 4
FRAME_CACHE_ENV: Final = "HPCEVAL_FRAME_CACHE"


def frame_cache_enabled() -> bool:
    """False when $HPCEVAL_FRAME_CACHE is off / 0 / no / false."""
    return os.environ.get(FRAME_CACHE_ENV, "").strip().lower() not in {"0", "off", "no", "false"}


def database_state(store: Store, filters: dict[str, Any]) -> dict[str, Any]:
    """What identifies the content of a frame of `store` with `filters`.

    Measurements are only ever inserted (no code path updates or deletes one), and a run's
    platform never changes: the database's identity (URL, SQLite file, creation time) with the
    count and the largest id of its measurements pins every row. Versions of hpceval and of
    the libraries whose objects are pickled pin the frame's layout.
    """
    state = store.state()
    return {
        "format": FRAME_CACHE_FORMAT,
        "hpceval": hpceval.__version__,
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "url": state.url,
        "database": state.database,
        "schema": [state.schema_version, state.created],
        "measurements": [state.measurements, state.last_measurement_id],
        "filters": filters,
    }


class FrameCache:
    """Frames kept on disk under <cache root>/frames (see `hpceval.build.cache_root`),
    one file per database state and filters (`database_state`), the last few only.

    A file holds the frame without its samples column, the samples as one flat float64 array
    and their lengths (pickle protocol 5): reading 1M rows takes under a second where
    pickling the object column of a million arrays takes four. Files are written to a
    temporary name and renamed, so a reader never sees half a file. Anything wrong with an
    entry (missing, unreadable, another state) is a miss: the frame is loaded from SQL.
    """

    def __init__(self, root: Path | None = None, entries: int = FRAME_CACHE_ENTRIES) -> None:
        if root is None:
            from hpceval.build import cache_root

            root = cache_root() / "frames"
        self.root = root
        self.entries = entries

    def path(self, state: dict[str, Any]) -> Path:
        digest = hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()
        return self.root / f"frame-{digest[:40]}.pickle"

    def load(
        self, store: Store, filters: dict[str, Any], fresh: Callable[[], pd.DataFrame]
    ) -> pd.DataFrame:
        """The cached frame of `store` with `filters`, else `fresh()` (then cached)."""
        try:
            state = database_state(store, filters)
        except sa.exc.SQLAlchemyError:
            return fresh()  # the SQL load reports what is wrong with the database
        # Taken before the load: a measurement stored meanwhile makes the entry hold more
        # than its state says, and no later state can equal this one (counts only grow).
        path = self.path(state)
        frame = self.read(path, state)
        if frame is not None:
            return frame
        frame = fresh()
        self.write(path, state, frame)
        return frame

    def read(self, path: Path, state: dict[str, Any]) -> pd.DataFrame | None:
        try:
            with path.open("rb") as fh:
                entry = pickle.load(fh)
            if not isinstance(entry, dict) or entry.get("state") != state:
                return None
            frame = _unpack_frame(entry)
            os.utime(path)  # recently used: kept by the trimming
            return frame
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt entry, of whatever kind, is a miss
            with contextlib.suppress(OSError):
                path.unlink()
            return None

    def write(self, path: Path, state: dict[str, Any], frame: pd.DataFrame) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            entry = _pack_frame(frame)
            entry["state"] = state
            fd, temporary = tempfile.mkstemp(dir=self.root, prefix=".frame-", suffix=".partial")
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(entry, fh, protocol=5)
                os.replace(temporary, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            self.trim()
        except (OSError, pickle.PicklingError, ValueError, TypeError):
            return  # no cache (read-only or full disk...): the frame is still right

    def trim(self) -> None:
        """Remove all but the `entries` most recently used files."""
        files = sorted(
            self.root.glob("frame-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for stale in files[self.entries :]:
            with contextlib.suppress(OSError):
                stale.unlink()


def _pack_frame(frame: pd.DataFrame) -> dict[str, Any]:
    flat, lengths = flatten_samples(frame)
    return {
        "columns": list(frame.columns),
        "frame": frame.drop(columns=["samples"]),
        "flat": np.ascontiguousarray(flat, dtype=np.float64),
        "lengths": lengths,
    }


def _unpack_frame(entry: dict[str, Any]) -> pd.DataFrame:
    frame: pd.DataFrame = entry["frame"]
    flat: FloatArray = entry["flat"]
    lengths: IntArray = entry["lengths"]
    columns: list[str] = entry["columns"]
    if len(lengths) != len(frame) or int(lengths.sum()) != len(flat):
        raise ValueError("frame cache entry: samples do not match the rows")
    samples: Any = SamplesArray.from_lengths(flat, lengths)  # (pandas-stubs: not an array type)
    frame.insert(columns.index("samples"), "samples", samples)
    if list(frame.columns) != columns:
        raise ValueError("frame cache entry: columns differ")
    return frame
