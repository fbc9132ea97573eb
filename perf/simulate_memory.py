"""Memory bandwidth shared by a simulated node, and the class C speedup curves (issue 21).

--curves: NPB CG/FT/IS/MG class C projected on the ec2-cc1 and ec2-cc2 profiles over a
    list of rank counts (default 1, ppn, 8 x ppn, 512; a node's cores per node = ppn),
    one `hpceval simulate` per profile and kernel, every kernel with computation sampling
    and memory folding (and CG with 10 timed iterations) at every rank count, so that each
    curve comes from one build. Printed per case: the projected time, the speedup over 1
    rank and the efficiency, the memory stretch applied, and the wall time of the case's
    smpirun; per command its whole wall time. EC2-CC's published speedups are not in
    methodology section 5: the column says so.
--local: the intra-node check on this machine: STREAM (1 process and one per core) and
    NPB MG/CG/FT class A at 1 and 2 ranks measured on `local` (interleaved rounds), then
    projected from the `local` platform's own calibration (PingPong, single-rank time,
    STREAM) at 1 and 2 ranks; measured and projected 2-rank speedups side by side, with
    the stretch the model applied. The load average is printed: on this shared 2-core host
    two ranks compete with other jobs, so the measured speedups are the host's, not only
    the memory system's.

Usage: python perf/simulate_memory.py [--db FILE] [--curves] [--profiles ec2-cc1,ec2-cc2]
                                       [--kernels is,mg,ft,cg] [--ranks 1,8,64,512]
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


def curves(db: str, profiles: list[str], kernels: list[str], ranks: list[int] | None) -> None:
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
            memory = {r["ranks"]: r for r in (run.suite_config.get("memory") or {}).get(
                "cases", [])}  # fmt: skip
            walls = {e.case_key: (e.ended or e.started) - e.started
                     for e in store.executions(run.id)}  # fmt: skip
            for sm in store.measurements(run.id, metric="time"):
                m = sm.measurement
                if m.benchmark != "npb":
                    continue
                ranks = int(m.parameters["ranks"])
                stretch = memory.get(ranks, {}).get("stretch", 1.0)
                rows.append((run.platform_name, str(m.parameters["kernel"]),
                             str(m.parameters["class"]), ranks, m.value, stretch,
                             walls.get(sm.case_key, float("nan")), run.id))  # fmt: skip
    rows.sort()
    print(f"\n{'profile':9s} {'kernel':6s} {'ranks':>5s} {'time s':>9s} {'speedup':>8s} "
          f"{'eff.':>6s} {'stretch':>8s} {'wall s':>8s}  published (EC2-CC)")  # fmt: skip
    base: dict[tuple[str, str, str], float] = {}
    for profile, kernel, class_name, ranks, value, stretch, wall, _ in rows:
        if ranks == 1:
            base[(profile, kernel, class_name)] = value
        one = base.get((profile, kernel, class_name))
        speedup = one / value if one else float("nan")
        print(
            f"{profile:9s} {kernel:6s} {ranks:5d} {value:9.3f} {speedup:8.2f} "
            f"{speedup / ranks:6.2f} {stretch:8.3f} {wall:8.1f}  not in methodology §5"
        )


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
    print(
        f"{'kernel':6s} {'measured 1':>10s} {'measured 2':>10s} {'speedup':>8s} "
        f"{'proj. 1':>9s} {'proj. 2':>9s} {'speedup':>8s} {'stretch@2':>9s}"
    )
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
        curves(db, args.profiles.split(","), args.kernels.split(","), ranks)
    if args.local:
        local(db, work, args.rounds)


if __name__ == "__main__":
    main()
