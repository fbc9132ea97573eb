"""Class C of NPB's pseudo-applications and multi-zone codes: hpceval's against the official.

Issue 17 asks for the time of class C and the peak memory per rank of BT, SP, LU, BT-MZ,
SP-MZ and LU-MZ next to the official NPB 3.4-MPI / NPB3.4-MZ-MPI programs. This script builds
the official programs outside the repository (under --build-dir, gfortran with the flags of
hpceval's NPB programs: -O3 -march=native -fno-math-errno -ffp-contract=fast, -fopenmp for
the MZ codes) and hpceval's C programs with NPB_CFLAGS, then runs, per round and per
(program, placement), the pair official/hpceval back to back, the order alternating between
rounds. Placements: ranks for BT, SP and LU (BT and SP need square counts: 1 and 4 on two
cores, 4 oversubscribed), RANKSxTHREADS for the MZ codes (OMP_NUM_THREADS for both sides).
Every run: mpirun --map-by core --bind-to core (4 ranks: 2 per core), --bind-to none for an
MZ rank of 2 threads (its threads need both cores), with
mpi_yield_when_idle when ranks x threads exceed the CPUs; each rank under GNU time (its peak
RSS, one line per rank); with --rt each rank under chrt -f 10 (SCHED_FIFO, root), so that the
other jobs of this shared machine do not stretch a run of many minutes; --rt N uses priority N
(other jobs under SCHED_FIFO 10 that never block hold a core against ranks of the same
priority: a single-threaded Java NPB run starved a bound rank for 20 minutes).

Printed per run: wall seconds of the mpirun, the program's own time, Mop/s, CPU seconds of
all ranks (getrusage of the children), the peak RSS of every rank, verification, and the load
average (1 min) before and after. Only verified runs count; a run that fails or does not
verify is printed as such and the rounds go on. Summary per (program, placement): median
Mop/s of each side, Mop/s ratio hpceval/official, CPU-second ratio official/hpceval (> 1:
hpceval cheaper), with a 95 % t-interval on the log ratios from two rounds on, and the
largest per-rank peak RSS of each side. `--summarize LOG` prints the summary of a log again.

--official-builds openmp,mpi-only (MZ codes, placements of one thread per rank) adds a
second official side, "mpi-only": NPB-MZ built without -fopenmp, its MPI-only build (the
OpenMP directives are comments then), in its own tree under BUILD_DIR/mpi-only; every round
runs the three sides, the order rotating by round, and the summary pairs hpceval with each
official build. It separates the computation's cost from gfortran's code for OpenMP regions:
gfortran 12 leaves most loops of an outlined parallel region whose arrays have run-time
bounds scalar ("no vectype for stmt" on the variable-length array type), so the OpenMP build
of SP-MZ runs its right-hand side without SIMD even on one thread. --official-builds mpi-only
runs that build alone against hpceval.

Usage: .venv/bin/python perf/npb_class_c.py [--programs bt,sp,lu,bt-mz,sp-mz,lu-mz]
           [--class C] [--placements 2x1,1x2] [--rounds 1] [--rt [PRIORITY]]
           [--build-dir /work/ref/build-npb-c] [--official-builds openmp,mpi-only]
           [--summarize LOG]
           [--check-references]
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
from dataclasses import dataclass
from pathlib import Path

from hpceval.benchmarks.npb import NPB_CFLAGS, rank_rule_error
from hpceval.benchmarks.npb.multizone import MULTI_ZONE
from hpceval.toolchain import MpiToolchain, detect_mpi
from npb_app_vs_official import (
    NPB_MZ_SOURCE,
    NPB_SOURCE,
    OFFICIAL_MOPS,
    OFFICIAL_TIME,
    OFFICIAL_VERIFIED,
    RUN_TIMEOUT_S,
    build_official,
    build_own,
    log_ratio_interval,
    make_def,
)
from npb_reference_check import check as check_references

PROGRAMS = ("bt", "sp", "lu", "bt-mz", "sp-mz", "lu-mz")
# np 2 where NPB allows it; BT and SP need a square count: 1, and 4 oversubscribed.
DEFAULT_PLACEMENTS = {
    "bt": "1,4",
    "sp": "1,4",
    "lu": "2",
    "bt-mz": "2x1,1x2",
    "sp-mz": "2x1,1x2",
    "lu-mz": "2x1,1x2",
}
# gfortran contracts to FMA and has no errno by default; spelled out as hpceval's NPB_CFLAGS.
FFLAGS = "-O3 -march=native -fno-math-errno -ffp-contract=fast -fallow-argument-mismatch"
# The MZ codes' OpenMP threadprivate arrays: on znver3, gcc 12 at -O3 -march=native writes
# some of their initial-exec accesses as `lea var@gottpoff(%rip)`, which binutils 2.40 cannot
# relax and the link fails ("TLS transition from R_X86_64_GOTTPOFF to R_X86_64_TPOFF32").
# local-exec is the access the linker's relaxation gives an executable anyway; hpceval's C
# programs have no thread-local data, so the flag changes nothing on their side.
MZ_FFLAGS = f"{FFLAGS} -fopenmp -ftls-model=local-exec"


@dataclass(frozen=True)
class Run:
    program: str
    placement: str
    side: str  # "own" (hpceval), "official" or "mpi-only" (NPB-MZ without OpenMP)
    time_s: float  # the program's own timer
    wall_s: float  # the whole mpirun
    mops: float
    cpu_s: float  # user + system of all ranks (getrusage of the children)
    rss_mib: tuple[float, ...]  # peak RSS per rank
    verified: bool


OFFICIAL_SIDES = ("official", "mpi-only")


def official_fflags(multi_zone: bool, mpi_only: bool) -> str:
    return MZ_FFLAGS if multi_zone and not mpi_only else FFLAGS


def parse_placement(text: str) -> tuple[int, int]:
    ranks, _, threads = text.partition("x")
    return int(ranks), int(threads or 1)


def load1() -> float:
    return os.getloadavg()[0]


def launch(
    toolchain: MpiToolchain, exe: list[str], ranks: int, threads: int, work: Path, rt: int
) -> tuple[str, float, float, tuple[float, ...]]:
    """Runs exe; returns its stdout, wall seconds, CPU seconds of the ranks, peak RSS per rank."""
    rss_file = work / "rss.txt"
    rss_file.unlink(missing_ok=True)
    root = toolchain.run_as_root().mpirun_args if os.geteuid() == 0 else ()
    argv = [toolchain.mpirun, *root, "--oversubscribe"]
    # One thread per rank: ranks bound round-robin to the cores (4 ranks: 2 per core). Left
    # to the kernel, 4 SCHED_FIFO ranks on 2 cores stay where they start, one core running 1
    # and the other 3. Threaded ranks are not bound: their threads need both cores.
    if threads == 1:
        argv += ["--map-by", "core", "--bind-to", "core:overload-allowed"]
    else:
        argv += ["--bind-to", "none"]
    if ranks * threads > (os.cpu_count() or 1):
        argv += ["--mca", "mpi_yield_when_idle", "1"]
    argv += ["-np", str(ranks), *(("chrt", "-f", str(rt)) if rt else ())]
    argv += ["/usr/bin/time", "-a", "-o", str(rss_file), "-f", "%M", *exe]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(
        argv, cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if proc.returncode != 0:
        # NPB's programs print their own error (before MPI_Abort) on stdout.
        raise RuntimeError(
            f"exit {proc.returncode}: {proc.stdout.strip()[-800:]} | {proc.stderr.strip()[-300:]}"
        )
    # GNU time adds "Command exited with non-zero status" lines on failure: numbers only.
    lines = rss_file.read_text().split()
    rss = tuple(int(x) / 1024.0 for x in lines if x.isdigit())
    return proc.stdout, wall, cpu, rss


def measure(
    toolchain: MpiToolchain,
    exe: Path,
    side: str,
    program: str,
    class_name: str,
    placement: str,
    work: Path,
    rt: int,
) -> Run:
    ranks, threads = parse_placement(placement)
    argv = [str(exe), "--class", class_name] if side == "own" else [str(exe)]
    out, wall, cpu, rss = launch(toolchain, argv, ranks, threads, work, rt)
    if side == "own":
        result = next(
            r
            for r in (json.loads(x) for x in out.splitlines() if x.startswith("{"))
            if r["record"] == "result"
        )
        time_s, mops, verified = result["time_s"], result["mops_total"], result["verified"] is True
    else:
        time_m, mops_m = OFFICIAL_TIME.search(out), OFFICIAL_MOPS.search(out)
        if not (time_m and mops_m):
            raise RuntimeError(f"no time or Mop/s in the output: {out[-500:]}")
        time_s, mops = float(time_m.group(1)), float(mops_m.group(1))
        verified = OFFICIAL_VERIFIED.search(out) is not None
    return Run(program, placement, side, time_s, wall, mops, cpu, rss, verified)


HEADER = (
    "round program placement side      time_s   wall_s     Mop/s    cpu_s verified "
    "load_before load_after rss_MiB_per_rank"
)
RUN_LINE = re.compile(
    r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(own|official|mpi-only)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(yes|no)"
    r"\s+(\S+)\s+(\S+)\s+(\S+)\s*$"
)


def run_line(round_no: int, run: Run, load_before: float, load_after: float) -> str:
    rss = ",".join(f"{x:.1f}" for x in run.rss_mib)
    return (
        f"{round_no:>5} {run.program:>7} {run.placement:>9} {run.side:<8} {run.time_s:>8.2f} "
        f"{run.wall_s:>8.2f} {run.mops:>9.1f} {run.cpu_s:>8.1f} "
        f"{'yes' if run.verified else 'no':>8} {load_before:>11.2f} {load_after:>10.2f} {rss}"
    )


def runs_from_log(text: str) -> list[Run]:
    runs = []
    for line in text.splitlines():
        if m := RUN_LINE.match(line):
            _, program, placement, side, time_s, wall_s, mops, cpu_s, ver, _, _, rss = m.groups()
            runs.append(
                Run(
                    program,
                    placement,
                    side,
                    float(time_s),
                    float(wall_s),
                    float(mops),
                    float(cpu_s),
                    tuple(float(x) for x in rss.split(",")),
                    ver == "yes",
                )
            )
    return runs


def interval(ratios: list[float]) -> str:
    if len(ratios) < 2:
        return "(1 round)"
    low, high = log_ratio_interval(ratios)
    return f"[{low:.3f}, {high:.3f}]"


def print_summary(runs: list[Run]) -> None:
    """Per (program, placement) and official build: the k-th verified run of each side pairs
    with the other's."""
    print()
    print(
        "program placement official pairs own_wall_s off_wall_s own_Mop/s off_Mop/s mops_ratio"
        " mops_CI95          cpu_ratio cpu_CI95          own_rss_MiB off_rss_MiB"
    )
    keys = list(dict.fromkeys((r.program, r.placement) for r in runs))
    for program, placement in keys:
        sides = {
            side: [
                r
                for r in runs
                if (r.program, r.placement, r.side) == (program, placement, side) and r.verified
            ]
            for side in ("own", *OFFICIAL_SIDES)
        }
        for official in OFFICIAL_SIDES:
            if not any(r.side == official for r in runs):
                continue
            pairs = list(zip(sides["own"], sides[official], strict=False))
            if not pairs:
                print(f"{program:>7} {placement:>9} {official:>8} no verified pair")
                continue
            mops = [a.mops / b.mops for a, b in pairs]
            cpu = [b.cpu_s / a.cpu_s for a, b in pairs]
            print(
                f"{program:>7} {placement:>9} {official:>8} {len(pairs):>5} "
                f"{statistics.median(a.wall_s for a, _ in pairs):>10.1f} "
                f"{statistics.median(b.wall_s for _, b in pairs):>10.1f} "
                f"{statistics.median(a.mops for a, _ in pairs):>9.1f} "
                f"{statistics.median(b.mops for _, b in pairs):>9.1f} "
                f"{statistics.median(mops):>10.3f} {interval(mops):<17} "
                f"{statistics.median(cpu):>9.3f} {interval(cpu):<17} "
                f"{max(max(a.rss_mib) for a, _ in pairs):>11.1f} "
                f"{max(max(b.rss_mib) for _, b in pairs):>11.1f}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--class", dest="class_name", default="C")
    parser.add_argument(
        "--placements", help="RANKS[xTHREADS],... for every program (default: per program)"
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--rt",
        nargs="?",
        type=int,
        const=10,
        default=0,
        metavar="PRIORITY",
        help="ranks under chrt -f PRIORITY (SCHED_FIFO, root; 10 if not given)",
    )
    parser.add_argument("--build-dir", type=Path, default=Path("/work/ref/build-npb-c"))
    parser.add_argument(
        "--official-builds",
        default="openmp",
        help="openmp, mpi-only or openmp,mpi-only: the official MZ builds to run "
        "(mpi-only: without OpenMP, one thread per rank only)",
    )
    parser.add_argument("--summarize", type=Path, help="only print the summary of a log")
    parser.add_argument(
        "--check-references",
        action="store_true",
        help="only compare verification.toml's values of the class with the official verify.f",
    )
    opts = parser.parse_args()
    if opts.summarize:
        print_summary(runs_from_log(opts.summarize.read_text()))
        return 0
    programs = opts.programs.split(",")
    if opts.check_references:
        lines = [
            line
            for program in programs
            for line in check_references(
                program, NPB_MZ_SOURCE if program in MULTI_ZONE else NPB_SOURCE, opts.class_name
            )
        ]
        print("\n".join(lines))
        return 0 if all(line.endswith(": equal") for line in lines) else 1
    builds = opts.official_builds.split(",")
    if not builds or set(builds) - {"openmp", "mpi-only"} or len(set(builds)) != len(builds):
        sys.exit(f"--official-builds: {opts.official_builds!r} is not openmp, mpi-only or both")
    official_sides = [{"openmp": "official", "mpi-only": "mpi-only"}[b] for b in builds]
    cases: list[tuple[str, str]] = []
    for program in programs:
        if program not in PROGRAMS:
            sys.exit(f"--programs: {program!r} is not one of {', '.join(PROGRAMS)}")
        for placement in (opts.placements or DEFAULT_PLACEMENTS[program]).split(","):
            ranks, threads = parse_placement(placement)
            if threads > 1 and program not in MULTI_ZONE:
                sys.exit(f"--placements: {program} runs one thread per rank, got {placement}")
            if threads > 1 and "mpi-only" in builds:
                sys.exit(f"--placements: {placement} needs OpenMP, the mpi-only build has none")
            if "mpi-only" in builds and program not in MULTI_ZONE:
                sys.exit(f"--official-builds: mpi-only is for the MZ codes, not {program}")
            if why := rank_rule_error(program, opts.class_name, ranks):
                sys.exit(f"--placements: {why}")
            cases.append((program, placement))
    toolchain = detect_mpi()
    opts.build_dir.mkdir(parents=True, exist_ok=True)
    exes: dict[tuple[str, str], Path] = {}
    for program in programs:
        multi_zone = program in MULTI_ZONE
        for side in official_sides:
            mpi_only = side == "mpi-only"
            official = build_official(
                program,
                NPB_MZ_SOURCE if multi_zone else NPB_SOURCE,
                opts.build_dir / "mpi-only" if mpi_only else opts.build_dir,
                [opts.class_name],
                make_def(official_fflags(multi_zone, mpi_only), multi_zone, openmp=not mpi_only),
            )
            exes[(program, side)] = official[opts.class_name]
        exes[(program, "own")] = build_own(program, toolchain, opts.build_dir)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"# class {opts.class_name}; hpceval at {commit}; {' '.join(NPB_CFLAGS)}")
    print(f"# official: {opts.build_dir} (gfortran {FFLAGS}; MZ: {MZ_FFLAGS})")
    if "mpi-only" in official_sides:
        print(
            f"# mpi-only: {opts.build_dir / 'mpi-only'} (NPB-MZ without OpenMP: gfortran {FFLAGS})"
        )
    print(f"# MPI: {toolchain.identity()}; {os.cpu_count()} CPUs; rounds {opts.rounds}")
    print(f"# own executables: {' '.join(str(v) for k, v in exes.items() if k[1] == 'own')}")
    print(
        "# mpirun --map-by core --bind-to core:overload-allowed (threads > 1: --bind-to none;"
        " --mca mpi_yield_when_idle 1 when oversubscribed)"
        + (f"; ranks under chrt -f {opts.rt} (SCHED_FIFO)" if opts.rt else "")
    )
    print(HEADER, flush=True)
    runs: list[Run] = []
    work = opts.build_dir / "work"
    work.mkdir(exist_ok=True)
    for round_no in range(1, opts.rounds + 1):
        for program, placement in cases:
            # The sides' order rotates by round (two sides: alternates).
            sides = [*official_sides, "own"]
            shift = (round_no - 1) % len(sides)
            order = sides[shift:] + sides[:shift]
            for side in order:
                before = load1()
                try:
                    run = measure(
                        toolchain,
                        exes[(program, side)],
                        side,
                        program,
                        opts.class_name,
                        placement,
                        work,
                        opts.rt,
                    )
                except (RuntimeError, subprocess.TimeoutExpired, StopIteration) as exc:
                    print(f"# {round_no} {program} {placement} {side} FAILED: {exc}", flush=True)
                    continue
                runs.append(run)
                print(run_line(round_no, run, before, load1()), flush=True)
    print_summary(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
