"""NPB SP: hpceval's sp against the official NPB3.4-MPI SP, same compiler and flags, interleaved.

Builds the official NPB3.4-MPI SP (Fortran, gfortran through Open MPI's mpif90 with
OMPI_FC=gfortran, -O3 -march=native -fallow-argument-mismatch) in a build directory outside
the repository, one binary per class, and hpceval's sp.c with the flags hpceval uses for its
NPB programs (-O3 -march=native -fopenmp -std=c11, one OpenMP thread here). Then, for every
round, runs each (class, ranks) pair of both programs back to back, the order of the two
alternating between rounds, and prints per configuration:

  * Mop/s of both (the official operation count over the official timed section; a run
    that does not verify stops the script: it is a failure, never a number),
  * the ratio hpceval / official: median of the per-round ratios and a 95 % interval
    (t interval of the mean log ratio over the rounds),
  * the ratio of CPU seconds (user + system of all ranks, official / hpceval: above 1 means
    hpceval needs less CPU), less sensitive than wall time to the time slicing of a shared
    machine,
  * peak resident memory per rank (the largest rank, median over the rounds).

SP runs on square rank counts only (1, 4, 9, ...): the 2-rank point of the kernels'
comparisons is 4 ranks here (oversubscribed on a 2-core machine). `--class-c-ranks N` adds
one interleaved pair of class C runs on N ranks.

Usage: .venv/bin/python perf/npb_sp_vs_official.py [--npb-dir DIR] [--build-dir DIR]
       [--classes A,B] [--ranks 1,4] [--rounds 3] [--class-c-ranks 4]
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

from scipy import stats

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.npb import NPB_CFLAGS
from hpceval.toolchain import detect_mpi, run_as_root_requirements

DEFAULT_NPB_DIR = Path("/work/ref/llnl-npb/NPB3.4/NPB3.4-MPI")
DEFAULT_BUILD_DIR = Path(tempfile.gettempdir()) / "hpceval-perf-npb-sp"
OPTIMIZATION = ["-O3", "-march=native"]
USAGE_TAG = "HPCEVAL_RANK_USAGE"  # one line per rank from /usr/bin/time
RUN_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Run:
    mops: float
    seconds: float
    cpu_s: float  # user + system, all ranks
    peak_rss_kb: int  # largest rank


def build_official(npb_dir: Path, build_dir: Path, classes: list[str]) -> dict[str, Path]:
    """The official SP, one binary per class, built outside the repository."""
    for tool in ("gfortran", "mpif90"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install gfortran libopenmpi-dev")
    tree = build_dir / "NPB3.4-MPI"
    if not tree.is_dir():
        shutil.copytree(npb_dir, tree)
    flags = " ".join(OPTIMIZATION)
    (tree / "config" / "make.def").write_text(
        "MPIFC = mpif90\nFLINK = $(MPIFC)\n"
        f"FFLAGS = {flags} -fallow-argument-mismatch\nFLINKFLAGS = $(FFLAGS)\n"
        f"MPICC = mpicc\nCLINK = $(MPICC)\nCFLAGS = {flags}\nCLINKFLAGS = $(CFLAGS)\n"
        "CC = gcc\nBINDIR = ../bin\nCONVERTFLAG = -DFORTRAN_REC_SIZE=1\nRAND = randi8\n"
    )
    (tree / "bin").mkdir(exist_ok=True)
    env = {**os.environ, "OMPI_FC": "gfortran"}
    binaries = {}
    for cls in classes:
        exe = tree / "bin" / f"sp.{cls}.x"
        if not exe.is_file():
            proc = subprocess.run(
                ["make", "sp", f"CLASS={cls}"],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0 or not exe.is_file():
                sys.exit(f"building the official SP class {cls} failed:\n{proc.stdout[-3000:]}")
        binaries[cls] = exe
    return binaries


def build_own() -> Path:
    """hpceval's sp as the npb benchmark builds it (NPB_CFLAGS, cached)."""
    toolchain = detect_mpi()
    program = get_benchmark("npb").build(
        compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=[]
    )
    return program.executables["sp"]


