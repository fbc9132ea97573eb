"""mpibench PingPong against OSU 5.7 (osu_latency, osu_bw) and IMB-MPI1 PingPong, interleaved.

The references are built outside the repository (OSU: autotools into /work/ref/build-osu; IMB:
`make IMB-MPI1` in a copy of the tree, /work/ref/build-imb). Each round runs, one after the
other, `hpceval run` of a 2-rank PingPong suite (mpibench), osu_latency, osu_bw and IMB-MPI1
PingPong; rounds repeat --rounds times (A, B, C, D, A, B, ...).

What each figure is:
- latency: mpibench's samples are each the mean one-way time (half a round trip) of a batch
  of iterations; osu_latency prints the mean over its iterations of half a round trip; IMB's
  t[usec] is the mean over its repetitions of half a round trip. The same statistic on both
  sides is therefore the mean over iterations (`--statistic mean`, the OSU/IMB convention);
  mpibench's median of samples (hpceval's robust default, `--statistic median`) is compared
  too. Both are computed by hpceval's own statistics policy (hpceval.analysis.policy) on
  the stored run, exactly as `hpceval compare`/`show` compute them.
- bandwidth: mpibench and IMB PingPong: bytes / one-way time (half a round trip), the
  ping-pong bandwidth; osu_bw streams a window of 64 non-blocking sends before one reply and
  divides bytes x window x iterations by the time: a streaming bandwidth, which overlaps
  messages and is higher than ping-pong bandwidth at mid sizes. mpibench's bandwidth is bytes
  / statistic(time) (never a mean of per-sample bandwidths).
Ratios are mpibench / reference per size and round, then the median over rounds and a
bootstrap 95 % interval (scipy.stats.bootstrap). Wall and CPU seconds of each tool's runs
are printed: the machine is shared, CPU time shows how much of the wall time the tools got.

--rt (as root): every run (`hpceval run` of mpibench, osu_latency, osu_bw, IMB) is started
under `chrt -f 10` (SCHED_FIFO priority 10, inherited by mpirun and the ranks, which are
bound to cores): the kernel's RT throttling leaves the other tenants 5 % of each second,
so each short burst sees an almost quiet machine; a pause between runs gives the CPUs back.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

from hpceval.analysis.frame import group_codes, point_columns
from hpceval.analysis.loading import load_frame
from hpceval.analysis.policy import StatisticPolicy, summarize_groups
from hpceval.store import open_store

SIZES = [0, 8, 1024, 65536, 1 << 20, 4 << 20]
OSU = Path("/work/ref/build-osu/libexec/osu-micro-benchmarks/mpi/pt2pt")
IMB = Path("/work/ref/build-imb/IMB-MPI1")
MPIRUN = ["mpirun", "--allow-run-as-root", "-np", "2", "--bind-to", "core"]
SUITE = f"""
name = "perf-pingpong"
description = "PingPong at the comparison's sizes, 1 s per point"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = {SIZES}
ranks = [2]
budget_s = 1.0
"""
_ROW = re.compile(r"^\s*(\d+)\s+([0-9.eE+-]+)\s*$")
_IMB_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s*$")


RT_PREFIX = ["chrt", "-f", "10"]
RT_PAUSE_S = 2.0
rt = False


def timed(argv: list[str]) -> tuple[str, float, float]:
    if rt:
        time.sleep(RT_PAUSE_S)
        argv = [*RT_PREFIX, *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{proc.stdout[-3000:]}")
    return proc.stdout, wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def osu_rows(out: str) -> dict[int, float]:
    return {int(m.group(1)): float(m.group(2)) for ln in out.splitlines() if (m := _ROW.match(ln))}


def imb_rows(out: str) -> dict[int, tuple[float, float]]:
    """#bytes -> (t[usec], Mbytes/sec) of IMB's PingPong table (Mbytes = 10^6 bytes)."""
    return {
        int(m.group(1)): (float(m.group(3)), float(m.group(4)))
        for ln in out.splitlines()
        if (m := _IMB_ROW.match(ln))
    }


def mpibench_rows(tmp: Path, suite: Path) -> tuple[dict[int, dict[str, float]], float, float]:
    """Per size: latency and bandwidth of the run by hpceval's policy, median and mean."""
    db = tmp / f"r{time.monotonic_ns()}.db"
    _, wall, cpu = timed([sys.executable, "-m", "hpceval", "run", "--suite", str(suite),
                          "--db", str(db)])  # fmt: skip
    with open_store(str(db)) as store:
        frame = load_frame(store, benchmark="mpibench")
    rows: dict[int, dict[str, float]] = {}
    by = ["platform", "origin", *point_columns(frame)]
    codes, first = group_codes(frame, by)
    for statistic in ("median", "mean"):
        summary = summarize_groups(frame, codes, first, by, StatisticPolicy(statistic))
        for i, key in enumerate(summary.keys.to_dict("records")):
            short = "lat" if key["metric"] == "latency" else "bw"
            rows.setdefault(int(key["size"]), {})[f"{short}_{statistic}"] = float(summary.value[i])
    return rows, wall, cpu


