"""The synthetic platforms and campaign templates of perf/analysis_scale.py: Hockney links per
platform, mpibench and NPB campaigns as cases and measurement rows, the JSON text the Store
writes, and per-row statistics of samples (as hpceval's `describe` computes them)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from scipy.special import stdtrit

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.benchmarks.mpibench import BYTES_FACTOR, TIME_DIVISOR
from hpceval.benchmarks.mpibench import point_key as mpibench_point
from hpceval.benchmarks.npb import point_key as npb_point
from hpceval.config import PlatformConfig
from hpceval.patterns import COLLECTIVES

# (This generator writes a million rows straight into the store's tables, past the Store.)
from hpceval.units import MEGABYTE_PER_SECOND, MICROSECOND, MOPS, SECOND

FloatArray = npt.NDArray[np.float64]

DEFAULT_MEASUREMENTS: Final = 1_000_000
TARGET_S: Final = 10.0
BASELINE: Final = "bare-metal"
CORES_PER_NODE: Final = 16
CONFIDENCE: Final = 0.95
START: Final = 1_700_000_000.0  # the first campaign's start (Unix seconds)
WEEK_S: Final = 7 * 86400.0

MPIBENCH_ENTRIES: Final[tuple[Mapping[str, Any], ...]] = (
    {"patterns": ["pingpong", "pingping"], "sizes": "0..4MiB", "ranks": [2]},
    {
        "patterns": [
            "sendrecv", "exchange", "natural_ring", "random_ring",
            "bcast", "reduce", "allreduce", "alltoall", "allgather", "barrier",
        ],
        "sizes": "0..4MiB",
        "ranks": [4, 8, 16, 32, 64],
    },
)  # fmt: skip
NPB_ENTRY: Final[Mapping[str, Any]] = {
    "kernels": ["ep", "is", "cg", "mg", "ft"],
    "classes": ["A", "B", "C"],
    "ranks": [1, 2, 4, 8, 16, 32, 64],
    "repeat": 3,
}
# Serial seconds of each NPB kernel and class on the baseline, its serial fraction, and the
# share of its time that is communication per doubling of the ranks (EP none, IS/FT all-to-all).
NPB_SECONDS: Final[Mapping[str, Mapping[str, float]]] = {
    "ep": {"A": 22.0, "B": 88.0, "C": 352.0},
    "is": {"A": 1.4, "B": 6.1, "C": 26.0},
    "cg": {"A": 1.9, "B": 95.0, "C": 260.0},
    "mg": {"A": 3.1, "B": 14.5, "C": 118.0},
    "ft": {"A": 4.6, "B": 61.0, "C": 270.0},
}
NPB_SERIAL: Final[Mapping[str, float]] = {
    "ep": 0.001, "is": 0.02, "cg": 0.01, "mg": 0.01, "ft": 0.01,
}  # fmt: skip
NPB_COMMUNICATION: Final[Mapping[str, float]] = {
    "ep": 0.0, "is": 0.06, "cg": 0.03, "mg": 0.015, "ft": 0.05,
}  # fmt: skip
NPB_METRICS: Final = (("time", SECOND), ("mops_total", MOPS), ("mops_per_process", MOPS))
NPB_ITERATIONS: Final[Mapping[str, int]] = {"ep": 0, "is": 10, "cg": 15, "mg": 4, "ft": 6}
NPB_QUANTITY: Final[Mapping[str, str]] = {
    "ep": "sx", "is": "partial_verify", "cg": "zeta", "mg": "rnm2", "ft": "checksum",
}  # fmt: skip


@dataclass(frozen=True)
class Link:
    """A Hockney link: latency alpha (µs), bandwidth beta (MB/s = bytes/µs), protocol switch."""

    alpha_us: float
    beta: float
    eager_limit: int
    rendezvous_us: float

    def time_us(self, nbytes: FloatArray) -> FloatArray:
        extra = np.where(nbytes > self.eager_limit, self.rendezvous_us, 0.0)
        times: FloatArray = self.alpha_us + nbytes / self.beta + extra
        return times


@dataclass(frozen=True)
class Profile:
    """A synthetic platform: its links, compute speed (time factor) and noise."""

    name: str
    description: str
    hypervisor: str
    interconnect: str
    io_path: str
    intra: Link
    inter: Link
    compute: float  # NPB time factor against the baseline (1.1: 10 % slower)
    noise: float  # log-normal sigma of one sample

    def link(self, nodes: int) -> Link:
        return self.inter if nodes > 1 else self.intra


PROFILES: Final[tuple[Profile, ...]] = (
    Profile("bare-metal", "InfiniBand FDR cluster", "none", "FDR InfiniBand", "native",
            Link(0.35, 7000.0, 4096, 0.6), Link(1.4, 5800.0, 12288, 1.8), 1.00, 0.020),
    Profile("docker", "containers on the same cluster", "container", "FDR InfiniBand",
            "native", Link(0.37, 6900.0, 4096, 0.6), Link(1.5, 5700.0, 12288, 1.9), 1.01, 0.022),
    Profile("kvm-sriov", "KVM guests, SR-IOV InfiniBand", "kvm", "FDR InfiniBand", "sr-iov",
            Link(0.45, 6200.0, 4096, 0.8), Link(2.1, 5300.0, 12288, 2.5), 1.04, 0.030),
    Profile("kvm-virtio", "KVM guests, virtio-net 10 GbE", "kvm", "10 GbE", "paravirtual",
            Link(0.50, 6000.0, 4096, 0.9), Link(38.0, 1050.0, 65536, 30.0), 1.06, 0.060),
    Profile("xen-pv", "Xen paravirtual guests, 10 GbE", "xen", "10 GbE", "paravirtual",
            Link(0.70, 4800.0, 4096, 1.2), Link(55.0, 780.0, 65536, 45.0), 1.09, 0.080),
    Profile("ec2-cc1", "EC2 cc1.4xlarge (2012)", "xen", "10 GbE", "paravirtual",
            Link(0.60, 5200.0, 4096, 1.0), Link(62.0, 560.0, 65536, 50.0), 1.12, 0.090),
    Profile("ec2-cc2", "EC2 cc2.8xlarge (2012)", "xen", "10 GbE", "paravirtual",
            Link(0.48, 6400.0, 4096, 0.8), Link(48.0, 1100.0, 65536, 40.0), 0.85, 0.070),
    Profile("azure-hb", "Azure HB, HDR InfiniBand", "hyperv", "HDR InfiniBand", "sr-iov",
            Link(0.30, 9000.0, 8192, 0.5), Link(1.9, 11500.0, 16384, 2.0), 0.80, 0.030),
    Profile("gcp-c2", "GCP c2, gVNIC 32 Gb/s", "kvm", "32 GbE", "paravirtual",
            Link(0.42, 7500.0, 4096, 0.7), Link(22.0, 2900.0, 65536, 18.0), 0.92, 0.050),
    Profile("csc-pouta", "CSC cPouta, 40 GbE", "kvm", "40 GbE", "paravirtual",
            Link(0.55, 5600.0, 4096, 0.9), Link(25.0, 3600.0, 65536, 20.0), 1.08, 0.060),
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One measurement of a campaign template (the same in every run of the campaign)."""

    case: int  # index of its case in the campaign
    point_key: str
    metric: str
    unit: str
    statistic: str
    parameters: str  # the JSON text the Store writes
    model: float  # the value the platform's model gives (µs, s)
    kind: str  # "time" (samples drawn), "bandwidth" (from the time row before it), "npb"
    nbytes: int  # bytes per reported time (bandwidth rows)
    divisor: int  # mpibench's time divisor (rings)
    kernel: str
    class_name: str
    ranks: int


