"""Where MPJ's PingPong time under Slurm comes from: the Slurm job, the shaped link, or waiting.

An earlier session measured MPJ Express (niodev) PingPong between the two nodes of the emulated
Slurm cluster at 2.2-2.7 ms under load, where the same pair on the netns cluster took tens of
µs. This script runs the same PingPong (2 ranks, one per node, `hpceval run` as a user would)
on five set-ups, interleaved round by round (the order alternates), and prints the median
latency per set-up with a 95 % bootstrap CI, the ratio to the Java run on the netns cluster
with the same link (paired by round), and the load average around each run:

- Java on the Slurm cluster (daemons started by the job as one step, MPJRun in the job);
- C (Open MPI, srun with PMIx) on the same Slurm cluster;
- Java on the netns cluster with the same link shaping (daemons started by hpceval);
- C (Open MPI over TCP, ranks yield when idle) on that netns cluster;
- Java on the netns cluster with unshaped links.

With --rt, every run is started under `chrt -f 20` (SCHED_FIFO, root): the netns ranks inherit
it from hpceval; for the Slurm runs the cluster's daemons are switched to SCHED_FIFO for the
run (the slurmds' job steps inherit it) and back afterwards. Run the script itself under
`chrt -f 20` on a loaded machine (its own start-up otherwise waits for a core). A latency
that drops under SCHED_FIFO is time spent waiting for a core, not in the link or the daemons.

Needs root and a Slurm cluster with shaped links up:
    hpceval cluster slurm up --name jsg --link 1GbE
    .venv/bin/python perf/mpj_slurm_pingpong.py --cluster jsg [--rounds 3] [--rt]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from scipy import stats

from hpceval.clusters import slurm_netns
from hpceval.store import open_store

SIZES = (0, 8, 1024)
# Above the SCHED_FIFO 10 of the NPB measurements sharing the machine (a rank that wakes
# up then takes a core at once): the PingPong ranks block between messages.
RT_PRIORITY = "20"
RT_PREFIX = ("chrt", "-f", RT_PRIORITY)


def suite(benchmark: str) -> str:
    lines = [
        f'name = "pp-{benchmark}"', "[[benchmark]]", f'name = "{benchmark}"',
        'patterns = ["pingpong"]', f"sizes = [{', '.join(map(str, SIZES))}]", "ranks = [2]",
        "ranks_per_node = [1]", 'binding = "none"', "budget_s = 0.5", "min_samples = 10",
        "max_samples = 1000",
    ]  # fmt: skip
    if benchmark == "mpibench-java":
        lines.append("jit_warmup_s = 0.5")
    return "\n".join(lines) + "\n"


def platform(name: str, kind: str, java: bool, cluster: str, link: str) -> str:
    lines = [f'name = "{name}"', "nodes = 2", "[launcher]", f'kind = "{kind}"']
    if kind == "slurm-netns":
        lines += [f'cluster = "{cluster}"', "poll_s = 0.2"]
    else:
        lines += [f'link = "{link}"', "yield_when_idle = true"]
    lines += ['starter = "mpjrun"', 'device = "niodev"'] if java else ["oversubscribe = true"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def slurmd_fifo(cluster: slurm_netns.SlurmNetnsCluster, on: bool) -> Iterator[None]:
    """The cluster's daemons (munged, slurmctld, the slurmds) under SCHED_FIFO while the block
    runs: the job steps the slurmds start inherit it, and the job is not held up by a loaded
    machine before it starts."""
    pids = [str(record["pid"]) for record in cluster.daemons.values()] if on else []
    for pid in pids:
        subprocess.run(["chrt", "-f", "-p", RT_PRIORITY, pid], check=True)
    try:
        yield
    finally:
        for pid in pids:
            subprocess.run(["chrt", "-o", "-p", "0", pid], check=False)


def run_once(platform_file: Path, suite_file: Path, db: Path, rt: bool) -> dict[int, float]:
    argv = [sys.executable, "-m", "hpceval", "run", "--platform", str(platform_file),
            "--suite", str(suite_file), "--db", str(db)]  # fmt: skip
    if rt:
        argv = [*RT_PREFIX, *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{platform_file.name}: hpceval run failed:\n{proc.stderr[-2000:]}")
    store = open_store(f"sqlite:///{db}")
    (run,) = store.runs()  # a database of its own per run
    return {
        int(sm.measurement.parameters["size"]): sm.measurement.value
        for sm in store.measurements(run.id)
        if sm.measurement.metric == "latency"
    }


def median_ci(values: Sequence[float]) -> str:
    data = np.asarray(values, dtype=float)
    if len(data) < 3 or np.all(data == data[0]):
        return f"{np.median(data):.3g} [{data.min():.3g}, {data.max():.3g}]"
    ci = stats.bootstrap(
        (data,), np.median, confidence_level=0.95, n_resamples=2000, random_state=0
    ).confidence_interval
    return f"{np.median(data):.3g} [{ci.low:.3g}, {ci.high:.3g}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", required=True, help="a Slurm cluster up with shaped links")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rt", action="store_true", help="every run under SCHED_FIFO (root)")
    args = parser.parse_args(argv)
    cluster = slurm_netns.load(args.cluster)
    if cluster is None:
        parser.error(f"--cluster {args.cluster}: no such Slurm cluster up")
    link = cluster.link
    setups = {  # name: (launcher kind, Java?, link)
        "Slurm Java": ("slurm-netns", True, link),
        "Slurm C": ("slurm-netns", False, link),
        "netns Java": ("netns", True, link),
        "netns C": ("netns", False, link),
        "netns Java unshaped": ("netns", True, "none"),
    }
    latency: dict[tuple[str, int], list[float]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="mpj-slurm-pp-") as tmp:
        work = Path(tmp)
        for benchmark in ("mpibench", "mpibench-java"):
            (work / f"{benchmark}.toml").write_text(suite(benchmark))
        for name, (kind, java, shaping) in setups.items():
            slug = name.replace(" ", "-").lower()
            text = platform(slug, kind, java, args.cluster, shaping)
            (work / f"{slug}.toml").write_text(text)
        for rnd in range(args.rounds):
            order = list(setups) if rnd % 2 == 0 else list(reversed(setups))
            for name in order:
                kind, java, _ = setups[name]
                slug = name.replace(" ", "-").lower()
                bench = "mpibench-java" if java else "mpibench"
                db = work / f"{slug}-{rnd}.db"
                with slurmd_fifo(cluster, args.rt and kind == "slurm-netns"):
                    result = run_once(work / f"{slug}.toml", work / f"{bench}.toml", db, args.rt)
                loads.append(os.getloadavg()[0])
                print(f"round {rnd + 1}: {name}: "
                      + ", ".join(f"{s} B {result[s]:.1f} µs" for s in SIZES)
                      + f", load {loads[-1]:.1f}", file=sys.stderr, flush=True)  # fmt: skip
                for size in SIZES:
                    latency.setdefault((name, size), []).append(result[size])
    print(f"# MPJ PingPong between 2 emulated nodes, link {link} (and unshaped), "
          f"{args.rounds} rounds interleaved{', SCHED_FIFO' if args.rt else ''}; "
          f"load avg {min(loads):.1f}-{max(loads):.1f} "
          f"(median {np.median(loads):.1f})")  # fmt: skip
    print(
        "# half round-trip latency µs, median over rounds [95 % bootstrap CI]; ratio to "
        "'netns Java' (same link), paired by round"
    )
    print("| set-up | size B | latency µs | / netns Java |")
    print("|---|---|---|---|")
    for name in setups:
        for size in SIZES:
            values = latency[(name, size)]
            base = latency[("netns Java", size)]
            ratios = [v / b for v, b in zip(values, base, strict=True)]
            print(f"| {name} | {size} | {median_ci(values)} | {median_ci(ratios)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
