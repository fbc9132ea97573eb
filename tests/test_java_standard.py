"""Java beside C in one suite run (the `standard` suite's Java entries).

On `local` the Java programs run on MPJ Express's multicore device through a launcher of
their own (hpceval.mpj.java_platform) and store the same point keys as the C programs, with
their implementation; compare, the report's sections and recommend keep the two apart, and
the report's Java overhead section pairs a platform's Java points with its own C points.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from hpceval.analysis.compare import compare
from hpceval.analysis.frame import build_frame
from hpceval.campaign import load_platform, load_suite, plan_cases
from hpceval.errors import ConfigError, UserError
from hpceval.model import Measurement
from hpceval.mpj import java_platform, missing_java_tools

from .cli_helpers import read_csv
from .conftest import requires_mpi, write
from .test_cli import hpceval

requires_mpj = pytest.mark.skipif(
    missing_java_tools() is not None,
    reason=f"{missing_java_tools()} (./setup.sh installs default-jdk-headless libmpj-java)",
)
JAVA_BENCHMARKS = {"mpibench-java", "npb-java"}
STANDARD = Path(__file__).parents[1] / "src" / "hpceval" / "data" / "suites" / "standard.toml"


def test_local_runs_java_on_the_multicore_device_and_clusters_leave_it_out() -> None:
    local = load_platform("local").config
    java = java_platform(local)
    assert java is not None and java.launcher.kind == "mpj"
    assert java.launcher.options() == {"device": "multicore"} and java.nodes == 1
    mpj = load_platform("netns-2x2-mpj").config
    assert java_platform(mpj) is mpj  # an MPJ platform runs its Java cases itself
    assert java_platform(load_platform("netns-2x2").config) is None


def test_standard_plans_java_and_c_partners_with_the_same_points() -> None:
    suite = load_suite("standard")
    cases = plan_cases(suite, load_platform("local").config, notes := [])
    assert not notes
    java = [c for c in cases if c.benchmark in JAVA_BENCHMARKS]
    assert {c.benchmark for c in java} == JAVA_BENCHMARKS
    # Every Java case has a C case of the same placement, parameters and points.
    c_side = {
        (c.placement, tuple(sorted(c.parameters.items())), c.points)
        for c in cases
        if c.benchmark in {"mpibench", "npb"}
    }
    for case in java:
        assert (case.placement, tuple(sorted(case.parameters.items())), case.points) in c_side
    kernels = {
        (c.parameters["kernel"], c.parameters["class"]) for c in java if "kernel" in c.parameters
    }
    assert kernels == {("cg", "W"), ("ep", "W")}
    patterns = {(c.parameters.get("pattern"), c.placement.ranks) for c in java}
    assert {("pingpong", 2), ("allreduce", 2), ("allreduce", 4)} <= patterns


def test_a_platform_without_java_leaves_the_java_entries_out_with_a_note() -> None:
    cases = plan_cases(load_suite("standard"), load_platform("netns-2x2").config, notes := [])
    assert not {c.benchmark for c in cases} & JAVA_BENCHMARKS
    left_out = [n for n in notes if "runs no Java" in n]
    assert len(left_out) == 3 and all("netns-2x2-mpj" in n for n in left_out)
    # A suite of Java alone has nothing left there: a one-line error naming the suite.
    with pytest.raises(ConfigError, match=r"java-quick\.toml: platform 'netns-2x2' runs no Java"):
        plan_cases(load_suite("java-quick"), load_platform("netns-2x2").config, [])


def _latency(platform: str, implementation: str, value: float) -> Measurement:
    return Measurement(
        benchmark="mpibench", metric="latency", value=value, unit="us",
        parameters={"pattern": "pingpong", "size": 8, "ranks": 2}, samples=(value,) * 5,
        implementation=implementation,
    )  # fmt: skip


def _frame(rows: list[tuple[str, str, float]]) -> Any:
    return build_frame((platform, None, _latency(platform, impl, v)) for platform, impl, v in rows)


def test_compare_pairs_like_with_like_and_mixing_needs_one_implementation_a_side() -> None:
    java = "java/mpj-express 0.44"
    frame = _frame([("a", "hpceval", 1.0), ("a", java, 10.0), ("b", "hpceval", 2.0),
                    ("b", java, 30.0)])  # fmt: skip
    table = compare(frame, "a", platforms=["b"]).table
    ratios = {str(r["implementation"]): r["ratio"] for r in table.to_dict("records")}
    assert ratios == pytest.approx({"hpceval": 2.0, java: 3.0})  # never 10 / 2 or 30 / 1
    with pytest.raises(UserError, match="platform 'a' measured mpibench with hpceval and java"):
        compare(frame, "a", platforms=["b"], mix_implementations=True)
    one_each = _frame([("a", "hpceval", 1.0), ("b", java, 10.0)])
    (row,) = compare(one_each, "a", platforms=["b"], mix_implementations=True).table.to_dict(
        "records"
    )
    assert row["ratio"] == pytest.approx(10.0)


def _small_standard(tmp_path: Path) -> Path:
    """standard's Java entries and their C partners (binding none), smaller and shorter."""
    entries = tomllib.loads(STANDARD.read_text())["benchmark"]
    lines = ['name = "standard-java"']
    for entry in entries:
        if entry.get("binding") != "none":
            continue
        small = {**entry, "budget_s": 0.05, "warmup_s": 0.01, "min_samples": 3}
        if "sizes" in entry:
            small["sizes"] = [8, 65536]
        if "kernels" in entry:
            small = {**entry, "classes": ["S"], "repeat": 1}
        if entry["name"] == "mpibench-java":
            small["jit_warmup_s"] = 0.05
        lines.append("[[benchmark]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in small.items()]
    return write(tmp_path / "standard-java.toml", "\n".join(lines) + "\n")


@pytest.mark.mpi
@pytest.mark.long
@requires_mpi
@requires_mpj
def test_a_standard_run_stores_c_and_java_and_compare_and_report_keep_them_apart(
    tmp_path: Path,
) -> None:
    suite = str(_small_standard(tmp_path))
    db = str(tmp_path / "r.db")
    for platform in ("local", "local-tcp"):
        hpceval("run", "-p", platform, "-s", suite, "--db", db, cwd=tmp_path, check=True,
                timeout=1200)  # fmt: skip
    with sqlite3.connect(db) as conn:
        stored = set(conn.execute("SELECT DISTINCT benchmark, implementation FROM measurements"))
    java = "java/mpj-express 0.44"
    assert stored == {("mpibench", "hpceval"), ("mpibench", java), ("npb", "hpceval"),
                      ("npb", java)}  # fmt: skip
    # compare: no refusal (each platform ran both), C paired with C and Java with Java.
    out = tmp_path / "cmp.json"
    hpceval("compare", "-b", "local", "--db", db, "--json", str(out), cwd=tmp_path, check=True)
    rows = json.loads(out.read_text())
    assert {r["implementation"] for r in rows} == {"hpceval", java}
    for implementation in ("hpceval", java):
        assert any(r["metric"] == "latency" and r["size"] == 8 for r in rows
                   if r["implementation"] == implementation)  # fmt: skip
    report = tmp_path / "report"
    hpceval("report", "--out", str(report), "--db", db, cwd=tmp_path, check=True)
    pairs = read_csv(report / "tables" / "java_vs_c.csv")
    sides = {(r["java_platform"], r["c_platform"]) for r in pairs}
    assert sides == {("local (Java)", "local"), ("local-tcp (Java)", "local-tcp")}
    kinds = {(r["benchmark"], r["metric"], r["pattern"] or r["kernel"]) for r in pairs}
    assert {("mpibench", "latency", "pingpong"), ("mpibench", "time", "allreduce"),
            ("npb", "mops_total", "cg"), ("npb", "mops_total", "ep")} <= kinds  # fmt: skip
    first = read_csv(report / "tables" / "java_first_iteration.csv")
    assert first and {r["platform"] for r in first} == {"local", "local-tcp"}
    # recommend: each platform's C and Java CG are two configurations, never one pooled.
    chosen = tmp_path / "rec.json"
    hpceval("recommend", "--db", db, "-w", "cg.S", "--json", str(chosen), cwd=tmp_path,
            check=True)  # fmt: skip
    configurations = json.loads(chosen.read_text())
    by_platform = {(r["platform"], r["ranks"], r["implementation"]) for r in configurations}
    for platform in ("local", "local-tcp"):
        assert {i for p, _, i in by_platform if p == platform} == {"hpceval", java}


PROCNET = Path(__file__).parent / "data" / "procnet"


def test_listening_ports_are_read_from_the_kernels_tables_not_probed() -> None:
    from hpceval.launch.schedulers.mpj_daemons import listening_ports

    # Captured while a socket listened on 127.0.0.1:40055 (MPJ's daemon port) with one
    # connection open to it: the listening socket counts, the connection's two ends do not.
    table = (PROCNET / "tcp-listening-40055.txt").read_text()
    ports = listening_ports(table)
    assert 40055 in ports
    connected = {0x9A48}  # the client end of that connection (state 01, established)
    assert not ports & connected
    assert listening_ports(table.splitlines()[0]) == set()  # the header alone
    six = listening_ports((PROCNET / "tcp6.txt").read_text())
    assert six and all(0 < p < 65536 for p in six)


def test_held_ports_count_connections_but_not_time_wait() -> None:
    from hpceval.launch.schedulers.mpj_daemons import held_ports

    table = (PROCNET / "tcp-listening-40055.txt").read_text()
    held = held_ports(table)
    assert 40055 in held  # the listener
    assert 0x9A48 in held  # an established connection's end holds its local port too
    header = table.splitlines()[0]
    time_wait = "   0: 0100007F:9C72 0100007F:9C77 06 00000000:00000000 03:00000F9E 00000000"
    assert held_ports(f"{header}\n{time_wait}\n") == set()  # 0x9C72 = 40050, TIME_WAIT


def test_mpj_ports_come_from_its_conf_with_mpjs_defaults() -> None:
    from hpceval.mpj import parse_mpj_ports

    conf = Path("/etc/mpj/mpjexpress.conf")
    text = conf.read_text() if conf.is_file() else ""
    ports = parse_mpj_ports(text)
    assert set(ports) == {40055, 40052, 40002}  # Debian's conf sets MPJ's defaults
    moved = parse_mpj_ports("mpjexpress.mpjrun.port.1=41002\nmpjexpress.mpjdaemon.port.2=x\n")
    assert moved == {
        40055: "the MPJ daemon",
        40052: "the MPJ daemon's port manager",
        41002: "MPJRun",
    }


def test_a_java_failure_is_named_by_its_exception_not_its_last_frame() -> None:
    from hpceval.execute import describe_exit

    # Captured: MPJRun (niodev) with no daemon listening on this host.
    stderr = Path(__file__).parent / "data" / "mpibench_java" / "mpjrun_no_daemon.stderr"
    cause = describe_exit(1, stderr.read_text())
    assert cause.startswith('exited with status 1: Exception in thread "main"')
    assert "Cannot connect to the daemon at machine <localhost> and port <40055>" in cause
    chained = "E: outer\n\tat a.B.c(B.java:3)\nCaused by: java.net.BindException: in use\n"
    chained += "\tat d.E.f(Native Method)\n\t... 4 more\n"
    assert describe_exit(1, chained).endswith("Caused by: java.net.BindException: in use")
    assert describe_exit(2, "---\nmpirun: no such file\n---\n").endswith("no such file")


HOLDER = """
import os, subprocess, sys, time
from hpceval.execute import die_with_parent, reaped
from hpceval.reaper import REMOVE_ENV
for path in sys.argv[1:]:
    subprocess.Popen(reaped(["sleep", "60"]), env={**os.environ, REMOVE_ENV: path},
                     preexec_fn=die_with_parent, start_new_session=True)
print("started", flush=True)
time.sleep(60)
"""


def test_a_daemons_directory_goes_with_its_reaper_when_hpceval_is_killed(tmp_path: Path) -> None:
    """As the MPJ daemons' directories (machines files, daemon homes): hpceval killed with
    SIGKILL cannot remove them, the reapers it leaves do (PR_SET_PDEATHSIG)."""
    ours = tmp_path / "hpceval-mpj-test"
    foreign = tmp_path / "not-ours"
    for directory in (ours, foreign):
        directory.mkdir()
        (directory / "machines").write_text("localhost\n")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(ours), str(foreign)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "started"
    time.sleep(0.5)  # the reapers have started their commands
    holder.kill()
    holder.wait()
    deadline = time.monotonic() + 30
    while ours.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ours.exists()
    assert (foreign / "machines").is_file()  # only hpceval's own temporary directories go