def ci(values: list[float]) -> str:
    if len(values) < 3:
        return "n/a"
    r = bootstrap((np.array(values),), np.median, confidence_level=0.95, method="percentile",
                  random_state=0).confidence_interval  # fmt: skip
    return f"[{r.low:.3f}, {r.high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rt", action="store_true", help="runs under chrt -f 10 (root)")
    args = parser.parse_args()
    global rt
    rt = args.rt
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    ratios: dict[tuple[str, str, int], list[float]] = {}
    cost: dict[str, list[tuple[float, float]]] = {}
    print(f"# load average at start: {os.getloadavg()}")
    print(f"# {'every run under ' + ' '.join(RT_PREFIX) + ' (SCHED_FIFO), ' if rt else ''}"
          f"ranks bound to cores ({' '.join(MPIRUN)}); OSU {OSU}; IMB {IMB}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        suite = tmp / "suite.toml"
        suite.write_text(SUITE)
        for r in range(args.rounds):
            own, *c = mpibench_rows(tmp, suite)
            cost.setdefault("mpibench (hpceval run)", []).append((c[0], c[1]))
            # Each reference with its own iteration counts (OSU: 10,000 / 1,000 above 8 KiB for
            # latency, 100 / 20 with a window of 64 for bandwidth; IMB: its iteration policy).
            osu_range = ["-m", f"0:{4 << 20}"]
            out, *c = timed([*MPIRUN, str(OSU / "osu_latency"), *osu_range])
            cost.setdefault("osu_latency", []).append((c[0], c[1]))
            lat = osu_rows(out)
            out, *c = timed([*MPIRUN, str(OSU / "osu_bw"), *osu_range])
            cost.setdefault("osu_bw", []).append((c[0], c[1]))
            bw = osu_rows(out)
            out, *c = timed([*MPIRUN, str(IMB), "PingPong", "-msglog", "0:22"])
            cost.setdefault("IMB PingPong", []).append((c[0], c[1]))
            imb = imb_rows(out)
            print(f"round {r + 1}")
            for size in SIZES:
                o = own.get(size, {})
                imb_t, imb_bw = imb.get(size, (0.0, 0.0))
                print(f"  {size:>8} B  latency µs: mpibench mean {o.get('lat_mean', 0):9.3f} "
                      f"median {o.get('lat_median', 0):9.3f} | osu_latency "
                      f"{lat.get(size, 0):9.3f} | IMB {imb_t:9.3f}")  # fmt: skip
                pairs = [("latency mean vs osu_latency", o.get("lat_mean"), lat.get(size)),
                         ("latency median vs osu_latency", o.get("lat_median"), lat.get(size)),
                         ("latency mean vs IMB", o.get("lat_mean"), imb_t),
                         ("latency median vs IMB", o.get("lat_median"), imb_t)]  # fmt: skip
                if size:
                    print(f"  {'':>8}    bandwidth MB/s: mpibench n/mean(t) "
                          f"{o.get('bw_mean', 0):9.0f} n/median(t) {o.get('bw_median', 0):9.0f}"
                          f" | osu_bw {bw.get(size, 0):9.0f} | IMB {imb_bw:9.0f}")  # fmt: skip
                    pairs.append(("bandwidth n/mean(t) vs IMB", o.get("bw_mean"), imb_bw))
                    pairs.append(("bandwidth n/median(t) vs IMB", o.get("bw_median"), imb_bw))
                    pairs.append(("bandwidth n/mean(t) vs osu_bw", o.get("bw_mean"), bw.get(size)))
                    pairs.append(("bandwidth n/median(t) vs osu_bw", o.get("bw_median"),
                                  bw.get(size)))  # fmt: skip
                for label, mine, theirs in pairs:
                    if mine and theirs:
                        ratios.setdefault((label, "", size), []).append(mine / theirs)
    print(f"# load average at end: {os.getloadavg()}")
    print("\n# wall and CPU seconds per run (median over rounds)")
    for tool, runs in cost.items():
        print(f"{tool:24s} wall {statistics.median(w for w, _ in runs):6.1f} s  "
              f"cpu {statistics.median(c for _, c in runs):6.1f} s")  # fmt: skip
    print("\n# ratio mpibench / reference: median over rounds, bootstrap 95 % CI; "
          "'in ±5 %' when the median is within 0.95-1.05")  # fmt: skip
    for (label, _, size), values in sorted(ratios.items(), key=lambda kv: (kv[0][0], kv[0][2])):
        mid = statistics.median(values)
        flag = "in ±5 %" if 0.95 <= mid <= 1.05 else "OUT"
        print(f"{label:34s} {size:>8} B  {mid:.3f}  {ci(values)}"
              f"  rounds {len(values)}  {flag}")  # fmt: skip


if __name__ == "__main__":
    main()
