"""What a PingPong cannot tell: per-message overheads and a node's NIC shared by its flows.

A PingPong sends one message at a time, so its curve fixes the start-up time and the
bandwidth of a lone message and nothing else. Two figures of the same platform measured
with every rank busy fix two more parameters (HPCC's rings: every rank exchanges with both
neighbours at once):

- the **per-message overhead**. SMPI charges `smpi/os` (blocking send), `smpi/ois` (MPI_Isend)
  and `smpi/or` (receive) as CPU time of the rank, one message after the other, and only
  the rest of the start-up as wire latency, which concurrent messages overlap. Without
  overheads the ring (two Isends, two Irecvs per iteration) paid one latency for both
  messages and came out at half the PingPong latency (issue 21). The overhead is a share
  s of the first PingPong segment's start-up α, split evenly between the send and the
  receive side (os = ois = or = s·α/2: one figure cannot split it further; stated); the
  latency factors give the wire α - s·α, so that the PingPong keeps its time. s is fitted
  on the natural ring's latency at its small size (bisection on s: the ring latency grows
  with s).
- the overhead is global in SMPI (one value for every path): send + receive overhead is
  capped at half a measured or published intra-node PingPong start-up (the loopback is
  refitted on the rest, so that PingPong keeps its time), and the cap is flagged when it
  binds; an assumed intra-node curve caps nothing, and its small messages then pay the
  overheads (the PingPong residuals with the overheads show by how much).

A node's NIC is shared by its ranks' flows (each node's link in SimGrid's max-min sharing;
SPLITDUPLEX: each direction apart). SMPI's bandwidth factor scales a flow's share of every
link it crosses, not only its bound (measured: a link 64 x narrower with factors 64 x
larger gave the same random ring), so max-min sharing cannot give a node's flows together
more, or less, than a lone flow; TCP and virtual NICs do (Magellan's VMs: a lone flow at
1.28 GB/s, 12 flows of a node together at about 0.18 GB/s). SimGrid's NONLINEAR sharing,
which would, is not reachable from a platform file. The model therefore makes the **NIC
bandwidth depend on the ranks per node**, as placed: with one rank per node a node link
carries the PingPong's bandwidth (scale 1: the calibration), with P ranks per node (the
rings' placement) k x that, k fitted on the random ring's bandwidth at its large size
(bisection on log k in [1/64, 1]); at p ranks per node the scale is k^(ln p / ln P)
(log-linear between the two measured placements, extrapolated beyond P: stated). A
random ring faster than scale 1 gives (many flows filling a NIC a lone flow cannot) is
flagged, not fitted.

A node's NIC also handles messages one after the other (hpceval.simulate.flows): a
per-message **gap** g on the node link, which concurrent messages share. With mpibench's
concurrent pairs measured, g and the NIC scale per flow count come from them (closed forms,
hpceval.simulate.flows) and both random-ring figures are checks; without them (a published
profile), g is fitted on the random ring's latency at its small size (bisection on g in
[0, the start-up left after the overheads]; it grows with g), last: after the NIC scale,
because the gap is a bandwidth term and a node link k x as wide makes it 1/k x as long.

The ring figures not fitted are the checks, reported with their residuals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from hpceval.simulate.flows import FlowModel, scale_at

RingPattern = Literal["natural_ring", "random_ring"]

MIN_SHARE: Final = 0.0
MAX_SHARE: Final = 0.95  # some wire latency always remains
MIN_NIC_SCALE: Final = 1 / 64
FIT_TOLERANCE: Final = 0.03  # a bisection stops within this of its target
MAX_STEPS: Final = 8


@dataclass(frozen=True)
class RingFigures:
    """Ring latency (µs, per message, at `small`) and bandwidth (MB/s per process, at
    `large`) with every rank busy, `ranks` ranks at `ppn` per node."""

    ranks: int
    ppn: int
    small: int
    large: int
    natural_latency_us: float
    random_latency_us: float
    natural_bandwidth_mb_s: float
    random_bandwidth_mb_s: float
    origin: str

    def __post_init__(self) -> None:
        if self.ranks < 4 or self.ppn < 1 or self.ranks % self.ppn or self.ranks // self.ppn < 2:
            raise ValueError(f"rings: {self.ranks} ranks at {self.ppn} per node do not span "
                             "2 nodes of at least one rank")  # fmt: skip
        values = (self.natural_latency_us, self.random_latency_us,
                  self.natural_bandwidth_mb_s, self.random_bandwidth_mb_s)  # fmt: skip
        if not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError("rings: latencies and bandwidths must be positive")
        if not 0 <= self.small < self.large:
            raise ValueError("rings: the latency size must be below the bandwidth size")

    @property
    def nodes(self) -> int:
        return self.ranks // self.ppn

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Contention:
    """The fitted per-message overhead (0: none) and NIC scale k at `nic_ppn` ranks per node
    (1: none)."""

    overhead_share: float
    overhead_s: float  # os = ois = or
    fitted_on: str  # what they were fitted on, in words ("" if nothing)
    flags: tuple[str, ...] = ()
    nic_scale: float = 1.0
    nic_ppn: int = 1
    gap_s: float = 0.0  # NIC serialisation per message (hpceval.simulate.flows)
    flow_scales: tuple[tuple[int, float], ...] = ()  # measured k(p): replaces the log-linear k

    def nic_scale_at(self, ppn: int) -> float:
        """The node link's bandwidth scale with `ppn` ranks per node (1 at one rank)."""
        if self.flow_scales:
            return scale_at(self.flow_scales, ppn)
        if ppn <= 1 or self.nic_ppn <= 1:
            return 1.0
        return float(self.nic_scale ** (math.log(ppn) / math.log(self.nic_ppn)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Contention:
        """A stored contention (older ones lack the later fields: their defaults)."""
        merged = {**asdict(NONE), **d}
        return cls(**{**merged, "flags": tuple(merged["flags"]),
                      "flow_scales": tuple(tuple(x) for x in merged["flow_scales"])})  # fmt: skip


NONE: Final = Contention(0.0, 0.0, "")


# SMPI's collective selectors: the algorithms each MPI library picks by size and ranks.
COLL_SELECTORS: Final[Mapping[str, str]] = {"openmpi": "ompi", "mpich": "mpich"}


def mpi_family(implementation: str | None) -> str | None:
    """ "openmpi" or "mpich" (the MPICH derivatives) for an MPI library's name, else None."""
    text = (implementation or "").lower().replace(" ", "")
    if "openmpi" in text or text == "ompi":
        return "openmpi"
    if any(name in text for name in ("mpich", "mvapich", "intelmpi", "intel(r)mpi")):
        return "mpich"
    return None


def selector_config(family: str | None) -> dict[str, str]:
    selector = COLL_SELECTORS.get(family or "")
    return {"smpi/coll-selector": selector} if selector else {}


def overhead_config(overhead_s: float) -> dict[str, str]:
    """SMPI's piecewise overheads ("size:offset:factor", seconds): a constant per message."""
    value = f"0:{overhead_s:.9g}:0"
    return {"smpi/os": value, "smpi/ois": value, "smpi/or": value}


def bisect(
    measure: Callable[[float], float],
    target: float,
    lo: float,
    hi: float,
    *,
    log: bool = False,
    steps: int = MAX_STEPS,
    tolerance: float = FIT_TOLERANCE,
) -> tuple[float, float, list[tuple[float, float]]]:
    """x in [lo, hi] where the increasing `measure`(x) meets `target`: (x, measure(x),
    every (x, value) tried). At an end of the interval when the target lies beyond it."""

    def mid(a: float, b: float) -> float:
        return math.sqrt(a * b) if log else (a + b) / 2

    tried: list[tuple[float, float]] = []

    def at(x: float) -> float:
        value = measure(x)
        tried.append((x, value))
        return value

    v_lo = at(lo)
    if v_lo >= target * (1 - tolerance):
        return lo, v_lo, tried
    v_hi = at(hi)
    if v_hi <= target * (1 + tolerance):
        return hi, v_hi, tried
    best = min(((lo, v_lo), (hi, v_hi)), key=lambda p: abs(p[1] - target))
    for _ in range(steps):
        x = mid(lo, hi)
        v = at(x)
        if abs(v - target) < abs(best[1] - target):
            best = (x, v)
        if abs(v - target) <= tolerance * target:
            break
        if v < target:
            lo = x
        else:
            hi = x
    return best[0], best[1], tried


# (SMPI settings, platform, pattern, figures wanted) -> (latency µs at small, bandwidth MB/s
# at large) of the ring on the target's ranks and placement; NaN for a figure not wanted (a
# 2 MB ring on 32 ranks is most of a bisection step's time).
RingSimulator = Callable[[Mapping[str, str], Any, RingPattern, frozenset[str]], tuple[float, float]]
LATENCY: Final = frozenset({"latency"})
BANDWIDTH: Final = frozenset({"bandwidth"})
BOTH: Final = LATENCY | BANDWIDTH


def fit_contention(
    rings: RingFigures,
    base_config: Mapping[str, str],
    first_alpha_us: float,
    max_overhead_s: float,
    with_overhead: Callable[[float, float], tuple[dict[str, str], Any]],
    simulate: RingSimulator,
    scale_nic: Callable[[Any, float], Any],
    flows: FlowModel | None = None,
) -> tuple[Contention, dict[str, str], Any, list[dict[str, Any]]]:
    """Fit the overhead share on the natural ring's latency, the NIC gap on the random
    ring's latency and the NIC scale on its bandwidth (gap and scale measured instead when
    `flows` holds concurrent pairs); the ring residuals.

    `with_overhead(o, g)` gives the SMPI settings (latency factors reduced by 2o + g, the
    overheads set, the gap in the per-size bandwidth factors) and the platform (its
    loopback refitted to match) of a per-message overhead o and NIC gap g; o stays below
    `max_overhead_s`; `scale_nic(platform, k)` the platform with node links k x as wide.
    Returns the contention, its settings and platform (at scale 1), and the ring residuals
    (fitted and checks), one dict each."""
    flags: list[str] = []
    cap = min(MAX_SHARE, 2 * max_overhead_s / (first_alpha_us * 1e-6))
    from_pairs = flows is not None and bool(flows.fitted_on)
    gap = flows.gap_s if flows is not None and from_pairs else 0.0

    def natural_latency(share: float) -> float:
        settings, platform = with_overhead(share * first_alpha_us * 1e-6 / 2, gap)
        return simulate({**base_config, **settings}, platform, "natural_ring", LATENCY)[0]

    share, _, _ = bisect(natural_latency, rings.natural_latency_us, MIN_SHARE, cap)
    if share == cap and cap < MAX_SHARE:
        flags.append(
            f"per-message overhead capped at {max_overhead_s * 1e6:.3g} us so that the "
            "intra-node PingPong keeps its start-up (SMPI's overheads are one for all paths)"
        )
    elif share in (MIN_SHARE, MAX_SHARE):
        flags.append(
            f"natural-ring latency {rings.natural_latency_us:g} us is beyond what a per-message "
            f"overhead reaches (share {share:g} of the start-up): other costs (interrupts, "
            "polling) are not modelled"
        )
    overhead_s = share * first_alpha_us * 1e-6 / 2
    left_s = max(0.0, first_alpha_us * 1e-6 - 2 * overhead_s)
    if gap > left_s:
        flags.append(f"NIC gap {gap * 1e6:.3g} us measured is more than the start-up left "
                     f"after the overheads ({left_s * 1e6:.3g} us): bounded")  # fmt: skip
        gap = left_s
    # The NIC scale before the gap: a 2 MB ring hardly feels a gap of microseconds, while
    # the gap's share of a narrower link grows as 1/k (it is a bandwidth term).
    settings, platform = with_overhead(overhead_s, gap)
    config = {**base_config, **settings}
    nic = 1.0
    if from_pairs and flows is not None and flows.scales:
        nic = scale_at(flows.scales, rings.ppn)
    elif rings.ppn >= 2:
        nic, _, _ = bisect(
            lambda k: simulate(config, scale_nic(platform, k), "random_ring", BANDWIDTH)[1],
            rings.random_bandwidth_mb_s, MIN_NIC_SCALE, 1.0, log=True,
        )  # fmt: skip
        if nic == 1.0:
            flags.append(
                f"random-ring bandwidth {rings.random_bandwidth_mb_s:.4g} MB/s is above what "
                "the node links give at a lone flow's bandwidth: a NIC that many flows fill "
                "better than one is not modelled"
            )
        elif nic == MIN_NIC_SCALE:
            flags.append(f"random-ring bandwidth not reached at NIC scale {nic:g}")
    else:
        flags.append("rings at 1 rank per node: the NIC's sharing by a node's ranks is not "
                     "fitted (scale 1 at every placement)")  # fmt: skip
    if not from_pairs and rings.ppn >= 2:

        def random_latency(g: float) -> float:
            settings, platform = with_overhead(overhead_s, g)
            return simulate({**base_config, **settings}, scale_nic(platform, nic),
                            "random_ring", LATENCY)[0]  # fmt: skip

        gap, reached, _ = bisect(random_latency, rings.random_latency_us, 0.0,
                                 MAX_SHARE * left_s)  # fmt: skip
        if reached < rings.random_latency_us * (1 - FIT_TOLERANCE):
            flags.append(f"random-ring latency {rings.random_latency_us:g} us not reached with "
                         f"the whole wire start-up as NIC gap ({gap * 1e6:.3g} us)")  # fmt: skip
        settings, platform = with_overhead(overhead_s, gap)
        config = {**base_config, **settings}
    residuals: list[dict[str, Any]] = []
    for pattern in ("natural_ring", "random_ring"):
        lat, bw = simulate(config, scale_nic(platform, nic), pattern, BOTH)
        name = pattern.split("_")[0]
        for metric, size, simulated, measured, fitted in (
            ("latency", rings.small, lat, getattr(rings, f"{name}_latency_us"),
             pattern == "natural_ring" or (not from_pairs and rings.ppn >= 2)),
            ("bandwidth", rings.large, bw, getattr(rings, f"{name}_bandwidth_mb_s"),
             pattern == "random_ring" and rings.ppn >= 2 and not from_pairs),
        ):  # fmt: skip
            residuals.append({
                "path": pattern, "metric": metric, "size": size, "ranks": rings.ranks,
                "ppn": rings.ppn, "measured": measured, "simulated": simulated,
                "residual": (simulated - measured) / measured, "calibrated": False,
                "fitted": fitted,
            })  # fmt: skip
    what = (f"{flows.fitted_on if flows else ''}; natural-ring latency at {rings.small} B "
            "(overhead)" if from_pairs else
            f"natural-ring latency at {rings.small} B (overhead), random-ring latency at "
            f"{rings.small} B (NIC gap) and bandwidth at {rings.large} B (NIC)")  # fmt: skip
    contention = Contention(
        share, overhead_s,
        f"{rings.origin}: {what}, {rings.ranks} ranks at {rings.ppn} per node",
        tuple(flags), nic, rings.ppn, gap,
        flows.scales if from_pairs and flows is not None else (),
    )  # fmt: skip
    return contention, config, platform, residuals
