"""`mpibench-java`: mpibench's patterns in Java on MPJ Express (MpiBench.java).

The program has mpibench's command line, patterns, sample loop and JSON-lines records
(docs/mpibench.md), so the cases and the point parsing are mpibench's. What differs
(docs/java.md): it runs on a platform whose launcher is `mpj`; the header names the JVM and
MPJ's version and device; every point also carries the time of its first iteration in the
fresh JVM (`first_iteration_us`, before any JIT compilation), stored as its own metric
(`first_iteration_latency` / `first_iteration_time`), while the samples are taken after a JIT
warm-up (`jit_warmup_s`).

Its measurements are stored under benchmark "mpibench", with the implementation in their
details: the same suite run on `local` (C, Open MPI) and on `local-mpj` (Java) gives points
that `hpceval compare` pairs one to one, the platform telling the implementations apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.mpibench import (
    TIME_DIVISOR,
    Mpibench,
    MpibenchOptions,
    point_measurements,
    point_record,
    size_of,
    verify_output,
)
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, StartupFailure, UserError
from hpceval.model import Measurement
from hpceval.mpj import (
    MPJ_STARTER,
    compile_java_program,
    installation,
    java_platform,
    missing_java_tools,
)
from hpceval.statistics import describe
from hpceval.units import MICROSECOND

SOURCE = Path(__file__).with_name("MpiBench.java")
# The records' helpers shared with the other Java programs (npb-java compiles it too).
RECORDS_SOURCE = Path(__file__).with_name("MpjRecords.java")
MAIN_CLASS = "MpiBench"
PROGRAM = "mpibench-java"
# The launcher the program needs (hpceval.launch.schedulers.mpj, with the mpjrun starter).
LAUNCHER = "mpj"


DEFAULT_JIT_WARMUP_S = 0.5


class MpibenchJavaOptions(MpibenchOptions):
    # Seconds of JIT warm-up (every size in turn) before the first point's own warm-up.
    jit_warmup_s: float = Field(DEFAULT_JIT_WARMUP_S, ge=0)


def first_iteration_measurement(
    record: Mapping[str, Any], parsed: ParsedPoint
) -> Measurement | None:
    """The point's first iteration in the fresh JVM (interpreted code), one sample in µs."""
    raw = record.get("first_iteration_us")
    if raw is None:
        return None
    # Rings report per message (half an iteration), like their samples.
    value = float(raw) / TIME_DIVISOR.get(str(record.get("pattern")), 1)
    if not value > 0:
        raise BenchmarkFailure(f"point size={record.get('size')}: first_iteration_us {raw!r}")
    timed = parsed.measurements[0]
    return Measurement(
        benchmark=timed.benchmark,
        metric=f"first_iteration_{timed.metric}",
        value=value,
        unit=MICROSECOND,
        parameters=timed.parameters,
        samples=(value,),
        statistics=describe((value,)),
    )


def java_platform_problem(program: str, platform: PlatformConfig) -> str | None:
    """Why a Java program cannot run on `platform` (None: it runs there, on the platform's
    own MPJ launcher or, on `local`, on MPJ's multicore device beside the C programs)."""
    if java_platform(platform) is not None:
        return None
    return (
        f"benchmark {program} runs on local, on a platform whose launcher is {LAUNCHER} "
        f"(e.g. local-mpj) or whose starter is {MPJ_STARTER} (e.g. netns-2x2-mpj); "
        f"platform {platform.name!r} uses {platform.launcher.kind}"
    )


def check_java_platform(program: str, platform: PlatformConfig) -> None:
    """UserError when the Java program cannot run on `platform` (java_platform_problem)."""
    if (problem := java_platform_problem(program, platform)) is not None:
        raise UserError(problem)


# The JDK (javac compiles the program, its java runs MPJ); doctor shows the JVM's version
# beside MPJ Express's (hpceval.doctor), without a second JVM start-up here.
JAVA_TOOLS = (
    Tool(
        "javac",
        "default-jdk-headless",
        "the Java benchmarks on MPJ Express (mpibench-java, npb-java; platform local-mpj): "
        "javac and java; without them their cases are skipped",
        "a Java development kit (java, javac)",
        version_args=None,
    ),
)


