"""Java (MpiBench.java on MPJ Express, multicore device) vs C (mpibench.c on Open MPI) here.

Both programs are built and started exactly as `hpceval run` does (the benchmarks' build and
command, the `local` and `mpj` launchers' argv), with the same placement: one node, ranks
unbound (MPJ's multicore ranks are threads of one JVM that MPJ does not pin, so the C ranks
run with binding none too). Measured, C and Java interleaved `--repeat` times (the order
alternates from one repeat to the next):

- PingPong latency at 0 B, 8 B, 1 KiB and bandwidth at 64 KiB, 1 MiB, 4 MiB (2 ranks);
- Allreduce at 8 B and 1 MiB on 2 and 4 ranks (4 oversubscribe this 2-core machine);
- start-up cost per run: the wall time of the whole command (launcher, JVM or MPI start,
  MPI.Init) minus the time the program itself reports (its end record's elapsed_s);
- with --npb CLASS: the NPB kernels CG, IS, EP, FT, MG of that class at 1 and 2 ranks, the
  Java kernels (npb-java) against the C ones (npb), Mop/s of the official timed section,
  and the wall time of each run outside that section (start-up, set-up, verification).

Per run and point the median over the samples is kept (JIT-warm figures for Java; the
first-iteration figure of the fresh JVM is reported beside it). The report gives the median
over the repeats with a 95 % bootstrap CI, and the Java/C ratio paired repeat by repeat
(adjacent in time) with its bootstrap CI. The machine is shared: medians, not means.

- with --inter-node (root): PingPong and Allreduce (2 and 4 ranks) between the two nodes of
  the netns emulated cluster, C (Open MPI over TCP, netns-2x2) against Java (MPJ Express
  niodev, netns-2x2-mpj).

Usage: .venv/bin/python perf/java_vs_c.py [--repeat 7] [--budget 0.3] [--npb A [--only-npb]]
                                          [--kernels cg,ft,ep] [--ranks 1,2] [--java-only]
       .venv/bin/python perf/java_vs_c.py --inter-node [--repeat 7]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.campaign import load_platform
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import Placement
from hpceval.toolchain import detect_mpi

PINGPONG_SIZES = (0, 8, 1024, 65536, 1 << 20, 4 << 20)
BANDWIDTH_FROM = 65536
ALLREDUCE_SIZES = (8, 1 << 20)


def case(
    benchmark: str, pattern: str, ranks: int, sizes: Sequence[int], budget: float, nodes: int = 1
) -> Case:
    options: dict[str, Any] = {
        "target_rci": 0.02,
        "budget_s": budget,
        "min_samples": 10,
        "max_samples": 1000,
        "warmup_s": 0.05,
        "sample_s": 0.001,
        "seed": 1,
        "jit_warmup_s": 0.5,
    }
    params: dict[str, Any] = {"pattern": pattern}
    if pattern == "pingpong":
        options["pair"] = [0, 1]
        params["pair"] = "intra-node" if nodes == 1 else "inter-node"
    return Case(
        key=f"{benchmark}:{pattern}:{ranks}",
        benchmark=benchmark,
        placement=Placement(nodes, ranks // nodes, 1, "none"),
        parameters=params,
        points=tuple(f"size={s}" for s in sizes),
        time_limit_s=600,
        options=options,
    )


class Side:
    """One implementation: its program and launcher, as `hpceval run` builds them."""

    def __init__(
        self, benchmark: str, platform_name: str, extra_env: dict[str, str] | None = None
    ) -> None:
        self.extra_env = extra_env or {}
        self.bench = get_benchmark(benchmark)
        platform = load_platform(platform_name).config
        toolchain = detect_mpi(platform.launcher.mpicc, platform.launcher.mpirun)
        self.program = self.bench.build(
            compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=["-O2"]
        )
        runtime = MpiRuntime(toolchain.implementation, toolchain.mpirun)
        self.launcher = get_launcher_class(platform.launcher.kind)(platform, runtime)
        self.name = benchmark

    def run(self, c: Case) -> tuple[dict[int, dict[str, float]], float]:
        """Per size: median sample and first-iteration (µs); and the start-up cost (s)."""
        c = Case(**{**c.__dict__, "benchmark": self.name})
        command = self.launcher.command(c.placement, self.bench.command(c, self.program, c.points))
        start = time.monotonic()
        proc = subprocess.run(
            list(command.argv),
            env={**os.environ, **command.env, **self.extra_env},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        wall = time.monotonic() - start
        self.bench.verify(proc.stdout, c, c.points)
        out: dict[int, dict[str, float]] = {}
        elapsed = 0.0
        for line in proc.stdout.splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if record["record"] == "point":
                point = {"median": float(np.median(record["t_max_us"]))}
                if "first_iteration_us" in record:
                    point["first"] = float(record["first_iteration_us"])
                out[int(record["size"])] = point
            elif record["record"] == "end":
                elapsed = float(record["elapsed_s"])
        return out, wall - elapsed


def median_ci(values: Sequence[float]) -> tuple[float, float, float]:
    data = np.asarray(values, dtype=float)
    if len(data) < 3 or np.all(data == data[0]):
        return float(np.median(data)), float(data.min()), float(data.max())
    ci = stats.bootstrap(
        (data,), np.median, confidence_level=0.95, n_resamples=2000, random_state=0
    ).confidence_interval
    return float(np.median(data)), float(ci.low), float(ci.high)


def paired(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Ratios a/b repeat by repeat (the two runs were adjacent in time)."""
    n = min(len(a), len(b))
    return [x / y for x, y in zip(a[:n], b[:n], strict=True)]


