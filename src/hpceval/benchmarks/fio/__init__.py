"""`fio`: storage bandwidth, IOPS and completion latency of a directory (CSC's method).

Four workloads, each one fio run (a point): sequential read and write with 4 MiB blocks,
random read and write with 4 KiB blocks. Every run reports bandwidth (MiB/s), IOPS and the
completion-latency mean and percentiles p50/p95/p99 (µs), read from fio's JSON report.

fio is not an MPI program; it runs as ONE process on the platform's FIRST node, started
through the platform's launcher like everything else (`mpirun -np 1 --bind-to none fio`,
`srun` inside a one-node job...), so it sees the node's file systems and environment as the
benchmarks do. `numjobs` fio processes share that node. To measure another node's local
disk, use a platform file naming that node. The directory checks (writable, free space,
O_DIRECT) run where hpceval runs: for a one-node platform that is the node itself, for a
cluster the directory should be on a file system shared at the same path (NFS, Lustre).

Each execution writes its files in a fresh `hpceval-fio-*` directory inside the target
directory, removed afterwards on every exit path (fio's `unlink=1` removes the job files
too). Direct I/O (`direct=1`, libaio) is used where the file system accepts O_DIRECT;
elsewhere (`direct = "auto"`) fio falls back to buffered `psync`, and the measurements say
so: `direct = false`, `ioengine = "psync"`, `io_fallback` = why.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import Field, field_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program, Tool
from hpceval.benchmarks.common import require_tool, single_run_measurements
from hpceval.benchmarks.fio.parse import FioFigures, parse_fio_json
from hpceval.benchmarks.fio.tables import configuration_tables, workload_rates
from hpceval.config import Argument, PlatformConfig, StrictModel, parse_size
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Measurement, ParamValue, Placement
from hpceval.scratch import make_scratch
from hpceval.units import MEBIBYTE_PER_SECOND, MICROSECOND, format_bytes

if TYPE_CHECKING:
    from rich.table import Table

IOPS: Final = "IOPS"  # declared in benchmark.toml

Workload = Literal["seqread", "seqwrite", "randread", "randwrite"]
# workload -> (fio rw, block size in bytes, direction in fio's report)
WORKLOADS: Mapping[str, tuple[str, int, str]] = {
    "seqwrite": ("write", 4 * 2**20, "write"),
    "seqread": ("read", 4 * 2**20, "read"),
    "randwrite": ("randwrite", 4 * 2**10, "write"),
    "randread": ("randread", 4 * 2**10, "read"),
}
FIO = Tool(
    "fio",
    package="fio",
    needed_for="the fio storage benchmark (sequential MiB/s, random IOPS and latency); "
    "without it its cases are skipped",
    package_words="fio, the flexible I/O tester",
)
REPORT_FILE = "fio.json"
SCRATCH_PREFIX = "hpceval-fio-"
# Where test files go when no directory is named: /var/tmp is on disk on Debian (unlike
# /tmp, which may be tmpfs), and is local to the node (unlike a home directory on NFS).
DEFAULT_DIRECTORY = Path("/var/tmp")
# Slowest write speed assumed when sizing the default time limit (laying out files).
SLOW_WRITE_BYTES_S = 50e6


@dataclass(frozen=True)
class Preset:
    size: int  # bytes per job (one file each)
    numjobs: int
    iodepth: int
    runtime_s: int
    time_based: bool  # keep going over the file until runtime_s (else stop at size or runtime)


PRESETS: Mapping[str, Preset] = {
    # About a minute for the four workloads on a 2-core VM with an SSD-backed disk: each run
    # lasts runtime_s plus laying out 2 x 256 MiB (measured here: 4 x ~13 s).
    "default": Preset(size=256 * 2**20, numjobs=2, iodepth=16, runtime_s=12, time_based=True),
    # CSC 2016: --ioengine=libaio --iodepth=16 --direct=1 --size=80G --numjobs=8
    # --runtime=240 --group_reporting (fio's 80G is 80 GiB).
    "csc-2016": Preset(size=80 * 2**30, numjobs=8, iodepth=16, runtime_s=240, time_based=False),
}


class FioOptions(StrictModel):
    directory: Argument | None = None  # default: /var/tmp
    preset: Literal["default", "csc-2016"] = "default"
    workloads: list[Workload] = Field(
        default_factory=lambda: list[Workload](["seqwrite", "seqread", "randwrite", "randread"]),
        min_length=1,
    )
    # Each overrides the preset's value.
    size: int | str | None = None  # per job: bytes, or "256MiB", "1GiB"
    numjobs: int | None = Field(None, ge=1, le=256)
    iodepth: int | None = Field(None, ge=1, le=4096)
    runtime_s: int | None = Field(None, ge=1)
    time_based: bool | None = None
    direct: bool | Literal["auto"] = "auto"
    repeat: int = Field(1, ge=1, le=100)
    time_limit_s: float | None = Field(None, gt=0)

    @field_validator("size")
    @classmethod
    def _size(cls, v: int | str | None) -> int | str | None:
        if v is not None and parse_size(v) < 4 * 2**20:
            raise ValueError(f"{v!r} is smaller than one 4 MiB block")
        return v

    @field_validator("directory")
    @classmethod
    def _one_directory(cls, v: str | None) -> str | None:
        # fio reads "a:b" as two directories (its --directory separator).
        if v is not None and ":" in v:
            raise ValueError(f"{v!r}: fio reads ':' as a separator of directories")
        return v

    @field_validator("workloads")
    @classmethod
    def _unique(cls, v: list[Workload]) -> list[Workload]:
        if len(set(v)) != len(v):
            raise ValueError("a workload is listed twice")
        return v


@dataclass(frozen=True)
class Settings:
    """The fio parameters of one suite entry once the preset, options and probe are applied."""

    preset: str
    size: int
    numjobs: int
    iodepth: int
    runtime_s: int
    time_based: bool
    direct: bool
    ioengine: str
    io_fallback: str  # why direct I/O is not used ("" when it is)

    @property
    def needed_bytes(self) -> int:
        """Disk space one workload's files take (they are removed after each run)."""
        return self.size * self.numjobs


