"""Runs one BioBench execution's steps in order and times each: what the launcher starts
(`python -m hpceval.benchmarks.biobench.runner STEPS.json`) on the node.

Why a runner and not the tool itself: a BioBench case is a pipeline (makeblastdb then
blastn, velveth then velvetg), and the tools print no timing of their own. Each step is an
argv list (no shell), its wall time measured here around the process, and its CPU
seconds (all threads) from the kernel's accounting of the finished child. Output: JSON lines,
one "step" record per step (name, seconds, exit status), then "end"; a failed step prints
an "error" record with the end of its standard error and exits 1.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

STDERR_TAIL = 400


def record(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def children_cpu_seconds() -> float:
    """User + system CPU seconds of the finished child processes (all their threads)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_steps(spec_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    run_dir = Path(spec["run_dir"])
    record(record="header", program="biobench", tool=spec["tool"], threads=spec["threads"],
           host=os.uname().nodename)  # fmt: skip
    for step in spec["steps"]:
        env = {**os.environ, **step.get("env", {})}
        out_name = step.get("stdout")
        started = time.perf_counter()
        cpu_before = children_cpu_seconds()
        with open(run_dir / out_name if out_name else os.devnull, "w") as out:
            proc = subprocess.run(
                step["argv"], stdout=out, stderr=subprocess.PIPE, text=True, env=env,
                check=False,
            )  # fmt: skip
        seconds = time.perf_counter() - started
        cpu = children_cpu_seconds() - cpu_before
        if proc.returncode != 0:
            tail = " ".join(proc.stderr.split())[-STDERR_TAIL:]
            message = f"{step['name']} exited with status {proc.returncode}: {tail}"
            record(record="error", step=step["name"], status=proc.returncode, message=message)
            return 1
        record(record="step", name=step["name"], seconds=seconds, cpu_seconds=cpu,
               timed=step.get("timed", True))  # fmt: skip
    record(record="end", status="ok")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m hpceval.benchmarks.biobench.runner STEPS.json", file=sys.stderr)
        return 2
    return run_steps(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
