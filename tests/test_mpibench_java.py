"""mpibench-java: MpiBench.java on MPJ Express through the `mpj` launcher.

Parser tests read real outputs captured on this machine (tests/data/mpibench_java: MPJ
Express 0.44's multicore device, OpenJDK 17); the launcher's argv and its refusals are
checked exactly; real runs go through `hpceval run` on platform local-mpj, and a run
stopped by SIGTERM leaves no JVM behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.campaign import load_platform, load_suite
from hpceval.config import LauncherConfig, PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.launch.command import MpiRuntime
from hpceval.launch.schedulers.mpj import MpjScheduler, port_is_free
from hpceval.launch.starters import get_starter_class
from hpceval.launch.starters.base import Nodes
from hpceval.launch.starters.mpjrun import MpjrunOptions, MpjStartRequest, check_java_program
from hpceval.model import Placement
from hpceval.mpj import (
    DEFAULT_DAEMON_PORT,
    STARTER_JARS,
    missing_java_tools,
    parse_java_version,
    parse_mpj_version,
)
from hpceval.store import open_store

from .conftest import requires_mpi, write
from .mpj_helpers import wait_for_jvms, wait_for_no_jvm
from .test_cli import hpceval, one_line_error

DATA = Path(__file__).parent / "data" / "mpibench_java"

requires_mpj = pytest.mark.skipif(
    missing_java_tools() is not None,
    reason=f"{missing_java_tools()} (./setup.sh installs default-jdk-headless libmpj-java)",
)

STARTER = [
    "java", "-cp", os.pathsep.join(f"/m/lib/{j}" for j in STARTER_JARS), "runtime.starter.MPJRun"
]  # fmt: skip


def mpjrun_argv(
    device: str, ranks: int, extra: list[str], program: list[str], machines: str | None = None
) -> list[str]:
    """The mpjrun starter's argv, as the mpj scheduler asks for it (MPJ_HOME /m)."""
    request = MpjStartRequest(
        placement=Placement(1, ranks, 1, "none"), program=tuple(program),
        implementation="Open MPI", executable="java", extra_args=tuple(extra),
        options=MpjrunOptions.model_validate({"device": device}),
        nodes=Nodes(hosts=("localhost",), hostfile=machines) if machines else Nodes(),
        mpj_home="/m",
    )  # fmt: skip
    return list(get_starter_class("mpjrun")().command(request).argv)


def case_for(pattern: str, ranks: int, sizes: list[int]) -> Case:
    params: dict[str, str | int | float | bool] = {"pattern": pattern}
    if pattern == "pingpong":
        params["pair"] = "intra-node"
    return Case(
        key=f"mpibench-java/{pattern}",
        benchmark="mpibench-java",
        placement=Placement(1, ranks, 1, "none"),
        parameters=params,
        points=tuple(f"size={s}" for s in sizes),
        time_limit_s=60,
    )


# ------------------------------------------------------------------ parsing --


def test_pingpong_capture_parses_into_warm_and_first_iteration_points() -> None:
    bench = get_benchmark("mpibench-java")
    case = case_for("pingpong", 2, [0, 8, 1024, 65536])
    stdout = (DATA / "pingpong_np2.out").read_text()
    bench.verify(stdout, case, case.points)
    points = bench.parse(stdout, case)
    assert [p.point_key for p in points] == list(case.points)
    for point in points:
        by_metric = {m.metric: m for m in point.measurements}
        latency, cold = by_metric["latency"], by_metric["first_iteration_latency"]
        # Stored as mpibench's points (compare pairs them with the C ones), Java recorded.
        assert latency.benchmark == cold.benchmark == "mpibench"
        assert latency.implementation == "java/mpj-express 0.44"
        assert latency.details["mpj_device"] == "smpdev"
        assert str(latency.details["jvm"]).startswith("OpenJDK")
        assert len(latency.samples) >= 2 and cold.samples == (cold.value,)
        assert latency.parameters == cold.parameters
        # The first iteration runs interpreted code: slower than the JIT-warm median.
        assert cold.value > latency.statistics.median
        if point.point_key != "size=0":
            assert by_metric["bandwidth"].value > 0


