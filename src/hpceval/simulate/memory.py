"""Memory bandwidth shared by the ranks of a simulated node (issue 21).

SMPI replays each rank's computation as measured on this machine (scaled by the calibrated
core speed); ranks placed on one simulated node would otherwise compute as fast together
as alone, so intra-node scaling came out ideal (MG class C 16.8x on 16 cores). hpceval
stretches the replayed computation with a roofline bound per node:

    t = t_compute x max(1, demand / min(node_bandwidth / ppn, single_process_bandwidth))

- `node_bandwidth`: the node's sustained memory bandwidth, STREAM Triad with one process
  per core (all cores together), from the platform's latest stored STREAM run, or the
  profile's `[memory]` table (a published figure with its source, or an assumption marked
  as such). Without either, memory is not shared, and every output says so. The
  one-process figure, where known (STREAM with one process), caps a rank's share.
- `demand`: the bytes per second one rank of the kernel moves to and from memory when it
  runs alone on the target's core: bytes per operation (`bytes_per_op`, derived from the
  arrays each iteration of hpceval's own kernel sweeps, counted as STREAM counts bytes:
  every array element read or written once per sweep, no write-allocate traffic) times the
  operation rate of that core, **fitted** on a single-rank simulation of the same kernel
  and class on the calibrated platform (its Mop/s, the official operation count over the
  simulated time).
- `ppn`: the ranks of the case placed on one node.

The stretch is the same for every burst of a case (the kernels' bursts repeat the same
sweeps), so it is applied through SMPI's `smpi/host-speed`, the factor that turns the
measured CPU seconds of a burst into flops: `s` times that factor makes every burst `s`
times longer on the same simulated core.

Assumptions (stated in docs/simulate.md and recorded with every run): the working set of a
rank does not fit in cache (the class C sizes this is for; at many ranks per-rank arrays
shrink and the stretch becomes an upper bound); random accesses (IS's histogram, CG's
gather of p) cost their element size, not a cache line; the bandwidth ranks share is the
node's (one memory domain: both sockets' controllers together, ranks spread over them).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from hpceval.benchmarks import Case
from hpceval.model import Origin
from hpceval.simulate.pooling import median_over_runs, newest, runs_text
from hpceval.store import Store

# The kernels with a traffic count; the others are projected without memory sharing.
MODELLED_KERNELS = frozenset({"cg", "ft", "is", "mg", "ep"})
# Cache lines are not counted (see above); STREAM's Triad is the matching bandwidth figure.
STREAM_METRIC = "triad_bandwidth"


@dataclass(frozen=True)
class NodeMemory:
    """A node's sustained memory bandwidth (all cores) and, if known, one process's."""

    bandwidth_Bps: float
    single_process_Bps: float | None
    source: str  # where the figure comes from, in words
    assumed: bool = False
    llc_bytes: int | None = None  # the node's last-level cache (all sockets); None: unknown

    def describe(self) -> str:
        single = (
            f", one process {self.single_process_Bps / 1e9:.3g} GB/s"
            if self.single_process_Bps
            else ""
        )
        kind = "assumed" if self.assumed else "from"
        cache = f", last-level cache {self.llc_bytes / 2**20:.4g} MiB" if self.llc_bytes else ""
        return (
            f"node memory bandwidth {self.bandwidth_Bps / 1e9:.3g} GB/s{single}{cache} "
            f"({kind}: {self.source})"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NodeMemory:
        return cls(**d)


NOT_MODELLED = (
    "memory bandwidth: not shared by a node's ranks (assumed: no STREAM measurement of the "
    "platform and no [memory] figure in the profile)"
)


def store_memory(store: Store, run_ids: set[int],
                 pool_runs: int | None = None) -> NodeMemory | None:  # fmt: skip
    """STREAM Triad of the latest measured run among `run_ids` that ran one process per core
    on one node (more than one process): the node's figure, the median over the runs (the
    latest `pool_runs`; None: all) that measured it at that process count, each run's the
    median of its trials; the one-process figure beside, pooled the same way."""
    # run -> processes -> samples
    found: dict[int, dict[int, list[float]]] = {}
    caches: dict[int, int] = {}
    for sm in store.measurements(benchmark="stream", metric=STREAM_METRIC):
        m, p = sm.measurement, sm.measurement.parameters
        if sm.run_id not in run_ids or m.origin is Origin.SIMULATED or p.get("oversubscribed"):
            continue
        if int(p.get("nodes", 1)) != 1:
            continue
        llc = m.details.get("llc_bytes")
        if llc and int(p.get("array_bytes", 0)) < 4 * int(llc):
            continue  # arrays the cache holds: not a memory figure
        ranks = int(p.get("ranks", 1))
        if llc:
            caches[sm.run_id] = int(llc)
        found.setdefault(sm.run_id, {}).setdefault(ranks, []).extend(list(m.samples) or [m.value])
    for run_id in sorted(found, reverse=True):
        most = max(found[run_id])
        if most < 2:
            continue
        chosen = newest((r for r, by_ranks in found.items() if most in by_ranks), pool_runs)
        with_single = [r for r in chosen if 1 in found[r]]
        single = (median_over_runs(found[r][1] for r in with_single) * 1e6 if with_single
                  else None)  # fmt: skip
        which = runs_text((), chosen)
        return NodeMemory(
            median_over_runs(found[r][most] for r in chosen) * 1e6,
            single,
            f"STREAM Triad of {which}, {most} processes on one node (median of trials"
            + (", then of runs)" if len(chosen) > 1 else ")"),
            llc_bytes=caches.get(run_id),
        )
    return None


# --------------------------------------------------------------------------- traffic


def bytes_per_op(kernel: str, class_name: str, ranks: int) -> float | None:
    """Bytes the kernel moves to and from memory per official operation (None: no count).

    Counted per timed iteration from the loops of hpceval's own kernels
    (benchmarks/npb/<kernel>.c), 8-byte doubles, 4-byte integers, 16-byte complex values;
    the operation counts are NPB's official ones (benchmarks.npb.mops_formula)."""
    from hpceval.benchmarks.npb import problem_size

    if kernel not in MODELLED_KERNELS:
        return None
    size = problem_size(kernel, class_name)
    if kernel == "ep":
        return 0.0  # random pairs in cache-sized batches: compute-bound
    if kernel == "cg":
        # One inner CG iteration per row: the product q = A p reads the values (8 B) and
        # column indices (4 B) of the row's nonzeros, its start (4 B), p's entry (8 B, the
        # vector is reused from cache) and writes q (8 B); the vector updates sweep 12
        # vectors (p.q, z += a p, r -= a q, r.r, p = r + b p). The official count: 2 ops per
        # nonzero and 10 per row, nonzer x (nonzer + 1) nonzeros per row.
        nonzeros = size[1] * (size[1] + 1)
        return (12 * nonzeros + 4 + 8 + 8 + 12 * 8) / (2 * (5 + nonzeros))
    if kernel == "mg":
        # Per V-cycle on the finest grid: rprj3 reads r (1 grid, writes 1/8), interp reads
        # and writes u (2 + 1/8), resid reads u, v and writes r (3), psinv reads r, reads and
        # writes u (3), the residual after the cycle (3): 12.25 grids of 8 B; the coarser
        # levels add 1/8 + 1/64 + ... = 1/7. Official count: 58 ops per point.
        return 12.25 * 8 * 8 / 7 / 58
    if kernel == "ft":
        # Per iteration and point: evolve reads u0 and the factor, writes u0 and u1 (56 B);
        # the inverse 3-D FFT reads and writes the field once per axis (3 x 32 B); one local
        # transpose and its finish (2 x 32 B) beside the all-to-all from 2 ranks on (1-D
        # layout), two beyond nz ranks (2-D). Official count per iteration and point:
        # 5.23518 + 7.21113 ln(points).
        points = size[0] * size[1] * size[2]
        transposes = 0 if ranks == 1 else (1 if ranks <= size[2] else 2)
        return (56 + 3 * 32 + transposes * 64) / (5.23518 + 7.21113 * math.log(points))
    # is: per key and iteration, the bucket count reads the key (4 B), the scatter reads it
    # and writes it into its bucket (8 B), the ranking reads the received key (4 B) and
    # increments its count (read and write, 8 B); the prefix sum over the key range reads
    # and writes the counts (8 B per key value). Official count: one op per key.
    keys, max_key = 2 ** size[0], 2 ** size[1]
    return 24 + 8 * max_key / keys


