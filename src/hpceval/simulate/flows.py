"""Flow-dependent NIC bandwidth and per-message NIC serialisation (issue 21).

Two things a PingPong cannot show, both about a node's NIC carrying several flows at once:

- **Bandwidth per flow.** TCP stacks and virtual NICs do not divide a link evenly and
  losslessly among flows: the aggregate of p flows may stay at a lone flow's bandwidth (a
  wire-bound 1 GbE), fall below it (a hypervisor's virtual NIC), or exceed it (a fast link
  one TCP stream cannot fill). SimGrid's max-min sharing divides a link's capacity, scaled
  by SMPI's bandwidth factor, evenly among its flows (hpceval.simulate.contention). So the
  node link carries k(p) x the PingPong's bandwidth with p flows, and each of the p flows
  gets k(p)/p of a lone flow's: k(p) = p x bw_pair(p) / bw_pair(1), read off mpibench's
  `multi_pingpong` (p pairs across two nodes at once) at its largest size. Between measured
  pair counts k is interpolated in log p; beyond the largest it keeps the last segment's
  log-slope, bounded to [1/64, the largest measured k] (stated: nothing was measured there).
  Without concurrent pairs (a published profile), k at the rings' ranks per node is fitted
  on the random ring's bandwidth, as before (hpceval.simulate.contention).

- **Per-message serialisation.** SMPI's latency is a pure delay: any number of messages
  leave a NIC at once, so HPCC's random ring (most neighbours on other nodes: many small
  messages through each NIC) came out as fast as the natural ring, −45 to −74 % of the
  published random-ring latency. A NIC (and a TCP stack, and a hypervisor's packet path)
  handles messages one after the other. The model gives every message a gap g on the node
  link: part of the small-message start-up is moved from SMPI's latency term into its
  bandwidth term, which the node's concurrent flows share, so p messages leaving a node
  together take p·g instead of g, while a lone message keeps its PingPong time. SMPI's
  bandwidth factor is piecewise constant in the size, so every measured size of the
  calibration's curve gets its own bandwidth factor, chosen so that
  (n + 16) / (factor · B) = g + (n + 16) / β of its segment (exact at the measured sizes;
  between two of them the gap part grows with the size, by at most (n' + 16) / (n + 16)).
  A segment whose start-up (less the overheads) is below g gets its start-up as its gap,
  so that the PingPong keeps its time at every size.
  g comes from the concurrent pairs' small-message latency, lat(p) − lat(1) =
  g·(p / k(p) − 1) (a non-negative least-squares slope; the gap is a bandwidth term, so a
  node link k(p) x as wide shortens it), or, without them, is fitted on the random ring's
  latency (bisection, after k; hpceval.simulate.contention).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from hpceval.model import Origin
from hpceval.simulate.factors import SMPI_ENVELOPE_BYTES
from hpceval.simulate.pooling import median_over_runs, newest, runs_text
from hpceval.store import Store

MIN_NIC_SCALE: Final = 1 / 64
FLOW_PATTERN: Final = "multi_pingpong"


@dataclass(frozen=True)
class FlowFigures:
    """Per-pair PingPong across two nodes with 1, 2, 4 ... pairs at once: latency (µs, half a
    round trip of the slowest pair) at `small`, bandwidth (MB/s per pair) at `large`."""

    pairs: tuple[int, ...]
    small: int
    large: int
    latency_us: tuple[float, ...]
    bandwidth_mb_s: tuple[float, ...]
    origin: str

    def __post_init__(self) -> None:
        if len(self.pairs) < 2 or self.pairs[0] != 1 or list(self.pairs) != sorted(
            set(self.pairs)):  # fmt: skip
            raise ValueError("flows: need 1 pair and at least one larger pair count")
        if not len(self.latency_us) == len(self.bandwidth_mb_s) == len(self.pairs):
            raise ValueError("flows: one latency and one bandwidth per pair count")
        values = (*self.latency_us, *self.bandwidth_mb_s)
        if not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError("flows: latencies and bandwidths must be positive")
        if not 0 <= self.small < self.large:
            raise ValueError("flows: the latency size must be below the bandwidth size")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FlowFigures:
        return cls(tuple(d["pairs"]), int(d["small"]), int(d["large"]), tuple(d["latency_us"]),
                   tuple(d["bandwidth_mb_s"]), str(d["origin"]))  # fmt: skip


def nic_scales(flows: FlowFigures) -> tuple[tuple[int, float], ...]:
    """k(p) = p · bw(p) / bw(1) at every measured pair count (k(1) = 1)."""
    lone = flows.bandwidth_mb_s[0]
    return tuple(
        (p, max(MIN_NIC_SCALE, p * bw / lone))
        for p, bw in zip(flows.pairs, flows.bandwidth_mb_s, strict=True)
    )


def scale_at(scales: Sequence[tuple[int, float]], flows: int) -> float:
    """k at `flows` flows per node from measured (p, k(p)): log-log interpolation between
    them; beyond the largest, the last segment's log-slope, within [1/64, the largest k]."""
    if flows <= 1 or not scales:
        return 1.0
    points = sorted(scales)
    for (p0, k0), (p1, k1) in itertools.pairwise(points):
        if p0 <= flows <= p1:
            w = math.log(flows / p0) / math.log(p1 / p0)
            return float(math.exp(math.log(k0) + w * math.log(k1 / k0)))
    (p0, k0), (p1, k1) = points[-2], points[-1]
    slope = math.log(k1 / k0) / math.log(p1 / p0)
    k = math.exp(math.log(k1) + slope * math.log(flows / p1))
    return float(min(max(k for _, k in points), max(MIN_NIC_SCALE, k)))


