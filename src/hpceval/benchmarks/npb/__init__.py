"""`npb`: hpceval's own NAS Parallel Benchmarks EP, IS, CG, MG, FT, BT, SP, LU and the
multi-zone BT-MZ, SP-MZ (C + MPI + OpenMP).

The C programs (one per kernel, protocol in docs/npb.md) print one verified result per run.
A case is kernel x class x placement; its points are repetitions ("rep=1", ...), one program
run each. The result is trusted only after its verification passed, cross-checked here
against the official reference values shipped in verification.toml.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from hpceval.benchmarks import records, register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import (
    RankSweepOptions,
    rank_placements,
    repeated_case,
    repetition_key,
    single_run_measurements,
)
from hpceval.benchmarks.npb import multizone
from hpceval.benchmarks.npb.memory import memory_per_rank as memory_per_rank
from hpceval.benchmarks.npb.multizone import MULTI_ZONE, ZONE_SOLVER
from hpceval.benchmarks.npb.tables import best_run, kernel_tables
from hpceval.build import check_smpi_options, compile_program, is_smpi_compiler, smpi_cflags
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, Placement
from hpceval.units import MOPS, SECOND

if TYPE_CHECKING:
    from rich.table import Table

HERE = Path(__file__).parent
KERNELS: tuple[str, ...] = ("ep", "is", "cg", "mg", "ft")
# The pseudo-applications (square rank counts for BT and SP, NPB 3.4's process grids for LU,
# not powers of two): programs like the kernels, same protocol and options ("kernels" in a
# suite names them too).
PSEUDO_APPLICATIONS: tuple[str, ...] = ("bt", "sp", "lu")
# NPB-MZ (multi-zone.py): zones over ranks, OpenMP threads inside each zone.
PROGRAMS: tuple[str, ...] = KERNELS + PSEUDO_APPLICATIONS + MULTI_ZONE
CLASSES: tuple[str, ...] = ("S", "W", "A", "B", "C", "D")
PROTOCOL_VERSION = "1.0"
# -O3 and the host's vector units, as the studies did ("-O3 at least"), OpenMP for hybrid runs.
# -fno-math-errno: math functions without C's errno, as Fortran has none (the reference NPB
# is Fortran: with errno, gcc cannot call glibc's vector exp in FT's loops as gfortran does).
# -ffp-contract=fast, for every program: gfortran contracts a*b + c into a fused
# multiply-add by default (and gcc in its default GNU C mode, as NPB's C IS is built, does
# too); gcc in ISO C mode (-std=c11) does not. One rule for all: the same contraction as the
# official code built with the same compiler (CG's product loop chains FMAs in NPB's cg.f;
# chained as a multiply and an add it cost 0.80x NPB's, docs/npb.md). The official builds
# get the same list (npb_official: for gfortran and GNU C it is their default).
NPB_CFLAGS: tuple[str, ...] = (
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-ffp-contract=fast",
    "-fopenmp",
    "-std=c11",
)
# Rough seconds of one class-S/W/A/B run on one core of a current x86 machine, to weigh
# the progress bar and set a default time limit; generous on purpose.
SECONDS_ESTIMATE = {"S": 0.5, "W": 2.0, "A": 15.0, "B": 90.0, "C": 400.0, "D": 6000.0}
# Programs much longer than a kernel of the same class (BT class A: ~90 s on one core).
ESTIMATE_FACTOR = {"bt": 6.0, "sp": 2.0, "lu": 5.0, "bt-mz": 6.0, "sp-mz": 2.0}  # SP A: ~27 s

# SMPI builds (compiler smpicc, see SMPI.md): the build options that trade the numerical
# result for simulation speed (sampling) and memory (folding), passed in cflags.
SMPI_SAMPLE_FLAG = "-DHPCEVAL_SMPI_SAMPLE"
SMPI_FOLD_FLAG = "-DHPCEVAL_SMPI_FOLD"
# Case option naming the approximations of the SMPI build a case runs: a mapping
# {"sampling": bool, "memory_folding": bool, "iterations": int | None}. Only with it may a
# result be "not checked". "iterations" (CG, SMPI builds only): the program times that many
# of the class's identical outer iterations and extrapolates (`--iterations K`).
ITERATION_SAMPLING_KERNELS = frozenset({"cg"})
SMPI_BUILD_OPTION = "smpi_build"

Kernel = Literal["ep", "is", "cg", "mg", "ft", "bt", "sp", "lu", "bt-mz", "sp-mz"]
ClassName = Literal["S", "W", "A", "B", "C", "D"]


@cache
def reference() -> Mapping[str, Any]:
    """The official NPB 3.4 class sizes and verification values."""
    with (HERE / "verification.toml").open("rb") as f:
        return tomllib.load(f)


def problem_size(kernel: str, class_name: str) -> list[float]:
    ref = reference()[kernel]
    if kernel == "ep":
        return [float(ref["m"][class_name])]
    return [float(v) for v in ref["size"][class_name]]


def rank_rule_error(kernel: str, class_name: str, ranks: int) -> str | None:
    """Why `ranks` cannot run this kernel and class (None if it can), as the programs check."""
    if ranks < 1:
        return f"{ranks} is not a valid rank count"
    if kernel in MULTI_ZONE:
        return multizone.rank_rule_error(
            kernel, class_name, multizone.mesh(reference(), kernel, class_name), ranks
        )
    if kernel in ("bt", "sp"):
        # NPB's multi-partition: p^2 ranks own p^3 cells of at least 3 points per axis.
        cells = math.isqrt(ranks)
        if cells * cells != ranks:
            return f"{kernel} needs a square number of ranks (1, 4, 9, 16, ...), got {ranks}"
        n = int(problem_size(kernel, class_name)[0])
        if n // cells < 3:
            return f"{kernel} class {class_name} runs on at most {(n // 3) ** 2} ranks, got {ranks}"
        return None
    if kernel == "lu":
        grid = lu_process_grid(ranks)
        if grid is None:
            return (
                f"lu cannot run on {ranks} ranks: NPB 3.4 LU needs a count that splits into "
                "its px x py process grid (1, 2, 4, 6, 8, 9, 12, 16, ...)"
            )
        n = int(problem_size("lu", class_name)[0])
        if n // grid[0] < 3:
            return (
                f"lu class {class_name} ({n} points per axis) on {ranks} ranks "
                f"({grid[0]} x {grid[1]}) leaves a rank fewer than 3 points per axis"
            )
        return None
    if kernel == "ep":
        # EP deals out batches of 2^16 pairs: no more ranks than batches.
        batches = 2 ** (int(problem_size("ep", class_name)[0]) - 16)
        if ranks > batches:
            return (
                f"ep class {class_name} has {batches} batches of 2^16 pairs: needs at most "
                f"{batches} ranks, got {ranks}"
            )
        return None
    if ranks & (ranks - 1):
        return f"{kernel} needs a power-of-two number of ranks, got {ranks}"
    size = problem_size(kernel, class_name)
    if kernel == "ft":
        ny, nz = int(size[1]), int(size[2])
        if ranks > min(ny, nz):
            return f"ft class {class_name} runs on at most {min(ny, nz)} ranks, got {ranks}"
    if kernel == "is":
        buckets = 2 ** int(size[2])
        if ranks > buckets:
            return f"is class {class_name} runs on at most {buckets} ranks, got {ranks}"
        if class_name == "D" and ranks < 2:
            # 2^31 keys: per-rank counts must fit a C int.
            return "is class D needs at least 2 ranks"
    if kernel == "mg":
        n = int(size[0])
        if ranks > n**3 // 8:
            return f"mg class {class_name} runs on at most {n**3 // 8} ranks, got {ranks}"
    return None


def lu_process_grid(ranks: int) -> tuple[int, int] | None:
    """NPB 3.4 LU's px x py process grid for `ranks` (proc_grid.f), None where it has none."""
    # isqrt2: x = sqrt(ranks) for a square, else the first x above sqrt(ranks) dividing it
    # with x <= 2 * ranks / x; proc_grid then takes the grid with y <= sqrt(ranks) closest
    # to square and refuses it if it is narrower than that.
    x = math.isqrt(ranks)
    if x * x != ranks:
        x += 1
        y = ranks // x
        while x * y != ranks and 2 * y >= x:
            x += 1
            y = ranks // x
        if x * y != ranks or 2 * y < x:
            return None
    x0, y0 = x, ranks // x
    y = math.isqrt(ranks)
    x = ranks // y
    while y >= y0 and x * y != ranks:
        y -= 1
        x = ranks // y
    if x < x0 or y < y0 or x * y != ranks:
        return None
    return x, y


