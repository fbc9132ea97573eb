"""mpibench PingPong against an independent reference (Debian's hpcc), and harness overhead.

One run on this machine:

1. Interleaved, `--repeat` times: HPC Challenge's b_eff ping-pong (hpcc, 2 ranks) and
   `hpceval run` of a PingPong suite (0 B-1 KiB, 1-4 MiB, plus HPCC's own 8 B and
   2,000,000 B sizes) with IMB-like 1 s budgets per point. Interleaving spreads any drift of
   the machine over both tools.
2. Ratios mpibench / hpcc at HPCC's sizes, paired repeat by repeat (the two runs of a
   repeat are adjacent in time), then the median and range over the repeats. Two mpibench
   statistics are compared: the mean (IMB's convention, what hpceval reports) and the best
   sample (HPCC's convention: per pair, the minimum over its measurements). Targets: latency
   within 5 %, bandwidth at least 95 % of the reference.
   A control in each repeat: perf/buffer_pingpong.c measures 2,000,000 B the way HPCC
   does (best of 8 timed loops) with a written send buffer and with a never-written one
   (fresh malloc'd pages that all map the kernel's zero page, so the sender's copy reads
   cache-resident memory). HPCC mallocs its buffers without writing them; whether their
   pages are fresh depends on the allocator's history, and the two controls bracket it:
   "hpcc / control written" near 1 says HPCC's figure is a real-memory one. mpibench (whose
   buffers are written) is also compared with the written control.
3. Harness overhead of the default `hpceval run` (quick suite): wall time of the whole
   command minus the time spent inside the benchmark executions, as a fraction of the wall
   time. Target: under 10 %.

Usage: .venv/bin/python perf/pingpong_vs_hpcc.py [--repeat 7] [--no-overhead]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hpcc_reference import (
    BANDWIDTH_MESSAGE_BYTES,
    LATENCY_MESSAGE_BYTES,
    _mpirun_env,
    run_hpcc,
)
from hpceval.model import Measurement
from hpceval.store import open_store

LATENCY_SIZES = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
BANDWIDTH_SIZES = [1 << 20, BANDWIDTH_MESSAGE_BYTES, 2 << 20, 4 << 20]

SUITE = f"""
name = "bench-pingpong"
description = "PingPong at HPCC's sizes and the issue's ranges, 1 s per point"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = {sorted(set(LATENCY_SIZES + BANDWIDTH_SIZES))}
ranks = [2]
budget_s = 1.0
"""

LATENCY_TARGET = 0.05
BANDWIDTH_TARGET = 0.95


@dataclass
class HpcevalRun:
    latency: dict[int, Measurement]
    bandwidth: dict[int, Measurement]
    wall_s: float
    inside_s: float


def run_hpceval(args: list[str], db: Path, cwd: Path) -> HpcevalRun:
    """`hpceval run ARGS --db DB`, timed from outside; measurements read back from the DB."""
    exe = Path(sys.executable).with_name("hpceval")
    start = time.perf_counter()
    proc = subprocess.run(
        [str(exe), "run", *args, "--db", str(db)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"hpceval run {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    store = open_store(str(db), create=False)
    (run,) = store.runs()[:1]
    inside = sum(e.ended - e.started for e in store.executions(run.id) if e.ended is not None)
    latency: dict[int, Measurement] = {}
    bandwidth: dict[int, Measurement] = {}
    for sm in store.measurements(run.id):
        m = sm.measurement
        if m.parameters.get("pattern") != "pingpong":
            continue
        target = latency if m.metric == "latency" else bandwidth
        target[int(m.parameters["size"])] = m
    store.close()
    return HpcevalRun(latency, bandwidth, wall, inside)


def build_buffer_pingpong(work: Path) -> Path:
    exe = work / "buffer_pingpong"
    source = Path(__file__).resolve().with_name("buffer_pingpong.c")
    subprocess.run(["mpicc", "-O2", "-o", str(exe), str(source)], check=True)
    return exe


def buffer_pingpong(exe: Path, state: str) -> float:
    """MB/s of 2,000,000 B, HPCC's method, send buffer `state` (touched | untouched)."""
    proc = subprocess.run(
        ["mpirun", "-np", "2", "--bind-to", "core", str(exe), state],
        capture_output=True, text=True, check=False, env=_mpirun_env(),
    )  # fmt: skip
    fields = proc.stdout.split()
    if proc.returncode != 0 or len(fields) != 4 or fields[0] != state:
        raise SystemExit(f"buffer_pingpong {state} failed ({proc.returncode}): {proc.stderr}")
    return float(fields[3])


