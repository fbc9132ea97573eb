"""Planning a simulation, before anything is stored: the SMPI tools, the request and its
checks, the SMPI build of each kernel (sampled, folded or full), the rank counts and
placements on the simulated platform, the cases, and their smpicc builds (see
hpceval.simulate.runner, which calibrates and runs them)."""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from hpceval.benchmarks import Case, Program, get_benchmark
from hpceval.benchmarks.common import MAX_REPEAT
from hpceval.benchmarks.npb import (
    ITERATION_SAMPLING_KERNELS,
    SECONDS_ESTIMATE,
    SMPI_BUILD_OPTION,
    memory_per_rank,
    problem_size,
    smpi_build_flags,
)
from hpceval.config import (
    InterconnectConfig,
    LauncherConfig,
    PlatformConfig,
    validation_message,
)
from hpceval.errors import ToolMissing, UserError
from hpceval.launch.starters.smpi_collectives import parse_forced
from hpceval.model import Placement
from hpceval.patterns import PAIR_PATTERNS
from hpceval.simulate.calibrate import (
    DEFAULT_TOLERANCE,
)
from hpceval.simulate.platform import PlatformSpec
from hpceval.simulate.profiles import profile_target
from hpceval.simulate.sources import FATPIPE_ASSUMED, Target, store_target
from hpceval.simulate.token_bucket import build_plugin
from hpceval.store import Store

SMPICC = "smpicc"
SMPIRUN = "smpirun"
SMPI_REMEDY = "install Debian package libsimgrid-dev (./setup.sh deps)"
# Simulated time is deterministic once the host's computation is not simulated (below): a
# point needs few samples and no warm-up (SMPI.md: a 16-rank alltoall took 57 s of wall time
# with mpibench's defaults, 1.5 s with these). A sample spans 10 ms of simulated time: the
# ranks leave the barrier before a sample up to a latency apart, and with 0.1 ms samples
# (one iteration of a 45 µs PingPong) that skew was a third of the time (a 0-byte PingPong
# simulated at 67.8 µs on a 45.2 µs route, 45.4 µs with 10 ms samples), so the calibration
# of magellan-amazon-cc never converged.
MPIBENCH_SIM_OPTIONS: Mapping[str, Any] = {
    "budget_s": 0.05,
    "warmup_s": 0.0,
    "sample_s": 0.01,
    "min_samples": 3,
    "max_samples": 10,
}
# mpibench's only computation is its own bookkeeping between MPI calls: timed on this busy
# host it made the 0-byte PingPong vary 0.22-0.31 µs; without it every sample is the model's.
MPIBENCH_SIM_CONFIG: Mapping[str, str] = {"smpi/simulate-computation": "no"}

# NPB kernels whose SMPI builds sample computation / fold memory (SMPI.md): IS does neither
# (its loops index with what the previous ones computed), EP folds nothing.
SAMPLING_KERNELS = frozenset({"cg", "ep", "mg", "ft"})
FOLDING_KERNELS = frozenset({"cg", "mg", "ft"})
# "auto": SMPI runs every rank's computation, one after the other, on one core of this
# machine, so a plain simulation takes about the class's single-core time whatever the rank
# count; sample from classes whose estimate exceeds this (C: ~400 s, D).
SAMPLE_ABOVE_S = 300.0
# "auto": all ranks live in the one smpirun process; fold when their arrays would take more
# than this share of this machine's available memory (the rest: SimGrid, other jobs) ...
FOLD_MEMORY_SHARE = 0.25
# ... or from this many ranks on in a sampled class: folded buffers also spare SMPI the
# copy of every message payload (SMPI.md; CG class C on 512 ranks was timed with both).
FOLD_FROM_RANKS = 64
# "auto": from this many ranks on in a sampled class, CG times AUTO_ITERATIONS of its
# identical outer iterations and extrapolates (iteration sampling, SMPI.md): SimGrid's
# network solver, not the program, then takes most of the wall time, and it grows with
# the messages in flight (CG class C on 512 simulated ranks: > 10 minutes with all 75).
ITERATIONS_FROM_RANKS = 256
AUTO_ITERATIONS = 10
DEFAULT_TIME_LIMIT_S = 3600.0

