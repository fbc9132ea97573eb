"""Where BT's cost differs from NPB's: build variants of hpceval's bt.c against the official BT.

Builds copies of bt.c with the class's time steps cut to --steps (the official BT reads the
same count from inputbt.data), in variants that each change one compiler-level thing: `own`
(hpceval's NPB flags, FMA contraction included; the 5x5 block routines are separate
functions, as NPB's separately compiled solve_subs.f), `nofma` (-ffp-contract=off), `novec`
(-fno-tree-vectorize -fno-tree-slp-vectorize). Runs the official program and every variant as
MPI singletons, interleaved (the order rotated per round), and prints the CPU seconds of each
run (getrusage of the children) and per variant the median ratio official / variant. The
runs do not verify (fewer steps than the class's references); the work per step is the
class's. Results: perf/results/npb-bt-cost-gap-2026-11-25.txt.

`--base REV` adds bt.c as it was at git revision REV (variant `base`, hpceval's flags),
to measure a change of bt.c against the official program and the code before it.

Usage: .venv/bin/python perf/npb_bt_variants.py [--class A] [--steps 40] [--rounds 3] [--rt]
           [--variants own,nofma,novec] [--base REV]
           [--official /work/ref/build-npb-bt/NPB3.4-MPI/bin/bt.A.x]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from hpceval.benchmarks.npb import NPB_CFLAGS

SOURCE = Path(__file__).resolve().parents[1] / "src" / "hpceval" / "benchmarks" / "npb"
GRID = {"S": 12, "W": 24, "A": 64, "B": 102, "C": 162}
DT = {"S": "0.010d0", "W": "0.0008d0", "A": "0.0008d0", "B": "0.0003d0", "C": "0.0001d0"}
VARIANTS = {
    "own": (),
    "nofma": ("-ffp-contract=off",),
    "novec": ("-fno-tree-vectorize", "-fno-tree-slp-vectorize"),
}


def with_steps(text: str, class_name: str, steps: int) -> str:
    """bt.c with the class table's entry {'A', 64, 200, ...} -> {'A', 64, steps, ...}."""
    text, count = re.subn(
        rf"\{{'{class_name}', (\d+), \d+,", rf"{{'{class_name}', \1, {steps},", text
    )
    if count != 1:
        raise SystemExit(f"class {class_name} not found in bt.c's class table")
    return text


def build(
    work: Path, class_name: str, steps: int, names: list[str], base: str | None
) -> dict[str, Path]:
    """The variants named (and `base`: bt.c at git revision `base`, hpceval's flags)."""
    text = with_steps((SOURCE / "bt.c").read_text(), class_name, steps)
    variants = {name: (text, VARIANTS[name]) for name in names}
    if base is not None:
        old = subprocess.run(
            ["git", "show", f"{base}:src/hpceval/benchmarks/npb/bt.c"],
            cwd=SOURCE, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        variants["base"] = (with_steps(old, class_name, steps), ())
    exes = {}
    for name, (source_text, flags) in variants.items():
        src = work / f"bt-{name}.c"
        src.write_text(source_text)
        exe = work / f"bt-{name}"
        subprocess.run(
            ["mpicc", *NPB_CFLAGS, *flags, f"-I{SOURCE}", "-o", str(exe), str(src),
             str(SOURCE / "npb_common.c"), "-lm"],
            check=True,
        )  # fmt: skip
        exes[name] = exe
    return exes


def cpu_seconds(argv: list[str], cwd: Path, rt: int) -> float:
    if rt:  # SCHED_FIFO priority rt (10), as npb_vs_official.py --rt; a pause gives the CPUs back
        argv = ["chrt", "-f", str(rt), *argv]
        time.sleep(2.0)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--class", dest="class_name", default="A", choices=sorted(GRID))
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rt", action="store_true", help="runs under chrt -f 10 (as root)")
    parser.add_argument(
        "--rt-priority", type=int, default=10, help="with --rt: the SCHED_FIFO priority"
    )
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"some of {','.join(VARIANTS)}"
    )
    parser.add_argument("--base", help="also bt.c at this git revision (variant `base`)")
    parser.add_argument(
        "--official", type=Path, default=Path("/work/ref/build-npb-bt/NPB3.4-MPI/bin/bt.A.x")
    )
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="npb-bt-variants-") as tmp:
        work = Path(tmp)
        n = GRID[opts.class_name]
        (work / "inputbt.data").write_text(f"{opts.steps}\n{DT[opts.class_name]}\n{n} {n} {n}\n")
        programs = {"official": [str(opts.official)]}
        names = opts.variants.split(",")
        if unknown := set(names) - set(VARIANTS):
            parser.error(f"--variants: unknown {', '.join(sorted(unknown))}")
        for name, exe in build(work, opts.class_name, opts.steps, names, opts.base).items():
            programs[name] = [str(exe), "--class", opts.class_name]
        names = list(programs)
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for round_no in range(opts.rounds):
            shift = round_no % len(names)
            for name in names[shift:] + names[:shift]:
                priority = opts.rt_priority if opts.rt else 0
                cpu[name].append(cpu_seconds(programs[name], work, priority))
                print(f"{round_no + 1} {name:9s} {cpu[name][-1]:8.2f} s  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
        for name in names[1:]:
            ratios = [a / b for a, b in zip(cpu["official"], cpu[name], strict=True)]
            each = " ".join(f"{r:.3f}" for r in ratios)
            print(
                f"{name:9s} median {statistics.median(cpu[name]):7.2f} s  official/{name} "
                f"median {statistics.median(ratios):.3f} ({each})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