def compact_size(n: int) -> str:
    """`256MiB`, `80GiB`, or bytes: for case keys and labels."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def filesystem_type(path: Path, mounts_text: str | None = None) -> str:
    """The type of the file system holding `path` (longest mount point of /proc/mounts)."""
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/mounts").read_text()
        except OSError:
            return "unknown"
    target = str(path.resolve())
    best, kind = "", "unknown"
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        # /proc/mounts escapes blanks in paths as octal (\040).
        point = fields[1].encode().decode("unicode_escape")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def check_directory(directory: Path, needed: int) -> None:
    """Refuse a directory that does not exist, cannot be written or lacks the space."""
    if not directory.is_dir():
        raise UserError(f"fio directory {directory} does not exist or is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=SCRATCH_PREFIX, dir=directory)
    except OSError as e:
        raise UserError(f"fio directory {directory} is not writable: {e.strerror}") from None
    os.close(fd)
    os.unlink(probe)
    free = shutil.disk_usage(directory).free
    if needed > free:
        raise UserError(
            f"fio directory {directory} is too small: needs {format_bytes(needed)} "
            f"(size × numjobs), {format_bytes(free)} free"
        )


def direct_io_refusal(directory: Path) -> str | None:
    """Why the file system of `directory` refuses O_DIRECT writes (None if it accepts them).

    Opens a new file with O_DIRECT and writes one aligned 4 KiB block, as fio would.
    """
    if not hasattr(os, "O_DIRECT"):
        return "this OS has no O_DIRECT"
    fd, probe = tempfile.mkstemp(prefix=SCRATCH_PREFIX, dir=directory)
    os.close(fd)
    try:
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_DIRECT)
        except OSError as e:
            return f"O_DIRECT open refused by the {filesystem_type(directory)} file system: " + (
                e.strerror or errno.errorcode.get(e.errno or 0, "error")
            )
        try:
            block = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT requires
            block.write(b"\0" * 4096)
            os.write(fd, block)
        except OSError as e:
            return f"O_DIRECT write refused by the {filesystem_type(directory)} file system: " + (
                e.strerror or "error"
            )
        finally:
            os.close(fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return None


def resolve_settings(opts: FioOptions, directory: Path) -> Settings:
    preset = PRESETS[opts.preset]
    direct, ioengine, fallback = True, "libaio", ""
    iodepth = opts.iodepth or preset.iodepth
    if opts.direct is False:
        direct, fallback = False, "direct = false in the suite"
    else:
        refusal = direct_io_refusal(directory)
        if refusal is not None:
            if opts.direct is True:
                raise UserError(f"fio directory {directory}: direct = true, but {refusal}")
            direct, fallback = False, refusal
    if not direct:
        # Buffered I/O through libaio blocks on submission anyway: use the plain engine
        # and say so, rather than report a queue depth that did not exist.
        ioengine, iodepth = "psync", 1
    return Settings(
        preset=opts.preset,
        size=parse_size(opts.size) if opts.size is not None else preset.size,
        numjobs=opts.numjobs or preset.numjobs,
        iodepth=iodepth,
        runtime_s=opts.runtime_s or preset.runtime_s,
        time_based=preset.time_based if opts.time_based is None else opts.time_based,
        direct=direct,
        ioengine=ioengine,
        io_fallback=fallback,
    )


def point_key(workload: str, rep: int) -> str:
    return f"{workload}:rep={rep}"


def workload_of(point: str) -> str:
    workload = point.split(":", 1)[0]
    if workload not in WORKLOADS:
        raise BenchmarkFailure(f"fio: unknown workload in point {point!r}")
    return workload


def fio_argv(fio: str, workload: str, settings: Mapping[str, Any], scratch: Path) -> list[str]:
    """fio's command line for one workload run in `scratch` (report in scratch/fio.json)."""
    rw, block, _ = WORKLOADS[workload]
    argv = [
        fio,
        f"--name={workload}",
        f"--directory={scratch}",
        f"--rw={rw}",
        f"--bs={block}",
        f"--size={settings['size']}",
        f"--numjobs={settings['numjobs']}",
        f"--ioengine={settings['ioengine']}",
        f"--iodepth={settings['iodepth']}",
        f"--direct={1 if settings['direct'] else 0}",
        f"--runtime={settings['runtime_s']}s",
    ]
    if settings["time_based"]:
        argv.append("--time_based")
    if not settings["direct"] and rw.endswith("write"):
        # Buffered writes would otherwise be measured at memory speed: include the flush.
        argv.append("--end_fsync=1")
    argv += [
        "--group_reporting",
        "--unlink=1",
        "--eta=never",
        "--output-format=json",
        f"--output={scratch / REPORT_FILE}",
    ]
    return argv


