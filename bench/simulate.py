"""Accuracy and speed of `hpceval simulate` (issue 7).

1. Measures, on this machine, mpibench PingPong (for the calibration), the NPB kernels at
   1, 2, 4 ranks (class A; B with --class-b, slow on 2 cores) and the collectives at 4 ranks,
   on the `local` platform (one node; 4 ranks on 2 cores are oversubscribed, and so is the
   simulated node: `--oversubscribe`).
2. Projects the same cases with `hpceval simulate --platform local` (calibrated on step 1's
   PingPong and on the kernel's single-rank time) and prints projected vs measured and the
   error per case.
3. Times the 512-rank CG class C projection (profile ec2-cc1, 64 simulated nodes x 8).

Measured mpibench times are compared by the median of their samples (the calibration's
target too): on this shared 2-core host a few preempted samples move the mean 10x and more.
A calibration that misses --tolerance (10 %) refuses to project: its row then shows "-".

Usage: python bench/simulate.py [--db FILE] [--class-b] [--skip-512] [--tolerance 0.1]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpceval.model import Origin
from hpceval.store import open_store

KERNELS = ("ep", "is", "cg", "mg", "ft")
COLLECTIVES = ("allreduce", "alltoall", "bcast")


def hpceval(*args: str) -> float:
    """Run an hpceval command, echo its last lines; return its wall time."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hpceval", *args], capture_output=True, text=True, check=False
    )
    wall = time.monotonic() - started
    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    print(f"$ hpceval {' '.join(args)}  [{wall:.1f} s, exit {done.returncode}]")
    for line in tail:
        print("    " + line)
    return wall


def suite(path: Path, classes: list[str]) -> Path:
    path.write_text(
        f"""name = "simulate-accuracy"
description = "bench/simulate.py: what the projections are checked against"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = "0..4MiB"
ranks = [2]
budget_s = 0.3
[[benchmark]]
name = "mpibench"
patterns = {list(COLLECTIVES)!r}
sizes = [8, 1024, 65536]
ranks = [4]
budget_s = 0.3
[[benchmark]]
name = "npb"
kernels = {list(KERNELS)!r}
classes = {classes!r}
ranks = [1, 2, 4]
""".replace("'", '"')
    )
    return path


def series(db: str, origin: Origin) -> dict[tuple[str, ...], float]:
    """(benchmark, what, class or size, ranks) -> value, latest run of this origin."""
    out: dict[tuple[str, ...], float] = {}
    with open_store(db, create=False) as store:
        for sm in store.measurements():
            m, p = sm.measurement, sm.measurement.parameters
            if m.origin is not origin:
                continue
            if m.benchmark == "npb" and m.metric == "time":
                key = ("npb", str(p["kernel"]), str(p["class"]), str(p["ranks"]))
            elif m.benchmark == "mpibench" and m.metric == "time":
                key = ("mpibench", str(p["pattern"]), str(p["size"]), str(p["ranks"]))
            else:
                continue
            out[key] = statistics.median(m.samples) if m.samples else m.value
    return out


def calibrations(db: str) -> None:
    with open_store(db, create=False) as store:
        for row in store.calibrations():
            state = "converged" if row.converged else "NOT converged"
            print(f"calibration {row.id} ({row.platform_name}): worst residual "
                  f"{row.max_residual:.1%}, {state}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default=None)
    parser.add_argument("--class-b", action="store_true")
    parser.add_argument("--skip-512", action="store_true")
    parser.add_argument("--tolerance", default="0.1", help="calibration tolerance")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hpceval-simulate-"))
    db = args.db or str(work / "bench.db")
    classes = ["A", "B"] if args.class_b else ["A"]
    hpceval("run", "--platform", "local", "--suite", str(suite(work / "s.toml", classes)),
            "--db", db)  # fmt: skip
    for kernel in KERNELS:
        for class_name in classes:
            hpceval("simulate", "--platform", "local", "--bench", f"npb.{kernel}",
                    "--class", class_name, "--ranks", "1,2,4", "--ppn", "4",
                    "--oversubscribe", "--tolerance", args.tolerance, "--db", db)  # fmt: skip
    for pattern in COLLECTIVES:
        hpceval("simulate", "--platform", "local", "--bench", "mpibench", "--pattern", pattern,
                "--sizes", "8,1024,65536", "--ranks", "4", "--ppn", "4", "--oversubscribe",
                "--tolerance", args.tolerance, "--db", db)  # fmt: skip
    calibrations(db)
    measured, simulated = series(db, Origin.MEASURED), series(db, Origin.SIMULATED)
    print(f"\n{'case':40s} {'measured':>12s} {'projected':>12s} {'error':>8s}")
    for key in sorted(measured):
        if key not in simulated:
            print(f"{' '.join(key):40s} {measured[key]:12.4g} {'-':>12s} {'-':>8s}")
            continue
        error = (simulated[key] - measured[key]) / measured[key]
        unit = "s" if key[0] == "npb" else "us"
        print(f"{' '.join(key) + ' (' + unit + ')':40s} {measured[key]:12.4g} "
              f"{simulated[key]:12.4g} {error:+8.1%}")  # fmt: skip
    if not args.skip_512:
        wall = hpceval("simulate", "--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "C",
                       "--ranks", "512", "--db", db, "--time-limit", "1800")  # fmt: skip
        print(f"\nCG class C, 512 ranks (ec2-cc1, 64 x 8), whole command: {wall:.1f} s wall "
              "(target < 600 s)")  # fmt: skip


if __name__ == "__main__":
    main()
