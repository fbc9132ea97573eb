"""`hpcc`: the HPC Challenge suite (Debian's `hpcc` 1.5) through the platform's launcher.

hpceval writes `hpccinf.txt` from the platform and the suite (HPL problem size N from a
fraction of the nodes' memory, or `n`; block size NB; P x Q grid, as square as possible with
P <= Q), runs `hpcc` on the case's ranks through the platform's launcher in a fresh working
directory, reads `hpccoutf.txt` and turns its summary into measurements (units in
`parse`). A run whose HPL residual check fails, or where HPCC marks any check FAILED, is a
failed execution quoting the residual and the threshold.

The working directory is made under the build cache (`$HPCEVAL_CACHE/hpcc-runs`, or
`workdir`), which multi-node platforms already share between nodes at the same path, and
removed after the run; each rank changes into it with `env --chdir` (coreutils), so the same
argv works under mpirun, mpiexec and srun.

Debian's hpcc links the BLAS that `libblas.so.3` points to (the reference BLAS unless
OpenBLAS/BLIS/MKL is installed as an alternative): HPL and DGEMM depend on it, so the
library is recorded with every measurement (`details.blas`).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.common import (
    Binding,
    rank_placements,
    repeated_case,
    require_tool,
    single_run_measurements,
)
from hpceval.benchmarks.hpcc.parse import (
    DETAIL_KEYS,
    check_report,
    figures,
    hpccinf_text,
    process_grid,
    stream_in_cache,
    stream_working_set,
    summary_ranks,
)
from hpceval.benchmarks.hpcc.tables import figure_tables, verified_figures
from hpceval.build import cache_root
from hpceval.config import Argument, PlatformConfig, StrictModel
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue
from hpceval.provenance import SystemHost, last_level_cache
from hpceval.scratch import make_scratch

if TYPE_CHECKING:
    from rich.table import Table

HPCC = Tool(
    "hpcc",
    package="hpcc",
    needed_for="the hpcc benchmark (HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT, b_eff); "
    "without it its cases are skipped",
    package_words="the HPC Challenge benchmark (hpcc)",
    version_args=None,  # hpcc has no version option: it would run the whole benchmark
    # The reference BLAS makes HPL ~10x slower than OpenBLAS: doctor says which one is used.
    linked_library="blas",
)
INPUT_FILE = "hpccinf.txt"
OUTPUT_FILE = "hpccoutf.txt"
WORKDIR_PREFIX = "hpcc-"
# HPL's matrix is 8 N^2 bytes over all ranks; the other tests size themselves from it.
BYTES_PER_ELEMENT = 8
# Rough seconds of one run with the reference BLAS on one current x86 core: N = 1000 takes
# about 1.5 s, N = 4000 on 2 ranks about 90 s (measured here).
SECONDS_AT_N1000 = 1.5


class HpccOptions(StrictModel):
    ranks: list[int] = Field(default_factory=lambda: [1], min_length=1)
    ranks_per_node: list[int] | None = None
    binding: Binding = "core"
    # HPL's matrix as a fraction of the memory of the nodes a case uses; the default keeps a
    # run to seconds with the reference BLAS (N = 1200 on a 24 GB node). HPL's own advice
    # for a real measurement is about 0.8.
    memory_fraction: float = Field(0.0005, gt=0, le=0.9)
    n: int | None = Field(None, ge=100)  # explicit problem size (instead of memory_fraction)
    nb: int = Field(80, ge=1, le=1024)
    repeat: int = Field(1, ge=1, le=100)
    workdir: Argument | None = None  # default: $HPCEVAL_CACHE/hpcc-runs
    time_limit_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> HpccOptions:
        for r in self.ranks:
            if r < 1:
                raise ValueError(f"ranks: {r} is not a valid rank count")
        if self.n is not None and self.n < self.nb:
            raise ValueError(f"n: {self.n} is smaller than the block size nb = {self.nb}")
        return self


def memory_per_node(platform: PlatformConfig) -> int | None:
    """Bytes of memory of a node: the platform's figure, else this machine's total."""
    if platform.memory_gb_per_node is not None:
        return int(platform.memory_gb_per_node * 1e9)
    if platform.launcher.kind not in ("local", "netns"):
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def problem_size(fraction: float, nodes: int, node_memory: int, nb: int) -> int:
    """HPL's N: the matrix takes `fraction` of the nodes' memory, N a multiple of NB."""
    n = math.isqrt(int(fraction * nodes * node_memory / BYTES_PER_ELEMENT))
    return max(nb, n - n % nb)


def blas_library(hpcc: str) -> str:
    """The BLAS shared library hpcc loads (from ldd), or "" if it cannot be told."""
    try:
        out = subprocess.run(
            ["ldd", hpcc], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in out.splitlines():
        name, arrow, rest = line.strip().partition("=>")
        if arrow and "blas" in name.lower():
            path = rest.split("(")[0].strip()
            return os.path.realpath(path) if path else name.strip()
    return ""


@cache
def _blas_of(hpcc: str) -> str:
    return blas_library(hpcc)


def measurements(text: str, case: Case) -> tuple[Measurement, ...]:
    """The measurements of one checked hpccoutf.txt (HpccOutputError if it does not check)."""
    values = check_report(text)
    procs = summary_ranks(values)
    if procs != case.placement.ranks:
        raise BenchmarkFailure(f"hpcc ran on {procs} ranks, expected {case.placement.ranks}")
    if values.get("HPL_N") != str(case.parameters["n"]):
        raise BenchmarkFailure(
            f"hpcc solved N={values.get('HPL_N')}, the input asked N={case.parameters['n']}"
        )
    params: dict[str, ParamValue] = {**case.parameters, **case.placement.as_parameters()}
    version = ".".join(values.get(k, "?") for k in ("VersionMajor", "VersionMinor", "VersionMicro"))
    details: dict[str, Any] = {
        "hpcc_version": version + values.get("VersionRelease", ""),
        "blas": str(case.options.get("blas", "")),
        **{key: values[key] for key in DETAIL_KEYS if key in values},
    }
    llc = case.options.get("llc_bytes")
    working_set = stream_working_set(values, case.placement.ranks_per_node)
    in_cache = stream_in_cache(working_set, int(llc) if llc else None)
    details["stream_working_set_bytes"] = working_set
    details["llc_bytes"] = llc
    rows = [(metric, value, unit) for metric, (value, unit) in figures(values).items()]
    out = list(single_run_measurements("hpcc", rows, params, details))
    if in_cache is not None:
        # A parameter, not only a detail: an in-cache STREAM figure never pairs with a memory
        # one in `compare`, and the report's tables show the column.
        stream_in = "cache" if in_cache else "memory"
        out = [
            replace(m, parameters={**m.parameters, "stream_in": stream_in})
            if m.metric.startswith("stream_")
            else m
            for m in out
        ]
    return tuple(out)


@register
class Hpcc(Benchmark[HpccOptions]):
    name = "hpcc"
    description = "HPC Challenge: HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT, b_eff"
    points_per_execution = 1
    Options = HpccOptions
    tools = (HPCC,)

    def cases(self, options: HpccOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        node_memory = memory_per_node(platform)
        hpcc = shutil.which("hpcc")
        blas = _blas_of(hpcc) if hpcc else ""
        workdir = (
            Path(options.workdir).expanduser() if options.workdir else cache_root() / "hpcc-runs"
        )
        # The node's last-level cache from the provenance probes (this machine's: right for
        # local and namespace clusters), to flag STREAM arrays that fit in it.
        found = last_level_cache(SystemHost())
        llc = found[0] if found else None
        cases = []
        for ranks in options.ranks:
            for placement in rank_placements(
                ranks, 1, options.ranks_per_node, options.binding, platform
            ):
                if options.n is not None:
                    n = options.n
                elif node_memory is None:
                    raise UserError(
                        f"platform {platform.name!r} does not say its memory: set "
                        "memory_gb_per_node in the platform, or n in the suite"
                    )
                else:
                    n = problem_size(
                        options.memory_fraction, placement.nodes, node_memory, options.nb
                    )
                if node_memory is not None:
                    need = BYTES_PER_ELEMENT * n * n // placement.nodes
                    if need > 0.9 * node_memory:
                        raise UserError(
                            f"hpcc N={n} needs {need / 1e9:.1f} GB per node for HPL's matrix, "
                            f"the node has {node_memory / 1e9:.1f} GB"
                        )
                p, q = process_grid(ranks)
                estimate = 2.0 + SECONDS_AT_N1000 * (n / 1000) ** 3
                params: dict[str, ParamValue] = {"n": n, "nb": options.nb, "p": p, "q": q}
                key_parts = [f"N={n}", f"NB={options.nb}", f"np={ranks}"]
                cases.append(repeated_case(
                    self.name, key_parts, placement, params,
                    repeat=options.repeat, run_estimate_s=estimate,
                    explicit_limit_s=options.time_limit_s,
                    options={"workdir": str(workdir), "blas": blas, "llc_bytes": llc},
                    limit_floor_s=300.0, limit_factor=5,
                ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        # Nothing to compile: Debian's hpcc, found on PATH when a run starts.
        return Program(path=Path("hpcc"), compiler="", cflags=())

    @contextlib.contextmanager
    def _rundir(self, case: Case) -> Iterator[Case]:
        root = Path(str(case.options["workdir"]))
        try:
            root.mkdir(parents=True, exist_ok=True)
            rundir = make_scratch(root, WORKDIR_PREFIX)
            text = hpccinf_text(
                case.placement.ranks, int(case.parameters["n"]), int(case.parameters["nb"])
            )
            (rundir / INPUT_FILE).write_text(text)
        except OSError as e:
            raise BenchmarkFailure(f"cannot prepare hpcc's directory in {root}: {e}") from None
        try:
            yield replace(case, options={**case.options, "rundir": str(rundir)})
        finally:
            shutil.rmtree(rundir, ignore_errors=True)

    def staged(self, case: Case, points: Sequence[str]) -> contextlib.AbstractContextManager[Case]:
        return self._rundir(case)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        hpcc = require_tool(HPCC)
        # hpcc reads and writes its files in the current directory: each rank starts there.
        return ["env", f"--chdir={case.options['rundir']}", hpcc]

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        # hpcc's report is a file, read once it has exited (`collect`).
        return None

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        report = Path(str(case.options["rundir"])) / OUTPUT_FILE
        try:
            text = report.read_text(errors="replace")
        except OSError as e:
            raise BenchmarkFailure(f"hpcc wrote no {OUTPUT_FILE}: {e.strerror}") from None
        return [ParsedPoint(point, measurements(text, case))]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        # `collect` checked the report: HPL's residual, HPCC's own checks, ranks and N.
        return None

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return verified_figures(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return figure_tables(measurements)
