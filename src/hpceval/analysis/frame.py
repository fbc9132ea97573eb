"""The measurement frame: one pandas row per Measurement, the input of every analysis.

Columns (in this order):

- ``run`` (Int64, may be missing), ``platform``, ``origin`` (measured | emulated | simulated),
  ``benchmark``, ``metric``, ``unit``, ``statistic``, ``implementation`` (categorical
  strings; implementation: whose program measured it, "hpceval" or "official/NPB 3.4.2",
  model.Measurement.implementation);
- ``value`` (float64): the Measurement's value (the statistic named by ``statistic``);
- ``samples`` (`hpceval.analysis.samples.SamplesDtype`): the raw samples, each row's a
  float64 numpy array, never empty (a Measurement stored without samples contributes its
  value as a single sample); held as runs of one flat array (`SamplesArray`);
- then one column per parameter name found in the measurements (``pattern``, ``size``,
  ``ranks``, ``nodes``, ``kernel``, ``class``...), missing where a measurement does not have
  that parameter. Integers become Int64, booleans boolean, strings categorical, anything
  mixed stays object. A parameter whose name is a core column is renamed ``parameter.NAME``.

The *point* of a row is its benchmark, metric, unit and parameters, less the parameters in
``NON_POINT_PARAMETERS`` (names of files, why fio fell back to buffered I/O: not properties
of the point, which `direct` and `ioengine` already say). Rows of the same
platform, origin and point are repetitions of one measurement: analyses pool their samples
(``pool``). Everything here works column-wise on numpy arrays: a frame of a million rows is
grouped and pooled in about a second.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpceval.analysis.samples import SamplesArray
from hpceval.arrays import run_indices
from hpceval.model import Measurement, Origin
from hpceval.store import MeasurementColumns, decode_json_texts
from hpceval.units import check_unit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CORE_COLUMNS: Final[tuple[str, ...]] = (
    "run",
    "platform",
    "origin",
    "benchmark",
    "metric",
    "unit",
    "statistic",
    "implementation",
    "value",
    "samples",
)
CATEGORICAL_COLUMNS: Final[tuple[str, ...]] = (
    "platform",
    "origin",
    "benchmark",
    "metric",
    "unit",
    "statistic",
    "implementation",
)
# Parameters that name where a measurement came from, not the point it measures
# (the NPB importer records the output file's name): never part of a point's identity.
NON_POINT_PARAMETERS: Final[frozenset[str]] = frozenset({"file", "io_fallback"})
# Grouping beyond this many combined codes re-numbers the codes first (int64 headroom).
_CODE_LIMIT: Final = 2**62

Entry = tuple[str, int | None, Measurement]


def build_frame(entries: Iterable[Entry]) -> pd.DataFrame:
    """The frame of (platform name, run id or None, Measurement) entries, in their order."""
    runs: list[int | None] = []
    platforms: list[str] = []
    measurements: list[Measurement] = []
    for platform, run, m in entries:
        runs.append(run)
        platforms.append(platform)
        measurements.append(m)
    n = len(measurements)
    # Parameters are gathered per set of names (a handful: one or two per benchmark), so
    # that columns are assembled from whole lists rather than value by value.
    rows_of: dict[tuple[str, ...], list[int]] = {}
    values_of: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for i, m in enumerate(measurements):
        names = tuple(m.parameters)
        if names not in rows_of:
            rows_of[names], values_of[names] = [], []
        rows_of[names].append(i)
        values_of[names].append(tuple(m.parameters.values()))
    columns: dict[str, npt.NDArray[np.object_]] = {}
    for names, rows in rows_of.items():
        index = np.asarray(rows, dtype=np.int64)
        matrix = np.array(values_of[names], dtype=object).reshape(len(rows), len(names))
        for j, name in enumerate(names):
            if name not in columns:
                columns[name] = np.full(n, None, dtype=object)
            columns[name][index] = matrix[:, j]
    # Every row's samples are a run of one flat array (one allocation, not a million).
    raw = [m.samples or (m.value,) for m in measurements]
    lengths = np.fromiter(map(len, raw), dtype=np.int64, count=n)
    flat = np.fromiter(
        itertools.chain.from_iterable(raw), dtype=np.float64, count=int(lengths.sum())
    )
    sample_column = SamplesArray.from_lengths(flat, lengths)
    data: dict[str, Any] = {
        "run": pd.array(runs, dtype="Int64"),
        "platform": pd.Categorical(platforms),
        "origin": pd.Categorical([str(m.origin) for m in measurements]),
        "benchmark": pd.Categorical([m.benchmark for m in measurements]),
        "metric": pd.Categorical([m.metric for m in measurements]),
        "unit": pd.Categorical([m.unit for m in measurements]),
        "statistic": pd.Categorical([m.statistic for m in measurements]),
        "implementation": pd.Categorical([m.implementation for m in measurements]),
        "value": np.fromiter((m.value for m in measurements), dtype=np.float64, count=n),
        "samples": sample_column,
    }
    for name in sorted(columns):
        column_name = f"parameter.{name}" if name in CORE_COLUMNS else name
        data[column_name] = _parameter_array(columns[name])
    return pd.DataFrame(data, index=pd.RangeIndex(n))


def frame_from_measurements(
    measurements: Iterable[Measurement], *, platform: str, run: int | None = None
) -> pd.DataFrame:
    """The frame of one platform's measurements (tests, importers, synthetic data)."""
    return build_frame((platform, run, m) for m in measurements)