def available_memory_per_node(platform: PlatformConfig) -> int | None:
    """Bytes a node offers: the platform's figure, else this machine's available memory."""
    if platform.memory_gb_per_node is not None:
        return int(platform.memory_gb_per_node * 1e9)
    if platform.launcher.kind != "local":
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def mops_formula(kernel: str, class_name: str, seconds: float) -> float:
    """The official operation count over time (NPB's Mop/s), for cross-checking the program."""
    if kernel in MULTI_ZONE:
        return multizone.mops(kernel, multizone.mesh(reference(), kernel, class_name), seconds)
    size = problem_size(kernel, class_name)
    if kernel == "ep":
        return 2 ** (size[0] + 1) / seconds / 1e6
    if kernel == "is":
        iterations = int(reference()["is"]["iterations"])
        return iterations * 2 ** size[0] / seconds / 1e6
    if kernel == "cg":
        na, nz, niter = size[0], size[1], size[2]
        ops = 2 * niter * na * (3 + nz * (nz + 1) + 25 * (5 + nz * (nz + 1)) + 3)
        return 1e-6 * ops / seconds
    if kernel == "mg":
        n, nit = size[0], size[1]
        return 58e-6 * nit * n**3 / seconds
    if kernel == "ft":
        n = size[0] * size[1] * size[2]
        niter = size[3]
        ln = math.log(n)
        return 1e-6 * n * (14.8157 + 7.19641 * ln + (5.23518 + 7.21113 * ln) * niter) / seconds
    if kernel == "bt":
        n, niter = size[0], size[1]
        return 1e-6 * niter * (3478.8 * n**3 - 17655.7 * n**2 + 28023.7 * n) / seconds
    if kernel == "sp":
        n, niter = size[0], size[1]
        return 1e-6 * niter * (881.174 * n**3 - 4683.91 * n**2 + 11484.5 * n - 19272.4) / seconds
    if kernel == "lu":
        n, itmax = size[0], size[1]
        return 1e-6 * itmax * (1984.77 * n**3 - 10923.3 * n**2 + 27770.9 * n - 144010.0) / seconds
    raise ValueError(kernel)


