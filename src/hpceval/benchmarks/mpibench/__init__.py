"""`mpibench`: MPI point-to-point, collective, HPCC ring and concurrent-pair patterns.

The C program (mpibench.c, protocol in docs/mpibench.md) measures one pattern over a list of
message sizes and prints one JSON line per size. This module expands suite entries into
cases, builds the program, and turns its lines into Measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from hpceval.benchmarks import records, register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import Binding, case_key, rank_placements, time_limit
from hpceval.benchmarks.mpibench.tables import (
    collective_tables,
    point_to_point_tables,
    smallest_and_best,
)
from hpceval.build import check_smpi_options, compile_program, is_smpi_compiler, smpi_cflags
from hpceval.config import BINDINGS, PlatformConfig, StrictModel, parse_sizes
from hpceval.errors import BenchmarkFailure
from hpceval.model import Measurement, ParamValue, Placement, Statistics
from hpceval.patterns import COLLECTIVES, CONCURRENT_PAIRS, PAIR_PATTERNS, REDUCTIONS, Pattern
from hpceval.statistics import describe, rate_statistics
from hpceval.units import MEGABYTE_PER_SECOND, MICROSECOND

if TYPE_CHECKING:
    from rich.table import Table

SOURCE = Path(__file__).with_name("mpibench.c")
PROTOCOL_VERSION = "1.0"

FLOAT_BYTES = 4  # reductions operate on MPI_FLOAT

# Bytes a rank moves per reported time, in units of the message size (IMB conventions).
BYTES_FACTOR: Mapping[str, int] = {
    "pingpong": 1,
    "pingping": 1,
    "sendrecv": 2,
    "exchange": 4,
    "natural_ring": 1,
    "random_ring": 1,
    "multi_pingpong": 1,  # per pair
}
# HPCC b_eff reports ring latency per message: one iteration sends one message each way, so
# the program's per-iteration time is halved (and bandwidth = n / that latency = 2n / iteration).
TIME_DIVISOR: Mapping[str, int] = {"natural_ring": 2, "random_ring": 2}

# The statistic a stored point's value is (until 2026-11-25 the mean: "mean" and
# "bytes/mean(time)" name those records; every analysis recomputes its statistic from the
# samples, so old and new records compare alike). At most 16 characters (store schema).
VALUE_STATISTIC = "median"
BANDWIDTH_STATISTIC = "bytes/median(t)"

# Seconds a program start-up (mpirun, MPI_Init, hosts gather) costs beyond the points.
STARTUP_ESTIMATE_S = 1.0


def min_ranks(pattern: str) -> int:
    return 1 if pattern in COLLECTIVES else 2


class MpibenchOptions(StrictModel):
    patterns: list[Pattern] = Field(min_length=1)
    sizes: str | list[int | str] = "0..4MiB"
    ranks: list[int] = Field(default_factory=lambda: [2], min_length=1)
    ranks_per_node: list[int] | None = None
    threads_per_rank: list[int] = Field(default_factory=lambda: [1], min_length=1)
    binding: Binding = "core"
    target_rci: float = Field(0.02, gt=0, lt=1)
    budget_s: float = Field(1.0, gt=0, le=3600)
    min_samples: int = Field(10, ge=2)
    max_samples: int = Field(1000, ge=2)
    warmup_s: float = Field(0.05, ge=0)
    sample_s: float = Field(0.001, gt=0)
    time_limit_s: float | None = Field(None, gt=0)
    seed: int = Field(1, ge=0)

    @model_validator(mode="after")
    def _check(self) -> MpibenchOptions:
        for r in self.ranks:
            if r < 1:
                raise ValueError(f"ranks: {r} is not a valid rank count")
            for p in self.patterns:
                if r < min_ranks(p):
                    raise ValueError(
                        f"ranks: pattern {p} needs at least {min_ranks(p)} ranks, got {r}"
                    )
            if r % 2 and CONCURRENT_PAIRS.intersection(self.patterns):
                raise ValueError(
                    f"ranks: {r} is odd; pattern multi_pingpong pairs rank i with rank i + ranks/2"
                )
        for t in self.threads_per_rank:
            if t < 1:
                raise ValueError(f"threads_per_rank: {t} is not a valid thread count")
        for ppn in self.ranks_per_node or []:
            if ppn < 1:
                raise ValueError(f"ranks_per_node: {ppn} is not a valid count")
        if self.min_samples > self.max_samples:
            raise ValueError("min_samples: larger than max_samples")
        try:
            sizes = parse_sizes(self.sizes)
        except ValueError as e:
            raise ValueError(f"sizes: {e}") from None
        if isinstance(self.sizes, list):
            for reduction in sorted(REDUCTIONS.intersection(self.patterns)):
                bad = [s for s in sizes if s % FLOAT_BYTES]
                if bad:
                    raise ValueError(
                        f"sizes: {bad[0]} B is not a multiple of {FLOAT_BYTES} "
                        f"(pattern {reduction} reduces MPI_FLOAT)"
                    )
        assert self.binding in BINDINGS
        return self


def sizes_for(pattern: str, options: MpibenchOptions) -> list[int]:
    """The sizes a pattern runs: barrier has none, reductions skip sizes below one float."""
    if pattern == "barrier":
        return [0]
    sizes = parse_sizes(options.sizes)
    if pattern in REDUCTIONS:
        sizes = [s for s in sizes if s % FLOAT_BYTES == 0]
    return sizes


def pair_cases(placement: Placement) -> list[tuple[str, tuple[int, int]]]:
    """The labelled rank pairs a pair pattern measures on a placement.

    Ranks are numbered node by node, so (0, 1) share a node and (0, ranks_per_node) do not.
    """
    pairs = []
    if placement.ranks_per_node >= 2:
        pairs.append(("intra-node", (0, 1)))
    if placement.nodes >= 2:
        pairs.append(("inter-node", (0, placement.ranks_per_node)))
    return pairs


def point_key(size: int) -> str:
    return f"size={size}"


def size_of(point: str) -> int:
    return int(point.removeprefix("size="))


@register
class Mpibench(Benchmark[MpibenchOptions]):
    name = "mpibench"
    description = "MPI point-to-point, collectives and HPCC rings (IMB semantics)"
    Options = MpibenchOptions

    def cases(
        self, options: MpibenchOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        cases: list[Case] = []
        for pattern in options.patterns:
            sizes = sizes_for(pattern, options)
            points = tuple(point_key(s) for s in sizes)
            estimate = STARTUP_ESTIMATE_S + len(sizes) * (options.warmup_s + options.budget_s)
            limit = time_limit(options.time_limit_s, estimate, floor_s=60.0, factor=5)
            run_options = {
                "target_rci": options.target_rci,
                "budget_s": options.budget_s,
                "min_samples": options.min_samples,
                "max_samples": options.max_samples,
                "warmup_s": options.warmup_s,
                "sample_s": options.sample_s,
                "seed": options.seed,
            }
            for ranks in options.ranks:
                for threads in options.threads_per_rank:
                    placements = rank_placements(
                        ranks, threads, options.ranks_per_node, options.binding, platform
                    )
                    if (
                        pattern in PAIR_PATTERNS
                        and ranks == 2
                        and options.ranks_per_node is None
                        and platform.nodes >= 2
                    ):
                        # Two ranks on a cluster: measure shared memory and the network.
                        placements = [
                            Placement(1, 2, threads, options.binding),
                            Placement(2, 1, threads, options.binding),
                        ]
                    if (
                        pattern in CONCURRENT_PAIRS
                        and options.ranks_per_node is None
                        and platform.nodes >= 2
                    ):
                        # Every pair across two nodes: ranks/2 flows share each node's NIC.
                        placements = [Placement(2, ranks // 2, threads, options.binding)]
                    for placement in placements:
                        variants: list[tuple[dict[str, ParamValue], dict[str, Any]]]
                        if pattern in PAIR_PATTERNS:
                            variants = [
                                ({"pair": label}, {"pair": list(pair)})
                                for label, pair in pair_cases(placement)
                            ]
                        elif pattern in CONCURRENT_PAIRS:
                            variants = [({"pairs": ranks // 2}, {})]
                        else:
                            variants = [({}, {})]
                        for extra_params, extra_opts in variants:
                            params: dict[str, ParamValue] = {"pattern": pattern, **extra_params}
                            key = case_key(
                                self.name,
                                [pattern, f"np={ranks}"],
                                placement,
                                [f"{k}={v}" for k, v in extra_params.items()],
                            )
                            cases.append(
                                Case(
                                    key=key,
                                    benchmark=self.name,
                                    placement=placement,
                                    parameters=params,
                                    points=points,
                                    time_limit_s=limit,
                                    options={**run_options, **extra_opts},
                                    estimate_s=estimate,
                                )
                            )
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        check_smpi_options(compiler, cflags)
        flags: tuple[str, ...] = (*cflags, "-std=c11")
        if is_smpi_compiler(compiler):
            # Runs unchanged under SMPI; built apart (the define is part of the cache key).
            flags = smpi_cflags(flags)
        path = compile_program(
            self.name,
            [SOURCE],
            compiler=compiler,
            compiler_identity=compiler_identity,
            cflags=flags,
            ldflags=["-lm"],
        )
        return Program(path, compiler, flags)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        o = case.options
        argv = [
            str(program.path),
            "--pattern", str(case.parameters["pattern"]),
            "--sizes", ",".join(str(size_of(p)) for p in points),
            "--target-rci", repr(o["target_rci"]),
            "--budget", repr(o["budget_s"]),
            "--min-samples", str(o["min_samples"]),
            "--max-samples", str(o["max_samples"]),
            "--warmup-s", repr(o["warmup_s"]),
            "--sample-s", repr(o["sample_s"]),
            "--seed", str(o["seed"]),
        ]  # fmt: skip
        if "pair" in o:
            argv += ["--pair", ",".join(str(r) for r in o["pair"])]
        return argv

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        record = point_record(line, case, self.name)
        return point_measurements(record, case) if record is not None else None

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        verify_output(stdout, points, self.name)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return smallest_and_best(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return point_to_point_tables(measurements) + collective_tables(measurements)


def verify_output(stdout: str, points: Sequence[str], program: str) -> None:
    """A whole output of mpibench (or of a program with its protocol, mpibench-java): no error
    record, a header, every point in order, and a successful end record."""
    found = [r for r in (records.decode_record(ln, program) for ln in stdout.splitlines()) if r]
    errors = [r for r in found if r.get("record") == "error"]
    if errors:
        raise BenchmarkFailure(f"{program}: {errors[0].get('message', 'unknown error')}")
    if not any(r.get("record") == "header" for r in found):
        raise BenchmarkFailure(f"{program} printed no header record")
    seen = [point_key(int(r["size"])) for r in found if r.get("record") == "point"]
    if seen != list(points):
        missing = [p for p in points if p not in seen]
        raise BenchmarkFailure(
            f"{program} measured {len(seen)} of {len(points)} points"
            + (f"; missing {', '.join(missing[:3])}" if missing else "; unexpected points")
        )
    ends = [r for r in found if r.get("record") == "end"]
    if not ends or ends[-1].get("status") != "ok":
        raise BenchmarkFailure(f"{program} output has no successful end record")


SHORTEST_TIME_US = 1e-9


def point_record(line: str, case: Case, program: str) -> dict[str, Any] | None:
    """The point record a line of mpibench's protocol holds, else None; an error record
    raises BenchmarkFailure with its cause, and a header is checked against the case."""
    record = records.decode_record(line, program)
    if record is None:
        return None
    kind = record.get("record")
    if kind == "error":
        raise BenchmarkFailure(f"{program}: {record.get('message', 'unknown error')}")
    if kind == "header":
        records.check_program_header(record, program, PROTOCOL_VERSION, case.placement)
        return None
    return record if kind == "point" else None


def _sample_array(record: Mapping[str, Any], key: str, count: int) -> tuple[float, ...]:
    raw = record.get(key)
    if not isinstance(raw, list) or len(raw) != count:
        raise BenchmarkFailure(
            f"point size={record.get('size')}: {key} does not hold {count} samples"
        )
    try:
        values = tuple(float(v) for v in raw)
    except (TypeError, ValueError):
        where = f"point size={record.get('size')}"
        raise BenchmarkFailure(f"{where}: {key} holds non-numbers") from None
    # Below a femtosecond is no time a timer measures (and bytes / it overflows a double).
    if not all(math.isfinite(v) and v >= SHORTEST_TIME_US for v in values):
        raise BenchmarkFailure(f"point size={record.get('size')}: {key} has non-positive times")
    return values


def point_measurements(record: Mapping[str, Any], case: Case) -> ParsedPoint:
    """Measurements of one point record, after its sanity checks."""
    pattern = str(case.parameters["pattern"])
    try:
        size = int(record["size"])
        count = int(record["samples"])
    except (KeyError, TypeError, ValueError, OverflowError):
        raise BenchmarkFailure("point record without a valid size and sample count") from None
    if record.get("pattern") != pattern:
        raise BenchmarkFailure(f"point of pattern {record.get('pattern')!r}, expected {pattern!r}")
    if point_key(size) not in case.points:
        raise BenchmarkFailure(f"point size={size} was not requested")
    if count < 1:
        raise BenchmarkFailure(f"point size={size} has no samples")
    divisor = TIME_DIVISOR.get(pattern, 1)
    t_max = tuple(t / divisor for t in _sample_array(record, "t_max_us", count))
    t_min = tuple(t / divisor for t in _sample_array(record, "t_min_us", count))
    t_avg = tuple(t / divisor for t in _sample_array(record, "t_avg_us", count))
    params: dict[str, ParamValue] = {
        **case.parameters,
        **case.placement.as_parameters(),
        "size": size,
    }
    details = {
        "warmup_iterations": record.get("warmup_iterations"),
        "loops": record.get("loops"),
        "stop": record.get("stop"),
        "elapsed_s": record.get("elapsed_s"),
        "time_divisor": divisor,
        "t_min_us": list(t_min),
        "t_avg_us": list(t_avg),
    }
    # IMB: a collective's time is the slowest rank's (t_max); t_min/t_avg kept beside it.
    extra = {
        "t_min": sum(t_min) / count,
        "t_avg": sum(t_avg) / count,
    }
    time_stats = describe(t_max, extra=extra)
    metric = "time" if pattern in COLLECTIVES else "latency"
    # The stored value is the statistics policy's default, the median of the samples (robust
    # to a descheduled sample); the mean (IMB/OSU's convention) and the minimum stay in the
    # statistics and in details. Analyses recompute their statistic from the samples.
    details |= {"mean_us": time_stats.mean, "min_us": time_stats.minimum}
    out = [
        Measurement(
            benchmark="mpibench",
            metric=metric,
            value=time_stats.median,
            unit=MICROSECOND,
            parameters=params,
            samples=t_max,
            statistics=time_stats,
            statistic=VALUE_STATISTIC,
            details=details,
        )
    ]
    if pattern in BYTES_FACTOR and size > 0:
        out.append(bandwidth_measurement(size * BYTES_FACTOR[pattern], t_max, time_stats, params))
    return ParsedPoint(point_key(size), tuple(out))


def bandwidth_measurement(
    nbytes: int, times_us: tuple[float, ...], time_stats: Statistics, params: dict[str, ParamValue]
) -> Measurement:
    """Bandwidth = bytes / median time, in MB/s (bytes per µs is exactly 10^6 B/s).

    Its statistics are those of the times mapped through n/t (`rate_statistics`): median
    n / median(t), mean n / mean(t) (kept in details too: IMB's and OSU's convention), the
    latency's confidence interval; never a mean of the per-sample bandwidths.
    """
    samples = tuple(nbytes / t for t in times_us)
    stats = rate_statistics(nbytes, times_us, confidence=time_stats.confidence)
    return Measurement(
        benchmark="mpibench",
        metric="bandwidth",
        value=stats.median,
        unit=MEGABYTE_PER_SECOND,
        parameters=params,
        samples=samples,
        statistics=stats,
        statistic=BANDWIDTH_STATISTIC,
        details={"bytes_per_mean_time": stats.mean, "bytes_per_min_time": stats.maximum},
    )
