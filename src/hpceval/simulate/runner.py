"""`hpceval simulate`: calibrated SMPI projections of mpibench and the NPB kernels.

Order of work, so that bad input stores nothing: target (platform in the store, or profile)
-> rank counts and placements on the simulated platform -> cases -> smpicc builds -> the
calibration (reused when one with the same inputs is stored and converged) -> a run of origin
"simulated" whose suite_config names the calibration, executed by the ordinary campaign
through the `smpi` launcher, every point committed as it completes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from hpceval.benchmarks import Case, Program, get_benchmark
from hpceval.build import cache_root
from hpceval.campaign import Campaign, CampaignResult, Reporter
from hpceval.campaign.prepare import check_commands, record_run
from hpceval.errors import UserError
from hpceval.launch import Launcher
from hpceval.launch.starters.smpi_collectives import forced_config, forced_note
from hpceval.model import Environment, Status
from hpceval.provenance import collect_environment, fingerprint
from hpceval.simulate.calibrate import (
    BASE_CONFIG,
    REFERENCE_SPEED_FLOPS,
    NetworkCalibration,
    Residual,
    SpeedCalibration,
    calibrate_network,
    calibrate_speed,
    calibration_key,
    nominal_spec,
    overhead_settings,
    scale_nic,
)
from hpceval.simulate.contention import NONE as NO_CONTENTION
from hpceval.simulate.contention import Contention, RingPattern, fit_contention, selector_config
from hpceval.simulate.flows import FLOW_PATTERN, flow_model
from hpceval.simulate.memory import (
    RATE_FITS,
    MemoryDemand,
    NodeMemory,
    fitted_rate,
    memory_stretches,
    stretched_config,
)
from hpceval.simulate.plan import (
    MPIBENCH_SIM_CONFIG,
    Request,
    SmpiBuild,
    SmpiTools,
    build_programs,
    check_request,
    choose_smpi_build,
    detect_smpi,
    machine_available_bytes,
    plan,
    resolve_target,
    simulated_shape,
    target_platform,
)
from hpceval.simulate.platform import LinkSpec, PlatformSpec, placement_for, platform_xml
from hpceval.simulate.sanity import check_curve
from hpceval.simulate.smpi_runs import (
    SmpiCalibrationRunner,
    run_once,
    smpi_launcher,
)
from hpceval.simulate.sources import SpeedReference, Target
from hpceval.store import CalibrationRow, Store

SPEED_REFERENCE_MAX_S = 30.0  # calibrate the speed on a run this long at most (it runs for real)

__all__ = ["SmpiCalibrationRunner", "execute", "obtain_calibration", "prepare"]


def choose_speed_reference(
    speeds: Mapping[tuple[str, str], SpeedReference], kernel: str | None
) -> SpeedReference | None:
    """The single-rank run to fit the core speed on: the simulated kernel's if measured,
    the longest one under SPEED_REFERENCE_MAX_S (a short one is all noise), else the shortest."""
    if not speeds:
        return None
    pool = [s for s in speeds.values() if s.kernel == kernel] or list(speeds.values())
    short = [s for s in pool if s.time_s <= SPEED_REFERENCE_MAX_S]
    if short:
        return max(short, key=lambda s: s.time_s)
    return min(pool, key=lambda s: s.time_s)


def curve_flags(target: Target) -> list[str]:
    """The suspect points of the target's curves (a refusal if one misses by too much)."""
    remedy = (
        f"hpceval run --platform {target.name} --suite p2p"
        if target.source_kind == "platform"
        else "correct the profile's figures"
    )
    flags: list[str] = []
    for path, curve in target.curves.items():
        bucket = target.token_bucket if path == "inter-node" else None
        flags += check_curve(curve, what=f"the {path} PingPong of {target.name!r}",
                             remedy=remedy, refuse=not target.curve_accepted,
                             bucket=bucket)  # fmt: skip
    return flags