def frame_from_columns(columns: MeasurementColumns) -> pd.DataFrame:
    """The frame of measurements read as columns (see `load_frame`).

    Everything but the samples is computed once per distinct kind of measurement and taken
    by code. What building each Measurement would check is checked once per distinct value:
    units in the vocabulary, known origins, finite values (the same errors).
    """
    n = len(columns)
    if n == 0:
        return build_frame(())
    kind = columns.kind
    fields = list(zip(*columns.kinds, strict=True))
    platform, origin, benchmark, metric, unit, statistic, parameters, implementation = (
        list(field) for field in fields
    )
    data: dict[str, Any] = {
        "run": pd.arrays.IntegerArray(columns.run_id.copy(), np.zeros(n, dtype=bool)),
        "platform": _categorical(platform, kind),
        "origin": _categorical(origin, kind, check=Origin),
        "benchmark": _categorical(benchmark, kind),
        "metric": _categorical(metric, kind),
        "unit": _categorical(unit, kind, check=check_unit),
        "statistic": _categorical(statistic, kind),
        "implementation": _categorical(implementation, kind),
    }
    values = columns.value
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        first = int(bad[0])
        raise ValueError(
            f"{benchmark[kind[first]]}.{metric[kind[first]]}: value {values[first]} is not finite"
        )
    data["value"] = values
    data["samples"] = _sample_column(columns.samples, columns.sample_counts, values)
    for name, column in sorted(_parameter_columns(parameters, kind).items()):
        data[f"parameter.{name}" if name in CORE_COLUMNS else name] = column
    return pd.DataFrame(data, index=pd.RangeIndex(n))


def _categorical(
    distinct: list[str], codes: IntArray, check: Callable[[str], object] | None = None
) -> Any:
    """pd.Categorical of the values `distinct[codes]`, built from the distinct values (and
    after the check of each)."""
    if check is not None:
        for value in set(distinct):
            check(value)
    # The categories as pd.Categorical makes them of the values (sorted, same dtype): every
    # distinct value occurs in a row.
    template = pd.Categorical(distinct)
    return pd.Categorical.from_codes(
        np.asarray(template.codes, dtype=np.int64)[codes], dtype=template.dtype
    )


def _sample_column(flat: FloatArray, counts: IntArray, values: FloatArray) -> SamplesArray:
    """Each row's samples as a run of one flat array (the value where none)."""
    empty = counts == 0
    if empty.any():
        # Stored without samples: the value is the one sample. Each row's run of samples
        # is kept and the value put where there was none, in one pass over the flat array.
        lengths = np.where(empty, 1, counts)
        ends = np.cumsum(lengths)
        filled = np.empty(int(ends[-1]), dtype=np.float64)
        given = np.ones(len(filled), dtype=bool)
        given[(ends - 1)[empty]] = False
        filled[given] = flat
        filled[~given] = values[empty]
        flat, counts = filled, lengths
    return SamplesArray.from_lengths(flat, counts)


def _parameter_columns(texts: list[str], codes: IntArray) -> dict[str, Any]:
    """One column per parameter name, typed as `build_frame` types it, for the rows whose
    parameters are the JSON texts `texts[codes]`.

    Each distinct text is decoded once; each column is assembled from its values per
    distinct text, taken by code.
    """
    index: dict[str, int] = {}
    of_text = np.fromiter(
        (index.setdefault(text, len(index)) for text in texts), dtype=np.int64, count=len(texts)
    )
    sets: list[dict[str, Any]] = decode_json_texts(list(index))
    names: dict[str, None] = {}
    for parameters in sets:
        names.update(dict.fromkeys(parameters))
    rows = of_text[codes]
    out: dict[str, Any] = {}
    for name in names:
        distinct = np.empty(len(sets), dtype=object)
        distinct[:] = [parameters.get(name) for parameters in sets]
        out[name] = _expand(distinct, rows)
    return out