def test_allreduce_capture_on_four_ranks() -> None:
    bench = get_benchmark("mpibench-java")
    case = case_for("allreduce", 4, [8, 1024])
    stdout = (DATA / "allreduce_np4.out").read_text()
    bench.verify(stdout, case, case.points)
    metrics = {(p.point_key, m.metric) for p in bench.parse(stdout, case) for m in p.measurements}
    assert metrics == {(k, m) for k in case.points for m in ("time", "first_iteration_time")}


def test_error_record_fails_with_its_cause() -> None:
    bench = get_benchmark("mpibench-java")
    case = case_for("allreduce", 2, [7])
    stdout = (DATA / "error_size.out").read_text()
    with pytest.raises(BenchmarkFailure, match="size 7 is not a multiple of 4"):
        bench.parse(stdout, case)
    with pytest.raises(BenchmarkFailure, match="size 7 is not a multiple of 4"):
        bench.verify(stdout, case, case.points)


def test_output_without_end_record_fails_verification() -> None:
    # MPJRun exits 0 even when the ranks threw: only the end record proves the run whole.
    bench = get_benchmark("mpibench-java")
    case = case_for("pingpong", 2, [0, 8, 1024, 65536])
    lines = (DATA / "pingpong_np2.out").read_text().splitlines()
    cut = "\n".join(ln for ln in lines if '"record":"end"' not in ln)
    with pytest.raises(BenchmarkFailure, match="no successful end record"):
        bench.verify(cut, case, case.points)


def test_header_from_another_program_is_refused() -> None:
    bench = get_benchmark("mpibench-java")
    case = case_for("pingpong", 2, [0])
    header = (DATA / "pingpong_np2.out").read_text().splitlines()[1]
    with pytest.raises(BenchmarkFailure, match="unexpected program"):
        bench.parse_line(header.replace('"mpibench-java"', '"mpibench"'), case)


def test_version_parsers() -> None:
    assert parse_mpj_version("# c\nmpjexpress.version=0.44\n") == "0.44"
    assert parse_mpj_version("nothing") is None
    out = 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment\n'
    assert parse_java_version(out) == "openjdk 17.0.15"


# ---------------------------------------------------------------- launcher --


def test_mpjrun_argv_exact() -> None:
    argv = mpjrun_argv("multicore", 4, ["-Xmx1g"], ["/c/mb.jar", "--pattern=barrier"])
    assert argv == [
        *STARTER, "-np", "4", "-dev", "multicore", "-Xmx1g", "-jar", "/c/mb.jar",
        "--pattern=barrier",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("program", "cause"),
    [
        (["/usr/bin/mpibench", "--pattern=x"], "starts Java programs (a .jar)"),
        (["/c/mb.jar", "-np", "3"], "'-np' does not start with '--'"),
        (["/c/mb.jar", "--sizes", "-1"], "'-1' does not start with '--'"),
    ],
)
def test_programs_mpjrun_must_not_see(program: list[str], cause: str) -> None:
    with pytest.raises(UserError, match=re.escape(cause)):
        check_java_program(program)


def test_hybdev_needs_a_machines_file() -> None:
    # hybdev's ranks are started by MPJ daemons (netns-2x2-mpj-hybdev, tests/test_mpj_cluster).
    with pytest.raises(UserError, match=r"launcher\.device hybdev: no machines file"):
        mpjrun_argv("hybdev", 2, [], ["/c/mb.jar"])
    argv = mpjrun_argv("hybdev", 4, [], ["/c/mb.jar"], machines="/w/machines")
    assert argv[-6:] == ["-dev", "hybdev", "-machinesfile", "/w/machines", "-jar", "/c/mb.jar"]


def test_niodev_argv_names_the_machines_file() -> None:
    argv = mpjrun_argv("niodev", 2, [], ["/c/mb.jar"], "/w/machines")
    assert argv == [
        *STARTER, "-np", "2", "-dev", "niodev", "-machinesfile", "/w/machines", "-jar",
        "/c/mb.jar",
    ]  # fmt: skip


def platform(**launcher: object) -> PlatformConfig:
    return PlatformConfig(
        name="t-mpj",
        nodes=1,
        cores_per_node=2,
        launcher=LauncherConfig.model_validate({"kind": "mpj", **launcher}),
    )


