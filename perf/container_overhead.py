"""What a container costs on this machine: the `container-overhead` suite run on the host
platform and on its container twin, alternated run by run (host, container, host, ...), and
the paired overhead per point: for each round, container value / host value of that round's
runs; the median over the rounds with a bootstrap 95 % interval (scipy.stats.bootstrap).

Ratios are "container / host" of the stored value (a time or latency > 1: the container is
slower; a rate < 1: the container is slower); the "overhead" column turns both into the
container's loss (+5 %: 5 % worse). The machine is shared: the load average is printed
before each run.

    python perf/container_overhead.py --rounds 4 [--container podman-local] [--db FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hpceval.analysis.paired import median_interval, paired_ratios
from hpceval.history import Series, load_history
from hpceval.store import open_store

SUITE = "container-overhead"


def hpceval_run(platform: str, db: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "hpceval", "run", "-p", platform, "-s", SUITE, "--db", db],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"{platform}: hpceval run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def short_label(series: Series, all_series: list[Series]) -> str:
    """benchmark, metric, unit and the parameters that differ between the series of that
    benchmark (the placement, the same everywhere, is left out)."""
    same = [s for s in all_series if s.benchmark == series.benchmark]
    varying = {
        k for s in same for k, v in s.parameters if any((k, v) not in o.parameters for o in same)
    }
    params = " ".join(f"{k}={v}" for k, v in series.parameters if k in varying)
    return f"{series.benchmark} {series.metric} [{series.unit}] {params}".strip()


def paired(host: list[Series], container: list[Series]) -> list[tuple[str, Series, Series]]:
    by_key = {(s.benchmark, s.metric, s.unit, s.parameters): s for s in container}
    return [
        (short_label(h, host), h, by_key[(h.benchmark, h.metric, h.unit, h.parameters)])
        for h in host
        if (h.benchmark, h.metric, h.unit, h.parameters) in by_key
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--host", default="local")
    parser.add_argument("--container", default="podman-local")
    parser.add_argument("--db", help="database to add the runs to (default: a temporary one)")
    parser.add_argument(
        "--analyze-only", action="store_true", help="no new runs: pair those of --db"
    )
    args = parser.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp(prefix="hpceval-overhead-")) / "overhead.db")
    print(f"suite {SUITE}: {args.host} vs {args.container}, {args.rounds} rounds -> {db}")
    for r in range(0 if args.analyze_only else args.rounds):
        for platform in (args.host, args.container):
            load = os.getloadavg()[0]
            wall = hpceval_run(platform, db)
            print(f"round {r + 1} {platform}: {wall:.0f} s (load average {load:.1f})", flush=True)
    with open_store(db, create=False, read_only=True) as store:
        host = load_history(store, args.host)
        container = load_history(store, args.container)
    print(f"\n{'point':<72} {'host':>10} {'container':>10} {'ratio':>7} {'95% CI':>17} "
          f"{'overhead':>9} pairs")  # fmt: skip
    for label, h, c in paired(host, container):
        ratios = paired_ratios(c.values, h.values)
        n = len(ratios)
        ratio, low, high = median_interval(ratios)
        overhead = (1 / ratio - 1) if h.higher_is_better else (ratio - 1)
        print(f"{label[:72]:<72} {np.median(h.values):>10.4g} {np.median(c.values):>10.4g} "
              f"{ratio:>7.3f} [{low:>6.3f}, {high:>6.3f}] {overhead:>+8.1%} {n:>5}")  # fmt: skip


if __name__ == "__main__":
    main()
