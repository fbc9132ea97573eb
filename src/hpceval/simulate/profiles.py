"""Published platform profiles (`hpceval/data/profiles/*.toml`) as calibration targets.

A profile holds a platform's published point-to-point figures (start-up latency and peak
bandwidth of the inter-node and intra-node paths), its cores and memory per node, the source
they come from, and the list of what is assumed where the source gives nothing. The curve a
calibration fits is Hockney's t(n) = latency + n / bandwidth at the standard PingPong sizes
(0 B to 4 MiB): two published numbers per path, nothing more. A figure published as a range
([lo, hi]) is used at its midpoint.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from hpceval.config import StrictModel, read_toml, validation_message
from hpceval.errors import ConfigError, UserError
from hpceval.simulate.contention import RingFigures
from hpceval.simulate.memory import NodeMemory
from hpceval.simulate.sources import Curve, NetworkPath, SpeedReference, Target

# PingPong sizes of a profile's curve: 0 and the powers of two up to 4 MiB (methodology §3).
PROFILE_SIZES: tuple[int, ...] = (0, *(2**k for k in range(23)))

Figure = float | tuple[float, float]

# Bytes per second of one unit of published bandwidth (1 MB = 10^6 B, methodology §3).
_BYTES_PER_S = {"Gbps": 1e9 / 8, "GB/s": 1e9, "MB/s": 1e6}


def _mid(value: Figure) -> float:
    return (value[0] + value[1]) / 2 if isinstance(value, tuple) else float(value)


class PathFigures(StrictModel):
    path: str
    latency_us: Figure
    bandwidth: Figure
    bandwidth_unit: Literal["Gbps", "GB/s", "MB/s"]
    assumed: bool = False  # the figures are not the source's own (see the profile's `assumed`)

    @model_validator(mode="after")
    def _positive(self) -> PathFigures:
        for name in ("latency_us", "bandwidth"):
            value = getattr(self, name)
            values = value if isinstance(value, tuple) else (value,)
            if any(v <= 0 for v in values) or (isinstance(value, tuple) and value[0] > value[1]):
                raise ValueError(f"{name}: {value!r} is not a positive figure or range")
        return self

    @property
    def latency(self) -> float:
        """µs (midpoint of a published range)."""
        return _mid(self.latency_us)

    @property
    def bandwidth_mb_s(self) -> float:
        """MB/s, 1 MB = 10^6 B (midpoint of a published range)."""
        return _mid(self.bandwidth) * _BYTES_PER_S[self.bandwidth_unit] / 1e6

    def curve(self, path: NetworkPath, origin: str) -> Curve:
        times = tuple(self.latency + n / self.bandwidth_mb_s for n in PROFILE_SIZES)
        return Curve(path, PROFILE_SIZES, times, origin, None)


class RingsFigures(StrictModel):
    """Rings with every rank busy (HPCC): latency per message at `latency_size`, bandwidth per
    process at `bandwidth_size` (hpceval.simulate.contention fits on them)."""

    source: str = Field(min_length=1)
    ranks: int = Field(ge=4)
    ppn: int = Field(ge=1)
    latency_size: int = Field(ge=0)
    bandwidth_size: int = Field(gt=0)
    natural_latency_us: float = Field(gt=0)
    random_latency_us: float = Field(gt=0)
    natural_bandwidth: float = Field(gt=0)
    random_bandwidth: float = Field(gt=0)
    bandwidth_unit: Literal["Gbps", "GB/s", "MB/s"]

    def figures(self) -> RingFigures:
        unit = _BYTES_PER_S[self.bandwidth_unit] / 1e6
        return RingFigures(
            self.ranks, self.ppn, self.latency_size, self.bandwidth_size,
            self.natural_latency_us, self.random_latency_us, self.natural_bandwidth * unit,
            self.random_bandwidth * unit, f"published: {self.source}",
        )  # fmt: skip


class TopologyFigures(StrictModel):
    """The network's shape (hpceval.simulate.platform) and where it comes from."""

    kind: Literal["flat", "fat_tree", "torus"]
    source: str = Field(min_length=1)
    leaf_nodes: int | None = Field(None, ge=1)
    oversubscription: float = Field(1.0, ge=1)
    torus_dims: list[int] = Field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        return {"topology": self.kind, "leaf_nodes": self.leaf_nodes,
                "oversubscription": self.oversubscription,
                "torus_dims": tuple(self.torus_dims), "topology_source": self.source}  # fmt: skip


class MemoryFigures(StrictModel):
    """The node's sustained memory bandwidth (STREAM Triad, all cores), the one-process
    figure if given, and where they come from (`assumed = true`: not the source's own)."""

    stream_triad: Figure
    single_process: Figure | None = None
    unit: Literal["GB/s", "MB/s"]
    llc_mib: float | None = Field(None, gt=0)  # the node's last-level cache, all sockets
    source: str = Field(min_length=1)
    assumed: bool = False

    @model_validator(mode="after")
    def _positive(self) -> MemoryFigures:
        for name in ("stream_triad", "single_process"):
            value = getattr(self, name)
            values = value if isinstance(value, tuple) else (value,)
            if any(v is not None and v <= 0 for v in values):
                raise ValueError(f"{name}: {value!r} is not a positive figure")
        return self

    def node_memory(self) -> NodeMemory:
        unit = _BYTES_PER_S[self.unit]
        single = _mid(self.single_process) * unit if self.single_process is not None else None
        llc = int(self.llc_mib * 2**20) if self.llc_mib else None
        return NodeMemory(_mid(self.stream_triad) * unit, single, self.source, self.assumed, llc)


