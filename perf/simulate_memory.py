"""Memory bandwidth shared by a simulated node, and the class C speedup curves (issue 21).

--curves: NPB CG/FT/IS/MG class C projected on the ec2-cc1 and ec2-cc2 profiles over a
    list of rank counts (default 1, ppn, 8 x ppn, 512; a node's cores per node = ppn),
    one `hpceval simulate` per profile and kernel, every kernel with computation sampling
    and memory folding (and CG with 10 timed iterations) at every rank count, so that each
    curve comes from one build. Printed per case: the projected time, the speedup over 1
    rank and the efficiency, the memory stretch applied, and the wall time of the case's
    smpirun; per command its whole wall time. EC2-CC's published speedups are not in
    methodology section 5: the column says so. --collective NAME=ALGORITHM (repeatable)
    is passed to every `hpceval simulate` (an SMPI algorithm forced instead of the MPI
    library's; the table's last column names what each point forced). --repeat N replays
    each point N times (`hpceval simulate --repeat N`: SMPI times the computation on this
    host anew each time): the point is the median, shown with the replays' range, and the
    speedup is the ratio of medians (on this 2-core host two replays of MG class C at one
    rank, same calibration and op-rate fit, took 18.6 and 22.0 s).
--local: the intra-node check on this machine: STREAM (1 process and one per core) and
    NPB MG/CG/FT class A at 1 and 2 ranks measured on `local` (interleaved rounds), then
    projected from the `local` platform's own calibration (PingPong, single-rank time,
    STREAM) at 1 and 2 ranks; measured and projected 2-rank speedups side by side, with
    the stretch the model applied. The load average is printed: on this shared 2-core host
    two ranks compete with other jobs, so the measured speedups are the host's, not only
    the memory system's.

Usage: python perf/simulate_memory.py [--db FILE] [--curves] [--profiles ec2-cc1,ec2-cc2]
                                       [--kernels is,mg,ft,cg] [--ranks 1,8,64,512]
                                       [--collective alltoall=pair] [--repeat 3]
                                       [--local] [--rounds 3] [--table DB]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from hpceval.model import Origin
from hpceval.store import open_store

CORES = {"ec2-cc1": 8, "ec2-cc2": 16}
KERNELS = ("is", "mg", "ft", "cg")


def hpceval(*args: str) -> tuple[float, int]:
    """Run an hpceval command, echo its last lines; (wall time, exit status)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hpceval", *args], capture_output=True, text=True, check=False
    )
    wall = time.monotonic() - started
    lines = (done.stdout + done.stderr).strip().splitlines()
    print(f"$ hpceval {' '.join(args)}  [{wall:.1f} s, exit {done.returncode}; load "
          f"{os.getloadavg()[0]:.1f}]", flush=True)  # fmt: skip
    for line in [ln for ln in lines if ln.startswith(("memory:", "hpceval: error"))][-2:]:
        print("    " + line, flush=True)
    return wall, done.returncode


def curves(
    db: str, profiles: list[str], kernels: list[str], ranks: list[int] | None,
    forced: list[str], repeat: int = 1,
) -> None:  # fmt: skip
    for profile in profiles:
        ppn = CORES[profile]
        counts = ranks or [1, ppn, 8 * ppn, 512]
        for kernel in kernels:
            extra = ["--iterations", "10"] if kernel == "cg" else []
            sampled = [] if kernel == "is" else ["--sampling"]  # IS samples nothing
            folded = ["--folding"] if kernel in ("cg", "mg", "ft") else []
            wall, status = hpceval(
                "simulate", "--profile", profile, "--bench", f"npb.{kernel}", "--class", "C",
                "--ranks", ",".join(str(r) for r in counts), *sampled, *folded, *extra,
                "--time-limit", "3000", "--db", db,
                *(arg for text in forced for arg in ("--collective", text)),
                *(["--repeat", str(repeat)] if repeat > 1 else []),
            )  # fmt: skip
            print(f"{profile} {kernel} C: whole command {wall:.0f} s wall, exit {status}",
                  flush=True)  # fmt: skip
    table(db)