def best(m: Measurement) -> float:
    """The best sample: minimum time, maximum bandwidth."""
    assert m.statistics is not None
    value: float = m.statistics.minimum if m.metric == "latency" else m.statistics.maximum
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="interleaved repetitions (7)")
    parser.add_argument("--no-overhead", action="store_true", help="skip the quick-suite run")
    opts = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hpceval-bench-") as tmp:
        work = Path(tmp)
        suite = work / "bench-pingpong.toml"
        suite.write_text(SUITE)
        control = build_buffer_pingpong(work)
        hpcc_runs, ours = [], []
        touched: list[float] = []
        untouched: list[float] = []
        for i in range(opts.repeat):
            h = run_hpcc(2)
            hpcc_runs.append(h.figures)
            ours.append(run_hpceval(["--suite", str(suite)], work / f"p2p-{i}.db", work))
            touched.append(buffer_pingpong(control, "touched"))
            untouched.append(buffer_pingpong(control, "untouched"))
            print(
                f"repeat {i + 1}/{opts.repeat}: hpcc {h.wall_s:.1f} s, hpceval "
                f"{ours[-1].wall_s:.1f} s",
                file=sys.stderr,
            )

        def med(values: list[float]) -> float:
            return statistics.median(values)

        print("# mpibench PingPong, 2 ranks, this machine (median over repeats)")
        print(f"{'size B':>10} {'mean µs':>10} {'median µs':>10} {'min µs':>10} {'±CI %':>7}")
        for size in LATENCY_SIZES:
            ms = [r.latency[size] for r in ours]
            ci = med([m.statistics.relative_ci * 100 for m in ms if m.statistics])
            print(
                f"{size:>10} {med([m.value for m in ms]):>10.3f} "
                f"{med([m.statistics.median for m in ms if m.statistics]):>10.3f} "
                f"{med([best(m) for m in ms]):>10.3f} {ci:>7.2f}"
            )
        print(f"{'size B':>10} {'MB/s(mean)':>12} {'MB/s(best)':>12}")
        for size in BANDWIDTH_SIZES:
            ms = [r.bandwidth[size] for r in ours]
            mean_bw, best_bw = med([m.value for m in ms]), med([best(m) for m in ms])
            print(f"{size:>10} {mean_bw:>12.1f} {best_bw:>12.1f}")

        ref_lat = [f["AvgPingPongLatency_usec"] for f in hpcc_runs]
        ref_bw = [f["AvgPingPongBandwidth_MBps"] for f in hpcc_runs]
        print()
        print("# against hpcc (AvgPingPong over its pairs; per pair the best of its measurements)")
        print(
            f"hpcc latency {LATENCY_MESSAGE_BYTES} B: {[round(v, 3) for v in ref_lat]} µs; "
            f"bandwidth {BANDWIDTH_MESSAGE_BYTES} B: {[round(v) for v in ref_bw]} MB/s"
        )
        lat = [r.latency[LATENCY_MESSAGE_BYTES] for r in ours]
        bw = [r.bandwidth[BANDWIDTH_MESSAGE_BYTES] for r in ours]
        comparisons = [
            ("latency, mean / hpcc", [m.value / h for m, h in zip(lat, ref_lat, strict=True)]),
            ("latency, best / hpcc", [best(m) / h for m, h in zip(lat, ref_lat, strict=True)]),
            ("bandwidth, mean / hpcc", [m.value / h for m, h in zip(bw, ref_bw, strict=True)]),
            ("bandwidth, best / hpcc", [best(m) / h for m, h in zip(bw, ref_bw, strict=True)]),
        ]
        comparisons += [
            ("bandwidth, best / control", [best(m) / t for m, t in zip(bw, touched, strict=True)]),
            (
                "control untouched / written",
                [u / t for u, t in zip(untouched, touched, strict=True)],
            ),
            ("hpcc / control written", [h / t for h, t in zip(ref_bw, touched, strict=True)]),
        ]
        print(
            f"control (HPCC's method, 2,000,000 B): written send buffer "
            f"{[round(v) for v in touched]} MB/s, untouched {[round(v) for v in untouched]} MB/s"
        )
        print(f"{'ratio (paired by repeat)':<28} {'median':>7} {'min':>7} {'max':>7}  target")
        for label, ratios in comparisons:
            ratio = med(ratios)
            verdict = ""
            if label.startswith("latency"):
                verdict = "meets" if abs(ratio - 1) <= LATENCY_TARGET else "MISSES"
            elif label.startswith("bandwidth"):
                verdict = "meets" if ratio >= BANDWIDTH_TARGET else "MISSES"
            print(f"{label:<28} {ratio:7.3f} {min(ratios):7.3f} {max(ratios):7.3f}  {verdict}")

        if not opts.no_overhead:
            quick = run_hpceval([], work / "quick.db", work)
            overhead = (quick.wall_s - quick.inside_s) / quick.wall_s
            print()
            print("# harness overhead of `hpceval run` (default quick suite)")
            print(
                f"wall {quick.wall_s:.1f} s, inside benchmark executions {quick.inside_s:.1f} s, "
                f"overhead {quick.wall_s - quick.inside_s:.2f} s = {overhead:.1%} "
                f"({'meets' if overhead < 0.10 else 'MISSES'} the 10 % target)"
            )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "120")
    raise SystemExit(main())
