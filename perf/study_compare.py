"""The study of issue 23: `local` ("bare metal") against an emulated 1 GbE cluster ("the
cloud", default `netns-4x1-1gbe`), needs root.

1. Runs perf/study_suite.toml (PingPong 8 B-4 MiB, Allreduce, NPB IS/CG/FT class A on 2 and
   4 ranks) `--repeat` times on each platform, interleaved (local, cluster, local, ...),
   each repetition a run of its own, into one database.
2. Prints `hpceval compare -b local` (default placement mode) and, beside its headline per
   category, the same overhead computed by hand from the runs' stored values (what `show`
   prints: each run's statistic of each point), the geometric mean over the category's
   points of (mean over runs on the cluster) / (mean over runs on local), with a bootstrap
   95 % interval over the runs; they must agree within the intervals.
3. The report's findings summary (hpceval.report.findings on the same database).
4. The shaped link: inter-node PingPong bandwidth (size / one-way time) at 4 KiB-4 MiB
   against the configured rate, per run, and `--bursts`: the same PingPong on the cluster
   with the tbf bucket set to each given size (bytes; "auto" = the default), interleaved.

Usage: .venv/bin/python perf/study_compare.py [--repeat 3] [--db PATH] [--analyse-only]
                                              [--bursts auto,3028,62500]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "perf" / "study_suite.toml"
HPCEVAL = [sys.executable, "-m", "hpceval"]
PINGPONG = """
name = "study-link"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = ["4KiB", "16KiB", "64KiB", "256KiB", "1MiB", "4MiB"]
ranks = [2]
ranks_per_node = [1]
budget_s = 0.5
"""


def hpceval(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "220"}  # rich tables at full width in the log
    proc = subprocess.run([*HPCEVAL, *args], capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
        raise SystemExit(f"hpceval {' '.join(args)}: exit {proc.returncode}")
    return proc.stdout


def run_study(db: Path, cluster: str, repeat: int) -> None:
    for rep in range(1, repeat + 1):
        for platform in ("local", cluster):
            print(f"repetition {rep}: {platform}", flush=True)
            hpceval("run", "--platform", platform, "--suite", str(SUITE), "--db", str(db))


def by_hand(db: Path, cluster: str) -> dict[str, tuple[float, float, float, int]]:
    """Per category: geometric mean of local/cluster performance from per-run values, with
    a bootstrap interval over runs (resampling each platform's runs)."""
    import pandas as pd

    from hpceval.analysis.categories import Category, categorize
    from hpceval.campaign import load_platform
    from hpceval.catalog import SUMMARY_METRICS
    from hpceval.store import open_store
    from hpceval.units import HIGHER_IS_BETTER

    store = open_store(str(db), create=False, read_only=True)
    defaults = {p: load_platform(p).config for p in ("local", cluster)}
    values: dict[tuple[str, tuple[object, ...]], dict[int, list[float]]] = defaultdict(dict)
    meta: dict[tuple[object, ...], dict[str, object]] = {}
    for run in store.runs():
        config = defaults[run.platform_name]
        for sm in store.measurements(run.id):
            m = sm.measurement
            if m.metric not in SUMMARY_METRICS.get(m.benchmark, (m.metric,)):
                continue
            p = dict(m.parameters)
            want = config.default_placement(int(p["ranks"]), int(p.get("threads_per_rank", 1)))
            if (p.get("nodes"), p.get("ranks_per_node")) != (want.nodes, want.ranks_per_node):
                continue
            implied = "inter-node" if want.nodes > 1 else "intra-node"
            if p.get("pattern") == "pingpong" and p.get("pair") != implied:
                continue
            facets = ("nodes", "ranks_per_node", "binding", "oversubscribed", "pair")
            work = (m.benchmark, m.metric, m.unit,
                    *sorted((k, v) for k, v in p.items() if k not in facets))  # fmt: skip
            # The policy's statistic as `show` prints it: the median of a run's samples (NPB:
            # one sample per repetition point, all of a run's pooled).
            values[(run.platform_name, work)].setdefault(run.id, []).extend(m.samples or (m.value,))
            if run.platform_name == cluster:  # the category follows the platform's side
                meta[work] = {"benchmark": m.benchmark, "metric": m.metric, **p}
    works = [w for w in meta if ("local", w) in values and (cluster, w) in values]
    frame = pd.DataFrame([meta[w] for w in works])
    cats: list[str] = (
        [str(c) for c in np.asarray(list(Category))[categorize(frame)]] if works else []
    )
    out: dict[str, tuple[float, float, float, int]] = {}
    rng = np.random.default_rng(0)
    for category in sorted({str(c) for c in cats}):
        chosen = [w for w, c in zip(works, cats, strict=True) if str(c) == category]
        runs = {
            side: [
                np.asarray([_run_value(v, str(w[2])) for v in values[(side, w)].values()])
                for w in chosen
            ]
            for side in ("local", cluster)
        }
        higher = [HIGHER_IS_BETTER[str(w[2])] for w in chosen]

        def geomean(pick: dict[str, list[np.ndarray]], higher: list[bool] = higher) -> float:
            logs = []
            for i, hib in enumerate(higher):
                ratio = np.median(pick[cluster][i]) / np.median(pick["local"][i])
                logs.append(math.log(ratio if hib else 1 / ratio))
            return math.exp(float(np.mean(logs)))

        point = geomean(runs)
        replicates = []
        for _ in range(2000):
            pick = {
                side: [a[rng.integers(0, len(a), len(a))] for a in arrays]
                for side, arrays in runs.items()
            }
            replicates.append(geomean(pick))
        low, high = np.percentile(replicates, [2.5, 97.5])
        out[category] = (point, float(low), float(high), len(chosen))
    return out


def _run_value(samples: list[float], unit: str) -> float:
    """A run's median, a rate's as the amount over the median time (the policy's rule)."""
    from hpceval.units import HIGHER_IS_BETTER

    if HIGHER_IS_BETTER[unit]:
        return float(1 / np.median(1 / np.asarray(samples)))
    return float(np.median(samples))


def link_bandwidth(db: Path, cluster: str) -> None:
    from hpceval.campaign import load_platform
    from hpceval.clusters.netns import link_rate
    from hpceval.store import open_store

    config = load_platform(cluster).config
    rate = link_rate(config.launcher.options()["link"])
    if rate is None:
        print(f"{cluster}: links not shaped, no configured rate")
        return
    limit = rate / 8 / 1e6
    store = open_store(str(db), create=False, read_only=True)
    per_size: dict[int, list[float]] = defaultdict(list)
    for run in store.runs():
        if run.platform_name != cluster:
            continue
        for sm in store.measurements(run.id):
            m = sm.measurement
            p = m.parameters
            inter = p.get("pattern") == "pingpong" and p.get("pair") == "inter-node"
            if inter and m.metric == "latency" and int(str(p["size"])) >= 4096:
                # The policy's rate: bytes over the run's median one-way time (µs -> MB/s).
                size = int(str(p["size"]))
                per_size[size].append(size / float(np.median(m.samples or (m.value,))))
    print(
        f"\nshaped link of {cluster}: PingPong bandwidth (size / median one-way time) "
        f"/ configured {limit:.0f} MB/s"
    )
    for size in sorted(per_size):
        v = per_size[size]
        print(
            f"  {size:>8} B  median {np.median(v):7.1f} MB/s  ratio {np.median(v) / limit:5.2f}"
            f"  (runs {', '.join(f'{x:.0f}' for x in v)})"
        )


def bursts(cluster: str, sizes: list[str], repeat: int, work: Path) -> None:
    """Inter-node PingPong with each tbf bucket, interleaved `repeat` times."""
    from hpceval.campaign import load_platform

    config = load_platform(cluster).config
    rate = config.launcher.options()["link"]
    suite = work / "link.toml"
    suite.write_text(PINGPONG)
    results: dict[str, dict[int, list[float]]] = {b: defaultdict(list) for b in sizes}
    from hpceval.store import open_store

    for rep in range(repeat):
        for burst in sizes:
            platform = work / f"burst-{burst}.toml"
            value = '"auto"' if burst == "auto" else burst
            platform.write_text(
                f'name = "{cluster}-burst-{burst}"\nnodes = 2\ncores_per_node = 1\n'
                f'[launcher]\nkind = "netns"\nmpirun = "mpirun"\nmpicc = "mpicc"\n'
                f'oversubscribe = true\nlink = "{rate}"\nburst = {value}\n'
            )
            db = work / f"burst-{burst}-{rep}.db"
            hpceval("run", "--platform", str(platform), "--suite", str(suite), "--db", str(db))
            store = open_store(str(db), create=False, read_only=True)
            for sm in store.measurements(store.runs()[-1].id):
                if sm.measurement.metric == "bandwidth":
                    size = int(str(sm.measurement.parameters["size"]))
                    results[burst][size].append(sm.measurement.value)
    limit = 1e9 / 8 / 1e6 if rate == "1GbE" else float("nan")
    print(f"\ntbf bucket sizes, PingPong bandwidth MB/s (median of {repeat}; link {rate})")
    print("  size      " + "".join(f"{b:>14}" for b in sizes))
    for size in sorted(results[sizes[0]]):
        row = "".join(
            f"{np.median(results[b][size]):8.1f} ({np.median(results[b][size]) / limit:.2f})"
            for b in sizes
        )
        print(f"  {size:>8}  {row}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cluster", default="netns-4x1-1gbe")
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--analyse-only", action="store_true")
    parser.add_argument("--bursts", default="", help="comma-separated tbf buckets to compare")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="study-"))
    db = args.db or work / "study.db"
    if not args.analyse_only:
        run_study(db, args.cluster, args.repeat)
    print(hpceval("compare", "-b", "local", "--db", str(db), "--allow-mixed-origins",
                  "--no-cache"))  # fmt: skip
    print("by hand (each run's median as `show` prints it, median over runs; default placements):")
    print(f"  {'category':<26} {'points':>6} {'performance':>11}  95% CI over runs")
    for category, (point, low, high, n) in by_hand(db, args.cluster).items():
        print(f"  {category:<26} {n:>6} {point:>11.4f}  [{low:.4f}, {high:.4f}]")
    from hpceval.report.builder import findings_text

    print("\nreport findings summary:")
    print(findings_text(str(db), "local"))
    link_bandwidth(db, args.cluster)
    if args.bursts:
        bursts(args.cluster, args.bursts.split(","), args.repeat, work)


if __name__ == "__main__":
    main()