def _expand(distinct: npt.NDArray[np.object_], codes: IntArray) -> Any:
    """`_parameter_array(distinct[codes])`, computed on the distinct values."""
    given = distinct != None  # noqa: E711  (element-wise: the values that are set)
    kinds = set(map(type, distinct[given].tolist()))
    missing = ~given[codes]
    if kinds == {bool}:
        flags = np.zeros(len(distinct), dtype=bool)
        flags[given] = distinct[given].astype(bool)
        return pd.arrays.BooleanArray(flags[codes], missing)
    if kinds == {int}:
        integers = np.zeros(len(distinct), dtype=np.int64)
        try:
            integers[given] = np.asarray(distinct[given].tolist(), dtype=np.int64)
        except OverflowError:
            return _parameter_array(distinct[codes])  # beyond int64: as build_frame fails
        return pd.arrays.IntegerArray(integers[codes], missing)
    if kinds and kinds <= {int, float}:
        numbers = np.full(len(distinct), np.nan)
        numbers[given] = distinct[given].astype(np.float64)
        return numbers[codes]
    if kinds == {str}:
        template = pd.Categorical(distinct)
        return pd.Categorical.from_codes(
            np.asarray(template.codes, dtype=np.int64)[codes], dtype=template.dtype
        )
    return _parameter_array(distinct[codes])


def check_frame(frame: pd.DataFrame) -> None:
    """A ValueError naming the missing core columns, if any."""
    missing = [c for c in CORE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"not a measurement frame: missing column(s) {', '.join(missing)}")


def parameter_columns(frame: pd.DataFrame) -> list[str]:
    """The parameter columns of a frame (every column that is not a core column)."""
    return [str(c) for c in frame.columns if c not in CORE_COLUMNS]


def point_columns(frame: pd.DataFrame, *, implementation: bool | None = None) -> list[str]:
    """The columns that identify a point: benchmark, metric, unit, the implementation that
    measured it (C and Java points of one platform share the rest of their key: never
    pooled, never paired with each other; `implementation=False` for a comparison that mixes
    them on purpose) and the point parameters. By default (`implementation=None`) the
    implementation is a key column only where the frame holds more than one: with one, it
    tells no points apart, and leaving it out keeps it out of every point's parameters and
    labels; `implementation=True` keys it always (a points table that shows it)."""
    present = "implementation" in frame.columns
    keyed = present and (
        implementation
        if implementation is not None
        else frame["implementation"].nunique(dropna=False) > 1
    )
    return [
        "benchmark",
        "metric",
        "unit",
        *(["implementation"] if keyed else []),
        *(c for c in parameter_columns(frame) if c not in NON_POINT_PARAMETERS),
    ]