def fitted_gap_s(flows: FlowFigures) -> float:
    """g ≥ 0 of lat(p) − lat(1) = g·(p / k(p) − 1), least squares through the origin (s):
    p messages of gap g share a node link k(p) x a lone flow's, so the last leaves after
    p·g / k(p)."""
    scales = dict(nic_scales(flows))
    extra = [(p / scales[p] - 1, (lat - flows.latency_us[0]) * 1e-6)
             for p, lat in zip(flows.pairs, flows.latency_us, strict=True) if p > 1]  # fmt: skip
    denominator = sum(x * x for x, _ in extra)
    if denominator <= 0:
        return 0.0
    return max(0.0, sum(x * y for x, y in extra) / denominator)


def gap_bandwidth_factors(
    sizes: Sequence[int],
    segments: Sequence[tuple[int, float, float]],
    gap_s: float,
    route_bandwidth_Bps: float,
) -> tuple[list[float], list[tuple[int, float]]]:
    """The gap moved from the start-up into the bandwidth term: the segments' start-ups less
    their gap (µs), and (size, bandwidth factor) for every measured size.

    `segments` are (first size, start-up µs, β MB/s), the overheads already taken off. A
    segment's gap is g or, if less, its whole start-up; the bandwidth term of size n is then
    gap + (n + 16) / β, so every measured size keeps its PingPong time."""
    gaps = [min(gap_s, alpha_us * 1e-6) for _, alpha_us, _ in segments]
    firsts = [first for first, _, _ in segments]
    pairs = []
    for n in sorted(sizes):
        k = max((i for i, first in enumerate(firsts) if first <= n), default=0)
        beta = segments[k][2]
        wire = (n + SMPI_ENVELOPE_BYTES) / (beta * 1e6) if math.isfinite(beta) else 0.0
        term = gaps[k] + wire
        factor = (n + SMPI_ENVELOPE_BYTES) / (route_bandwidth_Bps * term) if term > 0 else math.inf
        pairs.append((n, factor))
    return [alpha_us - g * 1e6 for (_, alpha_us, _), g in zip(segments, gaps, strict=True)], pairs


