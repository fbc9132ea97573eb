"""hpceval's NPB kernels against the official NPB 3.4-MPI, built here with the same flags.

Builds the official NPB 3.4-MPI (Fortran, `RAND=randi8`, the generator its make.def template
recommends) from a source tree outside the repository into a build directory outside it,
builds hpceval's kernels as `hpceval run` does (mpicc, NPB_CFLAGS: -O3 -march=native), then
runs both interleaved (official, own, official, own, ...) for every kernel, class and rank
count, ROUNDS times, and prints the ratio own/official of the Mop/s of adjacent runs: the
median over the rounds and a 95 % t-interval of the geometric mean ratio (log ratios).
Rows outside +-15 % are flagged. On a shared machine the wall-clock Mop/s of both sides
swing with the other tenants' load, so the CPU seconds (user + system) of each whole run
(mpirun and its ranks) are printed too: official CPU / own CPU is the same comparison of
cost, untimed set-up included (the same set-up on both sides), and barely moved by load.
Every run must verify (official: "Verification = SUCCESSFUL"; own: the JSON result's
`verified`), else the script stops.

Usage: .venv/bin/python perf/npb_vs_official.py [--npb-src DIR] [--build-dir DIR]
       [--kernels ep,is,cg,mg,ft] [--classes A,B] [--ranks 1,2] [--rounds 3] [--rt] [--save]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from scipy import stats

from hpceval.benchmarks.npb import NPB_CFLAGS, Npb

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SRC = Path("/work/ref/llnl-npb/NPB3.4/NPB3.4-MPI")
# gfortran's and GNU C's defaults already include -ffp-contract=fast and no errno; the
# flags are spelt out so that both sides read the same list (hpceval's NPB_CFLAGS).
COMMON_FLAGS = "-O3 -march=native -fno-math-errno -ffp-contract=fast"
FFLAGS = f"{COMMON_FLAGS} -fallow-argument-mismatch -fallow-invalid-boz"
TOLERANCE = 0.15
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "core"]
# --rt: every rank under SCHED_FIFO priority 10 (as root). The kernel's RT throttling
# (sched_rt_runtime_us 950000 of 1000000) leaves the other tenants 5 % of each second, so
# a run has the cores it is pinned to almost to itself: quiet-machine figures on a shared
# machine. mpirun itself stays a normal process; a pause between runs gives the CPUs back.
RT_PREFIX = ["chrt", "-f", "10"]
RT_PAUSE_S = 2.0
rt = False
ENV = {
    **os.environ,
    "OMPI_FC": "gfortran",
    "OMP_NUM_THREADS": "1",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}
# The official make.def: mpif90 (gfortran through OMPI_FC) and mpicc, the same -O3
# -march=native as hpceval's kernels.
MAKE_DEF = f"""MPIFC = mpif90
FLINK = $(MPIFC)
FFLAGS = {FFLAGS}
FLINKFLAGS = $(FFLAGS)
MPICC = mpicc
CLINK = $(MPICC)
CFLAGS = {COMMON_FLAGS}
CLINKFLAGS = $(CFLAGS)
CC = gcc
BINDIR = ../bin
RAND = randi8
"""


def build_official(src: Path, build: Path, kernels: list[str], classes: list[str]) -> Path:
    tree = build / "NPB3.4-MPI"
    if not tree.is_dir():
        shutil.copytree(src, tree)
    (tree / "config" / "make.def").write_text(MAKE_DEF)
    (tree / "bin").mkdir(exist_ok=True)
    for k in kernels:
        for c in classes:
            if (tree / "bin" / f"{k}.{c}.x").is_file():
                continue
            proc = subprocess.run(
                ["make", k, f"CLASS={c}"], cwd=tree, env=ENV, capture_output=True, text=True
            )
            if proc.returncode != 0:
                sys.exit(f"building official {k}.{c} failed:\n{proc.stdout[-2000:]}{proc.stderr}")
    return tree / "bin"


def build_own(build: Path) -> dict[str, Path]:
    os.environ["HPCEVAL_CACHE"] = str(build / "hpceval-cache")
    version = subprocess.run(["mpicc", "--version"], capture_output=True, text=True).stdout
    program = Npb().build(compiler="mpicc", compiler_identity=version, cflags=[])
    return dict(program.executables)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def mpirun(ranks: int, program: list[str]) -> list[str]:
    return [*MPIRUN, "-np", str(ranks), *(RT_PREFIX if rt else []), *program]


def run(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """The finished command and the CPU seconds it and its descendants used."""
    if rt:
        time.sleep(RT_PAUSE_S)
    before = cpu_seconds()
    proc = subprocess.run(argv, env=ENV, capture_output=True, text=True)
    return proc, cpu_seconds() - before


def run_official(exe: Path, ranks: int) -> tuple[float, float]:
    proc, cpu = run(mpirun(ranks, [str(exe)]))
    out = proc.stdout
    if proc.returncode != 0 or not re.search(r"Verification\s*=\s*SUCCESSFUL", out):
        sys.exit(f"official {exe.name} np {ranks} did not verify:\n{out[-3000:]}{proc.stderr}")
    match = re.search(r"Mop/s total\s*=\s*([0-9.Ee+-]+)", out)
    if match is None:
        sys.exit(f"official {exe.name}: no Mop/s in its output")
    return float(match.group(1)), cpu


def run_own(exe: Path, class_name: str, ranks: int) -> tuple[float, float]:
    proc, cpu = run(mpirun(ranks, [str(exe), "--class", class_name]))
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith("{") and '"record":"result"' in line:
            result = json.loads(line)
    if proc.returncode != 0 or result is None or not result.get("verified"):
        sys.exit(f"hpceval {exe.name} {class_name} np {ranks} failed:\n{proc.stdout[-3000:]}")
    return float(result["mops_total"]), cpu


def summary(ratios: list[float]) -> tuple[float, float, float]:
    """Median ratio and the 95 % t-interval of the geometric mean ratio."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return statistics.median(ratios), math.nan, math.nan
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return statistics.median(ratios), math.exp(mean - half), math.exp(mean + half)