def measurements(figures: FioFigures, case: Case, workload: str) -> tuple[Measurement, ...]:
    rw, block, _ = WORKLOADS[workload]
    params: dict[str, ParamValue] = {
        **case.parameters,
        "workload": workload,
        "rw": rw,
        "block_size": block,
    }
    details = {
        **figures.details,
        "directory": str(case.options.get("directory", "")),
        "filesystem": str(case.options.get("filesystem", "")),
        "fio_version": figures.fio_version,
        "io_bytes": figures.io_bytes,
        "total_ios": figures.total_ios,
        "runtime_ms": figures.runtime_ms,
    }
    rows: list[tuple[str, float, str]] = [
        ("bandwidth", figures.bandwidth_mib_s, MEBIBYTE_PER_SECOND),
        ("iops", figures.iops, IOPS),
        ("clat_mean", figures.clat_mean_us, MICROSECOND),
        *((f"clat_{p}", v, MICROSECOND) for p, v in figures.clat_percentiles_us.items()),
    ]
    return single_run_measurements("fio", rows, params, details)


@register
class Fio(Benchmark[FioOptions]):
    name = "fio"
    description = "Storage: sequential 4 MiB and random 4 KiB read/write (fio, CSC's method)"
    points_per_execution = 1
    Options = FioOptions
    tools = (FIO,)

    def cases(self, options: FioOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        directory = Path(options.directory or DEFAULT_DIRECTORY).expanduser().absolute()
        preset = PRESETS[options.preset]
        size = parse_size(options.size) if options.size is not None else preset.size
        check_directory(directory, size * (options.numjobs or preset.numjobs))
        settings = resolve_settings(options, directory)
        params: dict[str, ParamValue] = {
            "preset": settings.preset,
            "size": settings.size,
            "numjobs": settings.numjobs,
            "iodepth": settings.iodepth,
            "ioengine": settings.ioengine,
            "direct": settings.direct,
            "runtime_s": settings.runtime_s,
            "time_based": settings.time_based,
            "io_fallback": settings.io_fallback,
        }
        # One fio process tree on the first node; its jobs are processes, not ranks.
        placement = Placement(nodes=1, ranks_per_node=1, threads_per_rank=1, binding="none")
        per_run = settings.runtime_s + settings.needed_bytes / 1e9
        limit = options.time_limit_s or (
            max(60.0, 2 * settings.runtime_s + settings.needed_bytes / SLOW_WRITE_BYTES_S + 30)
        )
        points = tuple(
            point_key(w, rep) for rep in range(1, options.repeat + 1) for w in options.workloads
        )
        key = ":".join(
            [
                self.name,
                str(directory),
                settings.preset,
                f"size={compact_size(settings.size)}x{settings.numjobs}",
                f"depth={settings.iodepth}",
                "direct" if settings.direct else "buffered",
            ]
        )
        return [
            Case(
                key=key,
                benchmark=self.name,
                placement=placement,
                parameters=params,
                points=points,
                time_limit_s=limit,
                options={"directory": str(directory), "filesystem": filesystem_type(directory)},
                estimate_s=per_run * len(points),
            )
        ]

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        # Nothing to compile: Debian's fio, found on PATH when a run starts.
        return Program(path=Path("fio"), compiler="", cflags=())

    @contextlib.contextmanager
    def _scratch(self, case: Case) -> Iterator[Case]:
        directory = Path(str(case.options["directory"]))
        try:
            needed = int(case.parameters["size"]) * int(case.parameters["numjobs"])
            check_directory(directory, needed)
            scratch = make_scratch(directory, SCRATCH_PREFIX)
        except (UserError, OSError) as e:
            raise BenchmarkFailure(str(e)) from None
        try:
            yield replace(case, options={**case.options, "scratch": str(scratch)})
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def staged(self, case: Case, points: Sequence[str]) -> contextlib.AbstractContextManager[Case]:
        return self._scratch(case)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        (point,) = points
        fio = require_tool(FIO)
        scratch = Path(str(case.options["scratch"]))
        return fio_argv(fio, workload_of(point), case.parameters, scratch)

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        # The report is a JSON document in a file, read once fio has exited (`collect`).
        return None

    def collect(self, stdout: str, case: Case, points: Sequence[str]) -> list[ParsedPoint]:
        (point,) = points
        workload = workload_of(point)
        report = Path(str(case.options["scratch"])) / REPORT_FILE
        try:
            text = report.read_text(errors="replace")
        except OSError as e:
            raise BenchmarkFailure(f"fio wrote no report {report}: {e.strerror}") from None
        figures = parse_fio_json(text, WORKLOADS[workload][2])
        return [ParsedPoint(point, measurements(figures, case, workload))]

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        # `collect` checked the report (one job group, no error, I/O in the right direction).
        return None

    def headline(self, measurements: Sequence[Measurement]) -> str:
        return workload_rates(measurements, tuple(WORKLOADS))

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return configuration_tables(measurements, tuple(WORKLOADS))