def fit_rings(
    target: Target,
    network: NetworkCalibration,
    spec: PlatformSpec,
    config: dict[str, str],
    runner: SmpiCalibrationRunner,
) -> tuple[Contention, dict[str, str], PlatformSpec, list[dict[str, Any]]]:
    """The contention fit on the target's rings (nothing without rings), and the PingPongs
    simulated with it (residuals "with contention", not calibrated: the rings moved them)."""
    rings = target.rings
    flows = flow_model(target.flows) if target.flows is not None else None
    if rings is None and flows is None:
        return NO_CONTENTION, config, spec, []
    if rings is None:
        assert flows is not None
        settings, fitted = overhead_settings(target, network, 0.0, flows.gap_s)
        config = {**config, **settings}
        spec = replace(fitted, speed_flops=spec.speed_flops)
        contention = Contention(
            0.0, 0.0, flows.fitted_on, ("no rings measured: no per-message overhead",),
            1.0, 1, flows.gap_s, flows.scales,
        )  # fmt: skip
        return contention, config, spec, flow_residuals(target, contention, config, spec, runner)

    def ring(
        cfg: Mapping[str, str],
        platform: PlatformSpec,
        pattern: RingPattern,
        wanted: frozenset[str],
    ) -> tuple[float, float]:
        platform = replace(platform, speed_flops=spec.speed_flops)
        sizes = [
            *([rings.small] if "latency" in wanted else []),
            *([rings.large] if "bandwidth" in wanted else []),
        ]
        values = runner.pattern(platform, cfg, pattern, rings.ranks, rings.ppn, sizes)
        return (values.get(("latency", rings.small), math.nan),
                values.get(("bandwidth", rings.large), math.nan))  # fmt: skip

    alpha = network.segments[0].alpha_us
    # A posted send costing more than two PingPong start-ups is no overhead any MPI has.
    cap = 2 * alpha * 1e-6
    # A node's intra-node messages share its memory (the flat topology only: SimGrid's
    # fat-tree and torus clusters keep a fat-pipe loopback).
    share = (lambda p, m: replace(p, memory_copy_Bps=m)) if spec.topology == "flat" else None
    # A shared backbone (the host's cores of an emulated cluster, --host-share) is fitted
    # on rings at one rank per node, whose flows all cross it.
    shared = spec.backbone == "shared" and bool(spec.backbone_bandwidth_Bps)
    widen = partial(widened_backbone, spec) if shared else None
    contention, config, fitted, residuals = fit_contention(
        rings, config, alpha, cap, lambda o, g: overhead_settings(target, network, o, g), ring,
        scale_nic, flows, share, network.spec.loopback.bandwidth_Bps, widen,
        spec.backbone_bandwidth_Bps or 0.0, cost_on_backbone=target.cores_shared,
    )  # fmt: skip
    spec = replace(fitted, speed_flops=spec.speed_flops)
    for path, curve in target.curves.items():
        simulated = runner.pingpong(spec, config, path, curve.sizes)
        residuals += [
            {**Residual(f"{path} (with contention)", size, measured, value, False).to_dict(),
             "fitted": False}
            for size, measured, value in zip(curve.sizes, curve.times_us, simulated, strict=True)
        ]  # fmt: skip
    residuals += flow_residuals(target, contention, config, spec, runner)
    return contention, config, spec, residuals


def widened_backbone(calibrated: PlatformSpec, platform: PlatformSpec, x: float) -> PlatformSpec:
    """`platform` with the shared backbone `x` times the `calibrated` one, and node links no
    wider than the bandwidth a lone inter-node flow had when the PingPong was calibrated.

    The bandwidth factors were fitted on a lone flow's nominal bandwidth, the narrower of
    its node link and the backbone (PlatformSpec.inter_node_bandwidth_Bps). On an emulated
    cluster at the share the backbone (the aggregate of the pairs) is the narrower: widening
    it on the random ring then let a lone flow run at its node link's, and after the fit the
    PingPong at the share ran 44-48 % faster than measured from 16 KiB up (netns-4x1-1gbe,
    2026-12-03; a chain broadcast of 1 MiB -45 %). With the node links at the calibrated
    nominal a wider backbone leaves every lone flow as calibrated, and it limits many flows
    at once only, as the host's cores do."""
    nominal = calibrated.inter_node_bandwidth_Bps
    link = platform.link
    if link.bandwidth_Bps > nominal:
        link = LinkSpec(link.latency_s, nominal)
    backbone = x * (calibrated.backbone_bandwidth_Bps or 0.0)
    return replace(platform, link=link, backbone_bandwidth_Bps=backbone)