def fmt(values: Sequence[float], scale: float = 1.0, digits: int = 3) -> str:
    m, lo, hi = median_ci([v * scale for v in values])
    return f"{m:.{digits}g} [{lo:.{digits}g}, {hi:.{digits}g}]"


NPB_KERNELS = ("cg", "is", "ep", "ft", "mg")
# SCHED_RR, not FIFO: under FIFO a rank thread that never blocks keeps its core from the
# JVM's JIT compiler threads of the same priority, and the Java kernel runs interpreted
# (measured: CG class A on 1 rank at 121 Mop/s under FIFO beside other FIFO work).
RT_PREFIX = ("chrt", "-r", "10")
NPB_RANKS = (1, 2)


class NpbSide(Side):
    """One NPB implementation (npb on `local` or npb-java on `local-mpj`), as `hpceval run`.

    With `rt` the whole run is under SCHED_RR (every process and thread it starts): ahead of
    all normal work, time-sliced with the other real-time work of the same priority (the
    JVM's JIT and GC threads among them)."""

    rt = False

    def run_npb(self, kernel: str, class_name: str, ranks: int) -> tuple[float, float, float]:
        """One verified run: its Mop/s, the wall seconds outside the timed section and the CPU
        seconds (user + system) of the whole run, all its processes and threads."""
        c = Case(
            key=f"{self.name}:{kernel}:{class_name}:{ranks}",
            benchmark=self.name,
            placement=Placement(1, ranks, 1, "none"),
            parameters={"kernel": kernel, "class": class_name},
            points=("rep=1",),
            time_limit_s=900,
        )
        command = self.launcher.command(c.placement, self.bench.command(c, self.program, c.points))
        argv = [*RT_PREFIX, *command.argv] if self.rt else list(command.argv)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.run(
            argv, env={**os.environ, **command.env, **self.extra_env},
            capture_output=True,
            text=True, timeout=3600, check=False,
        )  # fmt: skip
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.bench.verify(proc.stdout, c, c.points)  # a run that does not verify stops here
        (point,) = self.bench.parse(proc.stdout, c)
        by_metric = {m.metric: m.value for m in point.measurements}
        return by_metric["mops_total"], wall - by_metric["time"], cpu


