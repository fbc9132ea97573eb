"""The shape of mpibench's curves on this machine: the timing claims the integration tests
made before they were made to hold under load (tests/test_mpibench_integration.py,
tests/test_netns.py keep only what load cannot break).

Targets, each a ratio (or a time) taken within one round, so that the machine's state is
the same for both sides; over rounds: median and 95 % bootstrap interval of the median.

- PingPong, 2 ranks on one node: 0 B latency under 100 µs (shared memory); bandwidth at
  64 KiB over 10x that at 8 B (it grows with the size); bandwidth at 4 MiB under 2x that at
  1 MiB (it plateaus); latency at 4 MiB over that at 1 KiB.
- Alltoall: 4 ranks take longer than 2 (fastest samples, 1 KiB and 64 KiB).
- With --netns (root): a 100 Mbit/s tbf-shaped link between two emulated nodes; the fastest
  1 MiB PingPong sample over the rate lies in (0.5, 1.02].

    python perf/mpibench_shape.py [--rounds 5] [--netns]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from hpceval.model import Measurement
from hpceval.store import open_store

SUITE = """name = "shape"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [0, 8, 1024, 65536, 1048576, 4194304]
ranks = [2]
budget_s = 0.2
min_samples = 5

[[benchmark]]
name = "mpibench"
patterns = ["alltoall"]
sizes = [1024, 65536]
ranks = [2, 4]
budget_s = 0.2
min_samples = 5
"""
SHAPED_PLATFORM = """name = "netns-100mbit"
nodes = 2
[launcher]
kind = "netns"
link = "100mbit"
"""
SHAPED_SUITE = """name = "shaped"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [1048576]
ranks = [2]
ranks_per_node = [1]
budget_s = 1.0
warmup_s = 0.2
min_samples = 3
"""
RATE_MB_S = 100e6 / 8 / 1e6

Points = list[Measurement]


def run(workdir: Path, platform: str, suite: str) -> Points:
    """One `hpceval run` of the suite; its measurements."""
    (workdir / "suite.toml").write_text(suite)
    db = workdir / "shape.db"
    db.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "hpceval", "run", "-p", platform, "-s", "suite.toml",
            "--db", str(db)]  # fmt: skip
    subprocess.run(argv, cwd=workdir, check=True, capture_output=True, text=True)
    with open_store(str(db)) as store:
        (r,) = store.runs()
        return [sm.measurement for sm in store.measurements(r.id)]


def one(ms: Points, pattern: str, metric: str, size: int, ranks: int = 2) -> Measurement:
    (m,) = [
        m
        for m in ms
        if m.parameters["pattern"] == pattern
        and m.metric == metric
        and m.parameters["size"] == size
        and m.parameters["ranks"] == ranks
    ]
    return m


def value(ms: Points, metric: str, size: int) -> float:
    return one(ms, "pingpong", metric, size).value


def fastest_alltoall(ms: Points, size: int, ranks: int) -> float:
    return min(one(ms, "alltoall", "time", size, ranks).samples)


# name, function of a round's measurements, target (a predicate) and its text.
Figure = tuple[str, Callable[[Points], float], Callable[[float], bool], str]
FIGURES: list[Figure] = [
    ("pingpong latency 0 B (µs, median)", lambda ms: value(ms, "latency", 0),
     lambda v: v < 100, "< 100"),
    ("pingpong bandwidth 64 KiB / 8 B",
     lambda ms: value(ms, "bandwidth", 65536) / value(ms, "bandwidth", 8),
     lambda v: v > 10, "> 10"),
    ("pingpong bandwidth 4 MiB / 1 MiB",
     lambda ms: value(ms, "bandwidth", 4 << 20) / value(ms, "bandwidth", 1 << 20),
     lambda v: v < 2, "< 2"),
    ("pingpong latency 4 MiB / 1 KiB",
     lambda ms: value(ms, "latency", 4 << 20) / value(ms, "latency", 1024),
     lambda v: v > 1, "> 1"),
    ("alltoall 1 KiB, fastest 4 ranks / 2",
     lambda ms: fastest_alltoall(ms, 1024, 4) / fastest_alltoall(ms, 1024, 2),
     lambda v: v > 1, "> 1"),
    ("alltoall 64 KiB, fastest 4 ranks / 2",
     lambda ms: fastest_alltoall(ms, 65536, 4) / fastest_alltoall(ms, 65536, 2),
     lambda v: v > 1, "> 1"),
]  # fmt: skip
SHAPED: Figure = (
    "100 Mbit/s link, fastest 1 MiB sample / rate",
    lambda ms: max(one(ms, "pingpong", "bandwidth", 1 << 20).samples) / RATE_MB_S,
    lambda v: 0.5 < v <= 1.02,
    "in (0.5, 1.02]",
)


def median_ci(values: list[float], resamples: int = 5000) -> tuple[float, float, float]:
    a = np.asarray(values)
    rng = np.random.default_rng(1)
    medians = np.median(a[rng.integers(0, len(a), size=(resamples, len(a)))], axis=1)
    low, high = np.quantile(medians, [0.025, 0.975])
    return float(np.median(a)), float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--netns", action="store_true", help="also the shaped link (root)")
    args = parser.parse_args()
    figures = FIGURES + ([SHAPED] if args.netns else [])
    values: dict[str, list[float]] = {f[0]: [] for f in figures}
    print(f"load average at start {os.getloadavg()[0]:.1f}; {args.rounds} rounds", flush=True)
    with tempfile.TemporaryDirectory(prefix="mpibench-shape-") as tmp:
        workdir = Path(tmp)
        for i in range(args.rounds):
            try:
                ms = run(workdir, "local", SUITE)
                if args.netns:
                    (workdir / "shaped.toml").write_text(SHAPED_PLATFORM)
                    shaped = run(workdir, str(workdir / "shaped.toml"), SHAPED_SUITE)
            except subprocess.CalledProcessError as e:  # a point past its time limit, at load
                last = (e.stderr or "").strip().splitlines()[-1:] or ["?"]
                print(f"round {i + 1}: hpceval run failed, round left out: {last[0]}", flush=True)
                continue
            for name, of, _, _ in FIGURES:
                values[name].append(of(ms))
            if args.netns:
                values[SHAPED[0]].append(SHAPED[1](shaped))
            shown = "; ".join(f"{n} {v[-1]:.3g}" for n, v in values.items())
            print(f"round {i + 1}: load {os.getloadavg()[0]:.1f}; {shown}", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    for name, _, target, text in figures:
        if not values[name]:
            print(f"{name}: no round completed")
            continue
        median, low, high = median_ci(values[name])
        verdict = "met" if target(median) else "NOT met"
        print(f"{name}: {median:.3g} [{low:.3g}, {high:.3g}]  target {text}: {verdict}")


if __name__ == "__main__":
    main()
