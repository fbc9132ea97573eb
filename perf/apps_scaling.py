"""The studies' applications on this machine (issue 19): lattice QCD (hpceval's `lqcd`, and
MILC's `su3_rmd` when a MILC tree is given) at 1 and 2 ranks, and the BioBench tools at 1
and 2 threads (single-threaded tools at 1), each through a real `hpceval run`.

Rounds: each round is one `hpceval run` of the whole suite, so the 1- and 2-rank (or
thread) cases of a round are adjacent in time; the 2/1 ratio is paired round by round.
Printed per case: the median figure over the rounds with a 95 % bootstrap CI, the time,
and the 2/1 scaling ratio with its CI; for lqcd also GFLOP/s, the halo bytes and global
sums per CG iteration against what the 4-D decomposition implies, and the share of the CG
spent communicating. The machine is shared: medians, and the load average is printed.

    .venv/bin/python perf/apps_scaling.py [--rounds 3] [--lattice 16] [--size small]
        [--milc-source /work/ref/milc] [--milc-lattice 8] [--only lqcd,milc]
        [--platform local --platform FILE ...]

With several platforms (e.g. one whose launcher env sets OMPI_MCA_mpi_yield_when_idle=1),
each round runs the suite on each platform in turn.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from hpceval.benchmarks.lqcd.decomposition import decompose, parse_lattice
from hpceval.store import open_store
from java_vs_c import median_ci  # perf/ is the script's directory: its first path

THREADED = ("blastn", "blastp", "hmmer")
SINGLE = ("clustalw", "mummer", "velvet")


def suite_text(args: argparse.Namespace) -> str:
    only = set(args.only.split(",")) if args.only else {"lqcd", "biobench", "milc"}
    parts = ['name = "apps-scaling"', 'description = "perf/apps_scaling.py"']
    if "lqcd" in only:
        parts += ["[[benchmark]]", 'name = "lqcd"', f'lattice = ["{args.lattice}"]',
                  "ranks = [1, 2]"]  # fmt: skip
    if "biobench" in only:
        parts += [
            "[[benchmark]]", 'name = "biobench"', f"tool = {list(THREADED)!r}".replace("'", '"'),
            f'size = "{args.size}"', "threads = [1, 2]",
            "[[benchmark]]", 'name = "biobench"', f"tool = {list(SINGLE)!r}".replace("'", '"'),
            f'size = "{args.size}"',
        ]  # fmt: skip
    if args.milc_source and "milc" in only:
        parts += [
            "[[benchmark]]", 'name = "milc"',
            f'lattice = ["{args.milc_lattice}"]', "ranks = [1, 2]", "trajectories = 1",
        ]  # fmt: skip
    return "\n".join(parts) + "\n"


def fmt(triple: tuple[float, float, float], digits: int = 3) -> str:
    m, lo, hi = triple
    return f"{m:.{digits}g} [{lo:.{digits}g}, {hi:.{digits}g}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lattice", default="16")
    parser.add_argument("--size", default="small", choices=("tiny", "small", "moderate"))
    default_milc = "/work/ref/milc" if Path("/work/ref/milc/ks_imp_dyn").is_dir() else ""
    parser.add_argument("--milc-source", default=default_milc)
    parser.add_argument("--milc-lattice", default="8")
    parser.add_argument("--only", default="", help="comma list of lqcd, biobench, milc")
    parser.add_argument("--platform", action="append", default=[])
    args = parser.parse_args()
    platforms = args.platform or ["local"]

    work = Path(tempfile.mkdtemp(prefix="apps-scaling-"))
    suite = work / "suite.toml"
    suite.write_text(suite_text(args))
    db = work / "r.db"
    loads = []
    for r in range(args.rounds):
        for platform in platforms:
            loads.append(os.getloadavg()[0])
            milc = ["--source", f"milc={args.milc_source}"] if args.milc_source else []
            proc = subprocess.run(
                [sys.executable, "-m", "hpceval", "run", "--suite", str(suite), "--db", str(db),
                 "--platform", platform, *milc],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            print(f"# round {r + 1} on {platform}: exit {proc.returncode}, load avg "
                  f"{loads[-1]:.1f}", flush=True)  # fmt: skip
            if proc.returncode != 0:
                print(proc.stdout[-3000:], proc.stderr[-2000:])
    loads.append(os.getloadavg()[0])
    store = open_store(str(db))
    # (benchmark, what, size label, side) -> metric -> values by round
    series: dict[tuple[str, str, str, int], dict[str, dict[int, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    details: dict[tuple[str, str, str, int], dict[str, object]] = {}
    for run in store.runs():
        for sm in store.measurements(run.id):
            m = sm.measurement
            p = m.parameters
            what = str(p.get("tool") or p.get("lattice"))
            side = int(p.get("ranks", 1)) * int(p.get("threads_per_rank", 1))
            key = (run.platform_name, m.benchmark, what, side)
            series[key][m.metric][run.id] = m.value
            per_cpu = m.details.get("gflops_per_cpu_s")
            if m.metric == "gflops" and isinstance(per_cpu, float):
                series[key]["gflops_per_cpu_s"][run.id] = per_cpu
            details[key] = dict(m.details)
    print(f"# {args.rounds} rounds; load average {min(loads):.1f}-{max(loads):.1f} on "
          f"{os.cpu_count()} cores; medians over rounds [95 % bootstrap CI]")  # fmt: skip
    main_metric = {"lqcd": "cg_rate", "milc": "cg_rate", "biobench": "throughput"}
    time_metric = {"lqcd": "cg_time", "milc": "time", "biobench": "time"}
    for (platform, bench, what, side), metrics in sorted(series.items()):
        figure = metrics[main_metric[bench]]
        times = list(metrics[time_metric[bench]].values())
        unit = "ranks" if bench != "biobench" else "threads"
        line = (f"{platform} {bench:8s} {what:9s} {unit}={side}"
                f"  {main_metric[bench]} {fmt(median_ci(list(figure.values())))}"
                f"  time {fmt(median_ci(times))} s")  # fmt: skip
        base = series.get((platform, bench, what, 1), {}).get(main_metric[bench], {})
        if side == 2 and base:
            ratios = [figure[r] / base[r] for r in figure if r in base]
            line += f"  2/1 {fmt(median_ci(ratios))}"
        print(line)
        if bench == "lqcd":
            d = decompose(parse_lattice(what), side)
            gflops = fmt(median_ci(list(metrics["gflops"].values())))
            per_cpu = list(metrics.get("gflops_per_cpu_s", {}).values())
            if per_cpu:
                gflops += f" (per CPU second of all ranks: {fmt(median_ci(per_cpu))})"
            print(f"         grid {d.grid}: GFLOP/s {gflops}"
                  f", halo bytes/iteration {int(np.median(list(metrics['halo_bytes'].values())))}"
                  f" (expected {d.halo_bytes_per_iteration()}), allreduces/iteration "
                  f"{np.median(list(metrics['allreduces'].values())):g} (expected 2), comm share "
                  f"{fmt(median_ci(list(metrics['comm_share'].values())), 2)}")  # fmt: skip
        if bench == "milc":
            print(f"         plaquettes {details[(platform, bench, what, side)].get('plaquettes')}")
    print(f"# database: {db}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
