"""`stream`: memory bandwidth by STREAM's rules (Copy, Scale, Add, Triad), hpceval's own C.

One case per process count: one process, and one process per core (each rank on its own
arrays, a barrier before every kernel, the slowest rank's time: the summed bandwidth). Each
array is at least 4x the last-level cache that the platform's provenance reports (lstopo or
sysfs, `hpceval.provenance.last_level_cache`), all ranks' arrays together; the kernels run
`trials` (>= 10) times, the first is left out; the arrays' contents are validated as STREAM
does. Bandwidth = bytes / statistic(time): the median by default, the best (STREAM's own
headline) and the mean kept beside it. Protocol and rules in docs/stream.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from hpceval.benchmarks import records, register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import WholeOutputs, case_key, time_limit
from hpceval.benchmarks.npb import available_memory_per_node
from hpceval.benchmarks.stream.tables import headline, stream_tables
from hpceval.build import check_smpi_options, compile_program
from hpceval.config import PlatformConfig, StrictModel
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, Placement
from hpceval.provenance import SystemHost, last_level_cache
from hpceval.statistics import describe, rate_statistics
from hpceval.units import MEGABYTE_PER_SECOND, SECOND, format_bytes

if TYPE_CHECKING:
    from rich.table import Table

SOURCE = Path(__file__).with_name("stream.c")
PROGRAM = "stream"
PROTOCOL_VERSION = "1.0"
KERNELS: tuple[str, ...] = ("copy", "scale", "add", "triad")
# Arrays touched per element (8 bytes each), as STREAM counts them.
ARRAYS_TOUCHED = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
# STREAM's rule: each array at least 4x the size of the last-level caches used.
CACHE_FACTOR = 4
MIN_TRIALS = 10
# The compute flags of the other own kernels; STREAM is compiled like McCalpin's stream.c
# (perf/stream_reference.py builds that with the same flags).
STREAM_CFLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fopenmp", "-std=c11")
# A pessimistic bandwidth for the time estimate (a loaded 2-core machine).
ESTIMATE_BYTES_PER_S = 2e9
POINT = "trials"

Processes = int | Literal["per_core"]


class StreamOptions(StrictModel):
    # 1: one process; "per_core": one process per core of a node.
    ranks: list[Processes] = Field(
        default_factory=lambda: list[Processes]([1, "per_core"]), min_length=1
    )
    trials: int = Field(MIN_TRIALS, ge=MIN_TRIALS, le=1000)
    # The last-level cache of a node in bytes; default: this machine's, from the provenance
    # probes (right for `local` and the namespace clusters; give it for remote nodes).
    llc_bytes: int | None = Field(None, gt=0)
    # Bytes per array, all ranks together; default and minimum: 4 x llc_bytes.
    array_bytes: int | None = Field(None, gt=0)
    time_limit_s: float | None = Field(None, gt=0)


def node_cache(options: StreamOptions) -> tuple[int, str]:
    """The last-level cache the arrays are sized against, and where the figure comes from."""
    if options.llc_bytes is not None:
        return options.llc_bytes, "suite option llc_bytes"
    found = last_level_cache(SystemHost())
    if found is None:
        raise UserError(
            "stream: the provenance probes found no last-level cache size (lstopo, sysfs); "
            "set llc_bytes in the suite"
        )
    return found


def elements_per_rank(array_bytes: int, ranks: int) -> int:
    """Doubles per array on each rank so that all ranks' arrays add up to `array_bytes`."""
    return math.ceil(array_bytes / 8 / ranks)


