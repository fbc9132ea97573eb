"""The bulk read behind the analysis frame: measurements as columns (numpy arrays), read in
id ranges by forked workers when the table is large.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections.abc import Collection, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from hpceval.arrays import run_indices
from hpceval.catalog import declarations
from hpceval.model import HPCEVAL_IMPLEMENTATION
from hpceval.store.dialect import dialect_of
from hpceval.store.engine import (
    StoreBase,
    outage_is_a_user_error,
)
from hpceval.store.samples import (
    SAMPLE_DTYPE,
)
from hpceval.store.schema import (
    measurements,
    platforms,
    runs,
    series,
)
from hpceval.workers import fork_workers

# Rows read per slice by Store.measurement_columns.
_READ_SLICE: Final = 100_000
# Below this many rows per worker, the bulk read is not worth forking for.
_ROWS_PER_READ_WORKER: Final = 150_000
READ_WORKERS_ENV: Final = "HPCEVAL_READ_WORKERS"

# What a measurement is, less its run, value and samples: (platform name, origin, benchmark,
# metric, unit, statistic, parameters as stored JSON text, implementation).
MeasurementKind = tuple[str, str, str, str, str, str, str, str]


@dataclass(frozen=True)
class MeasurementColumns:
    """Measurements as columns, rows in (run id, measurement id) order.

    The set-oriented read behind the analysis frame (`Store.measurement_columns`): no
    Measurement objects are built. Row i has run `run_id[i]`, value `value[i]`,
    `sample_counts[i]` samples (0: stored without), which follow those of the rows before it
    in `samples`, and the kind `kinds[kind[i]]`: each distinct kind (a few thousand for a
    million rows) is held once.
    """

    run_id: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]
    sample_counts: npt.NDArray[np.int64]
    samples: npt.NDArray[np.float64]
    kind: npt.NDArray[np.int64]
    kinds: list[MeasurementKind]

    def __len__(self) -> int:
        return len(self.run_id)


@dataclass(frozen=True)
class _RowsRead:
    """Rows of the bulk read as arrays: run, value, series id, bytes of samples per row, and
    the rows' sample bytes end to end."""

    run_id: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]
    series_id: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    data: bytes


# The id ranges of the bulk read in progress, for the forked workers to read by index (they
# inherit the Store and the queries; only an index goes out, only arrays come back).
_READS: list[tuple[ColumnReads, sa.Select[Any]]] = []


def read_workers() -> int:
    """$HPCEVAL_READ_WORKERS, else the CPUs this process may run on (1 without fork)."""
    return fork_workers(READ_WORKERS_ENV)


def _read_range_in_worker(index: int) -> _RowsRead:
    store, query = _READS[index]
    # The parent's pooled connections are not this process's to use (nor to close).
    store._engine.dispose(close=False)
    return store._read_range(query)


# The benchmarks under which the Java programs store their points (mpibench-java as
# mpibench, npb-java as npb), with implementation java/mpj-express: looked up like the
# official codes' (hpceval.benchmarks.mpibench_java).
JAVA_STORED_AS: Final = ("mpibench", "npb")