def npb_main(
    class_name: str,
    repeat: int,
    kernels: Sequence[str] = NPB_KERNELS,
    c_yield: bool = True,
    ranks_list: Sequence[int] = NPB_RANKS,
    java_only: bool = False,
    yield_only: bool = False,
    rt: bool = False,
) -> None:
    sides = {
        "C": NpbSide("npb", "local"),
        "C yield": NpbSide("npb", "local", {"OMPI_MCA_mpi_yield_when_idle": "1"}),
        "Java": NpbSide("npb-java", "local-mpj"),
    }
    if not c_yield or java_only:
        del sides["C yield"]
    if yield_only:  # busy-polling C ranks on a loaded machine measure the scheduler
        del sides["C"]
    for each in sides.values():
        each.rt = rt
    if java_only:
        del sides["C"]
    mops: dict[tuple[str, int, str], list[float]] = {}
    outside: dict[tuple[str, int, str], list[float]] = {}
    cpu: dict[tuple[str, int, str], list[float]] = {}
    loads = [os.getloadavg()[0]]
    for rep in range(repeat):
        order = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for kernel in kernels:
            for ranks in ranks_list:
                for side in order:
                    start = time.monotonic()
                    m, rest, cpu_s = sides[side].run_npb(kernel, class_name, ranks)
                    loads.append(os.getloadavg()[0])
                    # Each run as it ends (a long class B/C measurement cut short keeps them).
                    print(f"run {rep + 1}: {kernel} np {ranks} {side}: {m:.6g} Mop/s, "
                          f"{rest:.3g} s outside, {time.monotonic() - start:.0f} s wall, "
                          f"{cpu_s:.1f} CPU s, "
                          f"load {loads[-1]:.1f}", file=sys.stderr, flush=True)  # fmt: skip
                    mops.setdefault((kernel, ranks, side), []).append(m)
                    outside.setdefault((kernel, ranks, side), []).append(rest)
                    cpu.setdefault((kernel, ranks, side), []).append(cpu_s)
        print(f"npb repeat {rep + 1}/{repeat} done", file=sys.stderr)
    print(f"# NPB class {class_name}: Java (npb-java, MPJ Express 0.44 multicore) vs C (npb, "
          f"Open MPI), {repeat} repeats interleaved; load avg {min(loads):.1f}-{max(loads):.1f} "
          f"(median {float(np.median(loads)):.1f})")  # fmt: skip
    if rt:
        print("# every run under SCHED_RR (chrt -r 10); Mop/s is wall-time based, CPU s is not")
    print("# Mop/s of the official timed section, median [95 % bootstrap CI]; Java/C paired")
    if java_only:
        print("| kernel | ranks | Java Mop/s | Java s outside | Java CPU s |")
        print("|---|---|---|---|---|")
        for kernel in kernels:
            for ranks in ranks_list:
                key = (kernel, ranks, "Java")
                print(f"| {kernel.upper()} | {ranks} | {fmt(mops[key])} | {fmt(outside[key])} "
                      f"| {fmt(cpu[key])} |")  # fmt: skip
        return
    print("# 'C yield': Open MPI's ranks yield when idle (as on an oversubscribed node)")
    print("# CPU s: user + system seconds of the whole run (all processes and threads: start-up,")
    print("# JIT and GC included); Java/C ratios paired repeat by repeat")
    c_sides = [name for name in sides if name != "Java"]
    header = ["kernel", "ranks", *(f"{name} Mop/s" for name in sides)]
    header += [f"Java/{name}" for name in c_sides]
    header += [f"{name} s outside" for name in sides]
    header += [f"{name} CPU s" for name in sides] + [f"Java/{name} CPU" for name in c_sides]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for kernel in kernels:
        for ranks in ranks_list:
            rate = {name: mops[(kernel, ranks, name)] for name in sides}
            spent = {name: outside[(kernel, ranks, name)] for name in sides}
            used = {name: cpu[(kernel, ranks, name)] for name in sides}
            row = [kernel.upper(), str(ranks), *(fmt(rate[name]) for name in sides)]
            row += [fmt(paired(rate["Java"], rate[name])) for name in c_sides]
            row += [fmt(spent[name]) for name in sides] + [fmt(used[name]) for name in sides]
            row += [fmt(paired(used["Java"], used[name])) for name in c_sides]
            print("| " + " | ".join(row) + " |")