def table(db: str) -> None:
    """The projected curves in a database: one row per (profile, kernel, ranks)."""
    with open_store(db, create=False) as store:
        rows = []
        for run in store.runs():
            if run.origin is not Origin.SIMULATED:
                continue
            record = run.suite_config.get("memory") or {}
            memory = {r["ranks"]: r for r in record.get("cases", [])}
            demand = record.get("demand") or {}
            if demand:  # the op rate the stretches rest on, and how sure it is
                samples = demand.get("samples") or [demand["mops_per_rank"]]
                print(f"run {run.id} {run.platform_name} npb {demand['kernel']}: rate "
                      f"{demand['mops_per_rank']:.5g} Mop/s per rank, {len(samples)} fit(s) "
                      f"{min(samples):.5g}-{max(samples):.5g}, spread "
                      + (f"{demand.get('spread', 0.0):.1%}" if len(samples) > 1 else
                         "unknown (one fit, before the repeated fit)"))  # fmt: skip
            walls = {e.case_key: (e.ended or e.started) - e.started
                     for e in store.executions(run.id)}  # fmt: skip
            calibration = int((run.suite_config.get("calibration") or {}).get("id", 0))
            forced = (run.suite_config.get("simulate") or {}).get("collectives", {})
            algorithms = ",".join(f"{k}={v}" for k, v in sorted(forced.items()))
            # (kernel, class, ranks) -> [(time, smpirun wall)], one per replay (--repeat)
            replays: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
            for sm in store.measurements(run.id, metric="time"):
                m = sm.measurement
                if m.benchmark != "npb":
                    continue
                key = (str(m.parameters["kernel"]), str(m.parameters["class"]),
                       int(m.parameters["ranks"]))  # fmt: skip
                replays.setdefault(key, []).append(
                    (m.value, walls.get(sm.case_key, float("nan"))))
            for (kernel, class_name, ranks), found in replays.items():
                times = [t for t, _ in found]
                rows.append(Point(run.platform_name, kernel, class_name, ranks,
                                  statistics.median(times), min(times), max(times),
                                  len(times), memory.get(ranks, {}).get("stretch", 1.0),
                                  sum(w for _, w in found), run.id, calibration,
                                  algorithms or "library's"))  # fmt: skip
    print_curves(rows)


class Point(NamedTuple):
    profile: str
    kernel: str
    class_name: str
    ranks: int
    time_s: float  # the median of the point's replays
    low_s: float
    high_s: float
    replays: int
    stretch: float
    wall_s: float  # every replay's smpirun together
    run: int
    calibration: int
    collectives: str  # forced algorithms (--collective), or "library's"


def single_rank_base(point: Point, rows: list[Point]) -> Point | None:
    """The 1-rank projection a point's speedup is over: its own run's, else the latest run's
    on the same calibration (a 512-rank point projected alone), else none."""
    ones = [r for r in rows if r.ranks == 1 and r[:3] == point[:3]]
    same_run = [r for r in ones if r.run == point.run]
    same_calibration = [r for r in ones if r.calibration == point.calibration]
    found = same_run or same_calibration
    return max(found, key=lambda r: r.run) if found else None


def print_curves(rows: list[Point]) -> None:
    """Speedup over the projected single rank, efficiency, stretch and smpirun wall time per
    point; the run and calibration of the point and of its base, so mixed runs show."""
    rows.sort()
    replayed = any(point.replays > 1 for point in rows)
    print(f"\n{'profile':9s} {'kernel':6s} {'ranks':>5s} {'time s':>9s} "
          + (f"{'replays: low-high':>21s} " if replayed else "")
          + f"{'speedup':>8s} {'eff.':>6s} {'stretch':>8s} {'wall s':>8s} {'run':>4s} "
          f"{'cal':>4s} {'base':>5s}  published (EC2-CC)         collectives")  # fmt: skip
    for point in rows:
        base = single_rank_base(point, rows)
        speedup = base.time_s / point.time_s if base else float("nan")
        spread = f"{point.replays}: {point.low_s:.4g}-{point.high_s:.4g}"
        print(f"{point.profile:9s} {point.kernel:6s} {point.ranks:5d} {point.time_s:9.3f} "
              + (f"{spread:>21s} " if replayed else "")
              + f"{speedup:8.2f} {speedup / point.ranks:6.2f} {point.stretch:8.3f} "
              f"{point.wall_s:8.1f} {point.run:4d} {point.calibration:4d} "
              f"{base.run if base else '-':>5}  none in methodology §5  "
              f"{point.collectives}")  # fmt: skip


