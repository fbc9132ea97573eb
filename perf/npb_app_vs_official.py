"""An hpceval NPB program against the official NPB 3.4-MPI one, same compiler and flags.

Written generic for the pseudo-applications (npb_bt_vs_official.py, npb_sp_vs_official.py
and npb_lu_vs_official.py name their program and default rank counts; the kernels have
npb_vs_official.py) and their multi-zone versions (npb_mz_vs_official.py: bt-mz, sp-mz
against NPB3.4-MZ-MPI built with gfortran -fopenmp; placements RANKSxTHREADS, both programs
run with OMP_NUM_THREADS=THREADS). Builds the official Fortran program outside the
repository (a copy of the NPB3.4-MPI tree under --build-dir, `OMPI_FC=gfortran`, FFLAGS
`-O3 -march=native -fallow-argument-mismatch`) and hpceval's C program with hpceval's NPB
flags (`-O3 -march=native -fopenmp -std=c11`, run with one OpenMP thread), then runs both
interleaved: every round runs each (class, ranks) pair once per program, the order within a
pair alternating between rounds, so that a slow spell of this shared machine hits both. Only
verified runs count (the official "Verification = SUCCESSFUL", hpceval's JSON result
"verified": true).

Printed per (class, ranks): the median Mop/s of each program, the median of the per-round
ratios own/official with a 95 % t-interval on the log ratios, the coefficient of variation of
each side (how noisy the machine was), and the peak resident memory of the largest process
(GNU time's %M over mpirun and its ranks, i.e. the biggest rank), and the ratio of CPU
seconds official/own (user + system of all ranks, GNU time's %U + %S): on a machine shared
with other jobs a run's wall-clock time mostly measures how often it was scheduled, its CPU
time far less (with several ranks it also counts MPI's busy waiting, on both sides). Rank
counts are checked with hpceval's rule for the program (the one the C program and NPB apply).
Optionally the time of class C at --class-c-ranks ranks, once per program. `--summarize LOG`
prints the summary again from the run lines of a log (of an interrupted run too: the rounds
in which both programs ran).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import t as student_t

from hpceval.benchmarks.npb import NPB_CFLAGS, compile_npb_program, rank_rule_error
from hpceval.toolchain import MpiToolchain, detect_mpi

NPB_SOURCE = Path("/work/ref/llnl-npb/NPB3.4/NPB3.4-MPI")
NPB_MZ_SOURCE = Path("/work/ref/llnl-npb/NPB3.4-MZ/NPB3.4-MZ-MPI")
OFFICIAL_FFLAGS = "-O3 -march=native -fallow-argument-mismatch"
# NPB3.4-MZ: MPI + OpenMP (its make.def names FC, not MPIFC).
OFFICIAL_MZ_FFLAGS = "-O3 -march=native -fopenmp -fallow-argument-mismatch"
RUN_TIMEOUT_S = 3600
CONFIDENCE = 0.95
# --rt: every rank under SCHED_FIFO priority 10 (as root; mpirun stays a normal process), as
# npb_vs_official.py's --rt: a loaded machine's other tenants keep the 5 % that the kernel's
# RT throttling leaves them, and a pause before each run gives the CPUs back.
RT_PREFIX = ["chrt", "-f", "10"]
RT_PAUSE_S = 2.0
rt = False


def make_def(fflags: str, multi_zone: bool, openmp: bool = True) -> str:
    """config/make.def of NPB3.4-MPI, or of NPB3.4-MZ-MPI (which names FC, not MPIFC);
    openmp=False: NPB-MZ's MPI-only build (its OpenMP directives and calls are comments then)."""
    if multi_zone:
        cflags = "-O3 -march=native" + (" -fopenmp" if openmp else "")
        return f"""FC = mpif90
FLINK = $(FC)
F_LIB =
F_INC =
FFLAGS = {fflags}
FLINKFLAGS = $(FFLAGS)
CC = mpicc
CLINK = $(CC)
C_LIB =
C_INC =
CFLAGS = {cflags}
CLINKFLAGS = $(CFLAGS)
UCC = gcc
BINDIR = ../bin
RAND = randi8
"""
    return f"""MPIFC = mpif90
FLINK = $(MPIFC)
FMPI_LIB =
FMPI_INC =
FFLAGS = {fflags}
FLINKFLAGS = $(FFLAGS)
MPICC = mpicc
CLINK = $(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = -O3 -march=native
CLINKFLAGS = $(CFLAGS)
CC = gcc
BINDIR = ../bin
CONVERTFLAG = -DFORTRAN_REC_SIZE=1
RAND = randi8
"""


