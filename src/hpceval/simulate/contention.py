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
  jointly with the NIC gap (below) on both rings' latency at their small size.
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
profile), g is fitted with the overhead, after the NIC scale (the gap is a bandwidth term:
a node link k x as wide makes it 1/k x as long).

The joint fit (hpceval.simulate.jointfit: bounded least squares on the log ratios, every
evaluation a real simulation). What pins what, on a node of P ranks: the PingPong pins
2o + wire + g (kept exactly at every o, g); the natural ring pins o (each rank pays four
overheads where the PingPong pays two, and only two messages per node cross a NIC); the
random ring's latency pins g (about 2P messages per node queue at one NIC); its bandwidth at
2 MB pins k. Fitted one after the other, o took the whole natural-ring excess (up to 95 % of
the start-up) and left g nothing (random ring −33 to −55 % on IB, 10 GbE, TCPoIB, issue 21).
The Jacobian at the solution (condition number, the figure that pins each parameter) is
stored with the calibration and flagged when the parameters are not identifiable.

The ring figures not fitted are the checks, reported with their residuals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from hpceval.simulate.flows import FlowModel, scale_at
from hpceval.simulate.jointfit import JACOBIAN_STEP, fit_jointly, forward_jacobian, identifiability

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
    # The joint fit's Jacobian reading (hpceval.simulate.jointfit.Identifiability.to_dict).
    fit: Mapping[str, Any] = field(default_factory=dict)
    # A node's intra-node message throughput, its ranks' flows share it (None: unshared).
    memory_copy_Bps: float | None = None
    isend_overhead_s: float = 0.0  # smpi/ois (os = or = overhead_s)
    # A shared backbone's bandwidth fitted on the rings at one rank per node (None: as given).
    backbone_Bps: float | None = None
    # gap_s is an emulated cluster's per-message cost on its host's cores (--host-share),
    # paid on the shared backbone, not a NIC's.
    host_gap: bool = False

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
                      "flow_scales": tuple(tuple(x) for x in merged["flow_scales"]),
                      "fit": dict(merged["fit"] or {})})  # fmt: skip


NONE: Final = Contention(0.0, 0.0, "")
# The backbone fit's range: 1/64 to 64 times the backbone as given.
BACKBONE_RANGE: Final = 64.0


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


