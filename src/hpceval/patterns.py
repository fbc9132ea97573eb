"""The communication patterns mpibench measures: the vocabulary its measurements carry in
their ``pattern`` parameter, shared by the benchmark, the analysis and the report (which
import it from here, without the benchmark's own dependencies)."""

from __future__ import annotations

from typing import Literal, get_args

Pattern = Literal[
    "pingpong",
    "pingping",
    "sendrecv",
    "exchange",
    "bcast",
    "reduce",
    "allreduce",
    "alltoall",
    "allgather",
    "barrier",
    "natural_ring",
    "random_ring",
    "multi_pingpong",
]
# The order of IMB's and HPCC's reports, used for display.
PATTERNS: tuple[str, ...] = get_args(Pattern)
PAIR_PATTERNS = frozenset({"pingpong", "pingping"})
POINT_TO_POINT = frozenset({"pingpong", "pingping", "sendrecv", "exchange"})
RINGS = frozenset({"natural_ring", "random_ring"})
COLLECTIVES = frozenset({"bcast", "reduce", "allreduce", "alltoall", "allgather", "barrier"})
REDUCTIONS = frozenset({"reduce", "allreduce"})
# Concurrent flows: rank i plays PingPong with rank i + ranks/2, every pair at once.
CONCURRENT_PAIRS = frozenset({"multi_pingpong"})