OFFICIAL_TIME = re.compile(r"Time in seconds\s*=\s*(\S+)")
OFFICIAL_MOPS = re.compile(r"Mop/s total\s*=\s*(\S+)")
OFFICIAL_VERIFIED = re.compile(r"Verification\s*=\s*SUCCESSFUL")


@dataclass(frozen=True)
class RunResult:
    time_s: float
    mops: float
    peak_rss_mib: float
    cpu_s: float  # user + system seconds of mpirun and all ranks
    load: float  # 1-minute load average when the run ended


def build_official(
    program: str, source: Path, build_dir: Path, classes: list[str],
    make_def_text: str | None = None,
) -> dict[str, Path]:
    """The official executables per class; make_def_text replaces the default make.def."""
    if shutil.which("gfortran") is None:
        sys.exit("gfortran is missing: apt-get install -y gfortran")
    multi_zone = program.endswith("-mz")
    tree = build_dir / source.name
    if not tree.is_dir():
        shutil.copytree(source, tree)
    default = make_def(OFFICIAL_MZ_FFLAGS if multi_zone else OFFICIAL_FFLAGS, multi_zone)
    (tree / "config" / "make.def").write_text(make_def_text or default)
    (tree / "bin").mkdir(exist_ok=True)
    env = {**os.environ, "OMPI_FC": "gfortran"}
    exes = {}
    for class_name in classes:
        exe = tree / "bin" / f"{program}.{class_name}.x"
        if not exe.is_file():
            proc = subprocess.run(
                ["make", program, f"CLASS={class_name}"],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0 or not exe.is_file():
                sys.exit(
                    f"building official {program} class {class_name} failed:\n{proc.stdout[-3000:]}"
                )
        exes[class_name] = exe
    return exes


def build_own(program: str, toolchain: MpiToolchain, build_dir: Path) -> Path:
    return compile_npb_program(
        program,
        compiler=toolchain.mpicc,
        compiler_identity=toolchain.identity(),
        cflags=NPB_CFLAGS,
        cache=build_dir / "own",
    )


def launch(
    toolchain: MpiToolchain, ranks: int, program: list[str], work: Path, threads: int = 1
) -> tuple[str, float, float]:
    """Runs program on `ranks` ranks; returns its stdout, the peak RSS (MiB) of the largest
    process of the tree and the CPU seconds of the tree."""
    rss_file = work / "rss.txt"
    root = toolchain.run_as_root().mpirun_args if os.geteuid() == 0 else ()
    name = program[0]
    if rt:
        program = [*RT_PREFIX, *program]
        time.sleep(RT_PAUSE_S)
    # As npb_class_c.py: single-threaded ranks bound round-robin to the cores (left to the
    # kernel, 4 SCHED_FIFO ranks on 2 cores may run 1 on one core and 3 on the other),
    # threaded ranks unbound; ranks yield when waiting once ranks x threads exceed the CPUs.
    placement = (
        ["--map-by", "core", "--bind-to", "core:overload-allowed"]
        if threads == 1
        else ["--bind-to", "none"]
    )
    if ranks * threads > (os.cpu_count() or 1):
        placement += ["--mca", "mpi_yield_when_idle", "1"]
    argv = [
        "/usr/bin/time", "-f", "%M %U %S", "-o", str(rss_file),
        toolchain.mpirun, *root, "--oversubscribe", *placement, "-np", str(ranks), *program,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(
        argv, cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    rss_kib, user_s, system_s = rss_file.read_text().split()[-3:]
    return proc.stdout, int(rss_kib) / 1024.0, float(user_s) + float(system_s)


def run_own(
    toolchain: MpiToolchain, exe: Path, class_name: str, ranks: int, work: Path, threads: int = 1
) -> RunResult:
    program = exe.name.removeprefix("npb-")
    out, rss, cpu = launch(toolchain, ranks, [str(exe), "--class", class_name], work, threads)
    result = next(
        r for r in (json.loads(x) for x in out.splitlines() if x.startswith("{"))
        if r["record"] == "result"
    )  # fmt: skip
    if result["verified"] is not True:
        raise RuntimeError(
            f"hpceval {program} class {class_name} np {ranks} did not verify: {result}"
        )
    return RunResult(result["time_s"], result["mops_total"], rss, cpu, os.getloadavg()[0])


def run_official(
    toolchain: MpiToolchain, exe: Path, ranks: int, work: Path, threads: int = 1
) -> RunResult:
    out, rss, cpu = launch(toolchain, ranks, [str(exe)], work, threads)
    time_match, mops_match = OFFICIAL_TIME.search(out), OFFICIAL_MOPS.search(out)
    if not (OFFICIAL_VERIFIED.search(out) and time_match and mops_match):
        raise RuntimeError(f"official {exe.name} np {ranks} did not verify:\n{out[-2000:]}")
    return RunResult(
        float(time_match.group(1)), float(mops_match.group(1)), rss, cpu, os.getloadavg()[0]
    )


def log_ratio_interval(ratios: list[float]) -> tuple[float, float]:
    """95 % t-interval of the geometric mean ratio (log ratios are close to symmetric)."""
    logs = [math.log(r) for r in ratios]
    if len(logs) < 2:
        return math.nan, math.nan
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = float(student_t.ppf(0.5 + CONFIDENCE / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else math.nan


# Runs per (class, ranks, OpenMP threads per rank).
Runs = dict[tuple[str, int, int], list[RunResult]]


def placement_label(ranks: int, threads: int, multi_zone: bool) -> str:
    return f"{ranks}x{threads}" if multi_zone else str(ranks)


def print_summary(own_runs: Runs, off_runs: Runs, multi_zone: bool = False) -> None:
    """One row per (class, ranks, threads) over the rounds in which both programs ran."""
    print()
    print(
        "class ranks rounds  own_Mop/s  off_Mop/s  ratio_med  ratio_CI95        own_CV  off_CV"
        "  own_MiB  off_MiB  cpu_ratio_med  cpu_ratio_CI95"
    )
    for key, mine_all in own_runs.items():
        rounds = min(len(mine_all), len(off_runs.get(key, [])))
        if rounds == 0:
            continue
        mine, theirs = mine_all[:rounds], off_runs[key][:rounds]
        ratios = [a.mops / b.mops for a, b in zip(mine, theirs, strict=True)]
        low, high = log_ratio_interval(ratios)
        cpu = ""
        if all(r.cpu_s > 0 for r in (*mine, *theirs)):  # logs of older versions lack it
            cpu_ratios = [b.cpu_s / a.cpu_s for a, b in zip(mine, theirs, strict=True)]
            cpu_low, cpu_high = log_ratio_interval(cpu_ratios)
            cpu = f" {statistics.median(cpu_ratios):>14.3f}  [{cpu_low:.3f}, {cpu_high:.3f}]"
        print(
            f"{key[0]:>5} {placement_label(key[1], key[2], key[2] > 1 or multi_zone):>5} "
            f"{rounds:>6} "
            f"{statistics.median(r.mops for r in mine):>10.1f} "
            f"{statistics.median(r.mops for r in theirs):>10.1f} "
            f"{statistics.median(ratios):>10.3f}  [{low:.3f}, {high:.3f}]  "
            f"{cv([r.mops for r in mine]):>7.1%} {cv([r.mops for r in theirs]):>7.1%} "
            f"{statistics.median(r.peak_rss_mib for r in mine):>8.1f} "
            f"{statistics.median(r.peak_rss_mib for r in theirs):>8.1f}{cpu}",
            flush=True,
        )


# A run line of this script's log; the CPU column is absent from the logs of older versions.
RUN_LINE = re.compile(
    r"^\s*(\d+)\s+([SWABCD])\s+(\d+)(?:x(\d+))?\s+(own|official)\s+(\S+)\s+(\S+)\s+(\S+)"
    r"(?:\s+(\S+))?\s+(\S+)\s*$"
)


def summarize_log(text: str) -> None:
    """The summary of the run lines this script printed (e.g. of an interrupted run)."""
    runs: dict[str, Runs] = {"own": {}, "official": {}}
    for line in text.splitlines():
        if match := RUN_LINE.match(line):
            _, class_name, ranks, threads, which, time_s, mops, rss, cpu_s, load = match.groups()
            result = RunResult(
                float(time_s), float(mops), float(rss), float(cpu_s or 0.0), float(load)
            )
            key = (class_name, int(ranks), int(threads or 1))
            runs[which].setdefault(key, []).append(result)
    print_summary(runs["own"], runs["official"], any(k[2] > 1 for k in runs["own"]))


def parse_placements(text: str) -> list[tuple[int, int]]:
    """ "1,4" (ranks, one thread each) or "2x1,1x2" (ranks x OpenMP threads per rank)."""
    placements = []
    for item in text.split(","):
        ranks, _, threads = item.partition("x")
        placements.append((int(ranks), int(threads or 1)))
    return placements


def main(program: str, default_ranks: str, description: str) -> int:
    multi_zone = program.endswith("-mz")
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--classes", default="A,B")
    parser.add_argument(
        "--ranks", default=default_ranks, help="RANKS[xTHREADS],... (threads: multi-zone only)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--class-c-ranks", type=int, default=0, help="0: skip class C")
    parser.add_argument(
        "--npb-source", type=Path, default=NPB_MZ_SOURCE if multi_zone else NPB_SOURCE
    )
    parser.add_argument(
        "--build-dir", type=Path, default=Path(f"/work/ref/build-npb-{program}/bench")
    )
    parser.add_argument(
        "--summarize", type=Path, help="only print the summary of a log of this script"
    )
    parser.add_argument("--rt", action="store_true", help="ranks under chrt -f 10 (as root)")
    parser.add_argument(
        "--rt-priority", type=int, default=10, help="with --rt: the SCHED_FIFO priority"
    )
    opts = parser.parse_args()
    global rt
    rt = opts.rt
    # Another tenant's SCHED_FIFO jobs at a higher priority starve ranks at 10; at the same
    # priority a run waits for theirs to end and then runs undisturbed.
    RT_PREFIX[2] = str(opts.rt_priority)
    if opts.summarize:
        summarize_log(opts.summarize.read_text())
        return 0
    classes = opts.classes.split(",")
    placements = parse_placements(opts.ranks)
    for class_name in classes:
        for r, t in placements:
            if t > 1 and not multi_zone:
                sys.exit(f"--ranks: {program} runs one thread per rank here, got {r}x{t}")
            if (why := rank_rule_error(program, class_name, r)) is not None:
                sys.exit(f"--ranks: {why}")
    if opts.class_c_ranks and (why := rank_rule_error(program, "C", opts.class_c_ranks)):
        sys.exit(f"--class-c-ranks: {why}")
    toolchain = detect_mpi()
    opts.build_dir.mkdir(parents=True, exist_ok=True)
    official = build_official(
        program,
        opts.npb_source,
        opts.build_dir,
        sorted({*classes, *(["C"] if opts.class_c_ranks else [])}),
    )
    own = build_own(program, toolchain, opts.build_dir)
    flags = OFFICIAL_MZ_FFLAGS if multi_zone else OFFICIAL_FFLAGS
    print(f"# own: {own} ({' '.join(NPB_CFLAGS)}, OMP_NUM_THREADS per placement)")
    print(f"# official: {opts.build_dir / opts.npb_source.name} (gfortran {flags})")
    print(
        f"# MPI: {toolchain.identity()}; {os.cpu_count()} CPUs; rounds {opts.rounds}; "
        f"{'ranks under ' + ' '.join(RT_PREFIX) if rt else 'normal priority'}; "
        f"load at start {os.getloadavg()[0]:.1f}"
    )
    print(
        "# mpirun --map-by core --bind-to core:overload-allowed (threads > 1: --bind-to none;"
        " --mca mpi_yield_when_idle 1 when ranks x threads exceed the CPUs)"
    )
    print("round class ranks program   time_s     Mop/s  peak_MiB    cpu_s  load1")
    pairs = [(c, r, t) for c in classes for r, t in placements]
    own_runs: Runs = {p: [] for p in pairs}
    off_runs: Runs = {p: [] for p in pairs}
    with tempfile.TemporaryDirectory(prefix=f"npb-{program}-bench-") as tmp:
        work = Path(tmp)
        for round_no in range(1, opts.rounds + 1):
            for class_name, n, t in pairs:
                order = ["own", "official"] if round_no % 2 else ["official", "own"]
                for which in order:
                    if which == "own":
                        res = run_own(toolchain, own, class_name, n, work, t)
                        own_runs[(class_name, n, t)].append(res)
                    else:
                        res = run_official(toolchain, official[class_name], n, work, t)
                        off_runs[(class_name, n, t)].append(res)
                    print(
                        f"{round_no:>5} {class_name:>5} "
                        f"{placement_label(n, t, multi_zone):>5} {which:<8} {res.time_s:>8.2f} "
                        f"{res.mops:>9.1f} {res.peak_rss_mib:>9.1f} {res.cpu_s:>8.1f} "
                        f"{res.load:>6.2f}",
                        flush=True,
                    )
        print_summary(own_runs, off_runs, multi_zone)
        if opts.class_c_ranks:
            n = opts.class_c_ranks
            mine_c = run_own(toolchain, own, "C", n, work)
            theirs_c = run_official(toolchain, official["C"], n, work)
            print(
                f"\nclass C np {n}: own {mine_c.time_s:.1f} s ({mine_c.mops:.1f} Mop/s, "
                f"{mine_c.peak_rss_mib:.0f} MiB), official {theirs_c.time_s:.1f} s "
                f"({theirs_c.mops:.1f} Mop/s, {theirs_c.peak_rss_mib:.0f} MiB), "
                f"ratio {mine_c.mops / theirs_c.mops:.3f}; CPU seconds own {mine_c.cpu_s:.0f}, "
                f"official {theirs_c.cpu_s:.0f}"
            )
    return 0