@requires_mpj
def test_launcher_command_sets_mpj_home_and_records_no_binding() -> None:
    launcher = MpjScheduler(platform(), MpiRuntime("Open MPI", "mpirun"))
    command = launcher.command(Placement(1, 2, 1, "core"), ["/c/mb.jar", "--pattern=barrier"])
    home = Path(command.env["MPJ_HOME"])
    assert (home / "lib" / "mpj.jar").is_file() and (home / "lib" / "log4j-1.2.jar").is_file()
    assert command.argv[1:4] == (
        "-cp",
        os.pathsep.join(
            str(home / "lib" / j) for j in ("starter.jar", "runtimecommon.jar", "log4j-1.2.jar")
        ),
        "runtime.starter.MPJRun",
    )
    assert command.argv[4:] == (
        "-np",
        "2",
        "-dev",
        "multicore",
        "-jar",
        "/c/mb.jar",
        "--pattern=barrier",
    )
    assert command.placement.binding == "none" and not command.oversubscribed
    with pytest.raises(UserError, match="runs on one node"):
        launcher.command(Placement(2, 1, 1, "none"), ["/c/mb.jar"])


def test_missing_jvm_is_a_reason_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = missing_java_tools()
    assert reason is not None and reason.startswith("java not found on PATH")
    assert "default-jdk-headless" in reason


# -------------------------------------------------------------- real runs --

SUITE = """
name = "java-test"
[[benchmark]]
name = "mpibench-java"
patterns = ["pingpong", "allreduce"]
sizes = [8, 1024]
ranks = [2]
binding = "none"
budget_s = 0.1
warmup_s = 0.01
min_samples = 3
jit_warmup_s = 0.1
"""