def select(
    frame: pd.DataFrame,
    *,
    platforms: Sequence[str] | None = None,
    origins: Sequence[Origin | str] | None = None,
    benchmark: str | None = None,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The rows of the given platforms, origins, benchmark and metrics (None: any)."""
    mask = np.ones(len(frame), dtype=bool)
    if platforms is not None:
        mask &= frame["platform"].isin(list(platforms)).to_numpy()
    if origins is not None:
        mask &= frame["origin"].isin([str(o) for o in origins]).to_numpy()
    if benchmark is not None:
        mask &= (frame["benchmark"] == benchmark).to_numpy()
    if metrics is not None:
        mask &= frame["metric"].isin(list(metrics)).to_numpy()
    return frame.loc[mask]


def present(frame: pd.DataFrame, column: str) -> npt.NDArray[np.bool_]:
    """Where a (parameter) column has a value; all False when the frame lacks the column."""
    if column not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame[column].notna().to_numpy()


def numeric(frame: pd.DataFrame, column: str) -> FloatArray:
    """A numeric parameter column as float64 (NaN where missing or not a number)."""
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    series = frame[column]
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        return np.asarray(series.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
    converted = pd.to_numeric(series.astype(object), errors="coerce")
    return np.asarray(converted, dtype=np.float64)


def text(frame: pd.DataFrame, column: str) -> npt.NDArray[np.object_]:
    """A parameter column as an object array (its values, None where missing)."""
    if column not in frame.columns:
        return np.full(len(frame), None, dtype=object)
    series = frame[column]
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = np.asarray(series.cat.categories.astype(object), dtype=object)
        lookup = np.append(categories, np.array([None], dtype=object))
        codes = np.asarray(series.cat.codes, dtype=np.int64)
        return np.asarray(lookup[codes], dtype=object)  # code -1 (missing) takes the None
    values = series.astype(object)
    return np.asarray(values.where(values.notna(), None).to_numpy(), dtype=object)


# --------------------------------------------------------------------------- grouping


def group_codes(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[IntArray, IntArray]:
    """Group the rows by the values of `columns` (a missing value is a value of its own).

    Returns (code of each row in 0..G-1, index of the first row of each group), with groups
    numbered in order of their combined key. Works on factorized integer codes, not on
    Python objects.
    """
    n = len(frame)
    key = np.zeros(n, dtype=np.int64)
    cardinality = 1
    for column in columns:
        codes, size = _factorize(frame[column])
        if cardinality * size >= _CODE_LIMIT:
            _, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64)
            cardinality = int(key.max()) + 1 if n else 1
        key = key * size + codes
        cardinality *= size
    uniques, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    del uniques
    return inverse.astype(np.int64).reshape(n), first.astype(np.int64)


def _factorize(series: pd.Series[Any]) -> tuple[IntArray, int]:
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = np.asarray(series.cat.codes, dtype=np.int64) + 1  # -1 (missing) becomes 0
        return codes, len(series.cat.categories) + 1
    factor_codes, uniques = pd.factorize(series, use_na_sentinel=False)
    return np.asarray(factor_codes, dtype=np.int64), max(len(uniques), 1)


@dataclass(frozen=True)
class Pooled:
    """Samples pooled per group: group g holds values[offsets[g] : offsets[g] + count[g]].

    `keys` has one row per group with the grouping columns (taken from its first row);
    `rows` maps every frame row (by position) to its group; `mean` and `var` (ddof 1, NaN for
    a single sample) are those of the pooled samples; `measurements` counts the rows pooled.
    """

    keys: pd.DataFrame
    rows: IntArray
    count: IntArray
    measurements: IntArray
    mean: FloatArray
    var: FloatArray
    offsets: IntArray
    values: FloatArray

    def samples(self, group: int) -> FloatArray:
        start = int(self.offsets[group])
        return self.values[start : start + int(self.count[group])]


def flatten_samples(frame: pd.DataFrame) -> tuple[FloatArray, IntArray]:
    """All samples of the frame end to end, and the number of samples of each row."""
    column = frame["samples"].array
    if isinstance(column, SamplesArray):
        flat, lengths = column.flat()
    else:  # a frame put together by hand: one array (or sequence) per row
        arrays = np.asarray(column, dtype=object)
        lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
        flat = (np.concatenate([np.asarray(a, dtype=np.float64) for a in arrays])
                if len(arrays) else np.empty(0))  # fmt: skip
    if np.any(lengths <= 0):
        raise ValueError("a row of the frame has no samples")
    return flat, lengths


def pool(frame: pd.DataFrame, by: Sequence[str]) -> Pooled:
    """Pool the samples of the rows that share the values of the `by` columns."""
    check_frame(frame)
    rows, first = group_codes(frame, by)
    return pool_by_codes(frame, rows, first, by)


def pool_by_codes(
    frame: pd.DataFrame, rows: IntArray, first: IntArray, by: Sequence[str]
) -> Pooled:
    """`pool` with the groups given: `rows` maps each row to 0..G-1, `first[g]` is a row of g."""
    groups = len(first)
    flat, lengths = flatten_samples(frame)
    count = np.bincount(rows, weights=lengths, minlength=groups).astype(np.int64)
    offsets = np.zeros(groups, dtype=np.int64)
    np.cumsum(count[:-1], out=offsets[1:])
    # Reorder the samples group by group (rows of a group in frame order): a gather of the
    # flat array, much faster than concatenating the rows' arrays in a scattered order.
    order = np.argsort(rows, kind="stable")
    if np.array_equal(order, np.arange(len(rows))):
        values = flat
    else:
        starts = np.cumsum(lengths) - lengths
        values = flat[run_indices(starts[order], lengths[order])]
    if len(values):
        sums = np.add.reduceat(values, offsets)
        mean = sums / count
        # (A group with an infinite sample has an infinite mean and a NaN variance: no warning.)
        with np.errstate(invalid="ignore"):
            deviations = np.add.reduceat((values - np.repeat(mean, count)) ** 2, offsets)
    else:
        mean = deviations = np.empty(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(count > 1, deviations / np.maximum(count - 1, 1), np.nan)
    keys = frame.iloc[first][list(by)].reset_index(drop=True)
    measurements = np.bincount(rows, minlength=groups).astype(np.int64)
    return Pooled(keys, rows, count, measurements, mean, var, offsets, values)


def _parameter_array(column: npt.NDArray[np.object_]) -> Any:
    """The best dtype for one parameter column (see the module docstring)."""
    given = column[column != None]  # noqa: E711  (element-wise: the values that are set)
    kinds = set(map(type, given.tolist()))
    if kinds == {bool}:
        return pd.array(column.tolist(), dtype="boolean")
    if kinds == {int}:
        return pd.array(column.tolist(), dtype="Int64")
    if kinds and kinds <= {int, float}:
        out = np.full(len(column), np.nan)
        present = column != None  # noqa: E711
        out[present] = given.astype(np.float64)
        return out
    if kinds == {str}:
        return pd.Categorical(column)
    return column
