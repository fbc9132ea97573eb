"""Which point of a platform is compared with which point of the baseline (docs/compare.md).

A *workload* is what was computed: the benchmark, metric, unit and every point parameter
but the placement facets (`hpceval.labels.PLACEMENT_FACETS`: nodes, ranks per node,
binding, oversubscription, pair kind). The rank count and the threads per rank belong to
the workload. Each side (a platform's measurements of one origin) may have measured a
workload at several placements; a *mode* picks the pairs:

- ``default`` (the default): each platform as a user would run it, at its default
  placement for that rank count (`PlatformConfig.default_placement`, from the platform file
  the run recorded): "how much slower is my code there". Without a platform file, the
  measured placement with the fewest nodes stands for the default (and that is noted).
- ``best``: each platform at its best measured placement for the workload (the best pooled
  mean in the metric's direction): "how fast can it be made to go".
- ``same``: like for like, only the points measured at the same placement on both sides
  (every parameter equal): "what does the platform cost at a fixed placement".

Points without counterpart are listed with the reason (`Unmatched`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pandas as pd

from hpceval.analysis.frame import IntArray, group_codes
from hpceval.errors import UserError
from hpceval.labels import PLACEMENT_FACETS, placement_label
from hpceval.units import HIGHER_IS_BETTER

if TYPE_CHECKING:  # the CLI starts without pydantic (tests/test_cli.py)
    from hpceval.config import PlatformConfig


class PlacementMode(StrEnum):
    DEFAULT = "default"
    BEST = "best"
    SAME = "same"


MODE_QUESTIONS: Final[Mapping[PlacementMode, str]] = {
    PlacementMode.DEFAULT: "each platform at its default placement (as a user would run it)",
    PlacementMode.BEST: "each platform at its best measured placement",
    PlacementMode.SAME: "like for like: the same placement on both sides",
}

UNMATCHED_COLUMNS: Final = (
    "platform",
    "side",
    "benchmark",
    "metric",
    "workload",
    "placement",
    "reason",
)


def parse_mode(text: str) -> PlacementMode:
    try:
        return PlacementMode(text)
    except ValueError:
        known = ", ".join(m.value for m in PlacementMode)
        raise UserError(f"--placement {text!r}: use one of {known}") from None


@dataclass(frozen=True)
class Matched:
    """Pairs of pooled groups (platform group, baseline group) and what stayed unpaired."""

    platform_groups: IntArray
    baseline_groups: IntArray
    unmatched: pd.DataFrame  # UNMATCHED_COLUMNS, one row per point without counterpart


def match_groups(
    keys: pd.DataFrame,
    mean: np.ndarray[Any, np.dtype[np.float64]],
    count: IntArray,
    g_side: IntArray,
    base_side: int,
    compared: Sequence[int],
    side_names: Sequence[str],
    side_platforms: Sequence[str],
    mode: PlacementMode,
    configs: Mapping[str, PlatformConfig],
) -> Matched:
    """Pair the pooled groups (rows of `keys`: platform, origin and point columns) of every
    compared side with the baseline's, by `mode` (module docstring)."""
    point_cols = [c for c in keys.columns if c not in ("platform", "origin")]
    facets = [c for c in PLACEMENT_FACETS if c in point_cols]
    workload_cols = [c for c in point_cols if c not in facets]
    by = point_cols if mode is PlacementMode.SAME else workload_cols
    key, _ = group_codes(keys, by) if len(keys) else (np.zeros(0, dtype=np.int64), None)
    work, _ = group_codes(keys, workload_cols) if len(keys) else (key, None)
    n_keys = int(key.max()) + 1 if len(key) else 1
    side_key = g_side * n_keys + key
    if mode is PlacementMode.SAME:
        chosen = np.ones(len(keys), dtype=bool)
        missing_default: list[tuple[int, str]] = []
    else:
        chosen, missing_default = _representatives(
            keys, mean, count, g_side, side_key, side_platforms, mode, configs
        )
    is_base = g_side == base_side
    base_of_key = np.full(n_keys, -1, dtype=np.int64)
    base_of_key[key[chosen & is_base]] = np.flatnonzero(chosen & is_base)
    others = np.flatnonzero(chosen & ~is_base)
    partner = base_of_key[key[others]]
    paired = partner >= 0
    rows: list[dict[str, Any]] = []
    # Everything below loops over the unpaired points only.
    n_work = int(work.max()) + 1 if len(work) else 1
    side_work_code = g_side * n_work + work
    base_work = np.unique(work[is_base])

    def placements(side: int, w: int) -> str:
        groups = np.flatnonzero(side_work_code == side * n_work + w)
        return "; ".join(sorted({_label(keys, int(g)) for g in groups}))

    base_name = side_names[base_side]
    for g in others[~paired].tolist():
        w = int(work[g])
        if not np.isin(w, base_work):
            reason = f"{base_name} did not measure this workload"
        elif mode is PlacementMode.SAME:
            reason = f"{base_name} measured it only at {placements(base_side, w)}"
        else:
            reason = f"{base_name} did not measure it at its default placement"
        rows.append(_row(keys, g, side_names[int(g_side[g])], "platform", reason))
    for g, expected in missing_default:
        side = int(g_side[g])
        measured = placements(side, int(work[g]))
        reason = f"its default placement ({expected}) was not measured (measured: {measured})"
        rows.append(
            _row(keys, g, side_names[side], "baseline" if side == base_side else "platform", reason)
        )
    # Baseline points a platform lacks altogether (what it measured otherwise is listed
    # above from its own side): found column-wise, then listed one by one.
    paired_codes = np.unique(g_side[others[paired]] * n_keys + key[others[paired]])
    measured_codes = np.unique(side_work_code)
    base_groups = np.flatnonzero(chosen & is_base)
    for side in sorted(compared):
        lacking = ~np.isin(side * n_keys + key[base_groups], paired_codes) & ~np.isin(
            side * n_work + work[base_groups], measured_codes
        )
        for g in base_groups[lacking].tolist():
            rows.append(
                _row(keys, g, side_names[side], "baseline", "not measured on this platform")
            )
    unmatched = pd.DataFrame(rows, columns=list(UNMATCHED_COLUMNS))
    return Matched(others[paired], partner[paired], unmatched)


