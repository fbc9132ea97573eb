"""`npb-java`: hpceval's NAS Parallel Benchmark kernels EP, IS, CG, MG and FT in Java on MPJ
Express (Npb.java and one file per kernel).

The programs follow the C kernels' protocol (docs/npb.md): one verified result per run, cases
kernel x class x placement, points the repetitions. The results are cross-checked like the C
kernels' (official reference values, official operation count) and stored under benchmark
"npb", with their implementation (Measurement.implementation `java/mpj-express 0.44`; the
JVM and MPJ's device in their details): `hpceval compare --mix-implementations` pairs a
local-mpj run with the C kernel's run on `local` (without the flag it refuses, naming both),
and the report's "Java overhead" section does so by itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Case, ParsedPoint, Program
from hpceval.benchmarks.mpibench_java import (
    JAVA_TOOLS,
    RECORDS_SOURCE,
    as_java,
    check_java_platform,
    check_mpj_startup,
)
from hpceval.benchmarks.npb import (
    Npb,
    NpbOptions,
    rank_rule_error,
    result_measurements,
)
from hpceval.benchmarks.records import check_program_header
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure
from hpceval.mpj import compile_java_program, installation, missing_java_tools

HERE = Path(__file__).parent
PROGRAM = "npb-java"
MAIN_CLASS = "Npb"
SOURCES = (
    *(HERE / f"{name}.java" for name in ("Npb", "Ep", "Is", "Cg", "Mg", "Ft")),
    RECORDS_SOURCE,
)
JAVA_KERNELS: tuple[str, ...] = ("ep", "is", "cg", "mg", "ft")
PROTOCOL_VERSION = "1.0"
# One class-S..C run in Java against the C kernel's (generous: JIT, MPJ's collectives).
JAVA_SLOWDOWN_ESTIMATE = 3.0

JavaKernel = Literal["ep", "is", "cg", "mg", "ft"]
JavaClass = Literal["S", "W", "A", "B", "C"]


def java_rank_rule_error(kernel: str, class_name: str, ranks: int) -> str | None:
    """Why `ranks` cannot run this kernel and class in Java (None if it can)."""
    if why := rank_rule_error(kernel, class_name, ranks):
        return why
    # FT: NPB's rule (at most min(ny, nz) ranks) keeps Ft.java in its slab layout (nz <= ny).
    return None


class NpbJavaOptions(NpbOptions):
    kernels: list[JavaKernel] = Field(min_length=1)  # type: ignore[assignment]
    classes: list[JavaClass] = Field(  # type: ignore[assignment]
        default_factory=lambda: list[JavaClass](["S"]), min_length=1
    )
    binding: Literal["none"] = "none"

    @model_validator(mode="after")
    def _check_java(self) -> NpbJavaOptions:
        for kernel in self.kernels:
            for class_name in self.classes:
                for r in self.ranks:
                    if why := java_rank_rule_error(kernel, class_name, r):
                        raise ValueError(f"ranks: {why}")
        if self.threads_per_rank != [1]:
            raise ValueError("threads_per_rank: the Java kernels run one thread per rank")
        return self


@register
class NpbJava(Npb):
    name = PROGRAM
    description = "NAS Parallel Benchmarks EP, IS, CG, MG and FT in Java on MPJ Express"
    Options = NpbJavaOptions
    runs_on_mpj = True
    tools = JAVA_TOOLS

    def unavailable(self, options: NpbOptions, platform: PlatformConfig) -> str | None:
        return super().unavailable(options, platform) or missing_java_tools()

    def cases(self, options: NpbOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        check_java_platform(PROGRAM, platform)
        cases = super().cases(options, platform, entry_index)
        return [
            replace(
                c,
                estimate_s=c.estimate_s * JAVA_SLOWDOWN_ESTIMATE,
                time_limit_s=options.time_limit_s or c.time_limit_s * JAVA_SLOWDOWN_ESTIMATE,
            )
            for c in cases
        ]

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        # javac, not the platform's C compiler: the C flags do not apply to Java.
        jar = compile_java_program(PROGRAM, SOURCES, MAIN_CLASS, installation())
        return Program(jar, "javac", ())

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        # `--name=value` only: the mpj launcher passes no argument MPJRun could read as its own.
        return [
            str(program.path),
            f"--kernel={case.parameters['kernel']}",
            f"--class={case.parameters['class']}",
        ]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        check_mpj_startup(line)
        return super().parse_line(line, case)

    def check_header(self, record: Mapping[str, Any], case: Case) -> None:
        check_java_header(record, case)

    def result(self, record: Mapping[str, Any], case: Case) -> ParsedPoint:
        """The C kernels' result, the implementation (MPJ's version, device, JVM) added."""
        parsed = result_measurements(record, case)
        return ParsedPoint(parsed.point_key, tuple(as_java(m, record) for m in parsed.measurements))


def check_java_header(record: Mapping[str, Any], case: Case) -> None:
    check_program_header(record, PROGRAM, PROTOCOL_VERSION, case.placement)
    expected_fields = (("kernel", case.parameters["kernel"]), ("class", case.parameters["class"]))
    for field, expected in expected_fields:
        if record.get(field) != expected:
            raise BenchmarkFailure(
                f"{PROGRAM} header says {field} {record.get(field)!r}, expected {expected!r}"
            )


__all__ = ["JAVA_KERNELS", "NpbJava", "java_rank_rule_error"]