@dataclass(frozen=True)
class Campaign:
    suite: str
    cases: tuple[Case, ...]
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Generated:
    path: Path
    measurements: int
    samples: int
    runs: int
    seconds: float


# --------------------------------------------------------------------------- templates


def platform_config(profile: Profile) -> PlatformConfig:
    return PlatformConfig.model_validate(
        {
            "name": profile.name,
            "description": profile.description,
            "nodes": 4,
            "cores_per_node": CORES_PER_NODE,
            "sockets_per_node": 2,
            "memory_gb_per_node": 256,
            "interconnect": {"name": profile.interconnect, "io_path": profile.io_path},
        }
    )


def mpibench_time_us(profile: Profile, pattern: str, case: Case, size: int) -> float:
    """The model's reported time (µs) of a pattern at a size, as mpibench reports it."""
    link = profile.link(case.placement.nodes)
    n = np.asarray([float(size)])
    ranks = case.placement.ranks
    steps = math.log2(ranks)
    one = link.time_us(n)
    if pattern == "pingpong":
        t = one
    elif pattern == "pingping":
        t = link.alpha_us + 1.15 * n / link.beta + (one - link.alpha_us - n / link.beta)
    elif pattern == "sendrecv":
        t = one * (1.0 + 0.03 * steps)
    elif pattern == "exchange":
        t = 2.0 * one * (1.0 + 0.03 * steps)
    elif pattern in ("natural_ring", "random_ring"):
        spread = 1.0 if pattern == "natural_ring" else 1.0 + 0.25 * (case.placement.nodes > 1)
        t = one * spread * (1.0 + 0.05 * steps)
    elif pattern == "bcast":
        t = steps * one
    elif pattern == "reduce":
        t = steps * (one + n * 0.00025)
    elif pattern == "allreduce":
        t = 2.0 * steps * link.alpha_us + 2.0 * n / link.beta + n * 0.0005
    elif pattern == "alltoall":
        t = (ranks - 1) * one
    elif pattern == "allgather":
        t = steps * link.alpha_us + (ranks - 1) * n / link.beta
    elif pattern == "barrier":
        t = np.asarray([2.0 * steps * link.alpha_us])
    else:
        raise ValueError(pattern)
    return float(t[0])