def flow_residuals(
    target: Target,
    contention: Contention,
    config: dict[str, str],
    spec: PlatformSpec,
    runner: SmpiCalibrationRunner,
) -> list[dict[str, Any]]:
    """The measured concurrent pairs against the model's (each pair count on its NIC scale):
    their gap and scales were computed from them, so these show what SimGrid makes of it."""
    flows = target.flows
    if flows is None:
        return []
    out = []
    for pairs, lat_us, bw in zip(flows.pairs, flows.latency_us, flows.bandwidth_mb_s,
                                 strict=True):  # fmt: skip
        platform = scale_nic(spec, contention.nic_scale_at(pairs))
        values = runner.pattern(platform, config, FLOW_PATTERN, 2 * pairs, pairs,
                                [flows.small, flows.large])  # fmt: skip
        for metric, size, measured in (("latency", flows.small, lat_us),
                                       ("bandwidth", flows.large, bw)):  # fmt: skip
            simulated = values[(metric, size)]
            out.append({
                "path": FLOW_PATTERN, "metric": metric, "size": size, "ranks": 2 * pairs,
                "ppn": pairs, "pairs": pairs, "measured": measured, "simulated": simulated,
                "residual": (simulated - measured) / measured, "calibrated": False,
                "fitted": bool(contention.flow_scales or contention.gap_s),
            })  # fmt: skip
    return out


def calibration_config(row: CalibrationRow) -> tuple[PlatformSpec, dict[str, str]]:
    params = row.parameters
    return PlatformSpec.from_dict(params["platform"]), dict(params["smpi_config"])