@requires_mpj
def test_run_on_local_mpj_stores_verified_java_points(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.toml", SUITE)
    db = tmp_path / "r.db"
    hpceval("run", "-p", "local-mpj", "-s", str(suite), "--db", str(db), cwd=tmp_path, check=True)
    store = open_store(str(db))
    rows = store.measurements()
    got = {(r.case_key.split(":")[0], r.point_key, r.measurement.metric) for r in rows}
    for point in ("size=8", "size=1024"):
        assert ("mpibench-java", point, "latency") in got
        assert ("mpibench-java", point, "bandwidth") in got
        assert ("mpibench-java", point, "first_iteration_latency") in got
        assert ("mpibench-java", point, "time") in got
        assert ("mpibench-java", point, "first_iteration_time") in got
    for r in rows:
        m = r.measurement
        assert m.benchmark == "mpibench" and m.value > 0
        assert m.parameters["binding"] == "none"
        if not m.metric.startswith("first_iteration") and m.metric != "bandwidth":
            assert m.implementation == "java/mpj-express 0.44"
            assert len(m.samples) >= 3


def test_mpibench_java_on_a_native_platform_is_a_one_line_error(tmp_path: Path) -> None:
    # `local` runs Java beside C (on MPJ's multicore device); a cluster without MPJ daemons
    # runs none, and a suite of Java alone has nothing left to run there.
    suite = write(tmp_path / "suite.toml", SUITE)
    proc = hpceval(
        "run", "-p", "netns-2x2", "-s", str(suite), "--db", str(tmp_path / "r.db"), cwd=tmp_path
    )
    assert "platform 'netns-2x2' runs no Java" in one_line_error(proc)


def test_hybdev_platform_is_a_one_line_error(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.toml", SUITE)
    plat = write(
        tmp_path / "p.toml",
        'name = "hyb"\nnodes = 1\n[launcher]\nkind = "mpj"\ndevice = "hybdev"\n',
    )
    proc = hpceval(
        "run", "-p", str(plat), "-s", str(suite), "--db", str(tmp_path / "r.db"), cwd=tmp_path
    )
    assert "launcher.device hybdev" in one_line_error(proc)


def _daemon_port_open() -> bool:
    return not port_is_free(DEFAULT_DAEMON_PORT)


@requires_mpj
def test_niodev_run_starts_and_stops_its_daemon(tmp_path: Path) -> None:
    if _daemon_port_open():
        pytest.skip(f"port {DEFAULT_DAEMON_PORT} is taken by another MPJ daemon")
    suite = write(tmp_path / "suite.toml", SUITE)
    db = tmp_path / "r.db"
    hpceval(
        "run", "-p", "local-mpj-niodev", "-s", str(suite), "--db", str(db), cwd=tmp_path, check=True
    )
    rows = open_store(str(db)).measurements()
    devices = {r.measurement.details.get("mpj_device") for r in rows}
    assert devices == {"niodev"}
    assert {r.measurement.metric for r in rows} >= {"latency", "time", "first_iteration_time"}
    assert not _daemon_port_open()  # the daemon (and the ranks it started) are gone


@requires_mpj
def test_niodev_with_its_port_taken_is_a_one_line_error(tmp_path: Path) -> None:
    if _daemon_port_open():
        pytest.skip(f"port {DEFAULT_DAEMON_PORT} is taken by another MPJ daemon")
    suite = write(tmp_path / "suite.toml", SUITE)
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", DEFAULT_DAEMON_PORT))
        taken.listen()
        proc = hpceval(
            "run", "-p", "local-mpj-niodev", "-s", str(suite), "--db", str(tmp_path / "r.db"),
            cwd=tmp_path,
        )  # fmt: skip
    assert f"port {DEFAULT_DAEMON_PORT} is in use" in one_line_error(proc)


@requires_mpj
def test_niodev_with_the_port_managers_port_taken_is_a_one_line_error(tmp_path: Path) -> None:
    # A daemon whose port manager cannot bind accepts the job and never starts its ranks
    # (and MPJRun hangs when its own port 40002 is taken): both are checked before it starts.
    suite = write(tmp_path / "suite.toml", SUITE)
    for port, who in ((40052, "the MPJ daemon's port manager"), (40002, "MPJRun")):
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            taken.bind(("127.0.0.1", port))
            taken.listen()
            proc = hpceval(
                "run", "-p", "local-mpj-niodev", "-s", str(suite), "--db",
                str(tmp_path / "r.db"), cwd=tmp_path,
            )  # fmt: skip
        assert proc.returncode == 2
        assert f"port {port} is in use (another MPJ daemon?), and {who} listens" in (
            one_line_error(proc)
        )


@requires_mpj
def test_sigterm_leaves_no_jvm_running(tmp_path: Path) -> None:
    # A point that cannot reach its CI target samples for its whole 30 s budget.
    long_points = "budget_s = 30\ntarget_rci = 0.00001\nmax_samples = 10000000"
    suite = write(tmp_path / "suite.toml", SUITE.replace("budget_s = 0.1", long_points))
    cache = tmp_path / "cache"  # the JVMs' class path names it: they can be told apart
    env = {**os.environ, "HPCEVAL_CACHE": str(cache)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpceval", "run", "-p", "local-mpj", "-s", str(suite),
         "--db", str(tmp_path / "r.db")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_jvms(proc, cache, 2, timeout_s=480)  # the starter and the ranks' JVM
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert "interrupted by SIGTERM" in err or proc.returncode != 0
        assert wait_for_no_jvm(cache, timeout_s=10) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(cache, ignore_errors=True)


def test_java_quick_suite_plans_p2p_and_collectives_on_local_mpj() -> None:
    suite = load_suite("java-quick").config
    target = load_platform("local-mpj").config
    bench = get_benchmark("mpibench-java")
    cases = [
        c
        for i, entry in enumerate(suite.benchmark)
        if entry.name == "mpibench-java"
        for c in bench.cases(bench.parse_options(entry.options()), target, i)
    ]
    patterns = {(c.parameters["pattern"], c.placement.ranks) for c in cases}
    assert {("pingpong", 2), ("exchange", 2), ("allreduce", 4), ("barrier", 2)} <= patterns
    assert len(cases) == 4 + 5 * 2
    assert all(c.key.startswith("mpibench-java:") and c.options["jit_warmup_s"] > 0 for c in cases)


@requires_mpj
@requires_mpi
def test_compare_pairs_java_points_with_the_c_points(tmp_path: Path) -> None:
    """The same entries, C on `local` and Java on `local-mpj`: compare pairs every point when
    told to mix implementations (hpceval's C program, MPJ Express), and refuses otherwise."""
    entry = SUITE.split("[[benchmark]]")[1].replace("budget_s = 0.1", "budget_s = 0.05")
    java = write(tmp_path / "java.toml", f'name = "j"\n[[benchmark]]{entry}')
    native = write(
        tmp_path / "c.toml",
        f'name = "c"\n[[benchmark]]{entry}'.replace('"mpibench-java"', '"mpibench"').replace(
            "jit_warmup_s = 0.1\n", ""
        ),
    )
    db = str(tmp_path / "r.db")
    hpceval("run", "-p", "local", "-s", str(native), "--db", db, cwd=tmp_path, check=True)
    hpceval("run", "-p", "local-mpj", "-s", str(java), "--db", db, cwd=tmp_path, check=True)
    out = tmp_path / "cmp.json"
    refused = hpceval("compare", "-b", "local", "--db", db, "--json", str(out), cwd=tmp_path)
    assert "java/mpj-express 0.44 on local-mpj" in one_line_error(refused)
    assert not out.exists()
    hpceval("compare", "-b", "local", "--mix-implementations", "--db", db, "--json", str(out),
            cwd=tmp_path, check=True)  # fmt: skip
    rows = json.loads(out.read_text())
    paired = {(r["metric"], r["size"]) for r in rows}
    for size in (8, 1024):
        assert ("latency", size) in paired and ("time", size) in paired
    assert all(r["platform"] == "local-mpj" for r in rows)


NIODEV_REFUSED = DATA / "niodev_rank_refused.out"


def test_a_rank_refused_by_mpjrun_is_a_startup_failure_on_its_line() -> None:
    # Captured: npb-java MG class S, 4 ranks on 2 netns nodes (niodev). Ranks 2 and 3 reached
    # for MPJRun before it listened, died in MPI.Init, and MPJRun waited until the time limit.
    from hpceval.benchmarks.mpibench_java import parse_java_line
    from hpceval.errors import StartupFailure

    lines = NIODEV_REFUSED.read_text().splitlines(keepends=True)
    case = Case(
        key="npb-java:mg:S:np=4",
        benchmark="npb-java",
        placement=Placement(2, 2, 1, "none"),
        parameters={"kernel": "mg", "class": "S"},
        points=("mg.S",),
        time_limit_s=360,
    )
    npb_java = get_benchmark("npb-java")
    parsers = [
        lambda line: parse_java_line(line, case),
        lambda line: npb_java.parse_line(line, case),
    ]
    for parse in parsers:
        refused = []
        for number, line in enumerate(lines):
            try:
                parse(line)
            except StartupFailure as e:
                refused.append(number)
                assert "java.net.ConnectException: Connection refused" in str(e)
                assert "MPJ 0.44 start-up race" in str(e)
        assert refused and lines[refused[0]].startswith("java.net.ConnectException")


def test_a_startup_failure_is_tried_once_more_and_stays_recorded() -> None:
    from hpceval.campaign.run import STARTUP_RETRIES, Campaign
    from hpceval.model import ExecutionStatus

    failed = (ExecutionStatus.FAILED, "MPJ Express could not start a rank", 0, 2.0)
    measured = (ExecutionStatus.OK, "", 3, 5.0)

    def tries(outcomes: list[tuple[tuple, bool]]) -> tuple[tuple, int]:
        """_execute's result and how many executions it started, each execution giving the
        next (result, ended in a StartupFailure) of `outcomes`."""
        campaign = Campaign.__new__(Campaign)  # only _execute's loop is under test
        campaign._signal = None
        started: list[int] = []

        def execute_once(run_id: int, case: object, points: object) -> tuple:
            result, startup_failed = outcomes[len(started)]
            started.append(1)
            campaign._startup_failed = startup_failed
            return result

        campaign._execute_once = execute_once  # type: ignore[method-assign]
        return campaign._execute(1, None, ["a"]), len(started)  # type: ignore[arg-type]

    assert STARTUP_RETRIES == 1
    assert tries([(failed, True), (measured, False)]) == ((ExecutionStatus.OK, "", 3, 7.0), 2)
    # Any other failure is not tried again, nor one after points were measured; a second
    # start-up failure fails the case.
    assert tries([(failed, False), (measured, False)]) == (failed, 1)
    after_points = (ExecutionStatus.FAILED, "MPJ Express could not start a rank", 1, 2.0)
    assert tries([(after_points, True), (measured, False)]) == (after_points, 1)
    assert tries([(failed, True), (failed, True), (measured, False)]) == (
        (*failed[:3], 4.0),
        1 + STARTUP_RETRIES,
    )