def mpibench_campaign(profile: Profile, platform: PlatformConfig) -> Campaign:
    bench = get_benchmark("mpibench")
    cases = [
        case
        for index, entry in enumerate(MPIBENCH_ENTRIES)
        for case in bench.cases(bench.parse_options(entry), platform, index)
    ]
    rows: list[Row] = []
    for number, case in enumerate(cases):
        pattern = str(case.parameters["pattern"])
        placement = case.placement.as_parameters()
        for point in case.points:
            size = int(point.removeprefix("size="))
            assert mpibench_point(size) == point
            parameters = json.dumps({**case.parameters, **placement, "size": size})
            model = mpibench_time_us(profile, pattern, case, size)
            metric = "time" if pattern in COLLECTIVES else "latency"
            divisor = TIME_DIVISOR.get(pattern, 1)
            timed = Row(
                case=number, point_key=point, metric=metric, unit=MICROSECOND,
                statistic="mean", parameters=parameters, model=model, kind="time", nbytes=0,
                divisor=divisor, kernel="", class_name="", ranks=case.placement.ranks,
            )  # fmt: skip
            rows.append(timed)
            if pattern in BYTES_FACTOR and size > 0:
                rows.append(
                    replace(
                        timed,
                        metric="bandwidth",
                        unit=MEGABYTE_PER_SECOND,
                        statistic="bytes/mean(time)",
                        kind="bandwidth",
                        nbytes=size * BYTES_FACTOR[pattern],
                    )
                )
    return Campaign("mpibench-scale", tuple(cases), tuple(rows))