# --------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class SmpiTools:
    smpicc: str
    smpirun: str
    simgrid_version: str

    def identity(self) -> str:
        return f"{self.smpicc} (SimGrid {self.simgrid_version})"


def parse_simgrid_version(text: str) -> str | None:
    """`smpirun -version` prints "SimGrid version 3.32" (pure, tested)."""
    m = re.search(r"SimGrid version (\S+)", text)
    return m.group(1) if m else None


def detect_smpi() -> SmpiTools:
    smpicc, smpirun = shutil.which(SMPICC), shutil.which(SMPIRUN)
    if smpicc is None or smpirun is None:
        missing = SMPICC if smpicc is None else SMPIRUN
        raise ToolMissing(f"{missing} not found: {SMPI_REMEDY}")
    try:
        done = subprocess.run(
            [smpirun, "-version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise ToolMissing(f"{smpirun} -version failed ({e}): {SMPI_REMEDY}") from None
    version = parse_simgrid_version(done.stdout + done.stderr)
    if version is None:
        raise ToolMissing(f"{smpirun} -version does not name a SimGrid version: {SMPI_REMEDY}")
    return SmpiTools(smpicc, smpirun, version)


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Request:
    """What to simulate (the CLI's options)."""

    bench: str  # "mpibench" or "npb.<kernel>"
    ranks: tuple[int, ...]
    class_name: str | None = None  # NPB class
    pattern: str | None = None  # mpibench pattern
    sizes: str | list[int | str] | None = None  # mpibench sizes
    ppn: int | None = None
    nodes: int | None = None
    oversubscribe: bool = False
    backbone: Literal["fatpipe", "shared"] | None = None
    backbone_gbps: float | None = None
    topology: str | None = None  # flat | fat_tree:LEAF_NODES:RATIO | torus:XxYxZ
    accept_curve: bool = False  # calibrate on a curve the input checks refuse (flagged)
    host_share: bool = False  # emulated nodes sharing this host's cores: calibrate at the share
    # Each stored figure (calibration input, --validate's reference) the median over the
    # latest this many runs that measured it; None: all of them.
    pool_runs: int | None = None
    token_bucket: bool = True  # model a stored tc tbf shaping (False: factors only)
    bucket_peak_Bps: float | None = None  # a shaped link's speed with tokens (None: assumed)
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    tolerance: float = DEFAULT_TOLERANCE
    recalibrate: bool = False
    sampling: bool | None = None  # NPB computation sampling; None: auto (choose_smpi_build)
    folding: bool | None = None  # NPB memory folding; None: auto
    iterations: int | None = None  # CG iteration sampling: timed iterations, 0 all; None: auto
    # NPB: replays of each case (repetitions), so that a projection carries the spread of
    # the computation replayed on this host (hpceval.simulate.validate).
    repeat: int = 1
    # (collective, SMPI algorithm) forced instead of the MPI library's choice (--collective)
    collectives: tuple[tuple[str, str], ...] = ()

    @property
    def benchmark(self) -> str:
        return self.bench.split(".", 1)[0]

    @property
    def kernel(self) -> str | None:
        return self.bench.split(".", 1)[1] if "." in self.bench else None

    def as_dict(self) -> dict[str, Any]:
        record = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        if self.collectives:
            record["collectives"] = dict(self.collectives)
        else:
            del record["collectives"]
        return record


def check_request(request: Request) -> None:
    if request.benchmark == "npb":
        if request.kernel is None or request.class_name is None:
            raise UserError("--bench npb.KERNEL needs a kernel (npb.cg...) and --class")
    elif request.benchmark == "mpibench":
        if request.pattern is None:
            raise UserError("--bench mpibench needs --pattern (pingpong, allreduce, ...)")
        if request.kernel is not None or request.class_name is not None:
            raise UserError("--bench mpibench takes no kernel and no --class")
    else:
        raise UserError(f"--bench: {request.bench!r} cannot be simulated (mpibench, npb.KERNEL)")
    if not request.ranks:
        raise UserError("--ranks: no rank count")
    parse_forced(f"{name}={algorithm}" for name, algorithm in request.collectives)
    if request.ppn is not None and request.ppn < 1:
        raise UserError(f"--ppn: {request.ppn} is not a valid count")
    if request.nodes is not None and request.nodes < 1:
        raise UserError(f"--nodes: {request.nodes} is not a valid count")
    if request.backbone == "shared" and request.backbone_gbps is None:
        raise UserError("--backbone shared needs --backbone-gbps (the shared bandwidth)")
    if request.benchmark != "npb":
        for flag, value in (("sampling", request.sampling), ("folding", request.folding)):
            if value is not None:
                raise UserError(f"--{flag}/--no-{flag}: only NPB builds sample or fold")
        if request.iterations is not None:
            raise UserError("--iterations: only NPB CG simulations sample iterations")
    else:
        if request.sampling and request.kernel not in SAMPLING_KERNELS:
            raise UserError(f"--sampling: npb.{request.kernel} has no sampled computation")
        if request.folding and request.kernel not in FOLDING_KERNELS:
            raise UserError(f"--folding: npb.{request.kernel} has no foldable array")
        if request.iterations is not None:
            if request.iterations < 0:
                raise UserError(f"--iterations: {request.iterations} is not a count (0: all)")
            if request.iterations and request.kernel not in ITERATION_SAMPLING_KERNELS:
                raise UserError(
                    f"--iterations: npb.{request.kernel} has no iteration sampling (only npb.cg)"
                )


# --------------------------------------------------------------------------- SMPI builds


@dataclass(frozen=True)
class SmpiBuild:
    """The approximations of the NPB smpicc build a simulation runs, and why."""

    sampling: bool
    folding: bool
    reason: str
    iterations: int | None = None  # timed iterations (iteration sampling); None: all

    @property
    def cflags(self) -> list[str]:
        return ["-O2", *smpi_build_flags(sampling=self.sampling, folding=self.folding)]

    @property
    def option(self) -> dict[str, Any]:
        """The case option (SMPI_BUILD_OPTION) that lets a "not checked" result be accepted."""
        return {"sampling": self.sampling, "memory_folding": self.folding,
                "iterations": self.iterations}  # fmt: skip

    def describe(self) -> str:
        done = [n for n, on in (("computation sampling", self.sampling),
                                ("memory folding", self.folding)) if on]  # fmt: skip
        if self.iterations:
            done.append(f"iteration sampling ({self.iterations} timed iterations)")
        if not done:
            return "plain SMPI build (verified)"
        listed = done[0] if len(done) == 1 else f"{', '.join(done[:-1])} and {done[-1]}"
        return f"{listed} (verification not checked)"


def machine_available_bytes() -> int | None:
    """MemAvailable of this machine, where smpirun holds every simulated rank."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def choose_smpi_build(request: Request, available_bytes: int | None) -> SmpiBuild:
    """Sampling and folding of an NPB simulation: the user's choice, else "auto" (pure).

    Decided once per command, on its largest rank count, so that one projected curve comes
    from one build. Auto samples when a plain simulation would take minutes (the class's
    single-core estimate above SAMPLE_ABOVE_S: classes C, D) and folds when the ranks' arrays
    would not fit comfortably in this machine's memory, or from FOLD_FROM_RANKS ranks on in
    a sampled class. A kernel without sampled blocks / foldable arrays never gets the option.
    """
    assert request.kernel is not None and request.class_name is not None
    kernel, class_name, ranks = request.kernel, request.class_name, max(request.ranks)
    reasons: list[str] = []
    if request.sampling is not None:
        sampling = request.sampling
        reasons.append(f"sampling {'on' if sampling else 'off'} (asked)")
    else:
        estimate = SECONDS_ESTIMATE.get(class_name, 0.0)
        sampling = kernel in SAMPLING_KERNELS and estimate > SAMPLE_ABOVE_S
        if sampling:
            reasons.append(f"sampling: class {class_name} takes ~{estimate:g} s on one core")
    if request.folding is not None:
        folding = request.folding
        reasons.append(f"folding {'on' if folding else 'off'} (asked)")
    else:
        total = ranks * memory_per_rank(kernel, class_name, ranks)
        too_big = available_bytes is not None and total > FOLD_MEMORY_SHARE * available_bytes
        many = sampling and ranks >= FOLD_FROM_RANKS
        folding = kernel in FOLDING_KERNELS and (too_big or many)
        if folding and too_big:
            reasons.append(
                f"folding: {ranks} ranks need ~{total / 1e9:.1f} GB, this machine has "
                f"{(available_bytes or 0) / 1e9:.1f} GB available"
            )
        elif folding:
            reasons.append(f"folding: {ranks} ranks (no payload copies)")
    iterations: int | None = None
    official = int(problem_size(kernel, class_name)[2]) if kernel == "cg" else None
    if request.iterations is not None:
        if request.iterations and official is not None and request.iterations < official:
            iterations = request.iterations
            reasons.append(f"{iterations} of {official} iterations timed (asked)")
    elif (
        kernel in ITERATION_SAMPLING_KERNELS
        and sampling
        and ranks >= ITERATIONS_FROM_RANKS
        and official is not None
        and official > AUTO_ITERATIONS
    ):
        iterations = AUTO_ITERATIONS
        reasons.append(
            f"iteration sampling: {iterations} of {official} iterations at {ranks} ranks"
        )
    return SmpiBuild(sampling, folding, "; ".join(reasons) or "auto: plain build", iterations)


def resolve_target(
    store: Store | None, platform: str | None, profile: str | None, request: Request
) -> Target:
    if (platform is None) == (profile is None):
        raise UserError("give one of --platform (measured in the store) or --profile")
    if profile is not None:
        if request.host_share:
            raise UserError("--host-share: a profile has no host; it applies to --platform")
        target = profile_target(profile)
    else:
        assert platform is not None and store is not None
        if request.host_share and len(request.ranks) != 1:
            raise UserError("--host-share: give one rank count (the share is the host's "
                            "cores / the ranks)")  # fmt: skip
        target = store_target(store, platform, request.ranks[0] if request.host_share else None,
                              request.pool_runs)  # fmt: skip
    if request.backbone is not None:
        backbone_Bps = request.backbone_gbps * 1e9 / 8 if request.backbone_gbps else None
        target = replace(target, backbone=request.backbone, backbone_Bps=backbone_Bps,
                         assumed=tuple(a for a in target.assumed if a != FATPIPE_ASSUMED))
    if request.topology is not None:
        target = replace(target, topology=parse_topology(request.topology))
    if request.accept_curve:
        target = replace(target, curve_accepted=True)
    return token_bucket_choice(target, request)


def token_bucket_choice(target: Target, request: Request) -> Target:
    """The target with its stored tc tbf bucket as the request has it: modelled (with the
    peak given or assumed, and said so), or left to the factors (--no-token-bucket,
    --host-share); a one-line UserError for a peak without a bucket or another topology."""
    if (stored := target.token_bucket) is not None:
        if not request.token_bucket or request.host_share:
            # At the share the pairs' curve is the host's cores as much as the buckets (on
            # netns-4x1-1gbe, 2 pairs at 64-256 KiB moved more than the buckets' steady
            # state lets one pair): only factors fitted on it follow it.
            why = "--no-token-bucket" if not request.token_bucket else (
                "--host-share (the concurrent pairs at the share are the calibration input)")
            target = replace(target, token_bucket=None, assumed=(
                *target.assumed, f"{why}: {stored.describe()}, modelled by the "
                "factors fitted on the curve alone"))  # fmt: skip
        elif request.bucket_peak_Bps is not None:
            try:
                bucket = replace(stored, peak_Bps=request.bucket_peak_Bps,
                                 peak_source="given with --bucket-peak-gbps")  # fmt: skip
            except ValueError as e:
                raise UserError(f"--bucket-peak-gbps: {e}") from None
            target = replace(target, token_bucket=bucket)
        if target.token_bucket is not None and target.token_bucket.peak_source.startswith(
                "assumed"):  # fmt: skip
            target = replace(target, assumed=(
                *target.assumed, f"token bucket: a shaped link runs at "
                f"{target.token_bucket.peak_Bps / 1e6:.4g} MB/s while its bucket holds tokens "
                "(a veth's speed; --bucket-peak-gbps sets it)"))  # fmt: skip
        if target.token_bucket is not None and target.topology:
            raise UserError("--topology: a token bucket shapes the links of the emulated "
                            "cluster's single switch; give --no-token-bucket for another "
                            "topology")  # fmt: skip
    elif request.bucket_peak_Bps is not None:
        raise UserError(f"--bucket-peak-gbps: the links of {target.name!r} are not shaped by "
                        "a token bucket (no tc tbf in its stored emulation facts)")  # fmt: skip
    return target


def parse_topology(text: str) -> dict[str, Any]:
    """--topology: flat, fat_tree:LEAF_NODES:RATIO (ratio 1: full bisection) or torus:XxYxZ;
    PlatformSpec's topology fields, or a one-line UserError."""
    source = f"--topology {text}"
    if text == "flat":
        return {"topology": "flat", "topology_source": source}
    fat = re.fullmatch(r"fat_tree:([1-9][0-9]*):([0-9]+(?:\.[0-9]+)?)", text)
    if fat:
        leaf, ratio = int(fat.group(1)), float(fat.group(2))
        ups = leaf / ratio if ratio >= 1 else 0.0
        if ups != int(ups) or ups < 1:
            raise UserError(f"--topology {text}: the ratio must be >= 1 and divide the "
                            f"{leaf} nodes of a leaf into whole up-links")  # fmt: skip
        return {"topology": "fat_tree", "leaf_nodes": leaf, "oversubscription": ratio,
                "topology_source": source}  # fmt: skip
    torus = re.fullmatch(r"torus:([1-9][0-9]*(?:x[1-9][0-9]*){0,2})", text)
    if torus:
        dims = tuple(int(d) for d in torus.group(1).split("x"))
        return {"topology": "torus", "torus_dims": dims, "topology_source": source}
    raise UserError(f"--topology: {text!r} is not flat, fat_tree:LEAF_NODES:RATIO or "
                    "torus:XxYxZ")  # fmt: skip


# --------------------------------------------------------------------------- planning


def simulated_shape(target: Target, request: Request) -> tuple[int, int, int]:
    """(nodes, cores per node, ranks per node) of the simulated platform."""
    cores = target.cores_per_node
    if cores is None:
        if request.ppn is None:
            raise UserError(f"{target.name}: the source gives no cores per node; pass --ppn")
        cores = request.ppn
    ppn = request.ppn or cores
    if ppn > cores and not request.oversubscribe:
        raise UserError(
            f"--ppn: {ppn} ranks per node is more than the {cores} cores of a node of "
            f"{target.name!r} (--oversubscribe to let simulated ranks share cores)"
        )
    needed = max(math.ceil(r / min(ppn, r)) for r in request.ranks)
    if request.pattern in PAIR_PATTERNS and 2 in request.ranks and request.ppn is None:
        needed = max(needed, 2)  # two ranks measure an intra-node and an inter-node pair
    # No network measured: the projection cannot leave one node.
    nodes = (request.nodes or needed) if "inter-node" in target.curves else 1
    return nodes, cores, ppn


def plan(
    request: Request,
    platform: PlatformConfig,
    placements_: Sequence[Placement],
    build: SmpiBuild | None = None,
) -> list[Case]:
    """The cases, from the benchmark's own planning (its rank rules and memory checks).

    NPB cases declare their SMPI build (option SMPI_BUILD_OPTION, and parameters
    smpi_sampling / smpi_memory_folding on every measurement)."""
    bench = get_benchmark(request.benchmark)
    if request.repeat != 1 and request.benchmark != "npb":
        raise UserError(f"--repeat: {request.benchmark} repeats its points as samples; "
                        "--repeat replays NPB cases")  # fmt: skip
    if not 1 <= request.repeat <= MAX_REPEAT:
        raise UserError(f"--repeat: {request.repeat} is not between 1 and {MAX_REPEAT}")
    cases: list[Case] = []
    for placement in placements_:
        options: dict[str, Any]
        if request.benchmark == "npb":
            options = {
                "kernels": [request.kernel],
                "classes": [request.class_name],
                "ranks": [placement.ranks],
                "ranks_per_node": [placement.ranks_per_node],
                "repeat": request.repeat,
            }
        else:
            options = {
                "patterns": [request.pattern],
                "ranks": [placement.ranks],
                **MPIBENCH_SIM_OPTIONS,
            }
            if request.sizes is not None:
                options["sizes"] = request.sizes
            if not (
                request.pattern in PAIR_PATTERNS and placement.ranks == 2 and request.ppn is None
            ):
                # Two ranks of a pair pattern, no --ppn: both an intra- and an inter-node pair.
                options["ranks_per_node"] = [placement.ranks_per_node]
        try:
            planned = bench.cases(bench.parse_options(options), platform, 0)
        except ValidationError as e:
            field, msg = validation_message(e)
            raise UserError(f"{field}: {msg}") from None
        except ValueError as e:
            raise UserError(str(e)) from None
        if build is not None:
            planned = [
                replace(
                    c,
                    options={**c.options, SMPI_BUILD_OPTION: build.option},
                    parameters={
                        **c.parameters,
                        "smpi_sampling": build.sampling,
                        "smpi_memory_folding": build.folding,
                        # only when on: full simulations keep their points
                        **({"smpi_timed_iterations": build.iterations} if build.iterations else {}),
                    },
                )
                for c in planned
            ]
        cases += [replace(c, time_limit_s=request.time_limit_s) for c in planned]
    keys = [c.key for c in cases]
    return [c for i, c in enumerate(cases) if c.key not in keys[:i]]


def simulated_platform(
    name: str,
    description: str,
    spec: PlatformSpec,
    *,
    memory_gb_per_node: float | None,
    platform_file: Path,
    workdir: Path,
    cfg: Mapping[str, str],
    tools: SmpiTools,
    oversubscribe: bool,
) -> PlatformConfig:
    """The hpceval platform whose launcher runs `spec` under smpirun (with the token-bucket
    plugin, built first, when its node links are shaped)."""
    bucket = spec.token_bucket
    shaped = {} if bucket is None else {"token_bucket": {
        "plugin": str(build_plugin(tools.simgrid_version)), "spec": bucket.plugin_spec(),
        "description": bucket.describe()}}  # fmt: skip
    return PlatformConfig(
        name=name,
        description=description,
        launcher=LauncherConfig.model_validate(
            {
                "kind": "smpi",
                "mpirun": tools.smpirun,
                "mpicc": tools.smpicc,
                "oversubscribe": oversubscribe,
                "platform_file": str(platform_file),
                "workdir": str(workdir),
                "cfg": dict(cfg),
                **shaped,
            }
        ),
        nodes=spec.nodes,
        cores_per_node=spec.cores_per_node,
        memory_gb_per_node=memory_gb_per_node,
        interconnect=InterconnectConfig(name=f"simulated (SimGrid SMPI): {spec.description}"),
        cflags=["-O2"],
    )


def target_platform(
    target: Target,
    spec: PlatformSpec,
    *,
    platform_file: Path,
    workdir: Path,
    cfg: Mapping[str, str],
    tools: SmpiTools,
    oversubscribe: bool,
) -> PlatformConfig:
    return simulated_platform(
        target.name,
        f"SimGrid SMPI projection of {target.name} ({target.source})",
        spec,
        memory_gb_per_node=target.memory_gb_per_node,
        platform_file=platform_file,
        workdir=workdir,
        cfg=cfg,
        tools=tools,
        oversubscribe=oversubscribe,
    )


def build_programs(
    names: Sequence[str], tools: SmpiTools, npb_build: SmpiBuild | None = None
) -> dict[str, Program]:
    """Each benchmark built by its own build function with smpicc (a failure: one line);
    NPB with the sampling/folding options of `npb_build` (plain without)."""
    programs = {}
    for name in sorted(set(names)):
        cflags = npb_build.cflags if name == "npb" and npb_build is not None else ["-O2"]
        try:
            programs[name] = get_benchmark(name).build(
                compiler=tools.smpicc, compiler_identity=tools.identity(), cflags=cflags
            )
        except UserError as e:
            raise UserError(f"{name} does not build under smpicc: {e}") from None
    return programs