def _representatives(
    keys: pd.DataFrame,
    mean: np.ndarray[Any, np.dtype[np.float64]],
    count: IntArray,
    g_side: IntArray,
    side_work: IntArray,
    side_platforms: Sequence[str],
    mode: PlacementMode,
    configs: Mapping[str, PlatformConfig],
) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], list[tuple[int, str]]]:
    """One group per (side, workload): the default or the best placement; and, for the
    default mode, the (group, expected placement) of workloads whose default was not
    measured."""
    n = len(keys)
    nodes = _numbers(keys, "nodes")
    per_node = _numbers(keys, "ranks_per_node")
    binding = _texts(keys, "binding")
    pair = _texts(keys, "pair")
    oversubscribed = _texts(keys, "oversubscribed") == "True"
    if mode is PlacementMode.BEST:
        units = keys["unit"].astype(object).to_numpy()
        higher = np.asarray([HIGHER_IS_BETTER.get(str(u), True) for u in units], dtype=bool)
        score = np.where(higher, -mean, mean)
        order = np.lexsort((-count, score, side_work))
        first = order[np.unique(side_work[order], return_index=True)[1]]
        chosen = np.zeros(n, dtype=bool)
        chosen[first] = True
        return chosen, []
    candidate = np.ones(n, dtype=bool)
    expected = np.full(n, "", dtype=object)
    ranks = _numbers(keys, "ranks")
    threads = _numbers(keys, "threads_per_rank")
    # The default placement of each distinct (platform, ranks, threads), not of each group.
    known = ~(np.isnan(nodes) | np.isnan(per_node) | np.isnan(ranks))
    t = np.where(np.isnan(threads), 1, threads)
    # A platform file that cannot hold what was measured (fewer nodes: not the file the
    # runs describe) says nothing of the default: then any measured placement may be it.
    usable: dict[int, PlatformConfig | None] = {}
    for side in np.unique(g_side).tolist():
        config = configs.get(side_platforms[side])
        most = np.nanmax(np.where(g_side == side, nodes, np.nan), initial=0.0)
        usable[side] = config if config is not None and not most > config.nodes else None
    with_file = known & np.asarray([usable[int(x)] is not None for x in g_side], dtype=bool)
    rows = np.flatnonzero(with_file)
    if len(rows):
        # One look-up per distinct (side, ranks, threads), gathered back to the groups.
        triples = np.stack([g_side[rows], ranks[rows], t[rows]], axis=1).astype(np.int64)
        distinct, back = np.unique(triples, axis=0, return_inverse=True)
        want_nodes = np.full(len(distinct), np.nan)
        want_per_node = np.full(len(distinct), np.nan)
        labels = ["none: the ranks do not spread evenly"] * len(distinct)
        for d, (side, r, threads_) in enumerate(distinct.tolist()):
            config = usable[side]
            assert config is not None
            try:
                want = config.default_placement(r, threads_)
            except UserError:
                continue
            want_nodes[d], want_per_node[d] = want.nodes, want.ranks_per_node
            labels[d] = placement_label({**want.as_parameters(), "binding": None})
        back = back.reshape(len(rows))
        same_nodes = want_nodes[back] == nodes[rows]
        candidate[rows] = same_nodes & (want_per_node[back] == per_node[rows])
        expected[rows] = np.asarray(labels, dtype=object)[back]
    # Preference among candidates: cores bound, not oversubscribed, the pair kind that the
    # placement implies (inter-node on several nodes), fewest nodes, most samples.
    inter = pair == "inter-node"
    implied = np.where(np.nan_to_num(nodes, nan=1) > 1, inter, ~inter) | (pair == "")
    order = np.lexsort(
        (
            -count,
            np.nan_to_num(nodes, nan=0),
            ~implied,
            oversubscribed,
            (binding != "core") & (binding != ""),
            ~candidate,
            side_work,
        )
    )
    first = order[np.unique(side_work[order], return_index=True)[1]]
    chosen = np.zeros(n, dtype=bool)
    chosen[first[candidate[first]]] = True
    missing = [(int(g), str(expected[int(g)])) for g in first[~candidate[first]]]
    return chosen, missing


