"""fio: the JSON parser on real captured reports, planning checks, argv, and real runs."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from hpceval.benchmarks.fio import (
    PRESETS,
    FioOptions,
    check_directory,
    filesystem_type,
    fio_argv,
    resolve_settings,
)
from hpceval.benchmarks.fio.parse import parse_fio_json
from hpceval.campaign import load_platform, load_suite, plan_cases
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, ConfigError, UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import ExecutionStatus, Placement
from hpceval.store import open_store

from .conftest import (
    DATA,
    FIO_TINY_SUITE,
    fake_tool_on_path,
    requires_mpi,
    requires_tool,
    run_planned,
    run_suite,
    write,
)

FIO_DATA = DATA / "fio"
requires_fio = requires_tool("fio")

# (file, direction) -> bw_bytes, iops, clat mean/p50/p95/p99 (ns), io_bytes, runtime (ms),
# copied from each captured report (see tests/data/fio/README.md).
GOLDEN: dict[str, tuple[str, int, float, float, int, int, int, int, int]] = {
    "seqwrite-direct-libaio.json": (
        "write", 3933443761, 937.806072, 33615857.736292, 35389440, 53739520, 71827456,
        8032092160, 2042,
    ),
    "seqread-direct-libaio.json": (
        "read", 3142652997, 749.266862, 42208100.66471, 43778048, 76021760, 95944704,
        6429868032, 2046,
    ),
    "randwrite-direct-libaio.json": (
        "write", 542383272, 132417.791104, 238745.241897, 146432, 296960, 3424256,
        1085308928, 2001,
    ),
    "randread-direct-libaio.json": (
        "read", 1166641260, 284824.526421, 110324.503997, 105984, 152576, 177152,
        2340282368, 2006,
    ),
    "seqwrite-buffered-psync.json": (
        "write", 8232801759, 1962.852897, 797077.355539, 460800, 4358144, 5013504,
        16622026752, 2019,
    ),
    "randread-buffered-psync.json": (
        "read", 257470752, 62859.070465, 31118.234614, 25472, 31104, 37632, 515198976, 2001,
    ),
}  # fmt: skip


# --------------------------------------------------------------------------- parser


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_parses_captured_reports(name: str) -> None:
    direction, bw, iops, mean, p50, p95, p99, io_bytes, runtime = GOLDEN[name]
    figures = parse_fio_json((FIO_DATA / name).read_text(), direction)
    assert figures.fio_version == "fio-3.33"
    assert figures.bandwidth_mib_s == pytest.approx(bw / 2**20, rel=1e-12)
    assert figures.iops == pytest.approx(iops, rel=1e-12)
    assert figures.clat_mean_us == pytest.approx(mean / 1000, rel=1e-12)
    assert figures.clat_percentiles_us == pytest.approx(
        {"p50": p50 / 1000, "p95": p95 / 1000, "p99": p99 / 1000}, rel=1e-12
    )
    assert (figures.io_bytes, figures.runtime_ms) == (io_bytes, runtime)
    # Bandwidth is IOPS times the block size (4 MiB sequential, 4 KiB random).
    block = 4 * 2**20 if name.startswith("seq") else 4096
    assert figures.bandwidth_mib_s * 2**20 == pytest.approx(figures.iops * block, rel=1e-3)
    assert figures.clat_percentiles_us["p50"] <= figures.clat_percentiles_us["p99"]


def test_report_of_the_other_direction_is_refused() -> None:
    text = (FIO_DATA / "seqwrite-direct-libaio.json").read_text()
    with pytest.raises(BenchmarkFailure, match="completed no read I/O"):
        parse_fio_json(text, "read")


def test_broken_reports_are_failures() -> None:
    text = (FIO_DATA / "randread-direct-libaio.json").read_text()
    with pytest.raises(BenchmarkFailure, match="no JSON report"):
        parse_fio_json("fio: engine libaio not loadable\n", "read")
    with pytest.raises(BenchmarkFailure, match="malformed"):
        parse_fio_json(text[: len(text) // 2], "read")
    with pytest.raises(BenchmarkFailure, match="ended with error 5"):
        parse_fio_json(text.replace('"error" : 0', '"error" : 5', 1), "read")
    with pytest.raises(BenchmarkFailure, match="p99"):
        parse_fio_json(text.replace('"99.000000"', '"98.000000"'), "read")
    # fio's notes before the document are tolerated.
    assert parse_fio_json("note: something\n" + text, "read").iops > 0


# --------------------------------------------------------------------------- planning


def test_presets_are_the_studies_parameters() -> None:
    csc = PRESETS["csc-2016"]
    assert (csc.size, csc.numjobs, csc.iodepth, csc.runtime_s, csc.time_based) == (
        80 * 2**30, 8, 16, 240, False
    )  # fmt: skip
    default = PRESETS["default"]
    assert default.iodepth == 16 and default.size * default.numjobs <= 2**30


def _plan(tmp_path: Path, body: str) -> list[Any]:
    suite = load_suite(str(write(tmp_path / "fio.toml", 'name = "s"\n' + body)))
    return plan_cases(suite, load_platform("local").config)


def test_case_of_a_directory(tmp_path: Path) -> None:
    (case,) = _plan(
        tmp_path,
        f'[[benchmark]]\nname = "fio"\ndirectory = "{tmp_path}"\nsize = "8MiB"\nrepeat = 2\n',
    )
    assert case.points == (
        "seqwrite:rep=1", "seqread:rep=1", "randwrite:rep=1", "randread:rep=1",
        "seqwrite:rep=2", "seqread:rep=2", "randwrite:rep=2", "randread:rep=2",
    )  # fmt: skip
    assert case.placement == Placement(1, 1, 1, "none")
    assert case.key.startswith(f"fio:{tmp_path}:default:size=8MiBx2:depth=")
    assert case.parameters["size"] == 8 * 2**20 and case.parameters["numjobs"] == 2
    assert case.options["directory"] == str(tmp_path)
    # ext4 and tmpfs (kernel >= 6.6) take O_DIRECT; elsewhere the fallback is recorded.
    if case.parameters["direct"]:
        assert case.parameters["ioengine"] == "libaio" and case.parameters["io_fallback"] == ""
    else:
        assert case.parameters["ioengine"] == "psync" and case.parameters["io_fallback"]
    assert not list(tmp_path.glob("hpceval-fio-*"))  # the probes left nothing behind


def test_too_small_directory_is_refused_before_the_run(tmp_path: Path) -> None:
    body = f'[[benchmark]]\nname = "fio"\ndirectory = "{tmp_path}"\nsize = "1000000GiB"\n'
    with pytest.raises(ConfigError) as info:
        _plan(tmp_path, body)
    message = str(info.value)
    assert "fio.toml: benchmark[0]: " in message
    assert f"fio directory {tmp_path} is too small: needs 1953.1 TiB (size × numjobs), " in message
    assert "free" in message and "\n" not in message


def test_unwritable_and_missing_directories_are_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        unwritable = Path("/sys")  # even root cannot create files in sysfs
    else:
        unwritable = tmp_path / "ro"
        unwritable.mkdir(mode=0o500)
    with pytest.raises(UserError, match=f"fio directory {unwritable} is not writable: "):
        check_directory(unwritable, 1)
    with pytest.raises(UserError, match="does not exist"):
        check_directory(tmp_path / "nope", 1)


def test_direct_io_fallback_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def no_direct(path: str, flags: int, mode: int = 0o777) -> int:
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", no_direct)
    auto = resolve_settings(FioOptions(), tmp_path)
    assert (auto.direct, auto.ioengine, auto.iodepth) == (False, "psync", 1)
    assert auto.io_fallback.startswith("O_DIRECT open refused by the ")
    assert auto.io_fallback.endswith("file system: Invalid argument")
    with pytest.raises(UserError, match="direct = true, but O_DIRECT open refused"):
        resolve_settings(FioOptions(direct=True), tmp_path)
    off = resolve_settings(FioOptions(direct=False), tmp_path)
    assert off.io_fallback == "direct = false in the suite"


def test_filesystem_type_from_mounts() -> None:
    mounts = "/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\nx /mnt/my\\040disk xfs rw 0 0\n"
    assert filesystem_type(Path("/dev/shm/x"), mounts) == "tmpfs"
    assert filesystem_type(Path("/var/tmp"), mounts) == "ext4"
    assert filesystem_type(Path("/mnt/my disk/a"), mounts) == "xfs"


# --------------------------------------------------------------------------- argv


SETTINGS = {"size": 268435456, "numjobs": 2, "iodepth": 16, "ioengine": "libaio",
            "direct": True, "runtime_s": 12, "time_based": True}  # fmt: skip


def test_fio_argv() -> None:
    argv = fio_argv("/usr/bin/fio", "randread", SETTINGS, Path("/d/s"))
    assert argv == [
        "/usr/bin/fio", "--name=randread", "--directory=/d/s", "--rw=randread", "--bs=4096",
        "--size=268435456", "--numjobs=2", "--ioengine=libaio", "--iodepth=16", "--direct=1",
        "--runtime=12s", "--time_based", "--group_reporting", "--unlink=1", "--eta=never",
        "--output-format=json", "--output=/d/s/fio.json",
    ]  # fmt: skip
    buffered = {**SETTINGS, "direct": False, "ioengine": "psync", "iodepth": 1}
    argv = fio_argv("fio", "seqwrite", buffered, Path("/d/s"))
    assert "--bs=4194304" in argv and "--direct=0" in argv and "--end_fsync=1" in argv


def test_fio_runs_once_on_the_first_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not an MPI program: one process, unbound (its jobs share the node), first node only."""
    local = get_launcher_class("local")(
        PlatformConfig(name="l", cores_per_node=2), MpiRuntime("Open MPI", "/usr/bin/mpirun")
    )
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: False)
    program = fio_argv("/usr/bin/fio", "seqread", SETTINGS, Path("/d/s"))
    cmd = local.command(Placement(1, 1, 1, "none"), program)
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "1", "--map-by", "core", "--bind-to", "none",
        "-x", "OMP_NUM_THREADS", "--", *program,
    ]  # fmt: skip
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: False)
    cluster = PlatformConfig.model_validate(
        {"name": "c", "nodes": 3, "hosts": ["node01", "node02", "node03"], "cores_per_node": 4,
         "launcher": {"kind": "hostfile"}}
    )  # fmt: skip
    hf = get_launcher_class("hostfile")(cluster, MpiRuntime("Open MPI", "/usr/bin/mpirun"))
    cmd = hf.command(Placement(1, 1, 1, "none"), program)
    assert list(cmd.argv[:3]) == ["/usr/bin/mpirun", "-np", "1"]
    assert list(cmd.argv[-len(program) :]) == program
    assert hf.hostfile(Placement(1, 1)).read_text() == "node01 slots=1\n"


