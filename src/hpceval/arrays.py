"""Array helpers shared by the store and the analysis (numpy only)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def run_indices(starts: IntArray, lengths: IntArray) -> IntArray:
    """The indices start, start+1, ..., start+length-1 of each (start, length), in order:
    indexing a flat array with them gathers those runs of it end to end, in one step."""
    total = int(lengths.sum())
    if not total:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(ends - lengths, lengths)
    return np.repeat(starts, lengths) + offsets