Runs = dict[tuple[str, str, int], list[tuple[float, float, float, float]]]
ROUND_LINE = re.compile(
    r"round \d+ (\w+) (\w) np (\d+): official ([\d.]+) Mop/s ([\d.]+) CPU-s, "
    r"hpceval ([\d.]+) Mop/s ([\d.]+) CPU-s"
)


def table(runs: Runs, say: Callable[[str], None]) -> int:
    """Prints the ratio table; returns the number of rows flagged."""
    say("")
    say("ratio: hpceval Mop/s / official Mop/s (median over rounds, 95 % CI of the geometric "
        "mean); CPU ratio: official CPU-s / hpceval CPU-s of the whole runs (> 1: hpceval "
        "cheaper)")  # fmt: skip
    say(f"{'kernel':6} {'class':5} {'np':>2} {'official':>9} {'hpceval':>9} {'ratio':>6} "
        f"{'95% CI':>15} {'spread':>7} {'CPU ratio':>9} {'95% CI':>15}")  # fmt: skip
    outside = 0
    for (k, c, r), rows in runs.items():
        if not rows:
            continue
        ratios = [m / o for o, m, _, _ in rows]
        cpu_ratios = [oc / mc for _, _, oc, mc in rows]
        med, lo, hi = summary(ratios)
        cmed, clo, chi = summary(cpu_ratios)
        spread = (max(ratios) - min(ratios)) / med
        flag = "" if abs(med - 1) <= TOLERANCE else "  <-- Mop/s outside +-15 %"
        if abs(cmed - 1) > TOLERANCE:
            flag += "  <-- CPU outside +-15 %"
        outside += bool(flag)
        say(f"{k:6} {c:5} {r:>2} {statistics.median(row[0] for row in rows):9.1f} "
            f"{statistics.median(row[1] for row in rows):9.1f} {med:6.3f} "
            f"{f'[{lo:.3f}, {hi:.3f}]':>15} {spread:7.1%} {cmed:9.3f} "
            f"{f'[{clo:.3f}, {chi:.3f}]':>15}{flag}")  # fmt: skip
    say(f"# {outside} of {len(runs)} flagged; load average {os.getloadavg()[0]:.1f} at the end")
    return outside