def obtain_calibration(
    store: Store,
    target: Target,
    tools: SmpiTools,
    *,
    kernel: str | None,
    tolerance: float,
    recalibrate: bool,
    workdir: Path,
    progress: Any = None,
) -> tuple[CalibrationRow, bool]:
    """A converged calibration of the target: a stored one with the same inputs, or a new one.

    Returns (calibration, reused). A calibration that does not converge is stored (its
    residuals say why) and refused with a one-line error."""
    reference = choose_speed_reference(target.speeds, kernel)
    key = calibration_key(
        target,
        {
            "simgrid": tools.simgrid_version,
            "tolerance": tolerance,
            "speed_reference": dataclasses.asdict(reference) if reference else None,
            "base_config": dict(BASE_CONFIG),
            "rings": target.rings.to_dict() if target.rings else None,
            "flows": target.flows.to_dict() if target.flows else None,
            "mpi": target.mpi_family,
            "memory": target.memory.to_dict() if target.memory else None,
        },
    )
    if not recalibrate:
        for row in store.calibrations(key=key):
            if row.converged:
                return row, True
    cores = max(2, target.cores_per_node or 2)
    nodes = 2 if "inter-node" in target.curves else 1
    spec = nominal_spec(target, nodes=nodes, cores_per_node=cores, speed=REFERENCE_SPEED_FLOPS)
    runner = SmpiCalibrationRunner(tools, workdir)
    started = time.monotonic()
    network: NetworkCalibration = calibrate_network(
        target, spec, runner.pingpong, tolerance=tolerance
    )
    speed: SpeedCalibration = calibrate_speed(
        network.spec, network.config(), reference, runner.kernel, tolerance=tolerance
    )
    spec = replace(network.spec, speed_flops=speed.speed_flops)
    config = {**network.config(), **selector_config(target.mpi_family)}
    contention, config, spec, ring_residuals = fit_rings(target, network, spec, config, runner)
    residuals = [r.to_dict() for r in network.residuals] + ring_residuals
    if speed.reference is not None and speed.simulated_s is not None:
        residuals.append(
            {
                "path": "compute",
                "kernel": speed.reference.kernel,
                "class": speed.reference.class_name,
                "measured_s": speed.reference.time_s,
                "simulated_s": speed.simulated_s,
                "residual": speed.residual,
                "calibrated": True,
            }
        )
    speed_ok = speed.residual is None or abs(speed.residual) <= tolerance
    converged = network.converged and speed_ok
    worst = max(
        [network.max_residual] + ([abs(speed.residual)] if speed.residual is not None else [])
    )
    parameters = {
        "platform": spec.to_dict(),
        "platform_xml": platform_xml(spec),
        "smpi_config": config,
        "contention": contention.to_dict(),
        "collective_selector": {"mpi": target.mpi_family, "source": target.mpi_source},
        "input_flags": curve_flags(target),
        "segments": [dataclasses.asdict(s) for s in network.segments],
        "lat_factor": [list(p) for p in network.lat_factor],
        "bw_factor": [list(p) for p in network.bw_factor],
        "calibrated_path": target.primary_path,
        "curves": {p: c.origin for p, c in target.curves.items()},
        "host_speed": {
            "speed_flops": speed.speed_flops,
            "reference_flops": REFERENCE_SPEED_FLOPS,
            "how": speed.describe(),
            "iterations": speed.iterations,
        },
        "assumed": list(target.assumed),
        "memory": target.memory.to_dict() if target.memory else None,
        "history": list(network.history),
        "smpirun_executions": runner.runs,
        "wall_s": time.monotonic() - started,
    }
    row = store.add_calibration(
        key=key,
        platform_name=target.name,
        source_kind=target.source_kind,
        source=target.source,
        source_run_ids=sorted(
            {*target.run_ids, *([reference.run_id] if reference and reference.run_id else []),
             *(reference.run_ids if reference else ())}
        ),
        simgrid_version=tools.simgrid_version,
        parameters=parameters,
        residuals=residuals,
        max_residual=worst,
        tolerance=tolerance,
        iterations=network.iterations,
        converged=converged,
    )
    if not converged:
        # The tolerance holds against Residual.judged (none inside the runs' spread).
        bad = max((r for r in residuals if r.get("calibrated")),
                  key=lambda r: abs(float(r.get("judged", r["residual"]))))  # fmt: skip
        where = f"size {bad['size']} B" if "size" in bad else f"npb {bad['kernel']}"
        runs = bad.get("runs_us")
        outside = f", outside its runs' {runs[0]:.4g}-{runs[1]:.4g} us" if runs else ""
        raise UserError(
            f"calibration {row.id} of {target.name!r} did not reach {tolerance:.0%}: worst "
            f"residual {float(bad['residual']):+.1%} at {where} ({bad['path']}{outside}) "
            f"after {network.iterations} iterations; stored for inspection, nothing simulated"
        )
    return row, False


# --------------------------------------------------------------------------- the command


@dataclass
class Simulation:
    """Everything `hpceval simulate` prepared before it writes a run."""

    target: Target
    request: Request
    tools: SmpiTools
    cases: list[Case]
    programs: dict[str, Program]
    spec: PlatformSpec
    build: SmpiBuild | None = None  # NPB's sampling/folding (None for mpibench)
    memory_lines: list[str] = dataclasses.field(default_factory=list)  # what execute applied


