"""The frame's ``samples`` column: every row's raw samples, held as runs of one flat array.

A row of the measurement frame holds a float64 array of samples, a few to a few hundred of
them. Held as a column of a million numpy arrays (one Python object per row) the column costs
more to build than the rest of the frame, and every pooling flattens it back into one array.
`SamplesArray` is a pandas extension array that keeps one flat float64 array and, per row,
where its samples start and how many there are: selecting, sorting or concatenating rows moves
those two integers, never the samples; `flat()` gives every row's samples end to end (the
input of pooling) without a Python loop; an element is the row's samples as a float64 view.

The samples of a row are read-only for the analysis: rows share the flat array.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.extensions import (
    ExtensionArray,
    ExtensionDtype,
    register_extension_dtype,
    take,
)

from hpceval.arrays import run_indices

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@register_extension_dtype
class SamplesDtype(ExtensionDtype):
    """The dtype of the frame's ``samples`` column: each element a float64 numpy array."""

    name: ClassVar[str] = "samples"
    type = np.ndarray
    kind: Literal["O"] = "O"
    na_value = None

    @classmethod
    def construct_array_type(cls) -> builtins.type[SamplesArray]:
        return SamplesArray


class SamplesArray(ExtensionArray):
    """Rows of samples: row i is ``flat[starts[i] : starts[i] + lengths[i]]``; a missing row
    (from a take with fill, a reindex) has length -1 and reads as None."""

    _dtype: ClassVar[SamplesDtype] = SamplesDtype()

    def __init__(self, flat: FloatArray, starts: IntArray, lengths: IntArray) -> None:
        self._flat = flat
        self._starts = starts
        self._lengths = lengths

    # ----------------------------------------------------------------- constructors

    @classmethod
    def from_lengths(cls, flat: FloatArray, lengths: IntArray) -> SamplesArray:
        """Rows that follow each other in `flat`: row i has the lengths[i] values after those
        of the rows before it."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if int(lengths.sum()) != len(flat):
            raise ValueError("samples: the row lengths do not add up to the flat array")
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return cls(np.asarray(flat, dtype=np.float64), starts, lengths)

    @classmethod
    def from_arrays(cls, arrays: Sequence[Any]) -> SamplesArray:
        """From one sequence of sample values per row (None: a missing row)."""
        missing = [a is None for a in arrays]
        rows = [np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays if a is not None]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        flat = np.concatenate(rows) if rows else np.empty(0, dtype=np.float64)
        packed = cls.from_lengths(flat, lengths)
        if not any(missing):
            return packed
        positions = np.full(len(arrays), -1, dtype=np.int64)
        positions[~np.asarray(missing)] = np.arange(len(rows))
        return packed.take(positions, allow_fill=True)

    @classmethod
    def _from_sequence(cls, scalars: Any, *, dtype: Any = None, copy: bool = False) -> SamplesArray:
        if isinstance(scalars, SamplesArray):
            return scalars.copy() if copy else scalars
        rows = list(scalars)
        # Only rows of samples: pandas casts results back through here and must be refused
        # anything else (the lengths of the rows are not a samples column).
        if not all(r is None or isinstance(r, np.ndarray | list | tuple) for r in rows):
            raise TypeError("samples: every element must be an array of samples")
        return cls.from_arrays(rows)

    @classmethod
    def _from_factorized(cls, values: Any, original: Any) -> SamplesArray:
        raise TypeError("samples cannot be grouped or factorized")

    # ----------------------------------------------------------------- what it holds

    @property
    def dtype(self) -> SamplesDtype:
        return self._dtype

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def nbytes(self) -> int:
        held = int(self._lengths[self._lengths > 0].sum()) * self._flat.itemsize
        return int(self._starts.nbytes + self._lengths.nbytes) + held

    @property
    def lengths(self) -> IntArray:
        """The number of samples of each row (-1 where missing)."""
        return self._lengths

    def isna(self) -> npt.NDArray[np.bool_]:
        return self._lengths < 0

    def flat(self) -> tuple[FloatArray, IntArray]:
        """Every row's samples end to end, and the number of each row's samples (no row may
        be missing). A slice of the shared array when the rows are still in storage order."""
        if (self._lengths < 0).any():
            raise ValueError("samples: a row is missing")
        n = len(self)
        if n == 0:
            return np.empty(0, dtype=np.float64), self._lengths.copy()
        ends = self._starts + self._lengths
        first = int(self._starts[0])
        if n == 1 or bool((self._starts[1:] == ends[:-1]).all()):
            return self._flat[first : int(ends[-1])], self._lengths
        # Rows selected or reordered: one gather of their runs.
        return self._flat[run_indices(self._starts, self._lengths)], self._lengths

    def _row(self, i: int) -> FloatArray | None:
        length = int(self._lengths[i])
        if length < 0:
            return None
        start = int(self._starts[i])
        return self._flat[start : start + length]

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, int | np.integer):
            i = int(item)
            if i < 0:
                i += len(self)
            if not 0 <= i < len(self):
                raise IndexError(f"samples: row {item} out of range")
            return self._row(i)
        item = pd.api.indexers.check_array_indexer(self, item)
        return type(self)(self._flat, self._starts[item], self._lengths[item])

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self._row(i)

    def __array__(self, dtype: Any = None, copy: Any = None) -> npt.NDArray[Any]:
        column = np.empty(len(self), dtype=object)
        column[:] = list(self)
        return column

    def __eq__(self, other: Any) -> Any:
        """Row by row: whether the two rows hold the same samples."""
        if not isinstance(other, SamplesArray | Sequence | np.ndarray) or len(other) != len(self):
            return NotImplemented
        return np.array(
            [a is not None and b is not None and np.array_equal(a, b, equal_nan=True)
             for a, b in zip(self, other, strict=True)],
            dtype=bool,
        )  # fmt: skip

    # ----------------------------------------------------------------- rows moved

    def take(
        self, indices: Any, *, allow_fill: bool = False, fill_value: Any = None
    ) -> SamplesArray:
        if allow_fill and fill_value is not None:
            raise ValueError("samples: only a missing row (None) can fill")
        positions: IntArray = np.asarray(take(
            np.arange(len(self), dtype=np.int64), np.asarray(indices, dtype=np.int64),
            allow_fill=allow_fill, fill_value=-1,
        ), dtype=np.int64)  # fmt: skip
        present = positions >= 0
        starts = np.zeros(len(positions), dtype=np.int64)
        lengths = np.full(len(positions), -1, dtype=np.int64)
        starts[present] = self._starts[positions[present]]
        lengths[present] = self._lengths[positions[present]]
        return type(self)(self._flat, starts, lengths)

    def copy(self) -> SamplesArray:
        return type(self)(self._flat, self._starts.copy(), self._lengths.copy())

    @classmethod
    def _concat_same_type(cls, to_concat: Sequence[SamplesArray]) -> SamplesArray:
        arrays = list(to_concat)
        if arrays and all(a._flat is arrays[0]._flat for a in arrays):
            return cls(
                arrays[0]._flat,
                np.concatenate([a._starts for a in arrays]),
                np.concatenate([a._lengths for a in arrays]),
            )
        # Different flat arrays: the rows' samples copied into a new one, in order.
        rows = [a.compact() for a in arrays]
        flat = np.concatenate([r._flat for r in rows]) if rows else np.empty(0)
        offsets = np.cumsum([0] + [len(r._flat) for r in rows[:-1]])
        starts = np.concatenate([r._starts + o for r, o in zip(rows, offsets, strict=True)])
        return cls(flat, starts.astype(np.int64),
                   np.concatenate([r._lengths for r in rows]))  # fmt: skip

    def compact(self) -> SamplesArray:
        """The same rows over a flat array of their samples only (what pickling keeps)."""
        present = self._lengths >= 0
        kept = self[present]
        flat, lengths = kept.flat()
        packed = SamplesArray.from_lengths(np.array(flat, dtype=np.float64), lengths)
        if present.all():
            return packed
        positions = np.full(len(self), -1, dtype=np.int64)
        positions[present] = np.arange(len(kept))
        return packed.take(positions, allow_fill=True)

    def __reduce__(self) -> tuple[Any, ...]:
        packed = self.compact()
        return (SamplesArray, (packed._flat, packed._starts, packed._lengths))

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("the samples column is read-only")