def launch(program: list[str], ranks: int, cwd: Path) -> tuple[str, int, float]:
    """stdout, peak RSS of the largest rank (KiB) and CPU seconds of all ranks."""
    toolchain = detect_mpi()
    root = run_as_root_requirements(toolchain.implementation)
    argv = [toolchain.mpirun, *root.mpirun_args]
    if ranks > (os.cpu_count() or 1) and toolchain.implementation == "Open MPI":
        argv.append("--oversubscribe")
    argv += ["-np", str(ranks), "/usr/bin/time", "-f", f"{USAGE_TAG} %M %U %S", *program]
    env = {**os.environ, **root.env, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    usage = re.findall(rf"{USAGE_TAG} (\d+) ([\d.]+) ([\d.]+)", proc.stderr)
    if proc.returncode != 0 or len(usage) != ranks:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    peak = max(int(kb) for kb, _, _ in usage)
    cpu = sum(float(user) + float(system) for _, user, system in usage)
    return proc.stdout, peak, cpu


def run_official(exe: Path, ranks: int, cwd: Path) -> Run:
    out, peak, cpu = launch([str(exe)], ranks, cwd)
    if not re.search(r"Verification\s+=\s+SUCCESSFUL", out):
        sys.exit(f"official SP did not verify:\n{out}")
    seconds = float(re.search(r"Time in seconds =\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    mops = float(re.search(r"Mop/s total\s+=\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Run(mops, seconds, cpu, peak)


def run_own(exe: Path, cls: str, ranks: int, cwd: Path) -> Run:
    out, peak, cpu = launch([str(exe), "--class", cls], ranks, cwd)
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    result = next((r for r in records if r["record"] == "result"), None)
    if result is None or result["verified"] is not True:
        sys.exit(f"hpceval's sp did not verify:\n{out}")
    return Run(float(result["mops_total"]), float(result["time_s"]), cpu, peak)


def ratio_summary(ratios: list[float]) -> str:
    """Median ratio and a 95 % t interval of the geometric mean (over the rounds)."""
    med = statistics.median(ratios)
    if len(ratios) < 2:
        return f"{med:.3f}"
    logs = [math.log(r) for r in ratios]
    mean, sem = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    half = stats.t.ppf(0.975, len(logs) - 1) * sem
    return f"{med:.3f} [{math.exp(mean - half):.3f}-{math.exp(mean + half):.3f}]"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--npb-dir", type=Path, default=DEFAULT_NPB_DIR)
    parser.add_argument("--build-dir", type=Path, default=DEFAULT_BUILD_DIR)
    parser.add_argument("--classes", default="A,B")
    parser.add_argument("--ranks", default="1,4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--class-c-ranks", type=int, default=0, help="0: no class C run")
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=0.0,
        help="start no new round (nor class C) once a round would end past this (0: no limit)",
    )
    opts = parser.parse_args()
    classes = opts.classes.split(",")
    ranks = [int(r) for r in opts.ranks.split(",")]
    bad = [
        r
        for r in ranks + ([opts.class_c_ranks] if opts.class_c_ranks else [])
        if r < 1 or math.isqrt(r) ** 2 != r
    ]
    if bad:
        sys.exit(f"--ranks: SP needs square rank counts (1, 4, 9, ...), got {bad}")
    opts.build_dir.mkdir(parents=True, exist_ok=True)
    official = build_official(
        opts.npb_dir, opts.build_dir, classes + (["C"] if opts.class_c_ranks else [])
    )
    own = build_own()
    configs = [(c, r) for c in classes for r in ranks]
    results: dict[tuple[str, int], dict[str, list[Run]]] = {
        cfg: {"own": [], "official": []} for cfg in configs
    }
    print(f"# official: {official[classes[0]].parent}  hpceval: {own}")
    print(
        f"# flags: official {' '.join(OPTIMIZATION)} -fallow-argument-mismatch (gfortran), "
        f"hpceval {' '.join(NPB_CFLAGS)} (gcc), OMP_NUM_THREADS=1"
    )
    print(f"# load average at start: {loadavg()} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="hpceval-sp-perf-") as tmp:
        cwd = Path(tmp)  # no inputsp.data: the official program takes its class defaults
        started = time.monotonic()
        budget_s = opts.max_minutes * 60 if opts.max_minutes > 0 else math.inf
        for rnd in range(opts.rounds):
            elapsed = time.monotonic() - started
            if rnd and elapsed + elapsed / rnd > budget_s:
                print(f"# stopping after {rnd} rounds: --max-minutes {opts.max_minutes}")
                break
            for cls, nr in configs:
                order = ["official", "own"] if rnd % 2 == 0 else ["own", "official"]
                for who in order:
                    run = (
                        run_official(official[cls], nr, cwd)
                        if who == "official"
                        else run_own(own, cls, nr, cwd)
                    )
                    results[(cls, nr)][who].append(run)
                    print(
                        f"round {rnd + 1} class {cls} np {nr} {who:<8} {run.seconds:8.2f} s "
                        f"{run.mops:9.1f} Mop/s  cpu {run.cpu_s:8.1f} s  "
                        f"rss {run.peak_rss_kb / 1024:7.1f} MiB  load {loadavg()}",
                        flush=True,
                    )
        class_c: dict[str, Run] = {}
        if opts.class_c_ranks and time.monotonic() - started < budget_s:
            class_c["official"] = run_official(official["C"], opts.class_c_ranks, cwd)
            class_c["own"] = run_own(own, "C", opts.class_c_ranks, cwd)
    print(f"# load average at end: {loadavg()}")
    print()
    print(
        f"{'class':<5} {'np':>3} {'hpceval Mop/s':>14} {'official Mop/s':>15} "
        f"{'ratio (median [95% CI])':>26} {'CPU ratio':>20} {'time CV own/off':>16} "
        f"{'peak MiB/rank own/off':>22}"
    )
    for cls, nr in configs:
        mine, ref = results[(cls, nr)]["own"], results[(cls, nr)]["official"]
        if not mine or not ref:
            continue
        ratios = [a.mops / b.mops for a, b in zip(mine, ref, strict=True)]
        cpu_ratios = [b.cpu_s / a.cpu_s for a, b in zip(mine, ref, strict=True)]

        def cv(runs: list[Run]) -> float:
            times = [r.seconds for r in runs]
            return statistics.stdev(times) / statistics.fmean(times) if len(times) > 1 else 0.0

        rss_own = statistics.median(r.peak_rss_kb for r in mine) / 1024
        rss_off = statistics.median(r.peak_rss_kb for r in ref) / 1024
        print(
            f"{cls:<5} {nr:>3} {statistics.median(r.mops for r in mine):>14.1f} "
            f"{statistics.median(r.mops for r in ref):>15.1f} {ratio_summary(ratios):>26} "
            f"{ratio_summary(cpu_ratios):>20} {cv(mine):>7.2f}/{cv(ref):<8.2f} "
            f"{rss_own:>10.1f}/{rss_off:<11.1f}"
        )
    if class_c:
        a, b = class_c["own"], class_c["official"]
        print(
            f"\nclass C np {opts.class_c_ranks}: hpceval {a.seconds:.1f} s ({a.mops:.1f} Mop/s, "
            f"{a.peak_rss_kb / 1024:.0f} MiB/rank), official {b.seconds:.1f} s ({b.mops:.1f} "
            f"Mop/s, {b.peak_rss_kb / 1024:.0f} MiB/rank), ratio {a.mops / b.mops:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