def prepare(
    store: Store | None, platform: str | None, profile: str | None, request: Request
) -> Simulation:
    """Every check that can fail on bad input, before any calibration or run is stored."""
    check_request(request)
    target = resolve_target(store, platform, profile, request)
    curve_flags(target)  # refuses an implausible curve before anything is stored
    nodes, cores, ppn = simulated_shape(target, request)
    tools = detect_smpi()
    try:
        spec = nominal_spec(target, nodes=nodes, cores_per_node=cores,
                            speed=REFERENCE_SPEED_FLOPS)  # fmt: skip
    except ValueError as e:
        raise UserError(f"{target.name}: {e}") from None
    # Placements on the simulated platform (cores widened only with --oversubscribe).
    placements_ = []
    for r in request.ranks:
        try:
            placements_.append(placement_for(r, ppn, replace(spec, cores_per_node=max(cores, ppn))))
        except UserError as e:
            if "inter-node" not in target.curves:
                raise UserError(f"{e}; no inter-node PingPong of {target.name!r} is stored, so "
                                "the projection stays on one node") from None  # fmt: skip
            raise
    dummy = target_platform(
        target, spec, platform_file=Path("platform.xml"), workdir=Path("."), cfg={},
        tools=tools, oversubscribe=request.oversubscribe,
    )  # fmt: skip
    build = (
        choose_smpi_build(request, machine_available_bytes())
        if request.benchmark == "npb"
        else None
    )
    cases = plan(request, dummy, placements_, build)
    programs = build_programs([c.benchmark for c in cases], tools, build)
    return Simulation(target, request, tools, cases, programs, spec, build)


def calibrate_simulation(store: Store, sim: Simulation) -> tuple[CalibrationRow, bool]:
    """`obtain_calibration` for a prepared simulation, with its request's tolerance and
    --recalibrate, in a scratch directory of its own under the build cache (two calibrations
    at once must not share platform files), removed when it is done. Returns (calibration,
    reused). `hpceval simulate` and a study's projections both calibrate through here."""
    scratch = cache_root() / "simulate"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="calibrating-") as workdir:
        return obtain_calibration(
            store,
            sim.target,
            sim.tools,
            kernel=sim.request.kernel,
            tolerance=sim.request.tolerance,
            recalibrate=sim.request.recalibrate,
            workdir=Path(workdir),
        )


def simulation_environment(tools: SmpiTools, programs: Mapping[str, Program]) -> Environment:
    flags = [f"{name}: {' '.join(p.cflags)}" for name, p in sorted(programs.items())]
    env = collect_environment(None, cflags=flags)
    facts = dict(env.facts)
    facts["mpi"] = {
        "implementation": "SMPI",
        "version": tools.simgrid_version,
        "mpicc": tools.smpicc,
        "mpirun": tools.smpirun,
    }
    facts["compiler"] = {**dict(facts.get("compiler") or {}), "command": tools.smpicc}
    facts["notes"] = [n for n in facts.get("notes", []) if "no MPI toolchain" not in n]
    return Environment(facts=facts, fingerprint=fingerprint(facts))


