"""The frame's samples column (hpceval.analysis.samples.SamplesArray) through what pandas and
the analysis do with it: select, reorder, concatenate, pickle, flatten."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from hpceval.analysis.frame import flatten_samples
from hpceval.analysis.samples import SamplesArray, SamplesDtype

ROWS = [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0], [np.nan, np.inf]]


def column() -> SamplesArray:
    return SamplesArray.from_arrays(ROWS)


def as_lists(values: object) -> list[list[float] | None]:
    return [None if r is None else np.asarray(r).tolist() for r in values]  # type: ignore[attr-defined]


def test_rows_are_views_of_one_flat_array() -> None:
    samples = column()
    assert len(samples) == 4
    assert samples.dtype == SamplesDtype()
    assert samples[2].tolist() == [4.0, 5.0, 6.0]
    assert samples[-1][1] == np.inf
    assert samples[0].base is samples[1].base  # no copy per row
    assert samples.lengths.tolist() == [2, 1, 3, 2]
    with pytest.raises(IndexError):
        samples[4]


def test_flat_is_the_storage_slice_in_order_and_a_gather_otherwise() -> None:
    samples = column()
    flat, lengths = samples.flat()
    assert np.array_equal(flat, [1, 2, 3, 4, 5, 6, np.nan, np.inf], equal_nan=True)
    assert lengths.tolist() == [2, 1, 3, 2]
    assert np.shares_memory(flat, samples[0])
    picked = samples.take(np.array([2, 0]))
    flat, lengths = picked.flat()
    assert flat.tolist() == [4.0, 5.0, 6.0, 1.0, 2.0]
    assert lengths.tolist() == [3, 2]
    tail = samples[1:3]
    assert tail.flat()[0].tolist() == [3.0, 4.0, 5.0, 6.0]


def test_missing_rows_from_a_filled_take() -> None:
    samples = column().take(np.array([1, -1, 0]), allow_fill=True)
    assert as_lists(samples) == [[3.0], None, [1.0, 2.0]]
    assert samples.isna().tolist() == [False, True, False]
    with pytest.raises(ValueError, match="missing"):
        samples.flat()
    with pytest.raises(ValueError, match="only a missing row"):
        column().take(np.array([0, -1]), allow_fill=True, fill_value=[0.0])


def test_pandas_selects_sorts_concatenates_and_copies_rows() -> None:
    frame = pd.DataFrame({"key": [3, 1, 2, 0], "samples": column()})
    assert isinstance(frame["samples"].dtype, SamplesDtype)
    ordered = frame.sort_values("key")
    assert np.array_equal(ordered["samples"].iloc[0], [np.nan, np.inf], equal_nan=True)
    assert as_lists(ordered["samples"])[1:] == [ROWS[1], ROWS[2], ROWS[0]]
    chosen = frame.loc[frame["key"] > 1]
    assert as_lists(chosen["samples"]) == [ROWS[0], ROWS[2]]
    both = pd.concat([chosen, frame.iloc[[1]]], ignore_index=True)
    assert as_lists(both["samples"]) == [ROWS[0], ROWS[2], ROWS[1]]
    other = pd.DataFrame({"key": [9], "samples": SamplesArray.from_arrays([[7.0, 8.0]])})
    mixed = pd.concat([chosen, other], ignore_index=True)  # two flat arrays: copied into one
    assert as_lists(mixed["samples"]) == [ROWS[0], ROWS[2], [7.0, 8.0]]
    assert mixed["samples"].array.flat()[0].tolist() == [1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    copied = frame.copy(deep=True)
    assert as_lists(copied["samples"])[:3] == ROWS[:3]
    assert frame["samples"].map(len).tolist() == [2, 1, 3, 2]  # not cast back to samples
    assert [len(r) for r in frame.groupby("key")["samples"].first()] == [2, 1, 3, 2]


def test_object_conversion_keeps_one_array_per_row() -> None:
    objects = np.asarray(SamplesArray.from_arrays([[1.0, 2.0], [3.0, 4.0]]), dtype=object)
    assert objects.shape == (2,)  # not a 2 x 2 matrix, although the rows are of one length
    assert objects[1].tolist() == [3.0, 4.0]


def test_pickle_keeps_only_the_rows_samples() -> None:
    big = SamplesArray.from_lengths(np.arange(1000, dtype=np.float64), np.full(100, 10))
    part = big[np.array([5, 7])]
    copy = pickle.loads(pickle.dumps(part))
    assert as_lists(copy) == [list(range(50, 60)), list(range(70, 80))]
    assert len(copy.flat()[0]) == 20
    assert len(pickle.dumps(part)) < 2000  # not the 1000 values of the shared array


def test_elements_must_be_sample_arrays_and_the_column_is_read_only() -> None:
    with pytest.raises(TypeError, match="array of samples"):
        SamplesArray._from_sequence([1, 2])
    with pytest.raises(TypeError, match="read-only"):
        column()[0] = np.array([1.0])
    with pytest.raises(ValueError, match="add up"):
        SamplesArray.from_lengths(np.zeros(3), np.array([1, 1]))


def test_equality_is_row_by_row() -> None:
    assert (column() == column()).tolist() == [True, True, True, True]
    other = SamplesArray.from_arrays([[1.0, 2.0], [3.5], [4.0, 5.0, 6.0], [np.nan, 1.0]])
    assert (column() == other).tolist() == [True, False, True, False]


def test_flatten_samples_takes_both_column_kinds() -> None:
    frame = pd.DataFrame({"samples": column()})
    flat, lengths = flatten_samples(frame.iloc[[2, 1]])
    assert flat.tolist() == [4.0, 5.0, 6.0, 3.0]
    assert lengths.tolist() == [3, 1]
    by_hand = pd.DataFrame({"samples": pd.Series([np.array([1.0]), [2.0, 3.0]], dtype=object)})
    flat, lengths = flatten_samples(by_hand)
    assert flat.tolist() == [1.0, 2.0, 3.0]
    assert lengths.tolist() == [1, 2]
    empty_row = pd.DataFrame({"samples": pd.Series([np.array([])], dtype=object)})
    with pytest.raises(ValueError, match="no samples"):
        flatten_samples(empty_row)