class ComputeFigures(StrictModel):
    """A published single-process NPB figure of the target's core: the simulated core is
    fitted to it (hpceval.simulate.calibrate.calibrate_speed)."""

    kernel: Literal["ep", "is", "cg", "mg", "ft"]
    class_name: Literal["S", "W", "A", "B", "C"] = Field(alias="class")
    mops: float = Field(gt=0)  # Mop/s of one process, NPB's official count
    source: str = Field(min_length=1)

    def reference(self) -> SpeedReference:
        from hpceval.benchmarks.npb import mops_formula

        # Mop/s is the official operation count over the time: the time it stands for.
        seconds = mops_formula(self.kernel, self.class_name, 1.0) / self.mops
        return SpeedReference(self.kernel, self.class_name, seconds, None,
                              f"published: {self.source}")  # fmt: skip


class Profile(StrictModel):
    name: str
    description: str
    source: str = Field(min_length=1)
    cores_per_node: int | None = Field(None, ge=1)
    memory_gb_per_node: float | None = Field(None, gt=0)
    backbone: Literal["fatpipe", "shared"] = "fatpipe"
    backbone_gbps: float | None = Field(None, gt=0)
    assumed: list[str] = Field(default_factory=list)
    inter_node: PathFigures | None = None
    intra_node: PathFigures | None = None
    rings: RingsFigures | None = None
    topology: TopologyFigures | None = None
    # The MPI library the figures were measured with (SMPI's collective selector).
    mpi: Literal["openmpi", "mpich"] | None = None
    mpi_source: str = ""
    memory: MemoryFigures | None = None
    compute: ComputeFigures | None = None


def _profiles_dir() -> Path:
    with importlib.resources.as_file(
        importlib.resources.files("hpceval") / "data" / "profiles"
    ) as p:
        return Path(p)


def profile_names() -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in _profiles_dir().glob("*.toml"))


def load_profile(name_or_file: str) -> tuple[Profile, str]:
    """A shipped profile by name, or a profile file: (profile, display source)."""
    if name_or_file.endswith(".toml") or os.sep in name_or_file:
        path, source = Path(name_or_file), name_or_file
        if not path.is_file():
            raise UserError(f"{name_or_file}: no such profile file")
    else:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name_or_file):
            raise UserError(f"{name_or_file!r} is not a valid profile name")
        path, source = _profiles_dir() / f"{name_or_file}.toml", f"profiles/{name_or_file}.toml"
        if not path.is_file():
            raise UserError(
                f"unknown profile {name_or_file!r} (shipped: {', '.join(profile_names())}; "
                "or give a file)"
            )
    raw = read_toml(path, source)
    try:
        return Profile.model_validate(raw), source
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=field) from e


def profile_target(name_or_file: str) -> Target:
    """The calibration target of a profile; a one-line error if it cannot be calibrated."""
    profile, source = load_profile(name_or_file)
    if profile.inter_node is None:
        raise ConfigError(
            "no inter-node figures (latency_us, bandwidth): not enough data to calibrate",
            source=source,
            field="inter_node",
        )
    if profile.intra_node is None:
        raise ConfigError(
            "no intra-node figures: give the shared-memory latency and bandwidth (marked "
            "`assumed = true` if they are not the source's)",
            source=source,
            field="intra_node",
        )
    curves: dict[NetworkPath, Curve] = {}
    paths: tuple[tuple[NetworkPath, PathFigures], ...] = (
        ("inter-node", profile.inter_node),
        ("intra-node", profile.intra_node),
    )
    for path, figures in paths:
        origin = (
            f"{'assumed' if figures.assumed else 'published'}: {figures.path}, "
            f"{figures.latency:g} us, {figures.bandwidth_mb_s:g} MB/s (Hockney model)"
        )
        curves[path] = figures.curve(path, origin)
    rings = None
    if profile.rings is not None:
        try:
            rings = profile.rings.figures()
        except ValueError as e:
            raise ConfigError(str(e), source=source, field="rings") from None
    topology = (
        profile.topology.fields()
        if profile.topology is not None
        else {"topology_source": "assumed: the source gives no topology"}
    )
    return Target(
        name=profile.name,
        source_kind="profile",
        source=f"{source}: {profile.source}",
        cores_per_node=profile.cores_per_node,
        memory_gb_per_node=profile.memory_gb_per_node,
        backbone=profile.backbone,
        backbone_Bps=profile.backbone_gbps * 1e9 / 8 if profile.backbone_gbps else None,
        curves=curves,
        speeds=(
            {(profile.compute.kernel, profile.compute.class_name): profile.compute.reference()}
            if profile.compute is not None
            else {}
        ),
        assumed=tuple(profile.assumed),
        run_ids=(),
        rings=rings,
        topology=topology,
        mpi_family=profile.mpi,
        mpi_source=profile.mpi_source or ("" if profile.mpi else "not given: SMPI's defaults"),
        memory=profile.memory.node_memory() if profile.memory is not None else None,
    )
