"""NPB kernels: Mop/s of classes A and B at 1 and 2 ranks, with wall time and compiler flags.

Runs `hpceval run` with a suite of every kernel (EP, IS, CG, MG, FT) x classes x ranks into
a temporary database and prints one row per run: the kernel's official time and Mop/s (after
its verification passed), the wall time of the whole execution (mpirun start-up included),
and the flags hpceval compiled the kernels with.

Usage: .venv/bin/python perf/npb.py [--classes A,B] [--ranks 1,2] [--threads 1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from hpceval.store import open_store

KERNELS = ["ep", "is", "cg", "mg", "ft"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--classes", default="A,B")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--repeat", type=int, default=1)
    opts = parser.parse_args()
    classes = opts.classes.split(",")
    ranks = [int(r) for r in opts.ranks.split(",")]
    threads = [int(t) for t in opts.threads.split(",")]
    with tempfile.TemporaryDirectory(prefix="hpceval-npb-bench-") as tmp:
        work = Path(tmp)
        suite = work / "npb-bench.toml"
        suite.write_text(
            'name = "bench-npb"\n[[benchmark]]\nname = "npb"\n'
            f"kernels = {KERNELS}\nclasses = {classes}\nranks = {ranks}\n"
            f"threads_per_rank = {threads}\nrepeat = {opts.repeat}\n"
        )
        db = work / "npb.db"
        exe = Path(sys.executable).with_name("hpceval")
        proc = subprocess.run(
            [str(exe), "run", "--suite", str(suite), "--db", str(db)],
            cwd=work,
            text=True,
            capture_output=True,
            check=False,
        )
        if proc.returncode not in (0, 1):
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        store = open_store(str(db), create=False)
        (run,) = store.runs()
        facts = store.environment(run.environment_id)
        compiler = facts.get("compiler") or {}
        executions = {(e.case_key): e for e in store.executions(run.id)}
        rows: dict[tuple[str, str, int, int], dict[str, float]] = {}
        for sm in store.measurements(run.id):
            m = sm.measurement
            p = m.parameters
            key = (str(p["kernel"]), str(p["class"]), int(p["ranks"]), int(p["threads_per_rank"]))
            rows.setdefault(key, {})[m.metric] = m.value
            e = executions[sm.case_key]
            if e.ended is not None:
                rows[key]["wall"] = e.ended - e.started
        print(f"# compiler: {compiler.get('version') or compiler}")
        print(f"# flags: {'; '.join(compiler.get('cflags') or [])}")
        print(
            f"{'kernel':<6} {'class':<5} {'ranks':>5} {'thr':>3} {'time s':>9} "
            f"{'Mop/s':>10} {'Mop/s/proc':>10} {'wall s':>8}"
        )
        for key in sorted(rows, key=lambda k: (KERNELS.index(k[0]), k[1], k[2], k[3])):
            r = rows[key]
            print(
                f"{key[0]:<6} {key[1]:<5} {key[2]:>5} {key[3]:>3} {r['time']:>9.3f} "
                f"{r['mops_total']:>10.1f} {r['mops_per_process']:>10.1f} {r.get('wall', 0):>8.1f}"
            )
        for e in store.executions(run.id):
            if e.status != "ok":
                print(f"FAILED {e.case_key}: {e.status}: {e.error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
