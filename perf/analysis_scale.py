"""Analysis at scale: `hpceval compare` and `hpceval report` on 1,000,000 measurements.

Generates a synthetic SQLite results database of N measurements (default 1,000,000) over ten
platforms, then times:

- load: `hpceval.analysis.loading.load_frame` (the store's bulk read into the tidy frame);
- compare: `hpceval.analysis.compare.compare` on that frame against the baseline;
- the CLI commands end to end, with the frame cache in a new directory: `hpceval compare
  --baseline bare-metal` (its own load from SQL, which fills the cache, the comparison, the
  rich tables), then `hpceval report` (its frame from the cache), then `hpceval compare`
  again (from the cache) and `hpceval report --no-cache` (from SQL). Twice: in this process
  through typer's CliRunner ([in-process]: imports already done), then each command as a
  new `python -m hpceval` process ([processes]: what a user waits for, Python start-up and
  imports included).

The target is the two commands together under 10 s on this machine; the totals of each
combination (cache filled by compare, both cached, no cache) and their ratio to it are printed
for both modes.

The database is what campaigns would have written: platforms, environments and runs through
the Store's own API; cases, executions and measurements bulk-inserted (SQLAlchemy Core
executemany, one transaction per run) with the JSON text and sample bytes the Store
writes, and the series ids it gives (Store.series_ids). Each platform
alternates an mpibench campaign (ping-pong and ping-ping on intra- and inter-node pairs,
Sendrecv, Exchange, the HPCC rings and six collectives on 4 to 64 ranks, 0 B to 4 MiB) and an
NPB campaign (EP, IS, CG, MG, FT, classes A to C, 1 to 64 ranks, 3 repetitions), until it
holds N/10 measurements (the last run is cut short, as an interrupted run is). Values follow
Hockney models per platform (intra-node and inter-node latency and bandwidth, an
eager/rendezvous switch) and NPB times from a serial fraction and a network term; samples are
log-normal around them (9 to ~50 per mpibench point as mpibench's adaptive stop gives, one
per NPB run), with the statistics and details (t_min/t_avg samples, verification) real runs
store.

Usage: .venv/bin/python perf/analysis_scale.py [--measurements N] [--keep DB] [--seed S]
       .venv/bin/python perf/analysis_scale.py --reuse DB   (time a database kept before)
       add --repeat K to run the commands K times and print medians (this VM's speed varies)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from scipy.special import stdtrit

import hpceval
from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.benchmarks.mpibench import BYTES_FACTOR, TIME_DIVISOR
from hpceval.benchmarks.mpibench import point_key as mpibench_point
from hpceval.benchmarks.npb import mops_formula
from hpceval.benchmarks.npb import point_key as npb_point
from hpceval.campaign import case_description
from hpceval.config import PlatformConfig
from hpceval.model import Environment, Origin, Status
from hpceval.patterns import COLLECTIVES
from hpceval.store import Store, database_url, encode_samples, open_store

# (This generator writes a million rows straight into the store's tables, past the Store.)
from hpceval.store.schema import executions as executions_table
from hpceval.store.schema import measurements as measurements_table
from hpceval.store.schema import run_cases as run_cases_table
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


def _floats(values: FloatArray) -> list[str]:
    """JSON numbers as json.dumps (and so the Store) writes them: Python's float repr."""
    return list(map(repr, values.tolist()))