def compile_npb_program(
    kernel: str,
    *,
    compiler: str,
    compiler_identity: str,
    cflags: Sequence[str],
    cache: Path | None = None,
) -> Path:
    """The cached executable of one program (`kernel`.c with npb_common.c), built if needed.

    A multi-zone program (bt-mz: bt_mz.c) compiles its single-zone solver's C file in and
    adds the zone mesh, npb_mz.c."""
    sources = [HERE / f"{kernel.replace('-', '_')}.c", HERE / "npb_common.c"]
    depends = [HERE / "npb_common.h"]
    if kernel in MULTI_ZONE:
        sources.append(HERE / "npb_mz.c")
        depends += [HERE / "npb_mz.h", HERE / f"{ZONE_SOLVER[kernel]}.c"]
    return compile_program(
        f"npb-{kernel}",
        sources,
        depends=depends,
        compiler=compiler,
        compiler_identity=compiler_identity,
        cflags=[*cflags, f"-I{HERE}"],
        ldflags=["-lm"],
        cache=cache,
    )


class NpbOptions(RankSweepOptions):
    kernels: list[Kernel] = Field(min_length=1)
    classes: list[ClassName] = Field(default_factory=lambda: list[ClassName](["S"]), min_length=1)

    @model_validator(mode="after")
    def _check(self) -> NpbOptions:
        for kernel in self.kernels:
            for class_name in self.classes:
                for r in self.ranks:
                    if why := rank_rule_error(kernel, class_name, r):
                        raise ValueError(f"ranks: {why}")
        for t in self.threads_per_rank:
            if t < 1:
                raise ValueError(f"threads_per_rank: {t} is not a valid thread count")
        return self