def internode_main(repeat: int, budget: float) -> None:
    """PingPong (one rank per node) and Allreduce (2 and 4 ranks, split over the two nodes)
    between the two nodes of the netns emulated cluster."""
    sides = {"C": Side("mpibench", "netns-2x2"), "Java": Side("mpibench-java", "netns-2x2-mpj")}
    experiments = [("pingpong", 2, PINGPONG_SIZES)] + [
        ("allreduce", r, ALLREDUCE_SIZES) for r in (2, 4)
    ]
    points: dict[tuple[str, int, str, int], list[float]] = {}
    loads = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        for each in sides.values():  # each its cluster (and, for Java, its MPJ daemons)
            stack.enter_context(each.launcher.session())
        for rep in range(repeat):
            order = list(sides) if rep % 2 == 0 else list(reversed(sides))
            for pattern, ranks, sizes in experiments:
                for side in order:
                    run_case = case(sides[side].name, pattern, ranks, sizes, budget, nodes=2)
                    result, _ = sides[side].run(run_case)
                    for size, point in result.items():
                        points.setdefault((pattern, ranks, side, size), []).append(point["median"])
                    loads.append(os.getloadavg()[0])
            print(f"inter-node repeat {rep + 1}/{repeat} done, load {loads[-1]:.1f}",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(f"# Between 2 emulated nodes (netns, veths, unshaped): Java (MPJ Express niodev) vs C "
          f"(Open MPI, TCP), {repeat} repeats interleaved; load avg {min(loads):.1f}-"
          f"{max(loads):.1f} (median {float(np.median(loads)):.1f})")  # fmt: skip
    print("# PingPong: ranks 0 and 1 on different nodes; Allreduce: ranks split evenly")
    print("| pattern | ranks | size | figure | C | Java | Java/C |")
    print("|---|---|---|---|---|---|---|")
    for pattern, ranks, sizes in experiments:
        for size in sizes:
            c, j = points[(pattern, ranks, "C", size)], points[(pattern, ranks, "Java", size)]
            if pattern == "pingpong" and size >= BANDWIDTH_FROM:
                c, j = [size / t for t in c], [size / t for t in j]
                figure = "bandwidth MB/s"
            else:
                figure = "latency µs" if pattern == "pingpong" else "time µs"
            print(f"| {pattern} | {ranks} | {size} | {figure} | {fmt(c)} | {fmt(j)} "
                  f"| {fmt(paired(j, c))} |")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.3)
    parser.add_argument("--npb", choices=["S", "W", "A", "B", "C"], help="also the NPB kernels")
    parser.add_argument("--only-npb", action="store_true", help="the NPB part only")
    parser.add_argument(
        "--no-c-yield", action="store_true",
        help="NPB: without the 'C yield' side (a long class B/C measurement)",
    )  # fmt: skip
    parser.add_argument(
        "--kernels", default=",".join(NPB_KERNELS),
        help="the NPB kernels, comma-separated (class B/C: e.g. cg,ft,ep)",
    )  # fmt: skip
    parser.add_argument("--ranks", default="1,2", help="NPB: rank counts, comma-separated")
    parser.add_argument(
        "--c-yield-only", action="store_true",
        help="NPB: C with ranks that yield when idle only (no busy-polling C side)",
    )  # fmt: skip
    parser.add_argument(
        "--rt", action="store_true", help="NPB: every run under SCHED_RR (chrt -r 10, root)"
    )
    parser.add_argument(
        "--java-only", action="store_true", help="NPB: the Java kernels alone (class C once)"
    )
    parser.add_argument(
        "--inter-node", action="store_true",
        help="PingPong between the nodes of the netns emulated cluster only (needs root)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.inter_node:
        internode_main(args.repeat, args.budget)
        return 0
    if args.npb:
        kernels = args.kernels.split(",")
        if unknown := set(kernels) - set(NPB_KERNELS):
            parser.error(f"--kernels: unknown {', '.join(sorted(unknown))}")
        npb_ranks = tuple(int(r) for r in args.ranks.split(","))
        npb_main(
            args.npb, args.repeat, kernels, not args.no_c_yield, npb_ranks, args.java_only,
            args.c_yield_only, args.rt,
        )  # fmt: skip
        if args.only_npb:
            return 0
    # "C yield": Open MPI's ranks yield when idle instead of busy-polling (what hpceval sets
    # on an oversubscribed node): on this shared, loaded machine a busy-polling rank loses its
    # core to other work, while MPJ's multicore ranks block in Object.wait.
    sides = {
        "C": Side("mpibench", "local"),
        "C yield": Side("mpibench", "local", {"OMPI_MCA_mpi_yield_when_idle": "1"}),
        "Java": Side("mpibench-java", "local-mpj"),
    }
    experiments = [("pingpong", 2, PINGPONG_SIZES)] + [
        ("allreduce", r, ALLREDUCE_SIZES) for r in (2, 4)
    ]
    # (experiment, side, size) -> per-repeat medians; first-iteration; start-up per run
    points: dict[tuple[str, int, str, int], list[float]] = {}
    firsts: dict[tuple[str, int, int], list[float]] = {}
    startup: dict[str, list[float]] = {name: [] for name in sides}
    load = os.getloadavg()[0]
    for rep in range(args.repeat):
        order = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for pattern, ranks, sizes in experiments:
            for side in order:
                c = case(sides[side].name, pattern, ranks, sizes, args.budget)
                result, startup_s = sides[side].run(c)
                startup[side].append(startup_s)
                for size, point in result.items():
                    points.setdefault((pattern, ranks, side, size), []).append(point["median"])
                    if "first" in point:
                        firsts.setdefault((pattern, ranks, size), []).append(point["first"])
        print(f"repeat {rep + 1}/{args.repeat} done", file=sys.stderr)
    load = max(load, os.getloadavg()[0])

    print(f"# Java (MPJ Express 0.44 multicore, OpenJDK) vs C (Open MPI), {args.repeat} repeats")
    print(
        f"# medians over repeats of per-run medians, [95 % bootstrap CI]; load avg up to {load:.1f}"
    )
    print(
        "| pattern | ranks | size | figure | C | C yield | Java | Java/C | Java/C yield "
        "| Java first iteration µs |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pattern, ranks, sizes in experiments:
        for size in sizes:
            series = {name: points[(pattern, ranks, name, size)] for name in sides}
            bandwidth = pattern == "pingpong" and size >= BANDWIDTH_FROM
            if bandwidth:  # MB/s = bytes / µs
                series = {k: [size / t for t in v] for k, v in series.items()}
                figure = "bandwidth MB/s"
            else:
                figure = "latency µs" if pattern == "pingpong" else "time µs"
            first = fmt(firsts.get((pattern, ranks, size), [float("nan")]))
            print(
                f"| {pattern} | {ranks} | {size} | {figure} | {fmt(series['C'])} "
                f"| {fmt(series['C yield'])} | {fmt(series['Java'])} "
                f"| {fmt(paired(series['Java'], series['C']))} "
                f"| {fmt(paired(series['Java'], series['C yield']))} | {first} |"
            )
    print(
        f"| start-up | - | - | s per run | {fmt(startup['C'])} | {fmt(startup['C yield'])} "
        f"| {fmt(startup['Java'])} | {fmt(paired(startup['Java'], startup['C']))} "
        f"| {fmt(paired(startup['Java'], startup['C yield']))} | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