# --------------------------------------------------------------------------- real runs

TINY = FIO_TINY_SUITE


@requires_fio
@requires_mpi
@pytest.mark.mpi
def test_tiny_run_measures_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    store = open_store(str(tmp_path / "r.db"))
    _, ms = run_suite(tmp_path, store, TINY.format(directory=target))
    by = {(m.parameters["workload"], m.metric): m for m in ms}
    assert len(ms) == 4 * 6
    for workload in ("seqwrite", "seqread", "randwrite", "randread"):
        assert by[(workload, "bandwidth")].unit == "MiB/s" and by[(workload, "bandwidth")].value > 0
        assert by[(workload, "iops")].unit == "IOPS"
        p50, p99 = by[(workload, "clat_p50")], by[(workload, "clat_p99")]
        assert p50.unit == "us" and 0 < p50.value <= p99.value
        assert by[(workload, "iops")].details["fio_version"].startswith("fio-")
        assert by[(workload, "iops")].details["directory"] == str(target)
    assert by[("randread", "bandwidth")].parameters["block_size"] == 4096
    assert by[("seqread", "bandwidth")].parameters["block_size"] == 4 * 2**20
    assert list(target.iterdir()) == []  # test files and scratch directories removed


@requires_fio
@requires_mpi
@pytest.mark.mpi
def test_directory_gone_at_run_time_is_a_recorded_failure(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    suite = load_suite(str(write(tmp_path / "s.toml", TINY.format(directory=target))))
    cases = plan_cases(suite, load_platform("local").config)  # accepted when planned
    target.rmdir()
    store = open_store(str(tmp_path / "r.db"))
    run_id, result = run_planned(store, cases)
    (outcome,) = result.failed
    assert outcome.status is ExecutionStatus.FAILED
    assert f"fio directory {target} does not exist" in outcome.error
    (execution,) = store.executions(run_id)  # the case stopped at its first failed run
    assert execution.status == "failed" and execution.error == outcome.error
    assert store.measurements(run_id) == []


@requires_mpi
@pytest.mark.mpi
def test_crashing_fio_fails_and_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writes a test file where fio would, then dies as fio does on an I/O error.
    fake_tool_on_path(
        monkeypatch,
        tmp_path / "bin" / "fio",
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in --directory=*) d="${a#--directory=}";; esac; done\n'
        'echo data > "$d/seqread.0.0"\n'
        "echo 'fio: pid=1234, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error'"
        " >&2\nexit 1\n",
    )
    target = tmp_path / "target"
    target.mkdir()
    suite = load_suite(str(write(tmp_path / "s.toml", TINY.format(directory=target))))
    store = open_store(str(tmp_path / "r.db"))
    run_id, result = run_planned(store, plan_cases(suite, load_platform("local").config))
    (outcome,) = result.failed
    assert outcome.error.startswith("exited with status 1")
    (execution,) = store.executions(run_id)
    assert "error=Input/output error" in execution.stderr_tail
    assert list(target.iterdir()) == []  # its scratch directory and test file are gone