def suite(path: Path, kernels: list[str]) -> Path:
    path.write_text(
        'name = "memsim-local"\ndescription = "perf/simulate_memory.py --local"\n'
        '[[benchmark]]\nname = "mpibench"\npatterns = ["pingpong"]\nsizes = "0..4MiB"\n'
        "ranks = [2]\nbudget_s = 0.3\n"
        '[[benchmark]]\nname = "stream"\nranks = [1, "per_core"]\n'
        f'[[benchmark]]\nname = "npb"\nkernels = {kernels!r}\nclasses = ["A"]\n'
        "ranks = [1, 2]\n".replace("'", '"')
    )
    return path


def local(db: str, work: Path, rounds: int) -> None:
    kernels = ["mg", "cg", "ft"]
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    for _ in range(rounds):
        hpceval("run", "--platform", "local", "--suite", str(suite(work / "s.toml", kernels)),
                "--db", db)  # fmt: skip
    for kernel in kernels:
        hpceval("simulate", "--platform", "local", "--bench", f"npb.{kernel}", "--class", "A",
                "--ranks", "1,2", "--ppn", "2", "--db", db)  # fmt: skip
    print(f"# load average at end: {os.getloadavg()}", flush=True)
    local_table(db)


def local_table(db: str) -> None:
    with open_store(db, create=False) as store:
        measured: dict[tuple[str, int], list[float]] = {}
        projected: dict[tuple[str, int], float] = {}
        stretches: dict[tuple[str, int], float] = {}
        stream: dict[int, list[float]] = {}
        for run in store.runs():
            memory = {r["ranks"]: r["stretch"] for r in (run.suite_config.get("memory") or {}
                                                         ).get("cases", [])}  # fmt: skip
            for sm in store.measurements(run.id):
                m, p = sm.measurement, sm.measurement.parameters
                if m.benchmark == "stream" and m.metric == "triad_bandwidth":
                    stream.setdefault(int(p["ranks"]), []).append(m.value)
                if m.benchmark != "npb" or m.metric != "time":
                    continue
                key = (str(p["kernel"]), int(p["ranks"]))
                if m.origin is Origin.SIMULATED:
                    projected[key] = m.value
                    stretches[key] = memory.get(key[1], 1.0)
                else:
                    measured.setdefault(key, []).append(m.value)
    for ranks, values in sorted(stream.items()):
        print(f"STREAM Triad, {ranks} process(es): median {statistics.median(values):.0f} MB/s "
              f"over {len(values)} run(s) {sorted(round(v) for v in values)}")  # fmt: skip
    if 1 in stream and 2 in stream:
        two, one = statistics.median(stream[2]), statistics.median(stream[1])
        print(f"STREAM 2/1 processes: {two / one:.2f}")
    print(f"{'kernel':6s} {'measured 1':>10s} {'measured 2':>10s} {'speedup':>8s} "
          f"{'proj. 1':>9s} {'proj. 2':>9s} {'speedup':>8s} {'stretch@2':>9s}")  # fmt: skip
    for kernel in sorted({k for k, _ in measured}):
        m1, m2 = (statistics.median(measured.get((kernel, r), [float("nan")])) for r in (1, 2))
        p1, p2 = projected.get((kernel, 1), float("nan")), projected.get((kernel, 2), float("nan"))
        print(f"{kernel:6s} {m1:10.3f} {m2:10.3f} {m1 / m2:8.2f} {p1:9.3f} {p2:9.3f} "
              f"{p1 / p2:8.2f} {stretches.get((kernel, 2), float('nan')):9.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default=None)
    parser.add_argument("--curves", action="store_true")
    parser.add_argument("--profiles", default="ec2-cc1,ec2-cc2")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--ranks", default=None, help="rank counts (default 1,ppn,8ppn,512)")
    parser.add_argument("--collective", action="append", default=[],
                        help="NAME=ALGORITHM, passed to hpceval simulate")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1,
                        help="--curves: replays of each point (hpceval simulate --repeat)")
    parser.add_argument("--local", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--table", metavar="DB", help="print the curves of a database")
    args = parser.parse_args()
    if args.table:
        table(args.table)
        local_table(args.table)
        return
    work = Path(tempfile.mkdtemp(prefix="hpceval-memsim-"))
    db = args.db or str(work / "bench.db")
    print(f"# database {db}", flush=True)
    if args.curves:
        ranks = [int(r) for r in args.ranks.split(",")] if args.ranks else None
        curves(db, args.profiles.split(","), args.kernels.split(","), ranks, args.collective,
               args.repeat)
    if args.local:
        local(db, work, args.rounds)


if __name__ == "__main__":
    main()