class ColumnReads(StoreBase):
    @outage_is_a_user_error
    def measurement_columns(
        self,
        *,
        run_ids: Collection[int] | None = None,
        platform_names: Collection[str] | None = None,
        benchmark: str | None = None,
        metric: str | None = None,
    ) -> MeasurementColumns:
        """Every measurement of the given runs / platforms / benchmark / metric (None: any), as
        columns, in one query: the filters are SQL's.

        Rows come in (run id, measurement id) order, the order of `measurements(run)` for each
        run in turn. Each row is read as four values (run, value, samples bytes, series id);
        what the series and runs say (the kind) is read once per series and per run. A million
        rows take a second or two rather than the minutes that building a Measurement per row
        takes.
        """
        query = sa.select(
            measurements.c.run_id,
            measurements.c.value,
            measurements.c.samples,
            measurements.c.series_id,
        ).order_by(measurements.c.id)  # storage order; runs are put in order below, stably
        if run_ids is not None:
            query = query.where(measurements.c.run_id.in_(sorted(set(run_ids))))
        if platform_names is not None:
            of_platforms = (
                sa.select(runs.c.id)
                .join(platforms, runs.c.platform_id == platforms.c.id)
                .where(platforms.c.name.in_(sorted(set(platform_names))))
            )
            query = query.where(measurements.c.run_id.in_(of_platforms))
        if benchmark is not None:
            query = query.where(measurements.c.benchmark == benchmark)
        if metric is not None:
            query = query.where(measurements.c.metric == metric)
        parts = self._read_rows(query)
        # Runs and series are read after the rows (which workers may read on connections of
        # their own): neither is ever deleted, so every row read finds its run and series.
        with self._engine.connect() as conn:
            run_platform = {
                int(row[0]): str(row[1])
                for row in conn.execute(
                    sa.select(runs.c.id, platforms.c.name).join(
                        platforms, runs.c.platform_id == platforms.c.id
                    )
                )
            }
            described = {
                int(row[0]): tuple(row[1:])
                for row in conn.execute(
                    sa.select(series.c.id, series.c.origin, series.c.benchmark, series.c.metric,
                              series.c.unit, series.c.statistic,
                              sa.cast(series.c.parameters, sa.Text))
                )
            }  # fmt: skip
        run_ids_read = _joined([p.run_id for p in parts], np.int64)
        sizes = _joined([p.sizes for p in parts], np.int64)
        if (sizes % SAMPLE_DTYPE.itemsize).any():
            raise ValueError("measurements: stored samples that are not whole float64 values")
        flat = np.frombuffer(b"".join(p.data for p in parts), dtype=SAMPLE_DTYPE).astype(np.float64)
        counts = sizes // SAMPLE_DTYPE.itemsize
        value = _joined([p.value for p in parts], np.float64)
        series_ids = _joined([p.series_id for p in parts], np.int64)
        # A kind is (platform, series, implementation): the run's platform by code, the
        # implementation by code of its (run, series), then the three codes in one.
        names = sorted(set(run_platform.values()))
        runs_known = np.array(sorted(run_platform), dtype=np.int64)
        platform_code = np.array([names.index(run_platform[int(r)]) for r in runs_known],
                                 dtype=np.int64)  # fmt: skip
        per_platform = max(described, default=0) + 1
        implementations, implementation_code = self._implementation_codes(
            query, run_ids_read, series_ids, per_platform
        )
        combined = (
            platform_code[np.searchsorted(runs_known, run_ids_read)] * per_platform + series_ids
        ) * len(implementations) + implementation_code
        distinct, kind = np.unique(combined, return_inverse=True)
        kinds: list[MeasurementKind] = []
        for code in distinct.tolist():
            platform_series, implementation = divmod(int(code), len(implementations))
            platform, series_id = divmod(platform_series, per_platform)
            kinds.append((names[platform], *described[series_id], implementations[implementation]))
        kind = kind.astype(np.int64).reshape(-1)
        if len(run_ids_read) and (np.diff(run_ids_read) < 0).any():
            # Runs interleaved in storage (a run resumed after another, an import): a stable
            # sort by run keeps the measurement ids in order within each run.
            order = np.argsort(run_ids_read, kind="stable")
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            flat = flat[run_indices(starts[order], counts[order])]
            run_ids_read, value, counts, kind = (
                run_ids_read[order],
                value[order],
                counts[order],
                kind[order],
            )
        return MeasurementColumns(run_ids_read, value, counts, flat, kind, kinds)

    def _implementation_codes(
        self,
        query: sa.Select[Any],
        run_ids: npt.NDArray[np.int64],
        series_ids: npt.NDArray[np.int64],
        per_run: int,
    ) -> tuple[list[str], npt.NDArray[np.int64]]:
        """The implementations (sorted) and the code of each row's. Only the rows of the
        official codes (the benchmarks whose declaration names a `counterpart`: npb-official,
        osu, imb...) are looked up, through the benchmark index and once per (run, series):
        one run measures a series with one program, and every other benchmark is hpceval's
        own program. (A scan of every row for its implementation cost a sixth of the read.)"""
        official = sorted(
            {*(name for name, d in declarations().items() if d.counterpart), *JAVA_STORED_AS}
        )
        found: list[tuple[int, int, str]] = []
        if official:
            pairs = (
                query.with_only_columns(
                    measurements.c.run_id, measurements.c.series_id, measurements.c.implementation
                )
                .where(measurements.c.benchmark.in_(official))
                .where(measurements.c.implementation != HPCEVAL_IMPLEMENTATION)
                .distinct()
                .order_by(None)
            )
            with self._engine.connect() as conn:
                found = [(int(r), int(s), str(i)) for r, s, i in conn.execute(pairs)]
        implementations = sorted({HPCEVAL_IMPLEMENTATION, *(i for _, _, i in found)})
        codes = np.full(len(run_ids), implementations.index(HPCEVAL_IMPLEMENTATION), np.int64)
        if not found:
            return implementations, codes
        of_pair: dict[int, int] = {}
        for run, series_id, implementation in found:
            key = run * per_run + series_id
            code = implementations.index(implementation)
            if of_pair.setdefault(key, code) != code:
                raise ValueError(
                    f"run {run}: one series measured by two implementations "
                    f"({implementations[of_pair[key]]}, {implementation})"
                )
        keys = np.array(sorted(of_pair), dtype=np.int64)
        row_keys = run_ids * per_run + series_ids
        at = np.minimum(np.searchsorted(keys, row_keys), len(keys) - 1)
        official = keys[at] == row_keys
        codes[official] = np.array([of_pair[int(k)] for k in keys[at[official]].tolist()])
        self._mixed_series_codes(query, implementations, codes, row_keys, per_run)
        return implementations, codes

    def _mixed_series_codes(
        self,
        query: sa.Select[Any],
        implementations: list[str],
        codes: npt.NDArray[np.int64],
        row_keys: npt.NDArray[np.int64],
        per_run: int,
    ) -> None:
        """Row by row, the implementation of the (run, series) that one run measured with two
        programs: a suite's Java and C cases on one platform store the same series (the
        implementation tells them apart). Their rows are read again, in the same id order."""
        mixed_query = (
            query.with_only_columns(measurements.c.run_id, measurements.c.series_id)
            .where(measurements.c.benchmark.in_(JAVA_STORED_AS))
            .group_by(measurements.c.run_id, measurements.c.series_id)
            .having(sa.func.count(sa.distinct(measurements.c.implementation)) > 1)
            .order_by(None)
        )
        with self._engine.connect() as conn:
            mixed = [(int(r), int(s)) for r, s in conn.execute(mixed_query)]
            if not mixed:
                return
            rows_query = query.with_only_columns(measurements.c.implementation).where(
                sa.tuple_(measurements.c.run_id, measurements.c.series_id).in_(mixed)
            )
            found = [str(i) for (i,) in conn.execute(rows_query)]
        where = np.isin(row_keys, np.array([r * per_run + s for r, s in mixed], dtype=np.int64))
        if int(where.sum()) != len(found):
            raise ValueError("measurements: rows changed while they were read")
        codes[where] = np.array([implementations.index(i) for i in found], dtype=np.int64)

    def _read_rows(self, query: sa.Select[Any]) -> list[_RowsRead]:
        """The (run, value, samples, series) rows of `query`, in id order, as arrays.

        A large table is read in id ranges by forked worker processes, one connection each
        (a million rows: ~2 s of building Python rows, which run in parallel that way);
        a small one, or where there is no fork, here.
        """
        bounds = query.with_only_columns(
            sa.func.min(measurements.c.id), sa.func.max(measurements.c.id)
        ).order_by(None)  # the ids the filters select: one run of a large table is read here
        with self._engine.connect() as conn:
            low, high = conn.execute(bounds).one()
        workers = 1 if low is None or not self._reopenable() else min(
            read_workers(), max(1, (int(high) - int(low) + 1) // _ROWS_PER_READ_WORKER)
        )  # fmt: skip
        if workers <= 1:
            return [self._read_range(query)]
        edges = np.linspace(int(low), int(high) + 1, workers + 1).astype(np.int64).tolist()
        ranges = [
            query.where(measurements.c.id >= start, measurements.c.id < end)
            for start, end in itertools.pairwise(edges)
        ]
        _READS[:] = [(self, r) for r in ranges]
        try:
            with ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("fork")
            ) as pool:
                return list(pool.map(_read_range_in_worker, range(len(ranges))))
        except (BrokenProcessPool, OSError):
            # A worker lost (killed, out of memory), or no process could be started: read
            # here; an error of the database itself is raised here as it is.
            return [self._read_range(r) for r in ranges]
        finally:
            _READS.clear()

    def _reopenable(self) -> bool:
        """Whether another connection sees this database (not an in-memory SQLite one)."""
        return dialect_of(self._engine).reopenable(self._engine.url)

    def _read_range(self, query: sa.Select[Any]) -> _RowsRead:
        run_parts: list[npt.NDArray[np.int64]] = []
        value_parts: list[npt.NDArray[np.float64]] = []
        series_parts: list[npt.NDArray[np.int64]] = []
        count_parts: list[npt.NDArray[np.int64]] = []
        data_parts: list[bytes] = []
        with self._engine.connect() as conn:
            # On the driver's own cursor (a server-side one on PostgreSQL), in slices: plain
            # tuples, without the SQLAlchemy Row built around each (a third of the time). The
            # filters are numbers and names, written into the SQL by the dialect's quoting.
            sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
            driver = conn.connection.driver_connection
            if driver is None:
                raise RuntimeError("no database connection")
            cursor = dialect_of(conn).bulk_cursor(driver)
            try:
                cursor.execute(sql)
                while rows := cursor.fetchmany(_READ_SLICE):
                    slice_runs, slice_values, slice_data, slice_series = zip(*rows, strict=True)
                    run_parts.append(np.array(slice_runs, dtype=np.int64))
                    value_parts.append(np.array(slice_values, dtype=np.float64))
                    series_parts.append(np.array(slice_series, dtype=np.int64))
                    count_parts.append(
                        np.fromiter(map(len, slice_data), dtype=np.int64, count=len(slice_data))
                    )
                    data_parts.append(b"".join(slice_data))
            finally:
                cursor.close()
        return _RowsRead(
            _joined(run_parts, np.int64),
            _joined(value_parts, np.float64),
            _joined(series_parts, np.int64),
            _joined(count_parts, np.int64),
            b"".join(data_parts),
        )


def _joined(parts: Sequence[npt.NDArray[Any]], dtype: type) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)