def npb_seconds(profile: Profile, kernel: str, class_name: str, case: Case) -> float:
    ranks = case.placement.ranks
    serial = NPB_SECONDS[kernel][class_name]
    fraction = NPB_SERIAL[kernel]
    compute = profile.compute * serial * (fraction + (1 - fraction) / ranks)
    # Communication grows with log2(ranks); across nodes it costs what the network's latency
    # and bandwidth make it (relative to the baseline's inter-node link).
    base = PROFILES[0].inter
    link = profile.link(case.placement.nodes)
    penalty = 0.5 * link.alpha_us / base.alpha_us + 0.5 * base.beta / link.beta
    network = serial / ranks * NPB_COMMUNICATION[kernel] * math.log2(ranks) * (
        penalty if case.placement.nodes > 1 else 0.6
    )  # fmt: skip
    return compute + network


def npb_campaign(profile: Profile, platform: PlatformConfig) -> Campaign:
    npb = get_benchmark("npb")
    cases = npb.cases(npb.parse_options(NPB_ENTRY), platform, 0)
    rows: list[Row] = []
    for number, case in enumerate(cases):
        kernel, class_name = str(case.parameters["kernel"]), str(case.parameters["class"])
        parameters = json.dumps({**case.parameters, **case.placement.as_parameters()})
        seconds = npb_seconds(profile, kernel, class_name, case)
        for repetition, point in enumerate(case.points):
            assert npb_point(repetition + 1) == point
            for metric, unit in NPB_METRICS:
                rows.append(
                    Row(
                        case=number,
                        point_key=point,
                        metric=metric,
                        unit=unit,
                        statistic="single run",
                        parameters=parameters,
                        model=seconds,
                        kind="npb",
                        nbytes=0,
                        divisor=1,
                        kernel=kernel,
                        class_name=class_name,
                        ranks=case.placement.ranks,
                    )
                )
    return Campaign("npb-scale", tuple(cases), tuple(rows))


# --------------------------------------------------------------------------- JSON text


def json_floats(values: FloatArray) -> list[str]:
    """JSON numbers as json.dumps (and so the Store) writes them: Python's float repr."""
    return list(map(repr, values.tolist()))


def statistics_text(
    count: int, minimum: str, maximum: str, median: str, mean: str, stdev: str,
    ci_low: str, ci_high: str, extra: str,
) -> str:  # fmt: skip
    return (
        f'{{"count": {count}, "minimum": {minimum}, "maximum": {maximum}, '
        f'"median": {median}, "mean": {mean}, "stdev": {stdev}, "ci_low": {ci_low}, '
        f'"ci_high": {ci_high}, "confidence": {CONFIDENCE}, "extra": {extra}}}'
    )


@dataclass(frozen=True)
class Described:
    """Per-row statistics of samples laid end to end (as hpceval's `describe` computes them)."""

    mean: FloatArray
    stdev: FloatArray
    minimum: FloatArray
    maximum: FloatArray
    median: FloatArray
    half: FloatArray  # half-width of the Student-t interval of the mean


def describe_rows(flat: FloatArray, counts: npt.NDArray[np.int64]) -> Described:
    """Statistics of each row's samples; rows with the same count are computed together."""
    n = len(counts)
    out = {name: np.empty(n) for name in ("mean", "stdev", "minimum", "maximum", "median")}
    starts = np.cumsum(counts) - counts
    for count in np.unique(counts).tolist():
        rows = np.flatnonzero(counts == count)
        matrix = flat[starts[rows][:, None] + np.arange(count)]
        out["mean"][rows] = matrix.mean(axis=1)
        out["stdev"][rows] = matrix.std(axis=1, ddof=1) if count > 1 else 0.0
        out["minimum"][rows] = matrix.min(axis=1)
        out["maximum"][rows] = matrix.max(axis=1)
        out["median"][rows] = np.median(matrix, axis=1)
    t = np.asarray(stdtrit(np.maximum(counts - 1, 1).astype(np.float64), (1 + CONFIDENCE) / 2))
    half = t * out["stdev"] / np.sqrt(counts)
    return Described(half=half, **out)
