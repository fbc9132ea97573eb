"""hpceval's `stream` against McCalpin's stream.c (the reference), interleaved.

Builds /work/ref/stream/stream.c outside the repository (default /work/ref/build-stream) with
the flags hpceval's STREAM gets (`-O3 -march=native -fopenmp -std=c11`, plus `-mcmodel=medium`
for its static arrays over 2 GiB and `-D_DEFAULT_SOURCE` for its gettimeofday under -std=c11),
with gcc (mpicc's compiler here), STREAM_ARRAY_SIZE = 4 x the last-level cache that hpceval's
provenance reports / 8 bytes, NTIMES = 10 (hpceval's trials). hpceval's program is built by the
benchmark itself (its cached build) and run under mpirun on one rank, as `hpceval run` does.
Both leave the first trial out; the figures compared are the same statistic on both sides:
STREAM's "Best Rate" (bytes / min time) and bytes / mean time ("Avg time"), per kernel.

--rt (as root): both run under `chrt -f 10` (SCHED_FIFO, pinned to one core), so that the
other tenants get only the 5 % RT throttling leaves them of that core (memory bandwidth is
still shared with what runs on the other core and on the host).

Runs alternate (reference, hpceval, reference, ...) for --rounds rounds; per kernel the
median ratio hpceval / reference over the rounds, with a bootstrap 95 % interval
(scipy.stats.bootstrap), and each run's wall and CPU seconds (the machine is shared: CPU time
beside wall time shows how much of the wall time the program had the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.stream import ARRAYS_TOUCHED, CACHE_FACTOR, KERNELS, STREAM_CFLAGS
from hpceval.provenance import SystemHost, last_level_cache
from hpceval.toolchain import detect_mpi

REFERENCE_SOURCE = Path("/work/ref/stream/stream.c")
TRIALS = 10
_RATE = re.compile(r"^(Copy|Scale|Add|Triad):\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def build_reference(build_dir: Path, elements: int) -> Path:
    build_dir.mkdir(parents=True, exist_ok=True)
    exe = build_dir / f"stream-{elements}"
    if not exe.exists():
        subprocess.run(
            ["gcc", *STREAM_CFLAGS, "-mcmodel=medium", "-D_DEFAULT_SOURCE",
             f"-DSTREAM_ARRAY_SIZE={elements}", f"-DNTIMES={TRIALS}", str(REFERENCE_SOURCE),
             "-o", str(exe)],
            check=True,
        )  # fmt: skip
    return exe


RT_PREFIX = ["chrt", "-f", "10"]
RT_PAUSE_S = 2.0
rt = False


def timed(argv: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """Output, wall seconds and CPU seconds (user + system of the process tree); with --rt
    under SCHED_FIFO priority 10 (inherited by mpirun and the rank), after a pause."""
    if rt:
        time.sleep(RT_PAUSE_S)
        argv = [*RT_PREFIX, *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return proc.stdout, wall, cpu


def reference_rates(out: str, elements: int) -> dict[str, dict[str, float]]:
    """MB/s per kernel: best (bytes / min time) and bytes / avg time, from stream.c's table."""
    if "Solution Validates" not in out:
        raise SystemExit("stream.c did not validate:\n" + out[-2000:])
    rates = {}
    for line in out.splitlines():
        m = _RATE.match(line.strip())
        if m:
            kernel = m.group(1).lower()
            nbytes = ARRAYS_TOUCHED[kernel] * 8 * elements
            rates[kernel] = {"best": float(m.group(2)), "mean": nbytes / 1e6 / float(m.group(3))}
    return rates


def hpceval_rates(out: str) -> dict[str, dict[str, float]]:
    rates = {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if record["record"] == "validation" and not record["passed"]:
            raise SystemExit("hpceval stream did not validate")
        if record["record"] == "kernel":
            times = record["times_s"][1:]
            mb = record["bytes"] / 1e6
            rates[record["name"]] = {"best": mb / min(times), "mean": mb / statistics.fmean(times)}
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build-dir", type=Path, default=Path("/work/ref/build-stream"))
    parser.add_argument("--rt", action="store_true", help="runs under chrt -f 10 (root)")
    args = parser.parse_args()
    global rt
    rt = args.rt
    found = last_level_cache(SystemHost())
    if found is None:
        raise SystemExit("no last-level cache size in the provenance")
    llc, source = found
    elements = CACHE_FACTOR * llc // 8
    reference = build_reference(args.build_dir, elements)
    toolchain = detect_mpi()
    program = get_benchmark("stream").build(
        compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=["-O2"]
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # fmt: skip
    ours = [toolchain.mpirun, "-np", "1", "--bind-to", "core", str(program.path),
            "--elements", str(elements), "--trials", str(TRIALS)]  # fmt: skip
    theirs = ["taskset", "-c", "0", str(reference)]
    gib = elements * 8 / 2**30
    print(f"# last-level cache {llc} B ({source}); arrays {elements} doubles "
          f"({gib:.2f} GiB each, {CACHE_FACTOR}x the LLC); {TRIALS} trials")  # fmt: skip
    print(f"# load average at start: {os.getloadavg()}")
    print(f"# stream.c: {' '.join(theirs)}; hpceval: {' '.join(ours)}"
          + (f"; both under {' '.join(RT_PREFIX)} (SCHED_FIFO)" if rt else ""))  # fmt: skip
    ratios: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        out_ref, wall_ref, cpu_ref = timed(theirs, env)
        out_own, wall_own, cpu_own = timed(ours, env)
        ref, own = reference_rates(out_ref, elements), hpceval_rates(out_own)
        print(f"round {r + 1}: stream.c wall {wall_ref:.1f} s cpu {cpu_ref:.1f} s; "
              f"hpceval wall {wall_own:.1f} s cpu {cpu_own:.1f} s")  # fmt: skip
        for kernel in KERNELS:
            for stat in ("best", "mean"):
                ratios.setdefault((kernel, stat), []).append(own[kernel][stat] / ref[kernel][stat])
            print(f"  {kernel:6s} best MB/s stream.c {ref[kernel]['best']:9.0f} hpceval "
                  f"{own[kernel]['best']:9.0f} | bytes/mean time stream.c "
                  f"{ref[kernel]['mean']:9.0f} hpceval {own[kernel]['mean']:9.0f}")  # fmt: skip
    print(f"# load average at end: {os.getloadavg()}")
    print("kernel  statistic          median ratio hpceval/stream.c  95% CI (bootstrap)")
    for (kernel, stat), values in ratios.items():
        med = statistics.median(values)
        if len(values) >= 3:
            ci = bootstrap((np.array(values),), np.median, confidence_level=0.95,
                           method="percentile", random_state=0).confidence_interval  # fmt: skip
            interval = f"[{ci.low:.3f}, {ci.high:.3f}]"
        else:
            interval = "n/a"
        label = "bytes/min time" if stat == "best" else "bytes/mean time"
        print(f"{kernel:7s} {label:18s} {med:.3f}  {interval}  rounds {len(values)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
