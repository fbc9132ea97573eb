"""The one placement notation every table and figure uses (docs/compare.md, "Placement labels").

`4 nodes × 1 rank × 1 thread, inter-node`: nodes × ranks per node × threads per rank, then
where the ranks talk (the pair kind of a ping-pong, else inter-node on several nodes and
intra-node on one), then what is unusual: a binding other than cores, oversubscription
(more ranks × threads than the node has cores). A leaf: it reads plain parameter mappings,
so that every layer (analysis, report, show, the CLI) can use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

# The parameters that say where ranks ran (the *placement*), not what was computed.
PLACEMENT_FACETS: Final[tuple[str, ...]] = (
    "nodes",
    "ranks_per_node",
    "binding",
    "oversubscribed",
    "pair",
)
# Every parameter the notation writes (the facets, the rank count and the threads).
PLACEMENT_PARAMETERS: Final[frozenset[str]] = frozenset(
    {*PLACEMENT_FACETS, "ranks", "threads_per_rank"}
)


def _plain(value: Any) -> Any:
    """None for a missing value (None, NaN, pandas' NA), the Python value otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if type(value).__name__ == "NAType":
        return None
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def _count(n: Any, one: str, many: str) -> str:
    whole = int(n) if isinstance(n, float) and n.is_integer() else n
    return f"{whole} {one if whole == 1 else many}"


def placement_label(parameters: Mapping[str, Any]) -> str:
    """`2 nodes × 1 rank × 1 thread, inter-node` (see the module docstring); `4 ranks` when
    the nodes are not known; an empty string when nothing says where ranks ran."""
    p = {k: _plain(parameters.get(k)) for k in PLACEMENT_PARAMETERS}
    nodes, per_node, ranks = p["nodes"], p["ranks_per_node"], p["ranks"]
    threads = p["threads_per_rank"] if p["threads_per_rank"] is not None else 1
    if nodes is not None and per_node is not None:
        head = (
            f"{_count(nodes, 'node', 'nodes')} × {_count(per_node, 'rank', 'ranks')} × "
            f"{_count(threads, 'thread', 'threads')}"
        )
    elif ranks is not None:
        head = f"{_count(ranks, 'rank', 'ranks')} × {_count(threads, 'thread', 'threads')}"
    else:
        return ""
    parts = [head]
    if p["pair"] is not None:
        parts.append(str(p["pair"]))
    elif nodes is not None:
        parts.append("inter-node" if int(nodes) > 1 else "intra-node")
    if p["binding"] not in (None, "core"):
        parts.append("unbound" if p["binding"] == "none" else f"bound to {p['binding']}")
    if p["oversubscribed"]:
        parts.append("oversubscribed")
    return ", ".join(parts)


def described(parameters: Mapping[str, Any]) -> str:
    """Every parameter of a series or configuration: the placement in the notation above,
    then the others as name=value (`2 nodes × 1 rank × 1 thread, inter-node, pattern=...`)."""
    where = placement_label(parameters)
    shown = PLACEMENT_PARAMETERS if where else frozenset()
    rest = " ".join(
        f"{k}={_plain(v)}"
        for k, v in parameters.items()
        if k not in shown and _plain(v) is not None
    )
    return ", ".join(x for x in (where, rest) if x)
