"""The token-bucket link model against factors alone, on the emulated cluster (issue 21).

Projects NPB class A at --ranks (2: one emulated node each, a core each) on netns-4x1-1gbe
from a database its measurements are in (`perf/simulate.py --netns-validate` writes one), with
the token-bucket link model (hpceval.simulate.token_bucket) and without it
(`--no-token-bucket`), interleaved (bucket, plain, plain, bucket, ...) and recalibrated every
time: SMPI replays the ranks' computation for real, so the core-speed calibration and the
projected time move with this host's noise, and one projection of each is no comparison.
Prints, per kernel, the measured time (median of the emulated runs' samples), each model's
median projection with its range and error, and the calibrations' worst PingPong residual.
With --peaks G1,G2 the bucket model is also projected with those peaks (Gbit/s, the shaped
link's speed while its bucket holds tokens; assumed 16 otherwise): how much the assumption
moves the figures.

Usage: python perf/simulate_token_bucket.py --measured-db DB [--rounds 3] [--ranks 2]
                                            [--kernels cg,ft,is,mg] [--peaks 8,40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpceval.model import Origin
from hpceval.store import open_store

PLATFORM = "netns-4x1-1gbe"


def project(db: Path, kernel: str, ranks: int, extra: list[str]) -> tuple[float, int]:
    """One `hpceval simulate` (recalibrated): its wall time and exit status."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hpceval", "simulate", "--platform", PLATFORM, "--bench",
         f"npb.{kernel}", "--class", "A", "--ranks", str(ranks), "--ppn", "1",
         "--accept-curve", "--recalibrate", *extra, "--db", str(db)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stdout + done.stderr).strip().splitlines()[-1:]
        print(f"  {kernel} {' '.join(extra) or 'bucket'}: exit {done.returncode}: {last}")
    return time.monotonic() - started, done.returncode


def npb_times(db: Path, origin: Origin, ranks: int) -> dict[str, list[float]]:
    """kernel -> every time of `origin` at `ranks` ranks, class A (samples pooled)."""
    out: dict[str, list[float]] = {}
    with open_store(str(db), create=False) as store:
        for sm in store.measurements(benchmark="npb", metric="time"):
            m, p = sm.measurement, sm.measurement.parameters
            if m.origin is origin and p.get("ranks") == ranks and p.get("class") == "A":
                out.setdefault(str(p["kernel"]), []).extend(list(m.samples) or [m.value])
    return out


def worst_residuals(db: Path) -> list[float]:
    with open_store(str(db), create=False) as store:
        return [row.max_residual for row in store.calibrations() if row.converged]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--measured-db", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--kernels", default="cg,ft,is,mg")
    parser.add_argument("--peaks", default="", help="Gbit/s, comma separated")
    args = parser.parse_args()
    kernels = args.kernels.split(",")
    work = Path(tempfile.mkdtemp(prefix="hpceval-bucket-"))
    models: dict[str, list[str]] = {"bucket": [], "plain": ["--no-token-bucket"]}
    for peak in filter(None, args.peaks.split(",")):
        models[f"peak {peak} Gbit/s"] = ["--bucket-peak-gbps", peak]
    dbs = {}
    for name in models:
        dbs[name] = work / f"{name.replace(' ', '-').replace('/', '')}.db"
        shutil.copy(args.measured_db, dbs[name])
    walls: dict[str, list[float]] = {name: [] for name in models}
    failed: dict[str, int] = {name: 0 for name in models}
    for round_no in range(args.rounds):
        order = list(models) if round_no % 2 == 0 else list(reversed(models))
        for kernel in kernels:
            for name in order:
                wall, rc = project(dbs[name], kernel, args.ranks, models[name])
                walls[name].append(wall)
                failed[name] += rc != 0
        print(f"round {round_no + 1} of {args.rounds} done")
    measured = {k: statistics.median(v) for k, v in
                npb_times(Path(args.measured_db), Origin.EMULATED, args.ranks).items()}  # fmt: skip
    projected = {name: npb_times(db, Origin.SIMULATED, args.ranks) for name, db in dbs.items()}
    print(f"\nNPB class A, {args.ranks} ranks on {PLATFORM}: measured (emulated) vs projected; "
          f"{args.rounds} interleaved projections per model, each recalibrated")  # fmt: skip
    header = f"{'kernel':6s} {'measured s':>10s}"
    for name in models:
        header += f" | {name + ': median [min, max]':>34s} {'error':>7s}"
    print(header)
    for kernel in kernels:
        line = f"{kernel:6s} {measured.get(kernel, float('nan')):10.4g}"
        for name in models:
            times = projected[name].get(kernel, [])
            if not times or kernel not in measured:
                line += f" | {'-':>34s} {'-':>7s}"
                continue
            mid = statistics.median(times)
            span = f"{mid:.4g} [{min(times):.4g}, {max(times):.4g}] n={len(times)}"
            line += f" | {span:>34s} {(mid - measured[kernel]) / measured[kernel]:+7.1%}"
        print(line)
    for name in models:
        residuals = worst_residuals(dbs[name]) or [float("nan")]
        print(f"{name}: {failed[name]} projections failed; calibrations' worst residual "
              f"{min(residuals):.1%}-{max(residuals):.1%}; "
              f"wall {statistics.median(walls[name]):.1f} s per projection (median)")  # fmt: skip


if __name__ == "__main__":
    main()