def runs_from_log(path: Path) -> Runs:
    """The rounds printed by an earlier (perhaps interrupted) run of this script."""
    runs: Runs = {}
    for m in ROUND_LINE.finditer(path.read_text()):
        k, c, r, off, off_cpu, own, own_cpu = m.groups()
        runs.setdefault((k, c, int(r)), []).append(
            (float(off), float(own), float(off_cpu), float(own_cpu))
        )
    return runs


def commit() -> str:
    proc = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return proc.stdout.strip() + ("-dirty" if dirty else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--npb-src", type=Path, default=DEFAULT_SRC)
    parser.add_argument("--build-dir", type=Path, default=None, help="kept between runs")
    parser.add_argument("--kernels", default="ep,is,cg,mg,ft")
    parser.add_argument("--classes", default="A,B")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", action="store_true", help="write perf/results/...txt")
    parser.add_argument("--summarize", type=Path, help="only print the table of a saved log")
    parser.add_argument("--rt", action="store_true", help="ranks under chrt -f 10 (root)")
    opts = parser.parse_args()
    if opts.summarize:
        return 1 if table(runs_from_log(opts.summarize), print) else 0
    global rt
    rt = opts.rt
    kernels, classes = opts.kernels.split(","), opts.classes.split(",")
    ranks = [int(r) for r in opts.ranks.split(",")]
    if not (opts.npb_src / "FT" / "ft.f").is_file():
        sys.exit(f"{opts.npb_src}: not an NPB 3.4-MPI source tree (no FT/ft.f)")
    build = opts.build_dir or Path(tempfile.mkdtemp(prefix="hpceval-npb-official-"))
    if build.resolve().is_relative_to(REPO):
        sys.exit(f"{build}: the build directory must be outside the repository")
    build.mkdir(parents=True, exist_ok=True)
    official_bin = build_official(opts.npb_src, build, kernels, classes)
    own = build_own(build)
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    load = os.getloadavg()
    say(f"# npb_vs_official {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit()}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f} at start")  # fmt: skip
    say(f"# official: {opts.npb_src} RAND=randi8 FFLAGS={FFLAGS}; hpceval: mpicc "
        f"{' '.join(NPB_CFLAGS)}; OMP_NUM_THREADS=1; {' '.join(MPIRUN)}"
        + (f"; ranks under {' '.join(RT_PREFIX)} (SCHED_FIFO), {RT_PAUSE_S:.0f} s pause before "
           "each run" if rt else ""))  # fmt: skip
    configs = [(k, c, r) for k in kernels for c in classes for r in ranks]
    # (official Mop/s, own Mop/s, official CPU s, own CPU s) per round
    runs: Runs = {cfg: [] for cfg in configs}
    for rnd in range(1, opts.rounds + 1):
        for k, c, r in configs:
            off, off_cpu = run_official(official_bin / f"{k}.{c}.x", r)
            mine, own_cpu = run_own(own[k], c, r)
            runs[(k, c, r)].append((off, mine, off_cpu, own_cpu))
            say(f"round {rnd} {k} {c} np {r}: official {off:.1f} Mop/s {off_cpu:.2f} CPU-s, "
                f"hpceval {mine:.1f} Mop/s {own_cpu:.2f} CPU-s, ratio {mine / off:.3f}, "
                f"CPU ratio {off_cpu / own_cpu:.3f}")  # fmt: skip
    outside = table(runs, say)
    if opts.save:
        name = f"npb-vs-official-{datetime.now(UTC):%Y-%m-%d}-{commit()}.txt"
        out = REPO / "perf" / "results" / name
        out.write_text("\n".join(lines) + "\n")
        print(f"saved {out}")
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
