"""Moving results between databases and files: export, import, merge.

A site measures on an air-gapped cluster into SQLite, exports, carries the file out, and merges
it into a shared PostgreSQL database; or results databases are merged directly. Runs travel with
everything attached (platform, environment, planned cases, executions, measurements with their
raw samples), as the store's RunBundles.

The export file's format is hpceval.export_file's.

Runs and calibrations are identified by their uid: importing a run twice adds nothing the
second time, and a calibration is added once, with the first run that names it (the run's
suite_config then names it by its id in the destination). Each run is imported in its own
transaction (its calibration included): an error leaves no half-imported run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hpceval.errors import UserError
from hpceval.export_file import (
    ExportFile,
    ExportWriter,
)
from hpceval.store import (
    RunBundle,
    Store,
    open_store,
)

SQLITE_SUFFIXES: Final = (".db", ".sqlite", ".sqlite3")
# A merge destination that does not exist yet is an export file when its name ends so.
EXPORT_SUFFIXES: Final = (".jsonl", ".ndjson", ".json", ".gz")

EXPORTED: Final = "exported"  # the action reported for a run written to an export file

_SQLITE_MAGIC: Final = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Transferred:
    """What happened to one run: exported, or imported/skipped/updated/conflict (ImportAction)."""

    source: str
    uid: str
    suite: str
    platform: str
    started: float
    status: str
    action: str
    detail: str
    run_id: int | None  # its id in the destination database (None for an export file)


OnRun = Callable[[Transferred], None]


def _transferred(
    source: str, bundle: RunBundle, action: str, detail: str, run_id: int | None
) -> Transferred:
    return Transferred(
        source=source,
        uid=bundle.uid,
        suite=str(bundle.run["suite_name"]),
        platform=str(bundle.platform["name"]),
        started=float(bundle.run["started"]),
        status=str(bundle.run["status"]),
        action=action,
        detail=detail,
        run_id=run_id,
    )


# --------------------------------------------------------------------------- commands


def export_runs(
    db: str | None,
    file: Path,
    run_names: Sequence[str] | None = None,
    *,
    on_run: OnRun | None = None,
) -> list[Transferred]:
    """Write runs of database `db` (all, or those named by id or uid) to a new file.

    FILE.db/.sqlite/.sqlite3 becomes an SQLite results database; any other name an export file
    (gzip-compressed if it ends in .gz). An existing file is never overwritten, and the file
    appears only once complete.
    """
    if file.exists() or file.is_symlink():
        raise UserError(
            "already exists; an export never overwrites a file (remove it or choose another name)",
            source=str(file),
        )
    if not file.parent.is_dir():
        raise UserError(f"directory {file.parent} does not exist", source=str(file))
    reported: list[Transferred] = []

    def report(item: Transferred) -> None:
        reported.append(item)
        if on_run is not None:
            on_run(item)

    with open_store(db, create=False, read_only=True) as store:
        run_ids = store.select_runs(run_names)
        if not run_ids:
            raise UserError("holds no runs to export", source=store.url)
        if file.suffix.lower() in SQLITE_SUFFIXES:
            _export_to_sqlite(store, run_ids, file, report)
        else:
            with ExportWriter(file, runs=len(run_ids), source=store.url) as writer:
                for run_id in run_ids:
                    bundle = store.export_run(run_id)
                    writer.write(bundle)
                    report(_transferred(store.url, bundle, EXPORTED, _counts(bundle), None))
    return reported


def merge(
    sources: Sequence[str], into: str | None, *, on_run: OnRun | None = None
) -> list[Transferred]:
    """Import every run of `sources` (SQLite files, export files, database URLs) into `into`.

    `into` is a database (URL or SQLite path, created if missing; None: ./hpceval.db) or an
    export file (one that exists, or a new name ending in .jsonl, .json, .ndjson or .gz),
    which is rewritten with its runs and the sources'. Every source is opened and every
    export file checked completely before anything is written.
    """
    if not sources:
        raise UserError("nothing to merge: give at least one source")
    with contextlib.ExitStack() as stack:
        opened = [stack.enter_context(_open_source(spec)) for spec in sources]
        if into is not None and _is_export_file_target(into):
            return _merge_into_file(opened, Path(into), on_run)
        destination = stack.enter_context(open_store(into))
        reported: list[Transferred] = []
        for source in opened:
            for bundle in source.bundles():
                outcome = destination.import_run(bundle)
                item = _transferred(
                    source.label, bundle, outcome.action.value, outcome.detail, outcome.run_id
                )
                reported.append(item)
                if on_run is not None:
                    on_run(item)
        return reported
    raise AssertionError("unreachable")  # mypy: ExitStack may swallow exceptions


def _counts(bundle: RunBundle) -> str:
    return (
        f"{len(bundle.cases)} cases, {len(bundle.executions)} executions, "
        f"{len(bundle.measurements)} measurements"
    )


def _export_to_sqlite(store: Store, run_ids: Sequence[int], file: Path, report: OnRun) -> None:
    partial = file.with_name(f".{file.name}.{os.getpid()}.partial")
    try:
        with open_store(str(partial)) as destination:
            for run_id in run_ids:
                bundle = store.export_run(run_id)
                outcome = destination.import_run(bundle)
                report(_transferred(store.url, bundle, EXPORTED, outcome.detail, None))
            destination.compact()  # one self-contained file, no -wal beside it
        os.replace(partial, file)
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)


def _merge_into_file(
    opened: Sequence[_Source], file: Path, on_run: OnRun | None
) -> list[Transferred]:
    """Merge in a scratch SQLite database, then write it all to `file` in place of the old."""
    reported: list[Transferred] = []
    with (
        tempfile.TemporaryDirectory(prefix="hpceval-merge-") as scratch,
        open_store(str(Path(scratch) / "merge.db")) as work,
    ):
        if file.exists():
            existing = ExportFile(file)
            existing.check()
            for bundle in existing.bundles():
                work.import_run(bundle)
        for source in opened:
            for bundle in source.bundles():
                outcome = work.import_run(bundle)
                item = _transferred(
                    source.label, bundle, outcome.action.value, outcome.detail, None
                )
                reported.append(item)
                if on_run is not None:
                    on_run(item)
        run_ids = work.select_runs(None)
        # Replaces the old file only once the new one is complete.
        with ExportWriter(file, runs=len(run_ids), source=str(file)) as writer:
            for run_id in run_ids:
                writer.write(work.export_run(run_id))
    return reported


# --------------------------------------------------------------------------- sources


@dataclass
class _Source:
    label: str
    runs: int
    bundles: Callable[[], Iterator[RunBundle]]


@contextlib.contextmanager
def _open_source(spec: str) -> Iterator[_Source]:
    """A database (URL or SQLite file) or an export file, checked before anything is read."""
    if "://" not in spec:
        path = Path(spec)
        if not path.exists():
            raise UserError("no such file", source=spec)
        if not path.is_file():
            raise UserError("not a file", source=spec)
        if not _is_sqlite(path):
            export = ExportFile(path)
            count = export.check()
            yield _Source(str(path), count, export.bundles)
            return
    with open_store(spec, create=False, read_only=True) as store:
        run_ids = store.select_runs(None)

        def bundles() -> Iterator[RunBundle]:
            for run_id in run_ids:
                yield store.export_run(run_id)

        yield _Source(store.url, len(run_ids), bundles)


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC


def _is_export_file_target(into: str) -> bool:
    if "://" in into:
        return False
    path = Path(into)
    if path.is_file():
        return not _is_sqlite(path)
    return path.name.lower().endswith(EXPORT_SUFFIXES)