@register
class Stream(Benchmark[StreamOptions]):
    name = "stream"
    description = "STREAM Copy/Scale/Add/Triad memory bandwidth, arrays >= 4x the last-level cache"
    Options = StreamOptions

    def __init__(self) -> None:
        self._outputs = WholeOutputs()

    def cases(
        self, options: StreamOptions, platform: PlatformConfig, entry_index: int
    ) -> list[Case]:
        llc, llc_source = node_cache(options)
        minimum = CACHE_FACTOR * llc
        array_bytes = options.array_bytes or minimum
        if array_bytes < minimum:
            raise UserError(
                f"stream: array_bytes {array_bytes} is below {CACHE_FACTOR} x the last-level "
                f"cache ({format_bytes(llc)}, {llc_source}): the figure would be cache bandwidth"
            )
        available = available_memory_per_node(platform)
        cores = platform.resolved_cores_per_node()
        cases = []
        for ranks_option in dict.fromkeys(options.ranks):
            ranks = cores if ranks_option == "per_core" else int(ranks_option)
            placement = Placement(1, ranks, 1, "core")
            elements = elements_per_rank(array_bytes, ranks)
            need = 3 * 8 * elements * ranks
            if available is not None and need > available:
                raise UserError(
                    f"stream: 3 arrays of {format_bytes(array_bytes)} (4 x the last-level cache "
                    f"{format_bytes(llc)}) need {format_bytes(need)}; the node has "
                    f"{format_bytes(available)} available"
                )
            estimate = options.trials * 10 * array_bytes / ESTIMATE_BYTES_PER_S + need / 1e9
            params: dict[str, ParamValue] = {
                "processes": "per_core" if ranks_option == "per_core" else ranks,
                "array_bytes": 8 * elements * ranks,
            }
            cases.append(Case(
                key=case_key(self.name, [f"array={8 * elements * ranks}"], placement),
                benchmark=self.name,
                placement=placement,
                parameters=params,
                points=(POINT,),
                time_limit_s=time_limit(
                    options.time_limit_s, estimate, floor_s=120.0, factor=10.0
                ),
                options={
                    "elements": elements,
                    "trials": options.trials,
                    "llc_bytes": llc,
                    "llc_source": llc_source,
                },
                estimate_s=estimate,
            ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        check_smpi_options(compiler, cflags)
        flags = (*STREAM_CFLAGS, *(f for f in cflags if not f.startswith("-O")))
        path = compile_program(
            PROGRAM,
            [SOURCE],
            compiler=compiler,
            compiler_identity=compiler_identity,
            cflags=flags,
            ldflags=["-lm"],
        )
        return Program(path, compiler, flags)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        return [
            str(program.path),
            "--elements",
            str(int(case.options["elements"])),
            "--trials",
            str(int(case.options["trials"])),
        ]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        record = records.decode_record(line, PROGRAM)
        if record is None:
            return None
        kind = record.get("record")
        if kind == "error":
            self._outputs.discard(case.key)
            raise BenchmarkFailure(f"stream: {record.get('message')}")
        lines = self._outputs.add(case.key, line, starts=kind == "header")
        if kind != "end":
            return None
        self._outputs.discard(case.key)
        # The point exists only once the validation passed (parse_output checks it).
        return parse_output("\n".join(lines), case)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        parse_output(stdout, case)

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return headline(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return stream_tables(measurements)


def check_header(record: Mapping[str, Any], case: Case) -> None:
    records.check_program_header(record, PROGRAM, PROTOCOL_VERSION, case.placement)
    for field, expected in (
        ("elements", case.options.get("elements")),
        ("trials", case.options.get("trials")),
    ):
        if record.get(field) != expected:
            raise BenchmarkFailure(
                f"stream header says {field} {record.get(field)!r}, expected {expected!r}"
            )


def parse_output(stdout: str, case: Case) -> ParsedPoint:
    """The measurements of a whole STREAM output (pure): BenchmarkFailure unless it has a
    header matching the case, the four kernels with every trial's time, and a passed
    validation."""
    found = (records.decode_record(line, PROGRAM) for line in stdout.splitlines())
    decoded = [r for r in found if r is not None]
    for r in decoded:
        if r.get("record") == "error":
            raise BenchmarkFailure(f"stream: {r.get('message')}")
    headers = [r for r in decoded if r.get("record") == "header"]
    if len(headers) != 1:
        raise BenchmarkFailure(f"stream: expected one header, got {len(headers)}")
    check_header(headers[0], case)
    validations = [r for r in decoded if r.get("record") == "validation"]
    if len(validations) != 1:
        raise BenchmarkFailure("stream: the output has no validation record")
    validation = validations[0]
    if validation.get("passed") is not True:
        raise BenchmarkFailure(
            f"stream failed validation: relative errors {validation.get('relative_error')} "
            f"of arrays a, b, c above {validation.get('epsilon')}"
        )
    ends = [r for r in decoded if r.get("record") == "end"]
    if not ends or ends[-1].get("status") != "ok":
        raise BenchmarkFailure("stream: the output has no successful end record")
    kernels = {str(r.get("name")): r for r in decoded if r.get("record") == "kernel"}
    if sorted(kernels) != sorted(KERNELS):
        raise BenchmarkFailure(f"stream: kernels {sorted(kernels)}, expected {sorted(KERNELS)}")
    measurements: list[Measurement] = []
    for name in KERNELS:
        measurements.extend(kernel_measurements(name, kernels[name], headers[0], case))
    return ParsedPoint(POINT, tuple(measurements))


def kernel_measurements(
    name: str, record: Mapping[str, Any], header: Mapping[str, Any], case: Case
) -> tuple[Measurement, Measurement]:
    """A kernel's time (median of the trials after the first) and its bandwidth (bytes /
    median time), each with the best and the mean kept in the statistics."""
    trials = int(header["trials"])
    times = [float(t) for t in record.get("times_s") or []]
    if len(times) != trials:
        raise BenchmarkFailure(f"stream {name}: {len(times)} trial times, expected {trials}")
    counted = times[1:]  # STREAM leaves the first trial out
    if not all(math.isfinite(t) and t > 0 for t in counted):
        raise BenchmarkFailure(f"stream {name}: nonsense trial times {counted}")
    nbytes = int(record.get("bytes", 0))
    expected = ARRAYS_TOUCHED[name] * 8 * int(header["elements"]) * int(header["nranks"])
    if nbytes != expected:
        raise BenchmarkFailure(f"stream {name}: counts {nbytes} bytes, expected {expected}")
    params: dict[str, ParamValue] = {
        **case.parameters,
        "kernel": name,
        **case.placement.as_parameters(),
    }
    details = {
        "bytes_per_trial": nbytes,
        "trials": trials,
        "trials_counted": len(counted),
        "first_trial_s": times[0],
        "llc_bytes": case.options.get("llc_bytes"),
        "llc_source": case.options.get("llc_source"),
    }
    # MB/s: 10**6 bytes per second.
    figures = (
        ("time", SECOND, tuple(counted), describe(counted), "median"),
        ("bandwidth", MEGABYTE_PER_SECOND, tuple(nbytes / 1e6 / t for t in counted),
         rate_statistics(nbytes / 1e6, counted), "bytes/median(time)"),
    )  # fmt: skip
    time_m, bandwidth = (
        Measurement(
            benchmark="stream",
            metric=f"{name}_{what}",
            value=stats.median,
            unit=unit,
            parameters=params,
            samples=samples,
            statistics=stats,
            statistic=statistic,
            details=details,
        )
        for what, unit, samples, stats, statistic in figures
    )
    return time_m, bandwidth
