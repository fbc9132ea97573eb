"""`echo`: a test-only benchmark plugged in from tests/plugin through the entry point group
`hpceval.benchmarks` (hpceval_echo_bench-1.0.dist-info), with nothing anywhere else: its
program (a Python script printing JSON lines), its options, its tool, and its category and
unit in benchmark.toml. tests/test_benchmark_plugin.py runs it through the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from hpceval.benchmarks import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.common import repeated_case, require_tool, single_run_measurements
from hpceval.config import PlatformConfig, StrictModel
from hpceval.errors import BenchmarkFailure
from hpceval.model import ParamValue, Placement

PROGRAM = Path(__file__).with_name("program.py")
PYTHON = Tool(
    "python3",
    package="python3",
    needed_for="the echo test benchmark (tests/plugin)",
    package_words="Python 3",
)


class EchoOptions(StrictModel):
    rate: float = Field(100.0, gt=0)  # widgets/s the program reports
    repeat: int = Field(3, ge=1, le=10)


class Echo(Benchmark[EchoOptions]):
    name = "echo"
    description = "Test-only: a Python program printing a rate and a time as JSON lines"
    Options = EchoOptions
    tools = (PYTHON,)
    points_per_execution = 1

    def cases(self, options: EchoOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        params: dict[str, ParamValue] = {"input": "tiny"}
        return [
            repeated_case(
                self.name,
                ["tiny"],
                Placement(1, 1, 1, "none"),
                params,
                repeat=options.repeat,
                run_estimate_s=0.5,
                explicit_limit_s=None,
                options={"rate": options.rate},
            )
        ]

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        return Program(path=PROGRAM, compiler="", cflags=())

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        (point,) = points
        rep = point.removeprefix("rep=")
        rate = str(case.options["rate"])
        return [require_tool(PYTHON), str(program.path), "--rate", rate, "--rep", rep]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(record, dict) or record.get("record") != "point":
            return None
        rate, time = float(record["rate"]), float(record["time"])
        if not (rate > 0 and abs(rate * time - 1000) < 1e-6):
            raise BenchmarkFailure(f"echo: rate {rate} and time {time} do not agree")
        params = {**case.parameters, **case.placement.as_parameters()}
        rows = (("rate", rate, "widgets/s"), ("time", time, "s"))
        point = f"rep={record['rep']}"
        return ParsedPoint(point, single_run_measurements(self.name, rows, params, {}))

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        seen = [p.point_key for p in self.parse(stdout, case)]
        if seen != list(points):
            raise BenchmarkFailure(f"echo measured {seen}, expected {list(points)}")