def _numbers(keys: pd.DataFrame, column: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    if column not in keys.columns:
        return np.full(len(keys), np.nan)
    return np.asarray(pd.to_numeric(keys[column], errors="coerce"), dtype=np.float64)


def _texts(keys: pd.DataFrame, column: str) -> np.ndarray[Any, np.dtype[np.str_]]:
    if column not in keys.columns:
        return np.full(len(keys), "", dtype=object)
    series = keys[column]
    out = series.astype(str).to_numpy(dtype=object)
    out[series.isna().to_numpy()] = ""
    return out


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def _label(keys: pd.DataFrame, g: int) -> str:
    return placement_label({str(k): v for k, v in keys.iloc[g].items()}) or "no placement"


def _row(keys: pd.DataFrame, g: int, platform: str, side: str, reason: str) -> dict[str, Any]:
    record = keys.iloc[g].to_dict()
    workload = " ".join(
        f"{k}={_plain(v)}"
        for k, v in record.items()
        if k not in ("platform", "origin", "benchmark", "metric", "unit")
        and k not in PLACEMENT_FACETS
        and not _missing(v)
    )
    return {
        "platform": platform,
        "side": side,
        "benchmark": str(record["benchmark"]),
        "metric": str(record["metric"]),
        "workload": workload,
        "placement": _label(keys, g),
        "reason": reason,
    }


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v
