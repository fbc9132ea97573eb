"""What a calibration is fitted on: PingPong curves and single-rank NPB times.

From the results store (`store_target`): the measured (or emulated, never simulated)
`mpibench` PingPong latency of a platform, 2 ranks, per pair (intra-node, inter-node), and
the single-rank NPB times (speed references); with `--host-share` the concurrent pairs and
rings at the share. Each figure is pooled over the runs that measured it (all, or the latest
`pool_runs`): per run the median of its samples, then the median over the runs. On a shared
host one round of the same figure can be 30 % off the next (the random ring's 1 MiB
bandwidth on netns-4x1-1gbe, 2026-12-03: 90.1, 84.4, 67.0 MB/s), and a calibration on the
latest round alone carried that round's error into every projection. From a published
profile: hpceval.simulate.profiles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hpceval.errors import UserError
from hpceval.model import Origin
from hpceval.provenance.setup import setup_differences
from hpceval.simulate.contention import RingFigures, mpi_family
from hpceval.simulate.flows import FLOW_PATTERN, FlowFigures, store_flows
from hpceval.simulate.memory import NodeMemory, store_memory
from hpceval.simulate.pooling import (
    check_pool_runs,
    median_over_runs,
    newest,
    range_over_runs,
    runs_text,
)
from hpceval.simulate.token_bucket import TokenBucket, emulation_bucket
from hpceval.store import Store

NetworkPath = Literal["inter-node", "intra-node"]
PATHS: tuple[NetworkPath, ...] = ("inter-node", "intra-node")
MIN_SIZES = 3  # a piecewise fit needs at least one segment of 3 sizes


@dataclass(frozen=True)
class Curve:
    """PingPong half round-trip time (µs) against message size (bytes) on one path."""

    path: NetworkPath
    sizes: tuple[int, ...]
    times_us: tuple[float, ...]
    origin: str  # where the curve comes from, in words
    run_id: int | None
    # Per size, the lowest and highest of the pooled runs' medians (None: one run measured
    # it); empty: no runs (a published curve) or one run. A calibration is not asked to
    # come closer to a size than the runs that measured it agree with each other.
    spread_us: tuple[tuple[float, float] | None, ...] = ()

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.times_us):
            raise ValueError("a curve needs one time per size")
        if self.spread_us and len(self.spread_us) != len(self.sizes):
            raise ValueError("a curve's spread needs one range (or None) per size")
        if list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError("curve sizes must increase")
        if not all(math.isfinite(t) and t > 0 for t in self.times_us):
            raise ValueError("curve times must be positive")


def spread_of(
    per_size: Sequence[Sequence[Sequence[float]]],
) -> tuple[tuple[float, float] | None, ...]:
    """A curve's spread_us from each size's per-run samples: empty when no size has two runs."""
    spread = tuple(range_over_runs(per_run) for per_run in per_size)
    return spread if any(r is not None for r in spread) else ()


@dataclass(frozen=True)
class SpeedReference:
    """A single-rank NPB time of the target platform: what the simulated core must match."""

    kernel: str
    class_name: str
    time_s: float
    run_id: int | None  # None: a published figure (`source` says which); else the latest run
    source: str = ""
    run_ids: tuple[int, ...] = ()  # the runs whose median it is, when more than one


@dataclass(frozen=True)
class Target:
    """A platform to simulate: its node shape and the data its calibration is fitted on."""

    name: str
    source_kind: Literal["platform", "profile"]
    source: str
    cores_per_node: int | None
    memory_gb_per_node: float | None
    backbone: Literal["fatpipe", "shared"]
    backbone_Bps: float | None
    curves: Mapping[NetworkPath, Curve]
    speeds: Mapping[tuple[str, str], SpeedReference] = field(default_factory=dict)
    assumed: tuple[str, ...] = ()
    run_ids: tuple[int, ...] = ()
    # The rings measured with every rank busy (the contention fit), if any.
    rings: RingFigures | None = None
    # Concurrent pairs across two nodes (mpibench multi_pingpong), if measured.
    flows: FlowFigures | None = None
    # "openmpi" or "mpich": SMPI's collective selector (None: SMPI's defaults), and why.
    mpi_family: str | None = None
    mpi_source: str = ""
    # PlatformSpec's topology fields (topology, leaf_nodes, oversubscription, torus_dims,
    # topology_source); empty: a single switch.
    topology: Mapping[str, Any] = field(default_factory=dict)
    # The user accepted curves the input checks would refuse (--accept-curve): flags only.
    curve_accepted: bool = False
    # The node's memory bandwidth its ranks share (hpceval.simulate.memory); None: unknown.
    memory: NodeMemory | None = None
    # The node links' tc tbf bucket of an emulated cluster (hpceval.simulate.token_bucket).
    token_bucket: TokenBucket | None = None
    # Emulated nodes sharing this host's cores (--host-share): their messages' cost is paid
    # on those cores, a shared resource (hpceval.simulate.contention.fit_contention).
    cores_shared: bool = False

    @property
    def primary_path(self) -> NetworkPath:
        """The path the network factors are fitted on: the network when there is one."""
        return "inter-node" if "inter-node" in self.curves else "intra-node"


# Said while the backbone is the fat pipe a store platform gets by default (dropped when a
# shared one replaces it: --host-share, --backbone).
FATPIPE_ASSUMED = "backbone: full bisection (fat pipe) unless --backbone shared is given"


def same_setup_runs(store: Store, runs: Mapping[int, Any]) -> tuple[dict[int, Any], str | None]:
    """The runs of `runs` (id -> run record) measured on the latest one's setup
    (hpceval.provenance.setup: MPI, compiler, CPU, kernel, transport, emulation), and a
    sentence naming the others and how they differ (None: none set aside). Pooling a run of
    another setup would mix two platforms under one name."""
    latest = runs[max(runs)]
    reference = store.environment(latest.environment_id)
    kept: dict[int, Any] = {}
    differences: dict[int, list[str]] = {}
    for run_id, run in runs.items():
        found = ([] if run.environment_id == latest.environment_id else
                 setup_differences(store.environment(run.environment_id), reference))  # fmt: skip
        if found:
            differences[run_id] = found
        else:
            kept[run_id] = run
    if not differences:
        return kept, None
    shown = sorted(differences)
    return kept, (
        f"{runs_text((runs[r].origin.value for r in shown), shown)} not pooled: measured on "
        f"another setup than run {latest.id} (run {shown[-1]}: "
        f"{'; '.join(differences[shown[-1]][:3])}; run {latest.id}'s in brackets)"
    )


def store_target(store: Store, platform_name: str, share_ranks: int | None = None,
                 pool_runs: int | None = None) -> Target:  # fmt: skip
    """The calibration data of a platform in the store; a one-line UserError if it lacks any.

    `share_ranks` (an emulated cluster whose nodes share this host's cores, `--host-share`):
    the projection's ranks get the host's cores / `share_ranks` of a core each, as they did
    when measured; the calibration is then taken at that share (`host_share_target`).
    `pool_runs`: each figure pooled over the latest that many runs that measured it (None:
    all of them)."""
    check_pool_runs(pool_runs)
    runs = {
        r.id: r
        for r in store.runs()
        if r.platform_name == platform_name and r.origin is not Origin.SIMULATED
    }
    if not runs:
        known = sorted({r.platform_name for r in store.runs() if r.origin is not Origin.SIMULATED})
        raise UserError(
            f"platform {platform_name!r} has no measurements in {store.url} "
            f"(measured platforms: {', '.join(known) or 'none'})"
        )
    runs, set_aside = same_setup_runs(store, runs)
    # (run, pair) -> size -> pooled samples
    pingpong: dict[tuple[int, str], dict[int, list[float]]] = {}
    for sm in store.measurements(benchmark="mpibench", metric="latency"):
        m, p = sm.measurement, sm.measurement.parameters
        if sm.run_id not in runs or m.origin is Origin.SIMULATED:
            continue
        if p.get("pattern") != "pingpong" or p.get("ranks") != 2 or p.get("oversubscribed"):
            continue
        pair = str(p.get("pair", ""))
        if pair not in PATHS:
            continue
        samples = list(m.samples) or [m.value]
        pingpong.setdefault((sm.run_id, pair), {}).setdefault(int(p["size"]), []).extend(samples)
    curves: dict[NetworkPath, Curve] = {}
    used_runs: set[int] = set()
    for path in PATHS:
        candidates = sorted(
            (run_id for (run_id, pair), sizes in pingpong.items()
             if pair == path and len(sizes) >= MIN_SIZES),
            reverse=True,
        )  # fmt: skip
        if not candidates:
            continue
        chosen = newest(candidates, pool_runs)
        # The latest run's sizes; each the median over the chosen runs that measured it.
        sizes = tuple(sorted(pingpong[(chosen[0], path)]))
        # Medians, not means: on a shared host a few preempted samples (milliseconds) made
        # the mean of a 0-byte PingPong 9.7 µs for a median of 0.27 µs (2 ranks on this
        # 2-core machine), a curve no network model can follow.
        per_run = [[pingpong[(r, path)][s] for r in chosen if s in pingpong[(r, path)]]
                   for s in sizes]  # fmt: skip
        times = tuple(median_over_runs(values) for values in per_run)
        origin = runs_text((runs[r].origin.value for r in chosen), chosen)
        curves[path] = Curve(path, sizes, times, origin, chosen[0], spread_of(per_run))
        used_runs.update(chosen)
    if not curves:
        raise UserError(
            f"platform {platform_name!r}: no PingPong curve (mpibench pingpong, 2 ranks, at "
            f"least {MIN_SIZES} sizes) in {store.url}: not enough data to calibrate; measure "
            f"one with: hpceval run --platform {platform_name} --suite p2p"
        )
    speeds: dict[tuple[str, str], SpeedReference] = {}
    npb_times: dict[tuple[str, str, int], list[float]] = {}
    for sm in store.measurements(benchmark="npb", metric="time"):
        m, p = sm.measurement, sm.measurement.parameters
        if sm.run_id not in runs or m.origin is Origin.SIMULATED:
            continue
        if p.get("ranks") != 1 or p.get("threads_per_rank", 1) != 1 or p.get("oversubscribed"):
            continue
        npb_times.setdefault((str(p["kernel"]), str(p["class"]), sm.run_id), []).append(m.value)
    by_kernel: dict[tuple[str, str], dict[int, list[float]]] = {}
    for (kernel, class_name, run_id), times_s in npb_times.items():
        by_kernel.setdefault((kernel, class_name), {})[run_id] = times_s
    for (kernel, class_name), by_run in sorted(by_kernel.items()):
        chosen = newest(by_run, pool_runs)
        speeds[(kernel, class_name)] = SpeedReference(
            kernel, class_name, median_over_runs(by_run[r] for r in chosen), chosen[0],
            run_ids=tuple(sorted(chosen)) if len(chosen) > 1 else (),
        )  # fmt: skip
    rings = store_rings(store, runs, pool_runs=pool_runs)
    latest = runs[max(runs)]
    facts = store.environment(latest.environment_id)
    implementation = str((facts.get("mpi") or {}).get("implementation") or "")
    family = mpi_family(implementation)
    _, config = store.platform_config(latest.platform_id)
    cores = config.get("cores_per_node", "auto")
    if not isinstance(cores, int):
        cores = ((facts.get("cpu") or {}).get("cores")) or None
    memory = config.get("memory_gb_per_node")
    used = sorted(used_runs)
    target = Target(
        name=platform_name,
        source_kind="platform",
        source=f"platform {platform_name!r} in {store.url}",
        cores_per_node=cores if isinstance(cores, int) else None,
        memory_gb_per_node=float(memory) if memory else None,
        backbone="fatpipe",
        backbone_Bps=None,
        curves=curves,
        speeds=speeds,
        assumed=(
            FATPIPE_ASSUMED,
            *(
                ()
                if "intra-node" in curves
                else ("intra-node path: not measured; the loopback gets the network's curve",)
            ),
            *((set_aside,) if set_aside else ()),
        ),
        run_ids=tuple(used),
        rings=rings,
        flows=store_flows(store, runs, pool_runs),
        mpi_family=family,
        mpi_source=f"MPI of run {latest.id}: {implementation or 'unknown'}",
        memory=store_memory(store, set(runs), pool_runs),
        token_bucket=emulation_bucket(facts.get("emulation"), f"the emulation facts of run "
                                      f"{latest.id}"),
    )
    if share_ranks is None:
        return target
    host_cores = int((facts.get("cpu") or {}).get("cores") or 0)
    return host_share_target(store, runs, target, share_ranks, host_cores, pool_runs)


def host_share_target(store: Store, runs: Mapping[int, Any], target: Target, ranks: int,
                      host_cores: int, pool_runs: int | None = None) -> Target:  # fmt: skip
    """`target` calibrated at the share of this host's cores that `ranks` emulated ranks get.

    The emulated nodes of a netns cluster share the host's cores: `ranks` busy ranks on
    `host_cores` cores get host_cores / ranks of a core each, and every message they send
    waits for its rank's turn on a core. The projection's model has independent nodes, so
    its calibration is taken where the measurement had the same share:
    - the network curve is the concurrent pairs (mpibench multi_pingpong) at `ranks` ranks,
      one rank per node (each pair crosses the network, no NIC is shared, every rank
      shares the cores as the projected ones will): per pair half round trip against size;
    - the core speed is the single-rank NPB time x ranks / host_cores (a rank's share of a
      core when all compute; stated in the calibration's assumptions);
    - the rings measured at that share, one rank per node, are the contention fit's input
      (the shared backbone, which stands for the host's cores, widened or narrowed on the
      random ring's bandwidth, then the per-message cost on those cores, a gap every
      message pays on that backbone, on the natural ring's latency:
      hpceval.simulate.contention).
    A one-line UserError when the ranks fit on the cores or the pairs were not measured."""
    if host_cores <= 0:
        raise UserError(f"--host-share: the host's core count of {target.name!r} is not in "
                        "its stored environment")  # fmt: skip
    if ranks <= host_cores:
        raise UserError(f"--host-share: {ranks} ranks fit on the host's {host_cores} cores: "
                        "nothing is shared; project without --host-share")  # fmt: skip
    # run -> size -> pooled samples (latency µs; per pair bandwidth MB/s)
    pairs: dict[int, dict[int, list[float]]] = {}
    per_pair: dict[int, dict[int, list[float]]] = {}
    for sm in store.measurements(benchmark="mpibench"):
        m, p = sm.measurement, sm.measurement.parameters
        if sm.run_id not in runs or m.origin is Origin.SIMULATED:
            continue
        if p.get("pattern") != FLOW_PATTERN or p.get("ranks") != ranks or p.get(
                "nodes") != ranks:  # fmt: skip
            continue
        into = {"latency": pairs, "bandwidth": per_pair}.get(m.metric)
        if into is not None:
            into.setdefault(sm.run_id, {}).setdefault(int(p["size"]), []).extend(
                list(m.samples) or [m.value])  # fmt: skip
    found = sorted((r for r, sizes in pairs.items() if len(sizes) >= MIN_SIZES), reverse=True)
    if not found:
        raise UserError(
            f"--host-share: {target.name!r} has no concurrent pairs at {ranks} ranks, one per "
            f"node (mpibench multi_pingpong, ranks = [{ranks}], ranks_per_node = [1], at "
            f"least {MIN_SIZES} sizes): measure them with the suite of docs/simulation.md"
        )  # fmt: skip
    chosen = newest(found, pool_runs)
    run_id = chosen[0]
    sizes = tuple(sorted(pairs[run_id]))
    per_run = [[pairs[r][s] for r in chosen if s in pairs[r]] for s in sizes]
    curve = Curve("inter-node", sizes, tuple(median_over_runs(values) for values in per_run),
                  f"{runs_text((runs[r].origin.value for r in chosen), chosen)}, mpibench "
                  f"multi_pingpong, {ranks // 2} pairs at once on {ranks} nodes",
                  run_id, spread_of(per_run))  # fmt: skip
    share = host_cores / ranks
    # Every emulated transfer is a copy on the shared cores (TCP, veth): together they move
    # at most what the busiest concurrent pattern measured at the share moved together,
    # which a shared backbone of that capacity says. The pairs' ping-pong has one direction
    # of each pair busy at a time; the rings (every rank sending to both neighbours) move
    # more on a quiet host (1.43x on netns-4x1-1gbe, 2026-12-01).
    largest = max(per_pair.get(run_id, {}), default=None)
    aggregate_Bps = (ranks // 2) * median_over_runs(
        per_pair[r][largest] for r in chosen if largest in per_pair.get(r, {})) * 1e6 if (
        largest is not None) else None  # fmt: skip
    busiest = f"{ranks // 2} pairs x their bandwidth at {largest} B"
    rings = store_rings(store, runs, share_ranks=ranks, pool_runs=pool_runs)
    if rings is not None:
        # A ring rank sends n to each neighbour per iteration; its bandwidth is n / (half an
        # iteration), so each rank puts out its bandwidth, and the ranks together `ranks` x.
        ring_Bps = ranks * max(rings.natural_bandwidth_mb_s, rings.random_bandwidth_mb_s) * 1e6
        if aggregate_Bps is None or ring_Bps > aggregate_Bps:
            aggregate_Bps = ring_Bps
            busiest = f"the {ranks}-rank rings' bandwidth at {rings.large} B x {ranks} ranks"
    speeds = {key: replace(s, time_s=s.time_s / share,
                           source=f"single-rank time / {share:.3g} (the core share)")
              for key, s in target.speeds.items()}  # fmt: skip
    return replace(
        target,
        curves={**target.curves, "inter-node": curve},
        speeds=speeds,
        rings=rings,
        flows=None,
        backbone="shared" if aggregate_Bps else target.backbone,
        backbone_Bps=aggregate_Bps if aggregate_Bps else target.backbone_Bps,
        assumed=(
            *(a for a in target.assumed if not (aggregate_Bps and a == FATPIPE_ASSUMED)),
            f"host share: {ranks} ranks on this host's {host_cores} cores, "
            f"{share:.3g} of a core each (messages calibrated on the concurrent pairs "
            "measured at that share, the core speed on the single-rank time / the share)",
            *([f"host share: every inter-node transfer shares the host's cores, a shared "
               f"backbone of {aggregate_Bps / 1e6:.4g} MB/s ({busiest})"] if aggregate_Bps
              else []),
            *([f"host share: the per-message cost on the host's cores fitted on the rings "
               f"measured at the share ({rings.origin}), a gap that concurrent messages "
               "share on the backbone"] if rings is not None and aggregate_Bps else
              [f"host share: the per-message overheads fitted on the rings measured at the "
               f"share ({rings.origin})"] if rings is not None else []),
        ),
        run_ids=tuple(sorted({*target.run_ids, *chosen})),
        cores_shared=True,
    )


def store_rings(store: Store, runs: Mapping[int, Any], share_ranks: int | None = None,
                pool_runs: int | None = None) -> RingFigures | None:  # fmt: skip
    """Natural and random rings as the latest run that measured both across 2+ nodes
    measured them (its largest rank count, latency at its smallest size, bandwidth at its
    largest), each figure the median over the runs (the latest `pool_runs`; None: all) that
    measured the same four at the same ranks and nodes.
    Rings measured on shared cores count only with `share_ranks`: then only those, at that
    rank count, one rank per node (the share --host-share calibrates at)."""
    # (run, ranks, nodes) -> (pattern, metric, size) -> samples
    found: dict[tuple[int, int, int], dict[tuple[str, str, int], list[float]]] = {}
    for sm in store.measurements(benchmark="mpibench"):
        m, p = sm.measurement, sm.measurement.parameters
        if sm.run_id not in runs or m.origin is Origin.SIMULATED:
            continue
        if share_ranks is None and p.get("oversubscribed"):
            continue
        if share_ranks is not None and not (
                p.get("oversubscribed") and p.get("ranks") == share_ranks
                and p.get("nodes") == share_ranks):  # fmt: skip
            continue
        if p.get("pattern") not in ("natural_ring", "random_ring") or m.metric not in (
            "latency", "bandwidth"):  # fmt: skip
            continue
        ranks, nodes = int(p.get("ranks", 0)), int(p.get("nodes", 1))
        if nodes < 2 or ranks < 4 or ranks % nodes:
            continue
        key = (sm.run_id, ranks, nodes)
        samples = list(m.samples) or [m.value]
        found.setdefault(key, {}).setdefault((str(p["pattern"]), m.metric, int(p["size"])),
                                             []).extend(samples)  # fmt: skip
    for (_latest, ranks, nodes), points in sorted(found.items(), reverse=True):
        sizes = sorted({size for (_, _, size) in points})
        small, large = sizes[0], sizes[-1]
        wanted = [(pat, metric, size) for pat in ("natural_ring", "random_ring")
                  for metric, size in (("latency", small), ("bandwidth", large))]  # fmt: skip
        if small == large or any(w not in points for w in wanted):
            continue
        chosen = newest((r for (r, n, k), pts in found.items() if (n, k) == (ranks, nodes)
                         and all(w in pts for w in wanted)), pool_runs)  # fmt: skip
        nat_lat, nat_bw, rand_lat, rand_bw = (
            median_over_runs(found[(r, ranks, nodes)][w] for r in chosen) for w in wanted)
        return RingFigures(
            ranks, ranks // nodes, small, large, nat_lat, rand_lat, nat_bw, rand_bw,
            runs_text((runs[r].origin.value for r in chosen), chosen),
        )  # fmt: skip
    return None