def execute(
    store: Store,
    sim: Simulation,
    calibration: CalibrationRow,
    reporter: Reporter | None = None,
    *,
    workdir: Path | None = None,
) -> tuple[int, CampaignResult]:
    """Write the simulated run and run its cases; points are committed as they complete."""
    calibrated, cfg = calibration_config(calibration)
    contention = Contention.from_dict(calibration.parameters.get("contention", {}))
    ppn = max((c.placement.ranks_per_node for c in sim.cases), default=1)
    nic_scale = contention.nic_scale_at(ppn)
    spec = replace(
        scale_nic(calibrated, nic_scale),
        name=sim.target.name,
        nodes=sim.spec.nodes,
        cores_per_node=sim.spec.cores_per_node,
        description=f"{sim.target.name}: calibration {calibration.uid}",
    )
    workdir = workdir or cache_root() / "simulate" / calibration.uid
    workdir.mkdir(parents=True, exist_ok=True)
    xml = workdir / f"platform-{spec.nodes}x{spec.cores_per_node}.xml"
    xml.write_text(platform_xml(spec))
    if sim.request.benchmark == "mpibench":
        cfg = {**cfg, **MPIBENCH_SIM_CONFIG}
    forced = dict(sim.request.collectives)
    cfg = {**cfg, **forced_config(forced)}  # after the calibration: it ran the library's
    platform = target_platform(
        sim.target, spec, platform_file=xml, workdir=workdir, cfg=cfg, tools=sim.tools,
        oversubscribe=sim.request.oversubscribe,
    )  # fmt: skip
    launcher = smpi_launcher(platform, sim.tools)
    check_commands(launcher, sim.cases)
    node = calibration.parameters.get("memory")
    memory = NodeMemory.from_dict(node) if node else None
    stretches, memory_record = memory_stretches(
        sim.request.benchmark, sim.request.kernel, sim.request.class_name, sim.cases, memory,
        lambda: fit_memory_demand(sim, launcher, workdir),
        speed_fitted=str(calibration.parameters.get("host_speed", {}).get("how", "")).startswith(
            "fitted"),
    )  # fmt: skip
    sim.memory_lines.append(memory_record["how"])
    run_id = record_run(
        store,
        launcher,
        simulation_environment(sim.tools, sim.programs),
        sim.cases,
        suite_name="simulate",
        suite_config={
            "simulate": sim.request.as_dict(),
            "calibration": calibration.run_reference(),
            "platform_xml": platform_xml(spec),
            "smpi_config": dict(cfg),
            "nic_scale": {"ranks_per_node": ppn, "scale": nic_scale},
            "memory": memory_record,
            **({"smpi_build": {**sim.build.option, "reason": sim.build.reason}}
               if sim.build is not None else {}),
        },
        platform_name=sim.target.name,
        platform_raw=platform.model_dump(mode="json"),
        note=f"SimGrid SMPI {calibration.simgrid_version}, calibration {calibration.id} "
        f"({calibration.uid})"
        + (f"; NPB {sim.build.describe()}" if sim.build is not None else "")
        # The compute/communication balance rests on it: every projection says how.
        + f"; core speed: {calibration.parameters.get('host_speed', {}).get('how', '?')}"
        + f"; {memory_record['how']}"
        + f"; network: {spec.describe_topology()}"
        + (f"; {forced_note(forced)}" if forced else ""),
    )  # fmt: skip
    # One campaign per stretch: SMPI's host-speed factor is one setting per smpirun.
    groups: dict[float, list[Case]] = {}
    for case in sim.cases:
        groups.setdefault(stretches.get(case.key, 1.0), []).append(case)
    result = CampaignResult()
    try:
        for factor, cases in groups.items():
            group = launcher if factor == 1.0 else smpi_launcher(platform.model_copy(update={
                "launcher": platform.launcher.model_copy(
                    update={"cfg": stretched_config(cfg, factor)})}), sim.tools)  # fmt: skip
            done = Campaign(store, group, sim.programs, reporter).execute(
                run_id, [(c, list(c.points)) for c in cases]
            )
            result.outcomes += done.outcomes
            result.benchmark_seconds += done.benchmark_seconds
    except BaseException:
        store.set_run_status(run_id, Status.INTERRUPTED, ended=time.time())
        raise
    store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    return run_id, result


def fit_memory_demand(sim: Simulation, launcher: Launcher, workdir: Path) -> MemoryDemand:
    """The simulated core's op rate on the kernel: RATE_FITS single-rank smpiruns of the same
    kernel, class and build on the calibrated platform, their median and spread (a spread
    above RATE_MAX_SPREAD refused); kept in `workdir`, reused."""
    kernel, class_name = sim.request.kernel, sim.request.class_name
    assert kernel is not None and class_name is not None
    tag = "-".join(str(v) for v in (sim.build.option.values() if sim.build else ()))
    cached = workdir / f"memory-rate-{kernel}-{class_name}-{tag}.json"
    if cached.is_file():
        record = json.loads(cached.read_text())
        return MemoryDemand(**{**record, "samples": tuple(record["samples"])})
    single = replace(sim.request, ranks=(1,), ppn=1)
    placement = placement_for(1, 1, sim.spec)
    (case,) = plan(single, launcher.platform, [placement], sim.build)
    samples = []
    for _ in range(RATE_FITS):
        measured = run_once(launcher, get_benchmark("npb"), sim.programs["npb"], case,
                            sim.request.time_limit_s)  # fmt: skip
        samples.append(next(float(m.value) for m in measured if m.metric == "mops_total"))
    demand = fitted_rate(kernel, class_name, samples, load=os.getloadavg()[0])
    cached.write_text(json.dumps(demand.to_dict()))
    return demand