@register
class MpibenchJava(Mpibench):
    name = PROGRAM
    description = "mpibench's patterns in Java on MPJ Express (JIT-warm and first-iteration)"
    Options = MpibenchJavaOptions
    tools = JAVA_TOOLS
    runs_on_mpj = True

    def unavailable(self, options: MpibenchOptions, platform: PlatformConfig) -> str | None:
        return super().unavailable(options, platform) or missing_java_tools()

    def cases(
        self, options: MpibenchOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        check_java_platform(PROGRAM, platform)
        jit_warmup_s = getattr(options, "jit_warmup_s", DEFAULT_JIT_WARMUP_S)
        cases = []
        # mpibench's cases, keyed and labelled by this benchmark's name (self.name).
        for case in super().cases(options, platform, entry_index):
            run_options = {**case.options, "jit_warmup_s": jit_warmup_s}
            estimate = case.estimate_s + jit_warmup_s
            cases.append(replace(case, options=run_options, estimate_s=estimate))
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        # javac, not the platform's C compiler: the C flags do not apply to Java.
        mpj = installation()
        jar = compile_java_program(PROGRAM, [SOURCE, RECORDS_SOURCE], MAIN_CLASS, mpj)
        return Program(jar, "javac", ())

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        # `--name=value` only: the mpj launcher passes no argument MPJRun could read as its own.
        o = case.options
        argv = [
            str(program.path),
            f"--pattern={case.parameters['pattern']}",
            "--sizes=" + ",".join(str(size_of(p)) for p in points),
            f"--target-rci={o['target_rci']!r}",
            f"--budget={o['budget_s']!r}",
            f"--min-samples={o['min_samples']}",
            f"--max-samples={o['max_samples']}",
            f"--warmup-s={o['warmup_s']!r}",
            f"--sample-s={o['sample_s']!r}",
            f"--jit-warmup-s={o['jit_warmup_s']!r}",
            f"--seed={o['seed']}",
        ]
        if "pair" in o:
            argv.append("--pair=" + ",".join(str(r) for r in o["pair"]))
        return argv

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        return parse_java_line(line, case)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        # MPJRun exits 0 even when every rank threw: the end record is the only proof.
        verify_output(stdout, points, PROGRAM)


def java_implementation(record: Mapping[str, Any]) -> str:
    """The implementation label of a Java point (Measurement.implementation): MPJ Express and
    its version, so that `compare` never pairs it with a C program's silently."""
    return f"java/mpj-express {record.get('mpj_version', 'unknown')}"


def implementation_details(record: Mapping[str, Any]) -> dict[str, Any]:
    """What else ran a point: MPJ Express's device and the JVM (the point record's)."""
    return {"jvm": record.get("jvm"), "mpj_device": record.get("device")}


def as_java(measurement: Measurement, record: Mapping[str, Any]) -> Measurement:
    """A measurement of a Java program: its implementation and details."""
    details = {**measurement.details, **implementation_details(record)}
    return replace(measurement, implementation=java_implementation(record), details=details)


# MPJ Express 0.44's MPJRun opens its own port only after it has sent every daemon its job,
# and a niodev rank JVM that connects to it before then gets "Connection refused", dies in
# MPI.Init (printed on MPJRun's stdout) and leaves MPJRun waiting for it for ever. Seen on
# the netns cluster with 2 ranks per node (tests/data/mpibench_java/niodev_rank_refused.out).
MPJ_RANK_REFUSED = "java.net.ConnectException"


def check_mpj_startup(line: str) -> None:
    """Raise StartupFailure for the line of a rank JVM that could not reach MPJRun (pure)."""
    if line.startswith(MPJ_RANK_REFUSED):
        raise StartupFailure(
            f"MPJ Express could not start a rank ({line.strip()}): the rank reached for "
            "MPJRun before MPJRun listened (an MPJ 0.44 start-up race)"
        )


def parse_java_line(line: str, case: Case) -> ParsedPoint | None:
    """One line of MpiBench.java's output (pure)."""
    check_mpj_startup(line)
    record = point_record(line, case, PROGRAM)
    if record is None:
        return None
    parsed = point_measurements(record, case)
    measurements = [as_java(m, record) for m in parsed.measurements]
    cold = first_iteration_measurement(record, parsed)
    if cold is not None:
        measurements.append(as_java(cold, record))
    return ParsedPoint(parsed.point_key, tuple(measurements))


__all__ = [
    "MpibenchJava",
    "check_java_platform",
    "check_mpj_startup",
    "java_platform_problem",
    "parse_java_line",
]
