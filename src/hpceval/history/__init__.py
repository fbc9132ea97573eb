"""A platform's stored runs over time: series per point, change points (ruptures + a
permutation test), and the regression gate against the recent runs."""

from __future__ import annotations

from hpceval.history.changepoints import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_SIZE,
    DEFAULT_PERMUTATIONS,
    ChangePoint,
    detect,
    ratio_interval,
)
from hpceval.history.gate import (
    DEFAULT_GATE_ALPHA,
    DEFAULT_MIN_EFFECT,
    DEFAULT_WINDOW,
    DatedChange,
    GateResult,
    check_against_history,
    series_changes,
    utc,
)
from hpceval.history.series import CHANGE_FIELDS, RunPoint, Series, load_history

__all__ = [
    "CHANGE_FIELDS",
    "DEFAULT_ALPHA",
    "DEFAULT_GATE_ALPHA",
    "DEFAULT_MIN_EFFECT",
    "DEFAULT_MIN_SIZE",
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_WINDOW",
    "ChangePoint",
    "DatedChange",
    "GateResult",
    "RunPoint",
    "Series",
    "check_against_history",
    "detect",
    "load_history",
    "ratio_interval",
    "series_changes",
    "utc",
]