@dataclass(frozen=True)
class MemoryDemand:
    """One rank's memory traffic alone on the target core, fitted on 1-rank simulations."""

    kernel: str
    class_name: str
    mops_per_rank: float  # simulated single-rank Mop/s (the fit: median of `samples`)
    fitted_on: str  # which simulation, in words
    samples: tuple[float, ...] = ()  # the Mop/s of each single-rank simulation
    spread: float = 0.0  # (largest - smallest) / median of the samples

    def describe(self) -> str:
        """The rate used and how sure it is, for every projection's memory line."""
        if len(self.samples) < 2:
            return f"{self.mops_per_rank:.5g} Mop/s per rank ({self.fitted_on})"
        return (
            f"{self.mops_per_rank:.5g} Mop/s per rank (median of {len(self.samples)} "
            f"{self.fitted_on}: {min(self.samples):.5g}-{max(self.samples):.5g}, spread "
            f"{self.spread:.1%})"
        )

    def demand_Bps(self, ranks: int) -> float:
        per_op = bytes_per_op(self.kernel, self.class_name, ranks) or 0.0
        return per_op * self.mops_per_rank * 1e6

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Repeated single-rank simulations of the op rate (SMPI times each burst in thread CPU time,
# which a busy host still slows through shared caches, memory and frequency: 7633 against
# 4621 Mop/s for MG class C in two fits under load). More than this spread: refused.
RATE_FITS = 3
RATE_MAX_SPREAD = 0.25


def fitted_rate(
    kernel: str, class_name: str, samples: Sequence[float], *, load: float | None = None,
    max_spread: float = RATE_MAX_SPREAD,
) -> MemoryDemand:
    """The single-rank op rate from repeated simulations: their median, with the spread
    (largest - smallest over the median) recorded; a spread above `max_spread` is refused
    (UserError, one line naming every sample and the host's load)."""
    from hpceval.errors import UserError

    if not samples or not all(v > 0 and math.isfinite(v) for v in samples):
        raise ValueError(f"op rates {list(samples)!r} are not positive")
    median = statistics.median(samples)
    spread = (max(samples) - min(samples)) / median
    busy = f", load average {load:.1f}" if load is not None else ""
    if spread > max_spread:
        rates = ", ".join(f"{v:.5g}" for v in samples)
        raise UserError(
            f"npb {kernel} class {class_name}: {len(samples)} single-rank simulations of the "
            f"core's op rate disagree by {spread:.0%} (Mop/s {rates}{busy}), more than "
            f"{max_spread:.0%}: this host's CPU time is too disturbed to fit a memory demand; "
            "re-run when it is quieter"
        )
    what = f"simulated 1-rank npb {kernel} class {class_name} runs{busy}"
    return MemoryDemand(kernel, class_name, median, f"fitted: {what}", tuple(samples), spread)


def stretch(
    demand_Bps: float,
    ranks_per_node: int,
    node_bandwidth_Bps: float,
    single_process_Bps: float | None = None,
) -> float:
    """The roofline stretch of the replayed computation: max(1, demand / share), a rank's
    share being the node's bandwidth over its ranks, and at most one process's bandwidth
    where that is known (one core cannot draw the whole node's)."""
    if not (node_bandwidth_Bps > 0 and math.isfinite(node_bandwidth_Bps)):
        raise ValueError(f"node bandwidth {node_bandwidth_Bps!r} B/s is not positive")
    share = node_bandwidth_Bps / ranks_per_node
    if single_process_Bps:
        share = min(share, single_process_Bps)
    return max(1.0, demand_Bps / share)


def stretched_config(config: Mapping[str, str], factor: float) -> dict[str, str]:
    """SMPI settings whose bursts last `factor` times longer (smpi/host-speed x factor)."""
    speed = config["smpi/host-speed"]
    value = float(speed.removesuffix("f"))
    return {**config, "smpi/host-speed": f"{value * factor:.9g}f"}


def memory_stretches(
    benchmark: str,
    kernel: str | None,
    class_name: str | None,
    cases: Sequence[Case],
    memory: NodeMemory | None,
    fit: Callable[[], MemoryDemand],
    *,
    speed_fitted: bool = False,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The stretch of each case (case key -> factor; a case not listed: 1) and the record of
    what was applied, `how` in one line. `fit` is called only when a stretch can apply.

    A case whose ranks on a node hold their arrays in the node's last-level cache is not
    stretched. With `speed_fitted` (the core speed fitted on a measured single-rank time,
    which already holds what one rank alone pays to memory) each stretch is relative to
    the single-rank one."""
    from hpceval.benchmarks.npb import memory_per_rank

    if memory is None or kernel is None or class_name is None:
        return {}, {"how": NOT_MODELLED if benchmark == "npb" else "memory: no computation"}
    if bytes_per_op(kernel, class_name, 1) is None:
        how = f"memory bandwidth: not shared (no traffic count for npb {kernel})"
        return {}, {"how": f"{how}; {memory.describe()}", "node": memory.to_dict()}

    def in_cache(ranks: int, ppn: int) -> bool:
        return bool(memory.llc_bytes) and (
            ppn * memory_per_rank(kernel, class_name, ranks) <= (memory.llc_bytes or 0)
        )

    if all(in_cache(c.placement.ranks, c.placement.ranks_per_node) for c in cases):
        how = f"memory: {memory.describe()}; every case's arrays fit in the cache: not stretched"
        return {}, {"how": how, "node": memory.to_dict()}
    demand = fit()

    def roofline(ranks: int, ppn: int) -> tuple[float, bool]:
        if in_cache(ranks, ppn):
            return 1.0, True
        per_rank = demand.demand_Bps(ranks)
        return stretch(per_rank, ppn, memory.bandwidth_Bps, memory.single_process_Bps), False

    alone = roofline(1, 1)[0] if speed_fitted else 1.0
    stretches: dict[str, float] = {}
    rows = []
    for case in cases:
        ranks, ppn = case.placement.ranks, case.placement.ranks_per_node
        factor, cached = roofline(ranks, ppn)
        stretches[case.key] = max(1.0, factor / alone)
        rows.append({"case": case.key, "ranks": ranks, "ranks_per_node": ppn,
                     "bytes_per_op": bytes_per_op(kernel, class_name, ranks),
                     "demand_Bps": demand.demand_Bps(ranks), "in_cache": cached,
                     "stretch": stretches[case.key]})  # fmt: skip
    applied = ", ".join(
        f"x{r['stretch']:.3g} at {r['ranks']} ranks ({r['ranks_per_node']}/node, "
        + ("in cache)" if r["in_cache"] else f"{r['bytes_per_op']:.3g} B/op)")
        for r in rows
    )
    relative = f", relative to one rank alone (x{alone:.3g}: in the fitted core speed)" if (
        speed_fitted) else ""  # fmt: skip
    how = (
        f"memory: {memory.describe()}; npb {kernel} class {class_name} at "
        f"{demand.describe()}; computation "
        f"stretched {applied}{relative}"
    )
    return stretches, {"how": how, "node": memory.to_dict(), "demand": demand.to_dict(),
                       "cases": rows, "relative_to": alone}  # fmt: skip
