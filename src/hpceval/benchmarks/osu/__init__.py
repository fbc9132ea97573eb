"""`osu`: the OSU micro-benchmarks (5.x, 6.x, 7.x), built from the sources the user points
hpceval at (platform `[sources] osu`, or `hpceval run --source osu=PATH`), run like
mpibench's cases.

The sources are copied into the build cache (hpceval.sources), configured with the
platform's MPI wrappers and flags (`./configure CC=mpicc CXX=mpicxx CFLAGS=...`) and built
with `make`; the programs (`osu_latency`, `osu_bw`, `osu_allreduce`...) are found in the
tree whatever its version's layout. Each run's table is one measurement per message size,
OSU's statistic (the mean over its iterations), with the implementation
"official/OSU <version printed>".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import RankSweepOptions, rank_placements, repeated_case
from hpceval.benchmarks.osu.parse import OsuTable, parse_osu_output
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, official_implementation
from hpceval.sources import private_tree, resolve_source, run_build_step
from hpceval.units import MEGABYTE_PER_SECOND, MICROSECOND

NAME = "osu"
SOURCE_OPTION = "source"
Test = Literal["latency", "bw", "bibw", "allreduce", "bcast", "reduce", "alltoall", "allgather"]
POINT_TO_POINT = frozenset({"latency", "bw", "bibw"})
AUTOTOOLS = ("ACLOCAL", "AUTOCONF", "AUTOMAKE", "AUTOHEADER")


class OsuOptions(RankSweepOptions):
    tests: list[Test] = Field(min_length=1)
    ranks: list[int] = Field(default_factory=lambda: [2], min_length=1)
    max_size: int | None = Field(None, ge=1, le=1 << 30)

    @model_validator(mode="after")
    def _check(self) -> OsuOptions:
        for test in self.tests:
            if test in POINT_TO_POINT and self.ranks != [2]:
                raise ValueError(f"ranks: osu_{test} runs on 2 ranks (ranks = [2])")
        if any(r < 2 for r in self.ranks):
            raise ValueError("ranks: the OSU tests need at least 2 ranks")
        return self


def find_program(tree: Path, name: str) -> Path | None:
    """The built program `name` anywhere in the tree (7.x: c/mpi/pt2pt/standard/, 5.x:
    mpi/pt2pt/); None when the build did not make it."""
    for path in sorted(tree.rglob(name)):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def build_osu(source: Path, *, compiler: str, compiler_identity: str, flags: Sequence[str]) -> Path:
    tree, _ = private_tree("osu", source, compiler_identity, flags)
    if not (tree / ".built").is_file():
        cxx = str(Path(compiler).with_name(Path(compiler).name.replace("mpicc", "mpicxx", 1)))
        what = "the OSU micro-benchmarks"
        run_build_step(
            tree,
            ["sh", "./configure", f"CC={compiler}", f"CXX={cxx}", f"CFLAGS={' '.join(flags)}"],
            env={},
            what=what,
        )
        # The autotools' regeneration rules are not wanted (a copied tree's timestamps may
        # trigger them, and aclocal/automake need not be installed): no-ops.
        no_regeneration = [f"{tool}=true" for tool in AUTOTOOLS]
        run_build_step(tree, ["make", "--no-print-directory", *no_regeneration], env={}, what=what)
        (tree / ".built").write_text("")
    return tree


def table_measurements(table: OsuTable, case: Case) -> tuple[Measurement, ...]:
    metric, unit = ("bandwidth", MEGABYTE_PER_SECOND) if table.is_bandwidth else (
        "latency", MICROSECOND
    )  # fmt: skip
    base: dict[str, ParamValue] = {**case.parameters, **case.placement.as_parameters()}
    implementation = official_implementation(f"OSU {table.version}")
    return tuple(
        Measurement(
            benchmark=NAME,
            metric=metric,
            value=value,
            unit=unit,
            parameters={**base, "size": size},
            samples=(value,),
            statistic="mean over iterations",
            details={"column": table.column, "test_title": table.test},
            implementation=implementation,
        )
        for size, value in table.rows
    )


@register
class Osu(Benchmark[OsuOptions]):
    name = NAME
    description = "The OSU micro-benchmarks, built from the user's sources"
    points_per_execution = 1
    built_from_user_sources = True
    Options = OsuOptions

    def cases(self, options: OsuOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        source = resolve_source("osu", platform.sources)
        cases = []
        for test in options.tests:
            for ranks in options.ranks:
                for threads in options.threads_per_rank:
                    for placement in rank_placements(
                        ranks, threads, options.ranks_per_node, options.binding, platform
                    ):
                        cases.append(repeated_case(
                            self.name, [test, f"np={ranks}"], placement, {"test": test},
                            repeat=options.repeat, run_estimate_s=5.0,
                            explicit_limit_s=options.time_limit_s,
                            options={SOURCE_OPTION: str(source), "max_size": options.max_size},
                        ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        raise UserError("osu is built for its cases (build_for_cases)")

    def build_for_cases(
        self, cases: Sequence[Case], *, compiler: str, compiler_identity: str, cflags: Sequence[str]
    ) -> Program:
        sources = sorted({str(c.options[SOURCE_OPTION]) for c in cases})
        executables: dict[str, Path] = {}
        tree = Path()
        for text in sources:
            tree = build_osu(
                resolve_source("osu", {"osu": text}),
                compiler=compiler,
                compiler_identity=compiler_identity,
                flags=cflags,
            )
            for test in sorted({str(c.parameters["test"]) for c in cases}):
                found = find_program(tree, f"osu_{test}")
                if found is None:
                    raise UserError(f"the OSU build in {tree} made no osu_{test}")
                executables[f"{text}:{test}"] = found
        return Program(tree, compiler, tuple(cflags), executables)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        exe = program.executables[f"{case.options[SOURCE_OPTION]}:{case.parameters['test']}"]
        argv = [str(exe)]
        if case.options.get("max_size"):
            argv += ["-m", str(int(case.options["max_size"]))]
        return argv

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        return None  # the table is read from the whole output (collect)

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        return [ParsedPoint(point, table_measurements(parse_osu_output(stdout), case))]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        table = parse_osu_output(stdout)
        test = str(case.parameters["test"])
        expected = "bandwidth" if test in ("bw", "bibw") else "latency"
        if table.is_bandwidth != (expected == "bandwidth"):
            raise BenchmarkFailure(f"osu_{test}: the table is {table.column!r}, not a {expected}")