@dataclass(frozen=True)
class FlowModel:
    """What the calibration holds of the NIC's flows: the gap per message (s) and the NIC
    scale per flow count (empty: the rings' k(P), hpceval.simulate.contention)."""

    gap_s: float = 0.0
    scales: tuple[tuple[int, float], ...] = ()
    fitted_on: str = ""

    def describe(self) -> str:
        if not self.fitted_on:
            return "NIC serialisation: none (no concurrent pairs or rings to fit it on)"
        ks = ", ".join(f"k({p})={k:.3g}" for p, k in self.scales)
        return (f"NIC serialisation gap {self.gap_s * 1e6:.3g} µs per message"
                + (f"; flow-dependent NIC bandwidth {ks} (log p interpolation, last slope "
                   "beyond)" if ks else "")
                + f"; fitted on {self.fitted_on}")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"gap_s": self.gap_s, "scales": [list(s) for s in self.scales],
                "fitted_on": self.fitted_on}  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> FlowModel:
        if not d:
            return cls()
        return cls(float(d.get("gap_s", 0.0)),
                   tuple((int(p), float(k)) for p, k in d.get("scales", [])),
                   str(d.get("fitted_on", "")))  # fmt: skip


def flow_model(flows: FlowFigures) -> FlowModel:
    return FlowModel(
        fitted_gap_s(flows), nic_scales(flows),
        f"{flows.origin}: mpibench multi_pingpong with {', '.join(map(str, flows.pairs))} "
        f"pairs (latency at {flows.small} B: gap; bandwidth at {flows.large} B: NIC scale)",
    )  # fmt: skip


def store_flows(store: Store, runs: Mapping[int, Any],
                pool_runs: int | None = None) -> FlowFigures | None:  # fmt: skip
    """The concurrent pairs across two nodes of the latest run that measured 1 pair and more
    (its pair counts; latency at its smallest size, bandwidth at its largest), each figure
    the median over the runs (the latest `pool_runs`; None: all) that measured the same
    pair counts at those sizes, each run's figure the median of its samples.
    Oversubscribed points count (each pair's two ranks are on different nodes; on an
    emulated cluster every flow count above 1 shares the host's cores, stated in the
    run's provenance)."""
    # run -> pairs -> (metric, size) -> samples
    found: dict[int, dict[int, dict[tuple[str, int], list[float]]]] = {}
    for sm in store.measurements(benchmark="mpibench"):
        m, p = sm.measurement, sm.measurement.parameters
        if sm.run_id not in runs or m.origin is Origin.SIMULATED:
            continue
        if p.get("pattern") != FLOW_PATTERN or int(p.get("nodes", 1)) != 2:
            continue
        if m.metric not in ("latency", "bandwidth"):
            continue
        pairs = int(p.get("pairs", 0))
        samples = list(m.samples) or [m.value]
        found.setdefault(sm.run_id, {}).setdefault(pairs, {}).setdefault(
            (m.metric, int(p["size"])), []).extend(samples)  # fmt: skip
    for _latest, by_pairs in sorted(found.items(), reverse=True):
        counts = sorted(by_pairs)
        if len(counts) < 2 or counts[0] != 1:
            continue
        sizes = sorted(set.intersection(*({s for _, s in by_pairs[c]} for c in counts)))
        if len(sizes) < 2:
            continue
        small, large = sizes[0], sizes[-1]
        wanted = [(c, ("latency", small)) for c in counts] + [
            (c, ("bandwidth", large)) for c in counts]  # fmt: skip
        if any(figure not in by_pairs[c] for c, figure in wanted):
            continue
        chosen = newest((r for r, pairs in found.items()
                         if all(figure in pairs.get(c, {}) for c, figure in wanted)),
                        pool_runs)  # fmt: skip
        pooled = [median_over_runs(found[r][c][figure] for r in chosen) for c, figure in wanted]
        return FlowFigures(tuple(counts), small, large, tuple(pooled[:len(counts)]),
                           tuple(pooled[len(counts):]),
                           runs_text((runs[r].origin.value for r in chosen), chosen))  # fmt: skip
    return None
