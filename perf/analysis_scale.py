"""Analysis at scale: `hpceval compare` and `hpceval report` on 1,000,000 measurements.

Generates a synthetic SQLite results database of N measurements (default 1,000,000) over ten
platforms, then times:

- load: `hpceval.analysis.loading.load_frame` (the store's bulk read into the tidy frame);
- compare: `hpceval.analysis.compare.compare` on that frame against the baseline;
- the CLI commands end to end, with the frame cache in a new directory: `hpceval compare
  --baseline bare-metal` (its own load from SQL, which fills the cache, the comparison, the
  rich tables), then `hpceval report` (its frame from the cache), then `hpceval compare`
  again (from the cache) and `hpceval report --no-cache` (from SQL). Twice: in this process
  through typer's CliRunner ([in-process]: imports already done), then each command as a
  new `python -m hpceval` process ([processes]: what a user waits for, Python start-up and
  imports included).

The target is the two commands together under 10 s on this machine; the totals of each
combination (cache filled by compare, both cached, no cache) and their ratio to it are printed
for both modes.

The database is what campaigns would have written: platforms, environments and runs through
the Store's own API; cases, executions and measurements bulk-inserted (SQLAlchemy Core
executemany, one transaction per run) with the JSON text and sample bytes the Store
writes, and the series ids it gives (Store.series_ids). Each platform
alternates an mpibench campaign (ping-pong and ping-ping on intra- and inter-node pairs,
Sendrecv, Exchange, the HPCC rings and six collectives on 4 to 64 ranks, 0 B to 4 MiB) and an
NPB campaign (EP, IS, CG, MG, FT, classes A to C, 1 to 64 ranks, 3 repetitions), until it
holds N/10 measurements (the last run is cut short, as an interrupted run is). Values follow
Hockney models per platform (intra-node and inter-node latency and bandwidth, an
eager/rendezvous switch) and NPB times from a serial fraction and a network term; samples are
log-normal around them (9 to ~50 per mpibench point as mpibench's adaptive stop gives, one
per NPB run), with the statistics and details (t_min/t_avg samples, verification) real runs
store.

Usage: .venv/bin/python perf/analysis_scale.py [--measurements N] [--keep DB] [--seed S]
       .venv/bin/python perf/analysis_scale.py --reuse DB   (time a database kept before)
       add --repeat K to run the commands K times and print medians (this VM's speed varies)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import numpy as np
import sqlalchemy as sa

from hpceval.store import database_url, open_store

# (described() counts what the generator wrote into the store's tables, past the Store.)
from hpceval.store.schema import measurements as measurements_table

# The generator's parts, beside this script (also when a test loads it by its path).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_scale_db import generate
from analysis_scale_model import (
    BASELINE,
    DEFAULT_MEASUREMENTS,
    PROFILES,
    TARGET_S,
    Generated,
)

# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Step:
    name: str
    seconds: float | None  # wall-clock; None: not run
    detail: str
    cpu_seconds: float | None = None  # this process's CPU time (others' load does not count)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children (the report's forked workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def _timer() -> Iterator[list[float]]:
    """[wall seconds, CPU seconds] of the block, filled in when it ends."""
    elapsed: list[float] = []
    began, began_cpu = time.perf_counter(), _cpu_seconds()
    yield elapsed
    elapsed.extend((time.perf_counter() - began, _cpu_seconds() - began_cpu))


def report_available() -> bool:
    return importlib.util.find_spec("hpceval.report") is not None


# The commands timed, by step name (COMPARE, REPORT...), and the totals printed: each a sum
# of two of them, as a user runs compare then report.
COMPARE, REPORT = "hpceval compare", "hpceval report"
COMPARE_CACHED, REPORT_NO_CACHE = "hpceval compare (cached)", "hpceval report (no cache)"
TOTALS: Final = (
    ("compare then report (report from the cache compare filled)", (COMPARE, REPORT)),
    ("compare + report, both from the cache", (COMPARE_CACHED, REPORT)),
    ("compare + report, no cache", (COMPARE, REPORT_NO_CACHE)),
)
MODES: Final = ("in-process", "processes")


def time_steps(path: Path, work: Path, repeat: int = 1) -> list[Step]:
    """Time load, compare, then `hpceval compare` and `hpceval report` on the database at
    `path`, both in this process (typer's CliRunner: imports already done) and as the user
    runs them (new processes: Python start-up and imports counted).

    The commands of each mode run with a frame cache of their own, empty at first:
    `hpceval compare` first (SQL load, then the frame is cached), `hpceval report` next (the
    frame from the cache: the usual second command on an unchanged database); then both
    again, the report without the cache (--no-cache) and compare with it, so that every
    combination can be added up. With `repeat` > 1 the commands of both modes run that many
    times (in turn, a fresh cache each time): a step then appears once per repeat.
    """
    from hpceval.analysis.compare import compare
    from hpceval.analysis.loading import load_frame

    steps: list[Step] = []
    with open_store(str(path), create=False) as store, _timer() as took:
        frame = load_frame(store)
    samples = int(sum(map(len, frame["samples"])))
    steps.append(Step("load", took[0], f"{len(frame):,} rows, {samples:,} samples (SQL)",
                      took[1]))  # fmt: skip
    with _timer() as took:
        result = compare(frame, BASELINE)
    steps.append(
        Step("compare", took[0], f"{len(result.table):,} points, CI by {result.method}", took[1])
    )
    del frame, result
    for attempt in range(repeat):
        for mode in MODES:
            steps.extend(_command_steps(path, work / f"{mode}-{attempt}", mode))
    return steps


def _command_steps(path: Path, work: Path, mode: str) -> list[Step]:
    steps: list[Step] = []
    report_dir = work / "report"
    env = {"COLUMNS": "200", "HPCEVAL_CACHE": str(work / "cache")}
    invoke = _in_process(env) if mode == "in-process" else _processes(env)

    def command(name: str, args: list[str], detail: str) -> bool:
        with _timer() as took:
            failure = invoke(args)
        if failure is not None:
            steps.append(Step(f"{name} [{mode}]", None, f"{name} failed: {failure}"))
            return False
        steps.append(Step(f"{name} [{mode}]", took[0], detail, took[1]))
        return True

    compare_args = ["compare", "--baseline", BASELINE, "--db", str(path)]
    report_args = ["report", "--db", str(path), "--out", str(report_dir), "--baseline", BASELINE]
    if not command(COMPARE, compare_args, "SQL load + cache write + tables"):
        return steps
    if not report_available():
        steps.append(Step(f"{REPORT} [{mode}]", None, "report: not available"))
        return steps
    if not command(REPORT, report_args, "frame cache + report"):
        return steps
    written = sum(1 for p in report_dir.rglob("*") if p.is_file())
    steps[-1] = replace(steps[-1], detail=f"{steps[-1].detail}: {written} files")
    command(COMPARE_CACHED, compare_args, "frame cache + compare + tables")
    command(REPORT_NO_CACHE, [*report_args, "--no-cache"], "SQL load + report")
    return steps


def _in_process(env: Mapping[str, str]) -> Callable[[list[str]], str | None]:
    """Run a command through typer's CliRunner; None, or why it failed."""
    from typer.testing import CliRunner

    from hpceval.cli import app

    runner = CliRunner()

    def invoke(args: list[str]) -> str | None:
        outcome = runner.invoke(app, args, env={**env, "HPCEVAL_FRAME_CACHE": None})
        if outcome.exit_code == 0:
            return None
        last = (outcome.output.strip().splitlines() or [repr(outcome.exception)])[-1]
        return f"exit {outcome.exit_code}: {last}"

    return invoke


def _processes(env: Mapping[str, str]) -> Callable[[list[str]], str | None]:
    """Run a command as `python -m hpceval ...` in a new process; None, or why it failed."""
    environment = {k: v for k, v in os.environ.items() if k != "HPCEVAL_FRAME_CACHE"}
    environment.update(env)

    def invoke(args: list[str]) -> str | None:
        done = subprocess.run(
            [sys.executable, "-m", "hpceval", *args], env=environment, capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        if done.returncode == 0:
            return None
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        return f"exit {done.returncode}: {last}"

    return invoke


def print_table(generated: Generated, steps: Sequence[Step]) -> None:
    """One line per step: the median of its repeats (and their range when repeated)."""
    samples = f"{generated.samples:,} samples, " if generated.samples >= 0 else ""
    made = "" if math.isnan(generated.seconds) else f"; generated in {generated.seconds:.1f} s"
    print(
        f"database: {generated.measurements:,} measurements, {samples}"
        f"{len(PROFILES)} platforms (baseline {BASELINE}), {generated.runs} runs, "
        f"{generated.path.stat().st_size / 1e6:,.0f} MB{made}"
    )
    by_name: dict[str, list[Step]] = {}
    for step in steps:
        by_name.setdefault(step.name, []).append(step)
    repeats = max(len(group) for group in by_name.values())
    spread = f"  {'range':>11}" if repeats > 1 else ""
    print(f"{'step':<40} {'seconds':>8} {'/ 10 s':>7} {'CPU s':>7}{spread}  detail")
    timed: dict[str, tuple[float, float, list[float]]] = {}
    for name, group in by_name.items():
        failed = [step for step in group if step.seconds is None]
        if failed:
            print(f"{name:<40} {'—':>8} {'—':>7} {'—':>7}{' ' * len(spread)}  {failed[0].detail}")
            continue
        walls = [step.seconds or 0.0 for step in group]
        cpus = [step.cpu_seconds or 0.0 for step in group]
        wall, cpu = float(np.median(walls)), float(np.median(cpus))
        timed[name] = (wall, cpu, walls)
        shown = f"  {min(walls):5.2f}–{max(walls):5.2f}" if repeats > 1 else ""
        print(f"{name:<40} {wall:>8.2f} {wall / TARGET_S:>7.2f} {cpu:>7.2f}{shown}  "
              f"{group[-1].detail}")  # fmt: skip
    for mode in MODES:
        for what, names in TOTALS:
            keys = [f"{name} [{mode}]" for name in names]
            if not all(key in timed for key in keys):
                print(f"total [{mode}] ({what}): not measured")
                continue
            total = sum(timed[key][0] for key in keys)
            cpu_total = sum(timed[key][1] for key in keys)
            verdict = "meets" if total < TARGET_S else "MISSES"
            per_repeat = [sum(pair) for pair in zip(*(timed[key][2] for key in keys),
                                                    strict=False)]  # fmt: skip
            ranged = (f"; per repeat {min(per_repeat):.2f}–{max(per_repeat):.2f} s"
                      if len(per_repeat) > 1 else "")  # fmt: skip
            print(
                f"total [{mode}] ({what}): {total:.2f} s = {total / TARGET_S:.2f} x the "
                f"{TARGET_S:.0f} s target ({verdict} it); CPU {cpu_total:.2f} s{ranged}"
            )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other processes' "
        "load inflates the wall-clock seconds; CPU seconds include the report's workers). "
        "[processes] is what a user waits for: Python start-up and imports included."
        + (f" Medians of {repeats} repeats." if repeats > 1 else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measurements", type=int, default=DEFAULT_MEASUREMENTS)
    parser.add_argument("--keep", type=Path, help="write the database here and keep it")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", type=Path, help="time this database (from --keep) instead")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run the commands this many times (medians printed)"
    )
    opts = parser.parse_args(argv)
    if opts.repeat < 1:
        parser.error("--repeat: at least 1")
    if opts.measurements < len(PROFILES):
        parser.error(f"--measurements: at least {len(PROFILES)} (one per platform)")
    with tempfile.TemporaryDirectory(prefix="hpceval-analysis-scale-") as tmp:
        if opts.reuse is not None:
            if not opts.reuse.is_file():
                parser.error(f"--reuse: {opts.reuse} is not a file")
            generated = described(opts.reuse)
        else:
            path = opts.keep or Path(tmp) / "scale.db"
            if path.exists():
                parser.error(f"--keep: {path} already exists")
            generated = generate(path, opts.measurements, opts.seed)
        steps = time_steps(generated.path, Path(tmp), opts.repeat)
        print_table(generated, steps)
    # A step that failed is a failure of the benchmark, not a figure.
    return 1 if any(" failed: " in step.detail for step in steps) else 0


def described(path: Path) -> Generated:
    """What a database kept by an earlier run holds (generation time unknown: NaN)."""
    engine = sa.create_engine(database_url(str(path)))
    try:
        with engine.connect() as conn:
            count = conn.execute(sa.select(sa.func.count()).select_from(measurements_table))
            runs = conn.execute(sa.select(sa.func.count(sa.distinct(measurements_table.c.run_id))))
            return Generated(path, int(count.scalar_one()), -1, int(runs.scalar_one()), math.nan)
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