# One run per point: the points are repetitions "rep=1", "rep=2", ...
point_key = repetition_key


def placements(
    options: NpbOptions, ranks: int, threads: int, platform: PlatformConfig
) -> list[Placement]:
    # The same placement rules as the communication benchmarks.
    return rank_placements(ranks, threads, options.ranks_per_node, options.binding, platform)


@register
class Npb(Benchmark[NpbOptions]):
    name = "npb"
    description = "NAS Parallel Benchmarks EP, IS, CG, MG, FT, BT, SP and LU (NPB 3.x definitions)"
    points_per_execution = 1
    Options = NpbOptions

    def cases(self, options: NpbOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        available = available_memory_per_node(platform)
        cases = []
        for kernel in options.kernels:
            for class_name in options.classes:
                for ranks in options.ranks:
                    for threads in options.threads_per_rank:
                        for placement in placements(options, ranks, threads, platform):
                            need = (
                                memory_per_rank(kernel, class_name, ranks)
                                * placement.ranks_per_node
                            )
                            if available is not None and need > available:
                                raise UserError(
                                    f"{kernel} class {class_name} on {ranks} ranks needs about "
                                    f"{need / 1e9:.1f} GB per node, the node has "
                                    f"{available / 1e9:.1f} GB available"
                                )
                            estimate = (
                                SECONDS_ESTIMATE[class_name]
                                * ESTIMATE_FACTOR.get(kernel, 1.0)
                                * 2
                                / max(1, ranks)
                            )
                            params: dict[str, ParamValue] = {"kernel": kernel, "class": class_name}
                            key_parts = [kernel, class_name, f"np={ranks}"]
                            memory = memory_per_rank(kernel, class_name, ranks)
                            cases.append(repeated_case(
                                self.name, key_parts, placement, params,
                                repeat=options.repeat, run_estimate_s=estimate,
                                explicit_limit_s=options.time_limit_s,
                                options={"memory_per_rank_bytes": memory},
                            ))  # fmt: skip
        return cases

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        check_smpi_options(compiler, cflags)
        # The kernels are compute benchmarks: they get NPB_CFLAGS, not the platform's -O2.
        flags: tuple[str, ...] = (*NPB_CFLAGS, *(f for f in cflags if not f.startswith("-O")))
        if is_smpi_compiler(compiler):
            # SMPI: one simulated process per rank, no OpenMP threads (SMPI.md).
            flags = smpi_cflags(flags)
        # Ten programs (the MZ ones compile their solver's file in): one compiler per core.
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            built = pool.map(
                lambda kernel: compile_npb_program(
                    kernel, compiler=compiler, compiler_identity=compiler_identity, cflags=flags
                ),
                PROGRAMS,
            )
            executables = dict(zip(PROGRAMS, built, strict=True))
        return Program(executables["ep"].parent, compiler, flags, executables)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        kernel = str(case.parameters["kernel"])
        argv = [str(program.executables[kernel]), "--class", str(case.parameters["class"])]
        build = case.options.get(SMPI_BUILD_OPTION)
        if isinstance(build, Mapping) and build.get("iterations"):
            argv += ["--iterations", str(int(build["iterations"]))]
        return argv

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        record = decode_record(line)
        if record is None:
            return None
        kind = record.get("record")
        if kind == "error":
            raise BenchmarkFailure(f"npb-{case.parameters['kernel']}: {record.get('message')}")
        if kind == "header":
            self.check_header(record, case)
            return None
        if kind != "result":
            return None
        return self.result(record, case)

    def check_header(self, record: Mapping[str, Any], case: Case) -> None:
        check_header(record, case)

    def result(self, record: Mapping[str, Any], case: Case) -> ParsedPoint:
        """The measurements of a result record (verified, cross-checked)."""
        return result_measurements(record, case)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        records = [r for r in map(decode_record, stdout.splitlines()) if r is not None]
        for r in records:
            if r.get("record") == "error":
                raise BenchmarkFailure(f"npb-{case.parameters['kernel']}: {r.get('message')}")
        results = [r for r in records if r.get("record") == "result"]
        if len(results) != 1:
            raise BenchmarkFailure(f"expected one result record, got {len(results)}")
        checked = check_verification(results[0], case)
        # A result not checked (SMPI sampling/folding) ends "not_checked", never "ok".
        expected = "ok" if checked else "not_checked"
        ends = [r for r in records if r.get("record") == "end"]
        if not ends or ends[-1].get("status") != expected:
            raise BenchmarkFailure("the kernel's output has no successful end record")

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return best_run(measurements)

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return kernel_tables(measurements, PROGRAMS)


def decode_record(line: str) -> dict[str, Any] | None:
    return records.decode_record(line, "npb")


def check_header(record: Mapping[str, Any], case: Case) -> None:
    records.check_program_header(record, "npb", PROTOCOL_VERSION, case.placement)
    for field, expected in (
        ("kernel", case.parameters["kernel"]),
        ("class", case.parameters["class"]),
        ("threads", case.placement.threads_per_rank),
    ):
        if record.get(field) != expected:
            raise BenchmarkFailure(
                f"npb header says {field} {record.get(field)!r}, expected {expected!r}"
            )


def official_references(kernel: str, class_name: str) -> dict[str, tuple[float, float]]:
    """quantity name -> (reference, tolerance) from the official values, for cross-checking."""
    ref = reference()[kernel]
    out: dict[str, tuple[float, float]] = {}
    if kernel == "cg":
        out["zeta"] = (ref["zeta"][class_name], ref["tolerance"])
    elif kernel == "mg":
        out["rnm2"] = (ref["rnm2"][class_name], ref["tolerance"])
    elif kernel == "ep":
        out["sx"] = (ref["sx"][class_name], ref["tolerance"])
        out["sy"] = (ref["sy"][class_name], ref["tolerance"])
    elif kernel == "ft":
        for i, (re_, im) in enumerate(ref["checksums"][class_name]):
            out[f"checksum[{i + 1}].real"] = (re_, ref["tolerance"])
            out[f"checksum[{i + 1}].imag"] = (im, ref["tolerance"])
    elif kernel in ("bt", "sp", "lu", *MULTI_ZONE):
        for quantity in ("xcr", "xce"):
            for m, value in enumerate(ref[quantity][class_name], start=1):
                out[f"{quantity}{m}"] = (value, ref["tolerance"])
        if kernel == "lu":
            out["xci"] = (ref["xci"][class_name], ref["tolerance"])
    return out


def verification_table(record: Mapping[str, Any]) -> str:
    rows = record.get("verification") or []
    return "; ".join(
        f"{q.get('quantity')}: computed {q.get('computed')!r}, reference {q.get('reference')!r}"
        for q in rows
        if not q.get("passed")
    )


def smpi_build_flags(*, sampling: bool, folding: bool) -> list[str]:
    """The cflags selecting computation sampling and memory folding in an smpicc build."""
    return [f for f, on in ((SMPI_SAMPLE_FLAG, sampling), (SMPI_FOLD_FLAG, folding)) if on]


def not_checked_reason(record: Mapping[str, Any], case: Case) -> str:
    """Why a result was not verified, if its case allows it; else BenchmarkFailure.

    Only an SMPI build with sampling or folding skips verification (its quantities are
    garbage), and only a case that declares that build (option SMPI_BUILD_OPTION) accepts
    it: a native or plain SMPI program saying "not checked" is a failure.
    """
    kernel, class_name = str(case.parameters["kernel"]), str(case.parameters["class"])
    build = case.options.get(SMPI_BUILD_OPTION)
    smpi = record.get("smpi")
    if not isinstance(build, Mapping) or not isinstance(smpi, Mapping):
        raise BenchmarkFailure(
            f"{kernel} class {class_name}: verification not checked, but the case is not an "
            "SMPI sampled or folded build"
        )
    sampled = smpi.get("sampled") is True
    folded = isinstance(smpi.get("folded_bytes"), int | float) and smpi["folded_bytes"] > 0
    official = record.get("iterations")
    run = smpi.get("iterations_run", official)
    truncated = isinstance(run, int) and isinstance(official, int) and run < official
    if record.get("verified") is not None or not (sampled or folded or truncated):
        raise BenchmarkFailure(
            f"{kernel} class {class_name}: inconsistent not-checked result (verified "
            f"{record.get('verified')!r}, sampled {sampled}, folded {folded}, iterations "
            f"{run!r} of {official!r})"
        )
    if (
        (sampled and not build.get("sampling"))
        or (folded and not build.get("memory_folding"))
        or (truncated and build.get("iterations") != run)
    ):
        raise BenchmarkFailure(
            f"{kernel} class {class_name}: the program sampled={sampled} folded={folded} "
            f"timed {run!r} of {official!r} iterations, but the case's build is {dict(build)!r}"
        )
    reasons = [r for r, on in (("computation sampling", sampled), ("memory folding", folded)) if on]
    if truncated:
        reasons.append(f"iteration sampling ({run} of {official})")
    return " and ".join(reasons)


def _quantity(row: Mapping[str, Any], key: str, name: str) -> float:
    """A number of a verification row (BenchmarkFailure if it is missing or not a number)."""
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BenchmarkFailure(f"verification of {name}: {key} is {value!r}, not a number")
    return float(value)


def check_verification(record: Mapping[str, Any], case: Case) -> bool:
    """The program's verdict, and its reference values against the official ones.

    Returns True when verified, False for a result accepted as not checked (SMPI sampled or
    folded build, see not_checked_reason); raises BenchmarkFailure otherwise.
    """
    kernel, class_name = str(case.parameters["kernel"]), str(case.parameters["class"])
    if record.get("verification_status") == "not_checked":
        not_checked_reason(record, case)
        return False
    rows = {str(q.get("quantity")): q for q in record.get("verification") or []}
    if not record.get("verified"):
        detail = verification_table(record) or str(record.get("note") or "no detail")
        raise BenchmarkFailure(f"{kernel} class {class_name} failed verification: {detail}")
    for name, (ref, tol) in official_references(kernel, class_name).items():
        q = rows.get(name)
        if q is None:
            raise BenchmarkFailure(f"{kernel} class {class_name}: quantity {name} was not verified")
        if not math.isclose(_quantity(q, "reference", name), ref, rel_tol=1e-13):
            raise BenchmarkFailure(
                f"{kernel} class {class_name}: the program's reference for {name} "
                f"({q['reference']!r}) is not the official {ref!r}"
            )
        computed = _quantity(q, "computed", name)
        if not (math.isfinite(computed) and abs(computed - ref) <= tol * abs(ref)):
            raise BenchmarkFailure(
                f"{kernel} class {class_name} failed verification: {name}: computed "
                f"{computed!r}, reference {ref!r}"
            )
    return True


def result_measurements(record: Mapping[str, Any], case: Case) -> ParsedPoint:
    checked = check_verification(record, case)
    kernel, class_name = str(case.parameters["kernel"]), str(case.parameters["class"])
    try:
        seconds = float(record["time_s"])
        mops = float(record["mops_total"])
    except (KeyError, TypeError, ValueError):
        raise BenchmarkFailure("result record without time_s and mops_total") from None
    if not (math.isfinite(seconds) and seconds > 0 and math.isfinite(mops) and mops > 0):
        raise BenchmarkFailure(f"nonsense timing: time {seconds!r} s, {mops!r} Mop/s")
    expected = mops_formula(kernel, class_name, seconds)
    if not math.isclose(mops, expected, rel_tol=1e-6):
        raise BenchmarkFailure(
            f"{kernel} class {class_name}: {mops:.6g} Mop/s does not follow the official "
            f"operation count ({expected:.6g} Mop/s for {seconds:.6g} s)"
        )
    params: dict[str, ParamValue] = {**case.parameters, **case.placement.as_parameters()}
    details: dict[str, Any] = {
        "iterations": record.get("iterations"),
        "verification": record.get("verification"),
    }
    if not checked:
        details["verification"] = f"not checked ({not_checked_reason(record, case)})"
    if isinstance(record.get("smpi"), Mapping):
        details["smpi"] = dict(record["smpi"])
    (point,) = case.points
    per_process = mops / case.placement.ranks
    rows = (
        ("time", seconds, SECOND),
        ("mops_total", mops, MOPS),
        ("mops_per_process", per_process, MOPS),
    )
    return ParsedPoint(point, single_run_measurements("npb", rows, params, details))