def isend_config(isend_s: float) -> dict[str, str]:
    """SMPI's Isend overhead alone (a constant per message, seconds)."""
    return {"smpi/ois": f"0:{isend_s:.9g}:0"}


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
    max_isend_overhead_s: float,
    with_overhead: Callable[[float, float], tuple[dict[str, str], Any]],
    simulate: RingSimulator,
    scale_nic: Callable[[Any, float], Any],
    flows: FlowModel | None = None,
    share_memory: Callable[[Any, float], Any] | None = None,
    loopback_Bps: float = 0.0,
    scale_backbone: Callable[[Any, float], Any] | None = None,
    backbone_Bps: float = 0.0,
    cost_on_backbone: bool = False,
) -> tuple[Contention, dict[str, str], Any, list[dict[str, Any]]]:
    """Fit the NIC scale (and the node's memory copies) on the rings' bandwidth, then the
    Isend overhead and the NIC gap jointly on both rings' latency
    (hpceval.simulate.jointfit); gap and scale measured instead when `flows` holds
    concurrent pairs (the Isend overhead alone is fitted on the natural ring then); the
    ring residuals.

    `with_overhead(o, g)` gives the SMPI settings (latency factors reduced by 2o + g, the
    overheads set, the gap in the per-size bandwidth factors) and the platform (its
    loopback refitted to match) of a blocking send/receive overhead o and NIC gap g: the
    PingPong keeps its time whatever o and g. o is held at 0: every figure here has it in
    series with the wire latency, so none tells them apart. The Isend overhead (SMPI's
    `smpi/ois`, which the PingPong's blocking calls do not pay) stays below
    `max_isend_overhead_s`; `scale_nic(platform, k)` the platform with node links k x as
    wide. `share_memory(platform, M)` the platform whose nodes' intra-node messages share
    M B/s (hpceval.simulate.platform): with it and the rings at 2+ ranks per node, M is
    fitted with k on both rings' bandwidth (the natural ring's flows are mostly intra-node,
    the random ring's mostly leave their node), between the lone loopback `loopback_Bps`
    and 4 x ppn times it. `scale_backbone(platform, x)` the platform whose shared backbone
    (`backbone_Bps` as given) is x times as wide: with it and rings at one rank per node
    (no NIC is shared then, every flow crosses the backbone), x is fitted on the random
    ring's bandwidth (an emulated cluster whose transfers share the host's cores: the
    backbone stands for the host). `cost_on_backbone` (the same cluster: its messages are
    copies on the host's shared cores): with the backbone fitted, each message's cost on
    the host is a gap every message pays on that backbone, fitted on the natural ring's
    latency with no Isend overhead; concurrent messages of all nodes then share it, as they
    share the cores (a private Isend overhead would cost the same however many messages the
    host carries at once). Returns the contention, its settings and platform (NIC at scale
    1, memory and backbone as fitted), and the ring residuals (fitted and checks), one dict
    each."""
    flags: list[str] = []
    alpha_s = first_alpha_us * 1e-6
    cap = max_isend_overhead_s / alpha_s
    from_pairs = flows is not None and bool(flows.fitted_on)
    pair_gap = flows.gap_s if flows is not None and from_pairs else 0.0
    # Bandwidths first: a 2 MB ring does not feel microseconds of overhead or gap (the gap's
    # share of a narrower link grows as 1/k, so the latencies are fitted after k).
    settings, platform = with_overhead(0.0, pair_gap)
    config = {**base_config, **settings}
    fit_nic = not from_pairs and rings.ppn >= 2
    fit_memory = bool(share_memory is not None and rings.ppn >= 2 and loopback_Bps > 0)
    nic = scale_at(flows.scales, rings.ppn) if from_pairs and flows and flows.scales else 1.0
    memory: float | None = None
    bandwidth_fit: dict[str, Any] = {}
    if rings.ppn < 2:
        flags.append("rings at 1 rank per node: the NIC's sharing by a node's ranks is not "
                     "fitted (scale 1 at every placement)")  # fmt: skip
    fit_backbone = scale_backbone is not None and rings.ppn < 2 and backbone_Bps > 0
    backbone: float | None = None
    if fit_backbone:
        assert scale_backbone is not None
        # Far below the pairs' aggregate to far above it: SMPI's bandwidth factor also
        # scales a flow's share of the backbone, so the width the ring needs is not the
        # aggregate it moves.
        x, _, _ = bisect(
            lambda x: simulate(config, scale_backbone(platform, x), "random_ring",
                               BANDWIDTH)[1],
            rings.random_bandwidth_mb_s, 1 / BACKBONE_RANGE, BACKBONE_RANGE, log=True,
        )  # fmt: skip
        if x in (1 / BACKBONE_RANGE, BACKBONE_RANGE):
            flags.append(f"random-ring bandwidth not reached with the backbone at {x:g}x "
                         f"{backbone_Bps / 1e6:.4g} MB/s")  # fmt: skip
        backbone = x * backbone_Bps
    if fit_nic or fit_memory:
        top = math.log(4 * rings.ppn)  # memory copies at 4 x ppn loopbacks: never limiting

        def nodes_at(ln_k: float, ln_m: float | None) -> Any:
            nodes = scale_nic(platform, math.exp(ln_k))
            if ln_m is not None and share_memory is not None:
                nodes = share_memory(nodes, loopback_Bps * math.exp(ln_m))
            return nodes

        # Bisections, not a gradient step: over most of their range the ring bandwidths do
        # not move at all with one of the two (a NIC-bound natural ring with memory to
        # spare), where a least-squares step sees a zero gradient and stays put.
        ln_k = math.log(nic)
        if fit_nic:
            k, _, _ = bisect(
                lambda k: simulate(config, nodes_at(math.log(k), None), "random_ring",
                                   BANDWIDTH)[1],
                rings.random_bandwidth_mb_s, MIN_NIC_SCALE, 1.0, log=True,
            )  # fmt: skip
            ln_k = math.log(k)
            if k == 1.0:
                flags.append(
                    f"random-ring bandwidth {rings.random_bandwidth_mb_s:.4g} MB/s is above "
                    "what the node links give at a lone flow's bandwidth: a NIC that many "
                    "flows fill better than one is not modelled"
                )
            elif k == MIN_NIC_SCALE:
                flags.append(f"random-ring bandwidth not reached at NIC scale {k:g}")
        ln_m: float | None = None
        if fit_memory:

            def natural(m: float) -> float:
                return simulate(config, nodes_at(ln_k, math.log(m)), "natural_ring",
                                BANDWIDTH)[1]  # fmt: skip

            # Unshared first: where the NIC alone already gives the figure, memory is no
            # limit (a flat stretch: every smaller M down to where it binds gives it too).
            if natural(math.exp(top)) <= rings.natural_bandwidth_mb_s * (1 + FIT_TOLERANCE):
                m = math.exp(top)
                flags.append(
                    f"natural-ring bandwidth {rings.natural_bandwidth_mb_s:.4g} MB/s is not "
                    "limited by the node's memory in the model (the NIC bounds it): memory "
                    "copies left unshared"
                )
            else:
                m, _, _ = bisect(natural, rings.natural_bandwidth_mb_s, 1.0, math.exp(top),
                                 log=True)  # fmt: skip
            ln_m = None if m == math.exp(top) else math.log(m)
            if m == 1.0:
                flags.append(
                    f"natural-ring bandwidth {rings.natural_bandwidth_mb_s:.4g} MB/s is not "
                    "reached with the node's memory copies bounded by one lone loopback "
                    "flow: something other than memory limits it"
                )
        nic = math.exp(ln_k)
        memory = loopback_Bps * math.exp(ln_m) if ln_m is not None else None
        # What pins what: both bandwidths' response to both parameters, by forward
        # differences at the solution (two more simulations of each ring).
        bw_names = ["ln NIC scale", *(["ln memory copy / loopback"] if ln_m is not None else [])]
        point = [ln_k, *([ln_m] if ln_m is not None else [])]

        def bandwidths(x: Sequence[float]) -> list[float]:
            nodes = nodes_at(x[0], x[1] if len(x) > 1 else None)
            return [simulate(config, nodes, pattern, BANDWIDTH)[1]
                    for pattern in ("random_ring", "natural_ring")]  # fmt: skip

        reading = identifiability(
            bw_names, [f"random_ring bandwidth at {rings.large} B",
                    f"natural_ring bandwidth at {rings.large} B"],
            forward_jacobian(bandwidths, point, [-JACOBIAN_STEP] * len(point)),
        )  # fmt: skip
        bandwidth_fit = {**reading.to_dict(), "method": "bisections, Jacobian by forward "
                         f"differences of {JACOBIAN_STEP:g} in ln"}  # fmt: skip
    fit_gap = not from_pairs and rings.ppn >= 2
    # The host's per-message cost (hpceval.simulate.sources.host_share_target): every
    # emulated transfer is a copy on the same cores. The rings at one rank per node cannot
    # tell a private overhead from a shared cost (each gives their latency), the collectives
    # can: 4 ranks at once in an 8 B Allreduce on netns-4x1-1gbe took 34 us a step, a tree
    # Bcast's lone hops 15 us (2026-12-04).
    host_gap = cost_on_backbone and backbone is not None and not fit_gap

    def with_memory(platform: Any) -> Any:
        if backbone is not None and scale_backbone is not None:
            platform = scale_backbone(platform, backbone / backbone_Bps)
        if memory is None or share_memory is None:
            return platform
        return share_memory(platform, memory)

    def isend_and_gap(x: Sequence[float]) -> tuple[float, float]:
        """x = (Isend overhead / α, gap / the start-up that may become gap); with
        `host_gap`, x = (gap / the start-up that may become gap,)."""
        if host_gap:
            return 0.0, x[0] * MAX_SHARE * alpha_s
        return x[0] * alpha_s, (x[1] * MAX_SHARE * alpha_s if fit_gap
                                else min(pair_gap, MAX_SHARE * alpha_s))  # fmt: skip

    def settings_at(ois: float, gap: float) -> tuple[dict[str, str], Any]:
        settings, platform = with_overhead(0.0, gap)
        return {**settings, **isend_config(ois)}, with_memory(platform)

    def latencies(x: Sequence[float]) -> list[float]:
        settings, platform = settings_at(*isend_and_gap(x))
        cfg, nodes = {**base_config, **settings}, scale_nic(platform, nic)
        out = [simulate(cfg, nodes, "natural_ring", LATENCY)[0]]
        if fit_gap:
            out.append(simulate(cfg, nodes, "random_ring", LATENCY)[0])
        return out

    names = (("host gap share",) if host_gap else
             ("Isend overhead share", *(("NIC gap share",) if fit_gap else ())))  # fmt: skip
    figures = (f"natural_ring latency at {rings.small} B",
               *((f"random_ring latency at {rings.small} B",) if fit_gap else ()))  # fmt: skip
    measured = [rings.natural_latency_us, *([rings.random_latency_us] if fit_gap else [])]
    starts, highs = ([0.2], [1.0]) if host_gap else ([cap / 2, 0.2], [cap, 1.0])
    joint = fit_jointly(latencies, measured, starts[: len(names)], [0.0] * len(names),
                        highs[: len(names)], names, figures)  # fmt: skip
    share = 0.0 if host_gap else joint.x[0]
    isend_s, gap = isend_and_gap(joint.x)
    if host_gap and joint.x[0] >= 1.0:
        flags.append(f"host gap at its bound, {gap * 1e6:.3g} us ({MAX_SHARE:.0%} of the "
                     "PingPong's start-up)")  # fmt: skip
    if not host_gap and share >= cap:
        flags.append(f"Isend overhead at its bound, {max_isend_overhead_s * 1e6:.3g} us")
    for figure, residual in zip(figures, joint.residuals, strict=True):
        if abs(residual) > FIT_TOLERANCE:
            flags.append(
                f"{figure}: {residual:+.1%} at the best Isend overhead ({isend_s * 1e6:.3g} us)"
                f" and NIC gap ({gap * 1e6:.3g} us) within their bounds (PingPong start-up "
                f"{first_alpha_us:.3g} us): other costs (interrupts, polling, the shared "
                "memory path) are not modelled"
            )  # fmt: skip
    if from_pairs and pair_gap > gap:
        flags.append(f"NIC gap {pair_gap * 1e6:.3g} us measured is more than the PingPong's "
                     f"start-up allows: bounded to {gap * 1e6:.3g} us")  # fmt: skip
    if not joint.identifiability.identifiable:
        flags.append(f"joint fit: {joint.identifiability.describe()}")
    settings, platform = settings_at(isend_s, gap)
    config = {**base_config, **settings}
    residuals: list[dict[str, Any]] = []
    for pattern in ("natural_ring", "random_ring"):
        lat, bw = simulate(config, scale_nic(platform, nic), pattern, BOTH)
        name = pattern.split("_")[0]
        for metric, size, simulated, measured_value, fitted in (
            ("latency", rings.small, lat, getattr(rings, f"{name}_latency_us"),
             pattern == "natural_ring" or fit_gap),
            ("bandwidth", rings.large, bw, getattr(rings, f"{name}_bandwidth_mb_s"),
             (pattern == "random_ring" and (fit_nic or fit_backbone))
             or (pattern == "natural_ring" and fit_memory)),
        ):  # fmt: skip
            residuals.append({
                "path": pattern, "metric": metric, "size": size, "ranks": rings.ranks,
                "ppn": rings.ppn, "measured": measured_value, "simulated": simulated,
                "residual": (simulated - measured_value) / measured_value,
                "calibrated": False, "fitted": bool(fitted),
            })  # fmt: skip
    what = (f"{flows.fitted_on if flows else ''}; natural-ring latency at {rings.small} B "
            "(overhead)" if from_pairs else
            (f"random-ring bandwidth at {rings.large} B (the shared backbone)"
             if fit_backbone else
             f"random- and natural-ring bandwidth at {rings.large} B jointly (NIC scale"
             f"{', node memory copies' if fit_memory else ''})") + (
                f", then natural-ring latency at {rings.small} B (the host's per-message "
                "cost: a gap on the shared backbone, no Isend overhead)" if host_gap else
                ", then natural- and random-ring latency at "
                f"{rings.small} B jointly (overhead and NIC gap)"))  # fmt: skip
    contention = Contention(
        share, 0.0,
        f"{rings.origin}: {what}, {rings.ranks} ranks at {rings.ppn} per node",
        tuple(flags), nic, rings.ppn, gap,
        flows.scales if from_pairs and flows is not None else (),
        {"latency": {**joint.identifiability.to_dict(), "evaluations": joint.evaluations,
                     "residuals": list(joint.residuals)},
         "bandwidth": bandwidth_fit},
        memory, isend_s, backbone, host_gap,
    )  # fmt: skip
    return contention, config, platform, residuals