def _statistics_text(
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


# --------------------------------------------------------------------------- generation


def _draw_counts(rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
    """Samples per mpibench point: min_samples 10, a few more until the CI target, a tail up
    to the time budget (the captured outputs hold 9 to 20)."""
    counts = 10 + rng.poisson(2.5, n) + (rng.random(n) < 0.08) * rng.integers(5, 30, n)
    counts[rng.random(n) < 0.03] = 9  # the budget ran out before min_samples
    return counts.astype(np.int64)


def _mpibench_rows(
    campaign: Campaign,
    take: int,
    profile: Profile,
    rng: np.random.Generator,
    stamp: Callable[[int], float],
) -> tuple[list[dict[str, Any]], int]:
    """The first `take` measurements of one mpibench run (dicts of column values) and the
    number of samples they hold."""
    rows = campaign.rows[:take]
    time_rows = [i for i, row in enumerate(rows) if row.kind == "time"]
    model = np.asarray([rows[i].model for i in time_rows])
    counts = _draw_counts(rng, len(time_rows))
    run_factor = math.exp(rng.normal(0.0, 0.01))
    noise = profile.noise * (1 + 0.5 * (model < 5))
    scale = np.repeat(model * run_factor, counts)
    t_max = scale * np.exp(rng.normal(0.0, np.repeat(noise, counts)))
    t_min = t_max * rng.uniform(0.86, 0.99, len(t_max))
    t_avg = (t_min + t_max) / 2
    stats = describe_rows(t_max, counts)
    means_min = np.add.reduceat(t_min, np.cumsum(counts) - counts) / counts
    means_avg = np.add.reduceat(t_avg, np.cumsum(counts) - counts) / counts
    t_min_text, t_avg_text = _floats(t_min), _floats(t_avg)
    mean_text, stdev_text = _floats(stats.mean), _floats(stats.stdev)
    min_text, max_text, median_text = (
        _floats(stats.minimum),
        _floats(stats.maximum),
        _floats(stats.median),
    )
    low_text, high_text = _floats(stats.mean - stats.half), _floats(stats.mean + stats.half)
    extra_min, extra_avg = _floats(means_min), _floats(means_avg)
    ends = np.cumsum(counts).tolist()
    out: list[dict[str, Any]] = []
    samples = 0
    position = -1
    for index, row in enumerate(rows):
        if row.kind == "time":
            position += 1
            k, end = int(counts[position]), ends[position]
            start = end - k
            samples += k
            samples_data = encode_samples(t_max[start:end])
            warmup = int(rng.integers(2, 50_000))
            loops = max(1, int(1000.0 / max(row.model, 0.05)))
            details = (
                f'{{"warmup_iterations": {warmup}, "loops": {loops}, '
                f'"stop": "{"ci" if k <= 12 else "budget"}", '
                f'"elapsed_s": {k * 0.001 * max(1.0, row.model / 1000)!r}, '
                f'"time_divisor": {row.divisor}, '
                f'"t_min_us": [{", ".join(t_min_text[start:end])}], '
                f'"t_avg_us": [{", ".join(t_avg_text[start:end])}]}}'
            )
            statistics = _statistics_text(
                k, min_text[position], max_text[position], median_text[position],
                mean_text[position], stdev_text[position], low_text[position],
                high_text[position],
                f'{{"t_min": {extra_min[position]}, "t_avg": {extra_avg[position]}}}',
            )  # fmt: skip
            value = float(stats.mean[position])
        else:
            # Bandwidth: n / t per sample; its statistics as mpibench's bandwidth_measurement.
            k, end = int(counts[position]), ends[position]
            start = end - k
            samples += k
            bandwidth = row.nbytes / t_max[start:end]
            value = row.nbytes / float(stats.mean[position])
            ordered = np.sort(bandwidth)
            stdev = float(np.sqrt(np.sum((bandwidth - value) ** 2) / (k - 1)))
            low = row.nbytes / float(stats.mean[position] + stats.half[position])
            high = row.nbytes / float(stats.mean[position] - stats.half[position])
            samples_data = encode_samples(bandwidth)
            details = "{}"
            statistics = _statistics_text(
                k, repr(float(ordered[0])), repr(float(ordered[-1])),
                repr(float(np.median(ordered))), repr(value), repr(stdev), repr(low),
                repr(high), "{}",
            )  # fmt: skip
        out.append(
            _measurement(campaign, row, value, samples_data, statistics, details, stamp(index))
        )
    return out, samples


def _npb_rows(
    campaign: Campaign,
    take: int,
    profile: Profile,
    rng: np.random.Generator,
    stamp: Callable[[int], float],
) -> tuple[list[dict[str, Any]], int]:
    rows = campaign.rows[:take]
    run_factor = math.exp(rng.normal(0.0, 0.01))
    out: list[dict[str, Any]] = []
    seconds = 0.0
    for index, row in enumerate(rows):
        if row.metric == "time":
            # Repetitions of a kernel vary by a percent or two (more on a noisy platform).
            seconds = row.model * run_factor * math.exp(rng.normal(0.0, profile.noise / 3))
        mops = mops_formula(row.kernel, row.class_name, seconds)
        value = {"time": seconds, "mops_total": mops, "mops_per_process": mops / row.ranks}[
            row.metric
        ]
        v = repr(value)
        statistics = _statistics_text(1, v, v, v, v, "0.0", "null", "null", "{}")
        verification = (
            f'[{{"quantity": "{NPB_QUANTITY[row.kernel]}", "computed": {v}, '
            f'"reference": {v}, "rel_error": 1e-14, "tolerance": 1e-10, "passed": true}}]'
        )
        details = f'{{"iterations": {NPB_ITERATIONS[row.kernel]}, "verification": {verification}}}'
        out.append(
            _measurement(campaign, row, value, encode_samples([value]), statistics, details,
                         stamp(index))
        )  # fmt: skip
    return out, len(rows)


def _measurement(
    campaign: Campaign,
    row: Row,
    value: float,
    samples: bytes,
    statistics: str,
    details: str,
    created: float,
) -> dict[str, Any]:
    return {
        "case_key": campaign.cases[row.case].key,
        "point_key": row.point_key,
        "benchmark": campaign.cases[row.case].benchmark,
        "metric": row.metric,
        "unit": row.unit,
        "value": value,
        "statistic": row.statistic,
        "parameters": row.parameters,
        "statistics": statistics,
        "samples": samples,
        "details": details,
        "origin": Origin.MEASURED.value,
        "created": created,
    }


def _text_table(table: sa.Table) -> sa.Table:
    """`table` with its JSON columns as plain text: the JSON is written here, already encoded
    exactly as the Store's JSON type would encode it (json.dumps)."""
    return sa.Table(
        table.name,
        sa.MetaData(),
        *(
            sa.Column(c.name, sa.Text if isinstance(c.type, sa.JSON) else c.type)
            for c in table.columns
        ),
    )


class Clock:
    """The Store's clock: campaign times, one week apart per run."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def generate(path: Path, measurements: int = DEFAULT_MEASUREMENTS, seed: int = 1) -> Generated:
    """Write the synthetic database to `path` (a new SQLite file)."""
    began = time.perf_counter()
    if path.exists():
        raise FileExistsError(f"{path}: already exists; the generator writes a new database")
    rng = np.random.default_rng(seed)
    clock = Clock()
    quotas = [measurements // len(PROFILES)] * len(PROFILES)
    quotas[0] += measurements - sum(quotas)
    text_measurements = _text_table(measurements_table)
    text_executions = _text_table(executions_table)
    total_samples = 0
    run_count = 0
    with open_store(str(path), clock=clock) as store:
        engine = sa.create_engine(database_url(str(path)))
        try:
            for profile, quota in zip(PROFILES, quotas, strict=True):
                platform = platform_config(profile)
                platform_id = store.add_platform(profile.name, platform.model_dump(mode="json"))
                environment_id = store.add_environment(_environment(profile))
                campaigns = (mpibench_campaign(profile, platform), npb_campaign(profile, platform))
                left = quota
                turn = 0
                with engine.connect() as conn:
                    while left > 0:
                        campaign = campaigns[turn % 2]
                        turn += 1
                        take = min(left, len(campaign.rows))
                        clock.now = START + run_count * WEEK_S / 10
                        samples = _write_run(
                            store, conn, campaign, take, profile, platform_id, environment_id,
                            rng, clock, text_measurements, text_executions,
                        )  # fmt: skip
                        total_samples += samples
                        left -= take
                        run_count += 1
        finally:
            engine.dispose()
    return Generated(path, measurements, total_samples, run_count, time.perf_counter() - began)


def _environment(profile: Profile) -> Environment:
    facts = {
        "cpu": {"model": "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "cores": CORES_PER_NODE},
        "virtualization": {"kind": profile.hypervisor},
        "network": {"interconnect": profile.interconnect, "io_path": profile.io_path},
        "mpi": {"implementation": "Open MPI", "version": "4.1.4"},
        "compiler": {"name": "gcc", "version": "12.2.0"},
        "hpceval": {"version": hpceval.__version__},
    }
    fingerprint = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
    return Environment(facts=facts, fingerprint=fingerprint)


def _write_run(
    store: Store,
    conn: sa.Connection,
    campaign: Campaign,
    take: int,
    profile: Profile,
    platform_id: int,
    environment_id: int,
    rng: np.random.Generator,
    clock: Clock,
    text_measurements: sa.Table,
    text_executions: sa.Table,
) -> int:
    """One run of `campaign` holding its first `take` measurements; returns its samples."""
    run_id = store.create_run(
        suite_name=campaign.suite,
        suite_config={"name": campaign.suite},
        platform_id=platform_id,
        environment_id=environment_id,
        launcher="slurm",
        cases=[(c.key, c.benchmark, case_description(c)) for c in campaign.cases],
        hpceval_version=hpceval.__version__,
        git_revision=None,
        origin=Origin.MEASURED,
        host="login1",
        pid=4242,
    )
    started = clock.now
    rows = campaign.rows[:take]
    # (Before this connection writes: the store's own write would wait for its lock.)
    series = store.series_ids(
        [(Origin.MEASURED.value, campaign.cases[row.case].benchmark, row.metric, row.unit,
          row.statistic, json.loads(row.parameters)) for row in rows]
    )  # fmt: skip
    # Executions: one per case (mpibench measures all its points in one execution), one per
    # point for NPB (a run of the kernel per repetition).
    execution_of: dict[tuple[int, str], int] = {}
    next_id = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(text_executions.c.id), 0)))
                  .scalar_one()) + 1  # fmt: skip
    execution_rows: list[dict[str, Any]] = []
    for row in rows:
        point = row.point_key if campaign.cases[row.case].benchmark == "npb" else ""
        if (row.case, point) in execution_of:
            continue
        execution_of[(row.case, point)] = next_id
        case = campaign.cases[row.case]
        moment = started + len(execution_rows) * 2.0
        execution_rows.append(
            {"id": next_id, "run_id": run_id, "case_key": case.key, "benchmark": case.benchmark,
             "argv": json.dumps(["srun", "--mpi=pmix", "-n", str(case.placement.ranks),
                                 case.benchmark]),
             "env": "{}", "status": "ok", "exit_code": 0, "started": moment,
             "ended": moment + 1.5, "stdout_tail": "", "stderr_tail": "", "error": ""}
        )  # fmt: skip
        next_id += 1
    conn.execute(text_executions.insert(), execution_rows)

    def stamp(index: int) -> float:
        return started + index * 0.5

    writer = _mpibench_rows if campaign.cases[0].benchmark == "mpibench" else _npb_rows
    values, samples = writer(campaign, take, profile, rng, stamp)
    for value, row, series_id in zip(values, rows, series, strict=True):
        point = row.point_key if campaign.cases[row.case].benchmark == "npb" else ""
        value["run_id"] = run_id
        value["execution_id"] = execution_of[(row.case, point)]
        value["series_id"] = series_id
    conn.execute(text_measurements.insert(), values)
    measured = {row.case for row in rows}
    complete = take == len(campaign.rows)
    done = [campaign.cases[i].key for i in sorted(measured)]
    if not complete and done:
        done.pop()  # the case that was running when the run stopped stays pending
    if done:
        conn.execute(
            sa.update(run_cases_table)
            .where(run_cases_table.c.run_id == run_id, run_cases_table.c.case_key.in_(done))
            .values(status="done")
        )
    conn.commit()
    status = Status.COMPLETED if complete else Status.INTERRUPTED
    store.set_run_status(run_id, status, ended=started + len(rows) * 0.5)
    return samples


# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Step:
    name: str
    seconds: float | None  # wall-clock; None: not run
    detail: str
    cpu_seconds: float | None = None  # this process's CPU time (others' load does not count)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children (the report's forked workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def _timer() -> Iterator[list[float]]:
    """[wall seconds, CPU seconds] of the block, filled in when it ends."""
    elapsed: list[float] = []
    began, began_cpu = time.perf_counter(), _cpu_seconds()
    yield elapsed
    elapsed.extend((time.perf_counter() - began, _cpu_seconds() - began_cpu))


def report_available() -> bool:
    return importlib.util.find_spec("hpceval.report") is not None


# The commands timed, by step name (COMPARE, REPORT...), and the totals printed: each a sum
# of two of them, as a user runs compare then report.
COMPARE, REPORT = "hpceval compare", "hpceval report"
COMPARE_CACHED, REPORT_NO_CACHE = "hpceval compare (cached)", "hpceval report (no cache)"
TOTALS: Final = (
    ("compare then report (report from the cache compare filled)", (COMPARE, REPORT)),
    ("compare + report, both from the cache", (COMPARE_CACHED, REPORT)),
    ("compare + report, no cache", (COMPARE, REPORT_NO_CACHE)),
)
MODES: Final = ("in-process", "processes")


def time_steps(path: Path, work: Path, repeat: int = 1) -> list[Step]:
    """Time load, compare, then `hpceval compare` and `hpceval report` on the database at
    `path`, both in this process (typer's CliRunner: imports already done) and as the user
    runs them (new processes: Python start-up and imports counted).

    The commands of each mode run with a frame cache of their own, empty at first:
    `hpceval compare` first (SQL load, then the frame is cached), `hpceval report` next (the
    frame from the cache: the usual second command on an unchanged database); then both
    again, the report without the cache (--no-cache) and compare with it, so that every
    combination can be added up. With `repeat` > 1 the commands of both modes run that many
    times (in turn, a fresh cache each time): a step then appears once per repeat.
    """
    from hpceval.analysis.compare import compare
    from hpceval.analysis.loading import load_frame

    steps: list[Step] = []
    with open_store(str(path), create=False) as store, _timer() as took:
        frame = load_frame(store)
    samples = int(sum(map(len, frame["samples"])))
    steps.append(Step("load", took[0], f"{len(frame):,} rows, {samples:,} samples (SQL)",
                      took[1]))  # fmt: skip
    with _timer() as took:
        result = compare(frame, BASELINE)
    steps.append(
        Step("compare", took[0], f"{len(result.table):,} points, CI by {result.method}", took[1])
    )
    del frame, result
    for attempt in range(repeat):
        for mode in MODES:
            steps.extend(_command_steps(path, work / f"{mode}-{attempt}", mode))
    return steps


def _command_steps(path: Path, work: Path, mode: str) -> list[Step]:
    steps: list[Step] = []
    report_dir = work / "report"
    env = {"COLUMNS": "200", "HPCEVAL_CACHE": str(work / "cache")}
    invoke = _in_process(env) if mode == "in-process" else _processes(env)

    def command(name: str, args: list[str], detail: str) -> bool:
        with _timer() as took:
            failure = invoke(args)
        if failure is not None:
            steps.append(Step(f"{name} [{mode}]", None, f"{name} failed: {failure}"))
            return False
        steps.append(Step(f"{name} [{mode}]", took[0], detail, took[1]))
        return True

    compare_args = ["compare", "--baseline", BASELINE, "--db", str(path)]
    report_args = ["report", "--db", str(path), "--out", str(report_dir), "--baseline", BASELINE]
    if not command(COMPARE, compare_args, "SQL load + cache write + tables"):
        return steps
    if not report_available():
        steps.append(Step(f"{REPORT} [{mode}]", None, "report: not available"))
        return steps
    if not command(REPORT, report_args, "frame cache + report"):
        return steps
    written = sum(1 for p in report_dir.rglob("*") if p.is_file())
    steps[-1] = replace(steps[-1], detail=f"{steps[-1].detail}: {written} files")
    command(COMPARE_CACHED, compare_args, "frame cache + compare + tables")
    command(REPORT_NO_CACHE, [*report_args, "--no-cache"], "SQL load + report")
    return steps


def _in_process(env: Mapping[str, str]) -> Callable[[list[str]], str | None]:
    """Run a command through typer's CliRunner; None, or why it failed."""
    from typer.testing import CliRunner

    from hpceval.cli import app

    runner = CliRunner()

    def invoke(args: list[str]) -> str | None:
        outcome = runner.invoke(app, args, env={**env, "HPCEVAL_FRAME_CACHE": None})
        if outcome.exit_code == 0:
            return None
        last = (outcome.output.strip().splitlines() or [repr(outcome.exception)])[-1]
        return f"exit {outcome.exit_code}: {last}"

    return invoke


def _processes(env: Mapping[str, str]) -> Callable[[list[str]], str | None]:
    """Run a command as `python -m hpceval ...` in a new process; None, or why it failed."""
    environment = {k: v for k, v in os.environ.items() if k != "HPCEVAL_FRAME_CACHE"}
    environment.update(env)

    def invoke(args: list[str]) -> str | None:
        done = subprocess.run(
            [sys.executable, "-m", "hpceval", *args], env=environment, capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        if done.returncode == 0:
            return None
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        return f"exit {done.returncode}: {last}"

    return invoke


def print_table(generated: Generated, steps: Sequence[Step]) -> None:
    """One line per step: the median of its repeats (and their range when repeated)."""
    samples = f"{generated.samples:,} samples, " if generated.samples >= 0 else ""
    made = "" if math.isnan(generated.seconds) else f"; generated in {generated.seconds:.1f} s"
    print(
        f"database: {generated.measurements:,} measurements, {samples}"
        f"{len(PROFILES)} platforms (baseline {BASELINE}), {generated.runs} runs, "
        f"{generated.path.stat().st_size / 1e6:,.0f} MB{made}"
    )
    by_name: dict[str, list[Step]] = {}
    for step in steps:
        by_name.setdefault(step.name, []).append(step)
    repeats = max(len(group) for group in by_name.values())
    spread = f"  {'range':>11}" if repeats > 1 else ""
    print(f"{'step':<40} {'seconds':>8} {'/ 10 s':>7} {'CPU s':>7}{spread}  detail")
    timed: dict[str, tuple[float, float, list[float]]] = {}
    for name, group in by_name.items():
        failed = [step for step in group if step.seconds is None]
        if failed:
            print(f"{name:<40} {'—':>8} {'—':>7} {'—':>7}{' ' * len(spread)}  {failed[0].detail}")
            continue
        walls = [step.seconds or 0.0 for step in group]
        cpus = [step.cpu_seconds or 0.0 for step in group]
        wall, cpu = float(np.median(walls)), float(np.median(cpus))
        timed[name] = (wall, cpu, walls)
        shown = f"  {min(walls):5.2f}–{max(walls):5.2f}" if repeats > 1 else ""
        print(f"{name:<40} {wall:>8.2f} {wall / TARGET_S:>7.2f} {cpu:>7.2f}{shown}  "
              f"{group[-1].detail}")  # fmt: skip
    for mode in MODES:
        for what, names in TOTALS:
            keys = [f"{name} [{mode}]" for name in names]
            if not all(key in timed for key in keys):
                print(f"total [{mode}] ({what}): not measured")
                continue
            total = sum(timed[key][0] for key in keys)
            cpu_total = sum(timed[key][1] for key in keys)
            verdict = "meets" if total < TARGET_S else "MISSES"
            per_repeat = [sum(pair) for pair in zip(*(timed[key][2] for key in keys),
                                                    strict=False)]  # fmt: skip
            ranged = (f"; per repeat {min(per_repeat):.2f}–{max(per_repeat):.2f} s"
                      if len(per_repeat) > 1 else "")  # fmt: skip
            print(
                f"total [{mode}] ({what}): {total:.2f} s = {total / TARGET_S:.2f} x the "
                f"{TARGET_S:.0f} s target ({verdict} it); CPU {cpu_total:.2f} s{ranged}"
            )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other processes' "
        "load inflates the wall-clock seconds; CPU seconds include the report's workers). "
        "[processes] is what a user waits for: Python start-up and imports included."
        + (f" Medians of {repeats} repeats." if repeats > 1 else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measurements", type=int, default=DEFAULT_MEASUREMENTS)
    parser.add_argument("--keep", type=Path, help="write the database here and keep it")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", type=Path, help="time this database (from --keep) instead")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run the commands this many times (medians printed)"
    )
    opts = parser.parse_args(argv)
    if opts.repeat < 1:
        parser.error("--repeat: at least 1")
    if opts.measurements < len(PROFILES):
        parser.error(f"--measurements: at least {len(PROFILES)} (one per platform)")
    with tempfile.TemporaryDirectory(prefix="hpceval-analysis-scale-") as tmp:
        if opts.reuse is not None:
            if not opts.reuse.is_file():
                parser.error(f"--reuse: {opts.reuse} is not a file")
            generated = described(opts.reuse)
        else:
            path = opts.keep or Path(tmp) / "scale.db"
            if path.exists():
                parser.error(f"--keep: {path} already exists")
            generated = generate(path, opts.measurements, opts.seed)
        steps = time_steps(generated.path, Path(tmp), opts.repeat)
        print_table(generated, steps)
    # A step that failed is a failure of the benchmark, not a figure.
    return 1 if any(" failed: " in step.detail for step in steps) else 0


def described(path: Path) -> Generated:
    """What a database kept by an earlier run holds (generation time unknown: NaN)."""
    engine = sa.create_engine(database_url(str(path)))
    try:
        with engine.connect() as conn:
            count = conn.execute(sa.select(sa.func.count()).select_from(measurements_table))
            runs = conn.execute(sa.select(sa.func.count(sa.distinct(measurements_table.c.run_id))))
            return Generated(path, int(count.scalar_one()), -1, int(runs.scalar_one()), math.nan)
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
