"""`biobench`: the BioBench tools CSC ran (BLAST, ClustalW, HMMER, MUMmer, Velvet), on
inputs generated from a seed (generate.py), each result verified (verify.py).

One case per tool, size and thread count; one execution per point (a repetition). The
input is generated once per (tool, size, seed) into the build cache; each execution gets a
fresh run directory, removed afterwards. The launcher starts runner.py as ONE process on
the platform's first node (like fio: these are not MPI programs), which runs the tool's
steps (tools.py) and times them; once it exits, `collect` reads the tool's output files and
verifies them against what was planted. A point exists only when the verification passed.
Figures: the tool's natural throughput (queries/s, sequences/s, Mbases/s) and the wall
time of its main step; the version of the tool is a parameter of every measurement.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import Field, model_validator

from hpceval.benchmarks import records, register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.biobench import tools as tools_module
from hpceval.benchmarks.biobench import verify
from hpceval.benchmarks.biobench.tools import (
    BLAST,
    CLUSTALW,
    HMMER,
    MBASES_PER_SECOND,
    MUMMER,
    PROGRAMS,
    QUERIES_PER_SECOND,
    SEQUENCES_PER_SECOND,
    SIZES,
    THREADED,
    TOOL_NAMES,
    VELVET,
    Size,
    ToolName,
    steps,
    write_input,
)
from hpceval.benchmarks.common import WholeOutputs, repeated_case, single_run_measurements
from hpceval.benchmarks.display import application_table, format_value
from hpceval.build import cache_root
from hpceval.config import PlatformConfig, StrictModel
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, Placement
from hpceval.units import SECOND

if TYPE_CHECKING:
    from rich.table import Table

# Bump when the generators' code changes what a (tool, size, seed) produces; the cached
# inputs are keyed by it and by the sizes and settings (input_key).
GENERATOR_VERSION: Final = "2"
UNITS: Final[Mapping[ToolName, str]] = {
    "blastn": QUERIES_PER_SECOND, "blastp": QUERIES_PER_SECOND,
    "clustalw": SEQUENCES_PER_SECOND, "hmmer": SEQUENCES_PER_SECOND,
    "mummer": MBASES_PER_SECOND, "velvet": MBASES_PER_SECOND,
}  # fmt: skip
# Rough seconds per size for the ETA and the default time limit (which is generous).
ESTIMATE_S: Final[Mapping[Size, float]] = {"tiny": 2.0, "small": 15.0, "moderate": 90.0}


class BiobenchOptions(StrictModel):
    tool: list[ToolName] = Field(default_factory=lambda: list(TOOL_NAMES), min_length=1)
    size: Size = "small"
    seed: int = Field(1, ge=0, le=2**31)
    threads: list[int] = Field(default_factory=lambda: [1], min_length=1)
    repeat: int = Field(1, ge=1, le=100)
    time_limit_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> BiobenchOptions:
        for t in self.threads:
            if t < 1 or t > 1024:
                raise ValueError(f"threads: {t} is not a valid thread count")
        if max(self.threads) > 1:
            single = [t for t in self.tool if t not in THREADED]
            if single:
                raise ValueError(
                    f"threads: {', '.join(single)} run(s) one thread; list them in an entry "
                    "of their own with threads = [1]"
                )
        return self


@functools.cache
def velvet_has_openmp() -> bool:
    """Whether velvetg is linked with an OpenMP runtime (Debian's is not)."""
    path = shutil.which("velvetg")
    if path is None:
        return False
    proc = subprocess.run(["ldd", path], capture_output=True, text=True, check=False)
    return "libgomp" in proc.stdout or "libomp" in proc.stdout


_VERSION_ARGS: Final[Mapping[ToolName, tuple[list[str], str]]] = {
    "blastn": (["blastn", "-version"], r"blastn: (\S+)"),
    "blastp": (["blastp", "-version"], r"blastp: (\S+)"),
    "clustalw": (["clustalw", "-help"], r"CLUSTAL (\S+)"),
    "hmmer": (["hmmsearch", "-h"], r"HMMER (\S+)"),
    "mummer": (["nucmer", "--version"], r"version (\S+)"),
    "velvet": (["velveth"], r"Version (\S+)"),
}


@functools.cache
def tool_version(tool: ToolName) -> str:
    """The tool's version as it prints it (provenance of every measurement)."""
    argv, pattern = _VERSION_ARGS[tool]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=30,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    found = re.search(pattern, proc.stdout + proc.stderr)
    return found.group(1) if found else "unknown"


def input_key(tool: ToolName, size: Size) -> str:
    """What the generated input depends on besides the seed: the generator version, the
    size's parameters and the fixed settings (a changed table never reuses a stale input)."""
    settings = {
        name: value
        for name, value in vars(tools_module).items()
        if name.isupper() and isinstance(value, int | float | str)
    }
    text = json.dumps([GENERATOR_VERSION, SIZES[tool][size], settings], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def prepared_input(tool: ToolName, size: Size, seed: int) -> Path:
    """The cached input directory of (tool, size, seed), generated now if needed (into a
    temporary directory renamed into place: concurrent runs never see half an input)."""
    root = cache_root() / "biobench" / "inputs"
    target = root / f"{tool}-{size}-seed{seed}-{input_key(tool, size)}"
    if (target / "expected.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        write_input(tool, size, seed, scratch)
        os.replace(scratch, target)
    except OSError:
        if not (target / "expected.json").is_file():
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


@register
class Biobench(Benchmark[BiobenchOptions]):
    name = "biobench"
    description = "BioBench: BLAST, ClustalW, HMMER, MUMmer, Velvet on generated, verified inputs"
    points_per_execution = 1
    Options = BiobenchOptions
    tools = (BLAST, CLUSTALW, HMMER, MUMMER, VELVET)

    def __init__(self) -> None:
        self._outputs = WholeOutputs()

    def required_programs(self, options: BiobenchOptions) -> list[tuple[Tool, str]]:
        return [(PROGRAMS[t][0], program) for t in options.tool for program in PROGRAMS[t][1]]

    def cases(
        self, options: BiobenchOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        cases = []
        for tool in dict.fromkeys(options.tool):
            for threads in options.threads:
                if tool == "velvet" and threads > 1 and not velvet_has_openmp():
                    raise UserError(
                        "biobench: velvetg here is built without OpenMP (ldd shows no "
                        "libgomp; Debian's is): velvet runs one thread, set threads = [1]"
                    )
                placement = Placement(1, 1, threads, "none")
                params: dict[str, ParamValue] = {
                    "tool": tool, "size": options.size, "seed": options.seed,
                }  # fmt: skip
                cases.append(repeated_case(
                    self.name, [f"tool={tool}", f"size={options.size}", f"seed={options.seed}",
                                f"threads={threads}"],
                    placement, params, repeat=options.repeat,
                    run_estimate_s=ESTIMATE_S[options.size] / threads,
                    explicit_limit_s=options.time_limit_s,
                    options={"tool": tool, "size": options.size, "seed": options.seed,
                             "threads": threads},
                ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        # Nothing to compile: the Debian packages' programs, found on PATH when a run starts.
        return Program(Path(sys.executable), "", ())

    @contextlib.contextmanager
    def staged(self, case: Case, points: Sequence[str]) -> Iterator[Case]:
        tool, size, seed = case_input(case)
        threads = int(case.options["threads"])
        try:
            inputs = prepared_input(tool, size, seed)
        except (OSError, ValueError) as e:
            raise BenchmarkFailure(f"biobench: generating the {tool} input failed: {e}") from e
        runs = cache_root() / "biobench" / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=runs))
        try:
            spec = {
                "tool": tool, "threads": threads, "run_dir": str(run_dir),
                "steps": [asdict(s) for s in steps(tool, inputs, run_dir, threads)],
            }  # fmt: skip
            (run_dir / "steps.json").write_text(json.dumps(spec))
            yield replace(case, options={
                **case.options, "inputs": str(inputs), "run_dir": str(run_dir),
                "tool_version": tool_version(tool),
            })  # fmt: skip
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        if "run_dir" not in case.options:
            raise BenchmarkFailure("biobench: the input was not staged for this execution")
        spec = str(Path(str(case.options["run_dir"])) / "steps.json")
        return [sys.executable, "-m", "hpceval.benchmarks.biobench.runner", spec]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        record = records.decode_record(line, "biobench")
        if record is not None and record.get("record") == "error":
            raise BenchmarkFailure(f"biobench: {record.get('message')}")
        return None  # the point needs the output files: collect

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        run_dir = Path(str(case.options["run_dir"]))
        inputs = Path(str(case.options["inputs"]))
        return [point_of_run(stdout, case, point, run_dir, inputs)]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        step_times(stdout, case_input(case)[0])

    def headline(self, measurements: Sequence[Measurement]) -> str:
        figures = [m for m in measurements if m.metric == "throughput"]
        if not figures:
            return ""
        best = max(figures, key=lambda m: m.value)
        return f"{best.parameters.get('tool')} {format_value(best.value)} {best.unit} (verified)"

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        tables = []
        for tool in TOOL_NAMES:
            mine = [m for m in measurements if m.parameters.get("tool") == tool]
            version = next((str(m.parameters.get("tool_version")) for m in mine), "")
            tables += application_table(
                mine, benchmark=self.name, title=f"BioBench {tool} {version}".rstrip(),
                figures=(("throughput", UNITS[tool]), ("time", "s")),
                size_keys=("size", "seed"),
            )  # fmt: skip
        return tables


def case_input(case: Case) -> tuple[ToolName, Size, int]:
    tool, size = str(case.options["tool"]), str(case.options["size"])
    if tool not in SIZES or size not in SIZES[tool]:  # type: ignore[index]
        raise BenchmarkFailure(f"biobench: unknown tool {tool!r} or size {size!r}")
    return tool, size, int(case.options["seed"])  # type: ignore[return-value]


def step_times(stdout: str, tool: ToolName) -> dict[str, float]:
    """Seconds per step from the runner's records; BenchmarkFailure unless every step of
    the tool ran and the runner ended well."""
    times: dict[str, float] = {}
    cpu_times: dict[str, float] = {}
    timed: set[str] = set()
    ended = False
    for line in stdout.splitlines():
        record = records.decode_record(line, "biobench")
        if record is None:
            continue
        kind = record.get("record")
        if kind == "error":
            raise BenchmarkFailure(f"biobench: {record.get('message')}")
        if kind == "step":
            seconds = float(record.get("seconds", -1))
            if not seconds > 0:
                raise BenchmarkFailure(f"biobench: step {record.get('name')} took {seconds} s")
            times[str(record.get("name"))] = seconds
            cpu = record.get("cpu_seconds")
            if isinstance(cpu, int | float):
                cpu_times[f"{record.get('name')}_cpu"] = float(cpu)
            if record.get("timed"):
                timed.add(str(record.get("name")))
        ended = ended or (kind == "end" and record.get("status") == "ok")
    wanted = PROGRAMS[tool][1]
    if sorted(times) != sorted(wanted) or not ended:
        raise BenchmarkFailure(f"biobench {tool}: ran steps {sorted(times)}, expected "
                               f"{sorted(wanted)} and an end record")  # fmt: skip
    times["timed"] = sum(times[name] for name in timed)
    return {**times, **cpu_times}


def read_output(run_dir: Path, name: str) -> str:
    try:
        return (run_dir / name).read_text(errors="replace")
    except OSError as e:
        raise BenchmarkFailure(f"biobench: cannot read the tool's output {name}: {e}") from None


def verify_outputs(tool: ToolName, run_dir: Path, inputs: Path) -> dict[str, Any]:
    """The tool's verification on the files of one run (verify.py)."""
    expected = json.loads((inputs / "expected.json").read_text())
    if tool in ("blastn", "blastp"):
        return verify.check_blast(read_output(run_dir, "hits.tsv"), expected)
    if tool == "clustalw":
        return verify.check_clustal(read_output(run_dir, "alignment.aln"), expected)
    if tool == "hmmer":
        return verify.check_hmmer(read_output(run_dir, "hits.tbl"), expected)
    if tool == "mummer":
        return verify.check_mummer(read_output(run_dir, "coords.tsv"), expected)
    genome = "".join(read_output(inputs, "genome.fa").splitlines()[1:])
    return verify.check_velvet(read_output(run_dir, "assembly/contigs.fa"), genome, expected)


def point_of_run(stdout: str, case: Case, point: str, run_dir: Path, inputs: Path) -> ParsedPoint:
    tool = case_input(case)[0]
    times = step_times(stdout, tool)
    facts = verify_outputs(tool, run_dir, inputs)
    expected = json.loads((inputs / "expected.json").read_text())
    work = float(expected["work_units"])
    params: dict[str, ParamValue] = {
        **case.placement.as_parameters(),
        **case.parameters,
        "tool_version": str(case.options.get("tool_version", "unknown")),
    }
    details = {**facts, "work_units": work, **{f"{k}_s": v for k, v in times.items()}}
    rows = (("throughput", work / times["timed"], UNITS[tool]), ("time", times["timed"], SECOND))
    return ParsedPoint(point, single_run_measurements("biobench", rows, params, details))
