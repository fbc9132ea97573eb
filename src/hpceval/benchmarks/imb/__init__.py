"""`imb`: the Intel MPI Benchmarks 2021.x (IMB-MPI1), built from the sources the user points
hpceval at (platform `[sources] imb`, or `hpceval run --source imb=PATH`).

The sources are copied into the build cache (hpceval.sources) and built with
`make IMB-MPI1 CC=<mpicc> CXX=<mpicxx>` (`CPPFLAGS=-DOMPI_SKIP_MPICXX=1`: IMB's C++ build
must not pull in Open MPI's C++ bindings). A case runs the chosen IMB benchmarks on its
rank count only (`-npmin RANKS`) up to `max_size`. Measurements: ping-pong latency (µs,
IMB's t[usec]) and bandwidth (MB/s), collective time (µs, t_avg; t_min and t_max in the
details); the implementation "official/IMB <version printed>". A size whose time prints as
0.00 µs (a collective on 0 bytes) is below IMB's resolution and not stored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import RankSweepOptions, rank_placements, repeated_case
from hpceval.benchmarks.imb.parse import ImbBlock, ImbOutput, parse_imb_output
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, official_implementation
from hpceval.sources import private_tree, resolve_source, run_make
from hpceval.units import MEGABYTE_PER_SECOND, MICROSECOND

NAME = "imb"
SOURCE_OPTION = "source"
ImbBenchmark = Literal[
    "PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Reduce", "Bcast", "Alltoall",
    "Allgather",
]  # fmt: skip
PING = frozenset({"PingPong", "PingPing"})


class ImbOptions(RankSweepOptions):
    benchmarks: list[ImbBenchmark] = Field(min_length=1)
    ranks: list[int] = Field(default_factory=lambda: [2], min_length=1)
    max_size: int = Field(4 << 20, ge=1, le=1 << 30)
    iterations: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> ImbOptions:
        if any(r < 2 for r in self.ranks):
            raise ValueError("ranks: IMB's benchmarks need at least 2 ranks")
        return self


def build_imb(source: Path, *, compiler: str, compiler_identity: str, flags: Sequence[str]) -> Path:
    tree, _ = private_tree("imb", source, compiler_identity, flags)
    exe = tree / "IMB-MPI1"
    if not exe.is_file():
        cxx = str(Path(compiler).with_name(Path(compiler).name.replace("mpicc", "mpicxx", 1)))
        run_make(
            tree,
            ["IMB-MPI1", f"CC={compiler}", f"CXX={cxx}"],
            env={"CPPFLAGS": "-DOMPI_SKIP_MPICXX=1", "CFLAGS": " ".join(flags)},
            what="the Intel MPI Benchmarks (IMB-MPI1)",
        )
    if not exe.is_file():
        raise UserError(f"building IMB-MPI1: make succeeded but left no IMB-MPI1 in {tree}")
    return exe


def block_measurements(block: ImbBlock, version: str, case: Case) -> list[Measurement]:
    needed = (
        ("t[usec]", "Mbytes/sec")
        if block.benchmark in PING
        else ("t_min[usec]", "t_max[usec]", "t_avg[usec]")
    )
    for column in needed:
        if column not in block.columns:
            raise BenchmarkFailure(f"IMB {block.benchmark}: no {column} column")
    base: dict[str, ParamValue] = {**case.placement.as_parameters(), "test": block.benchmark}
    implementation = official_implementation(f"IMB {version}")
    out = []
    for row in block.rows:
        size = int(row[0])
        params = {**base, "size": size}
        if block.benchmark in PING:
            figures: list[tuple[str, float, str, dict[str, float]]] = [
                ("latency", row[block.column("t[usec]")], MICROSECOND, {})
            ]
            if size > 0:
                figures.append(
                    ("bandwidth", row[block.column("Mbytes/sec")], MEGABYTE_PER_SECOND, {})
                )
        else:
            spread = {
                "t_min_us": row[block.column("t_min[usec]")],
                "t_max_us": row[block.column("t_max[usec]")],
            }
            figures = [("time", row[block.column("t_avg[usec]")], MICROSECOND, spread)]
        for metric, value, unit, extra in figures:
            if not (math.isfinite(value) and value > 0):
                continue  # 0.00 µs: below the printed resolution
            out.append(
                Measurement(
                    benchmark=NAME,
                    metric=metric,
                    value=value,
                    unit=unit,
                    parameters=params,
                    samples=(value,),
                    statistic="mean over iterations",
                    details={"repetitions": int(row[1]), **extra},
                    implementation=implementation,
                )
            )
    return out


def check_output(output: ImbOutput, case: Case) -> None:
    wanted = str(case.parameters.get("tests", "")).split(",")
    found = {b.benchmark for b in output.blocks}
    missing = [w for w in wanted if w and w not in found]
    if missing:
        raise BenchmarkFailure(f"IMB ran without the {missing[0]} block")
    ranks = case.placement.ranks
    for block in output.blocks:
        if block.benchmark not in PING and block.processes != ranks:
            raise BenchmarkFailure(
                f"IMB {block.benchmark}: ran on {block.processes} processes, the case has {ranks}"
            )


@register
class Imb(Benchmark[ImbOptions]):
    name = NAME
    description = "The Intel MPI Benchmarks (IMB-MPI1), built from the user's sources"
    points_per_execution = 1
    built_from_user_sources = True
    Options = ImbOptions

    def cases(self, options: ImbOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        source = resolve_source("imb", platform.sources)
        tests = ",".join(options.benchmarks)
        cases = []
        for ranks in options.ranks:
            for threads in options.threads_per_rank:
                for placement in rank_placements(
                    ranks, threads, options.ranks_per_node, options.binding, platform
                ):
                    cases.append(repeated_case(
                        self.name, [tests, f"np={ranks}"], placement, {"tests": tests},
                        repeat=options.repeat, run_estimate_s=10.0 * len(options.benchmarks),
                        explicit_limit_s=options.time_limit_s,
                        options={SOURCE_OPTION: str(source), "max_size": options.max_size,
                                 "iterations": options.iterations},
                    ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        raise UserError("imb is built for its cases (build_for_cases)")

    def build_for_cases(
        self, cases: Sequence[Case], *, compiler: str, compiler_identity: str, cflags: Sequence[str]
    ) -> Program:
        executables = {
            text: build_imb(
                resolve_source("imb", {"imb": text}),
                compiler=compiler,
                compiler_identity=compiler_identity,
                flags=cflags,
            )
            for text in sorted({str(c.options[SOURCE_OPTION]) for c in cases})
        }
        first = next(iter(executables.values()), Path())
        return Program(first.parent, compiler, tuple(cflags), executables)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        max_log = max(0, math.ceil(math.log2(int(case.options["max_size"]))))
        argv = [str(program.executables[str(case.options[SOURCE_OPTION])])]
        argv += ["-npmin", str(case.placement.ranks), "-msglog", f"0:{max_log}"]
        if case.options.get("iterations"):
            argv += ["-iter", str(int(case.options["iterations"]))]
        return argv + str(case.parameters["tests"]).split(",")

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        return None  # the blocks are read from the whole output (collect)

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        output = parse_imb_output(stdout)
        check_output(output, case)
        measurements = [
            m for block in output.blocks for m in block_measurements(block, output.version, case)
        ]
        return [ParsedPoint(point, tuple(measurements))]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        check_output(parse_imb_output(stdout), case)
