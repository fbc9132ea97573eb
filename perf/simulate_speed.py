"""How noisy is the calibrated core speed (issue 21, compute replay noise)? A/B of two trees.

`hpceval simulate` sets the simulated core's speed so that the replayed single-rank NPB
kernel takes the measured time. Each replay times the kernel's computation on this host, and
that time moves from replay to replay, so the rule that corrects the speed decides how far
the kept speed is from the one that would reproduce the kernel on average. A (default
607a425) corrects on the last replay; B (this tree, c9881d6 on) on the median of the replays
so far.

1. Measures PingPong and the single-rank NPB kernels (class A) on platform `local` into a
   fresh database (or takes --db).
2. For --rounds rounds, interleaved A, B, A, B… (each in its own process, the tree's `src`
   first on PYTHONPATH): calibrates the core speed on each kernel's measured time, then
   replays the kernel --held-out more times at the kept speed. The held-out median against
   the measured time is the error every projection of that kernel inherits.
3. Prints per tree and kernel: calibrations refused (kept speed off by more than the
   tolerance on the replay it was judged on), replays used, the spread of the kept speeds
   (max/min - 1) and the held-out error (median over rounds, and its worst).

Both trees share this file's inner part (`--inner`), which uses only functions both have.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("cg", "ft", "is", "mg")
# The PingPong (store_target needs one) and the kernels at one rank, as inline tables.
SUITE = ('name = "speed-reference"\nbenchmark = [\n'
         '  {{name = "mpibench", patterns = ["pingpong"], sizes = "0..4MiB", ranks = [2],'
         ' budget_s = 0.3}},\n'
         '  {{name = "npb", kernels = {kernels!r}, classes = ["A"], ranks = [1]}},\n]\n')


def _local(db: str) -> tuple[Any, Any, Any]:
    """(target, nominal spec, calibration runner factory) of platform `local` in `db`."""
    from hpceval.simulate.calibrate import REFERENCE_SPEED_FLOPS, nominal_spec
    from hpceval.simulate.plan import detect_smpi
    from hpceval.simulate.smpi_runs import SmpiCalibrationRunner
    from hpceval.simulate.sources import store_target
    from hpceval.store import open_store

    target = store_target(open_store(db), "local")
    spec = nominal_spec(target, nodes=1, cores_per_node=2, speed=REFERENCE_SPEED_FLOPS)
    tools = detect_smpi()
    return target, spec, lambda work: SmpiCalibrationRunner(tools, Path(work))


def inner(db: str, kernel: str, held_out: int, tolerance: float) -> None:
    """One calibration of one kernel's core speed, then held-out replays; JSON on stdout."""
    from dataclasses import replace

    import hpceval
    from hpceval.simulate.calibrate import BASE_CONFIG, calibrate_speed

    target, spec, runner_in = _local(db)
    reference = target.speeds[(kernel, "A")]
    with tempfile.TemporaryDirectory(prefix="hpceval-speed-") as work:
        runner = runner_in(work)
        kept = calibrate_speed(spec, BASE_CONFIG, reference, runner.kernel, tolerance=tolerance)
        at_kept = replace(spec, speed_flops=kept.speed_flops)
        replays = [runner.kernel(at_kept, BASE_CONFIG, reference) for _ in range(held_out)]
    print(json.dumps({
        "module": hpceval.__file__, "reference_s": reference.time_s,
        "speed": kept.speed_flops, "residual": kept.residual, "iterations": kept.iterations,
        "held_out_s": replays,
    }))  # fmt: skip


def inner_replay(db: str, kernel: str) -> None:
    """One replay of one kernel at the reference core speed; its time (s) on stdout."""
    from hpceval.simulate.calibrate import BASE_CONFIG

    target, spec, runner_in = _local(db)
    with tempfile.TemporaryDirectory(prefix="hpceval-speed-") as work:
        print(runner_in(work).kernel(spec, BASE_CONFIG, target.speeds[(kernel, "A")]))


def drift(db: str, work: Path, kernels: list[str], pairs: int) -> None:
    """Native runs and replays of each kernel interleaved: does the replay drift alone?"""
    hpceval = str(Path(sys.executable).parent / "hpceval")
    from hpceval.store import open_store

    print(f"\nnative run, then replay at {1e9 / 1e6:.0f} Mflop/s (the work it implies, "
          f"Mflop), {pairs} pairs per kernel")  # fmt: skip
    for kernel in kernels:
        suite = work / f"native-{kernel}.toml"
        suite.write_text(f'name = "native-{kernel}"\n[[benchmark]]\nname = "npb"\n'
                         f'kernels = ["{kernel}"]\nclasses = ["A"]\nranks = [1]\n')  # fmt: skip
        natives: list[float] = []
        replays: list[float] = []
        for _ in range(pairs):
            subprocess.run([hpceval, "run", "--platform", "local", "--suite", str(suite),
                            "--db", db], check=True, capture_output=True)  # fmt: skip
            with open_store(db) as store:
                latest = max(r.id for r in store.runs())
                natives.append(next(sm.measurement.value for sm in store.measurements(latest)
                                    if sm.measurement.metric == "time"))  # fmt: skip
            done = subprocess.run([sys.executable, __file__, "--inner-replay", "--db", db,
                                   "--kernel", kernel], check=True, capture_output=True,
                                  text=True)  # fmt: skip
            replays.append(float(done.stdout.strip().splitlines()[-1]))
        ratios = [r / n for r, n in zip(replays, natives, strict=True)]
        print(f"{kernel}: native s {[round(t, 3) for t in natives]} "
              f"(x {max(natives) / min(natives):.2f})")  # fmt: skip
        print(f"{kernel}: replay Mflop {[round(t * 1e3) for t in replays]} "
              f"(x {max(replays) / min(replays):.2f})")  # fmt: skip
        spread = max(ratios) / min(ratios)
        print(f"{kernel}: replay / native {[round(x, 3) for x in ratios]} "
              f"(x {spread:.2f}, median {statistics.median(ratios):.3f})")  # fmt: skip


def tree_of(revision: str, work: Path) -> Path:
    """The `src` of `revision`, extracted from git (no worktree to clean up)."""
    out = work / f"tree-{revision}"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "src"


def calibrate(src: Path, db: str, kernel: str, held_out: int, tolerance: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, __file__, "--inner", "--db", db, "--kernel", kernel,
                           "--held-out", str(held_out), "--tolerance", str(tolerance)],
                          env=env, capture_output=True, text=True, timeout=3600)  # fmt: skip
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["exit status"])[-1]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["module"].startswith(str(src)):
        raise SystemExit(f"{src}: imported {result['module']} instead")
    return result


def summary(label: str, kernel: str, results: list[dict[str, Any]], tolerance: float) -> str:
    good = [r for r in results if "error" not in r]
    if not good:
        return f"{label:<12} {kernel:<3} every calibration failed: {results[0]['error']}"
    reference = good[0]["reference_s"]
    refused = sum(1 for r in good if r["residual"] is None or abs(r["residual"]) > tolerance)
    speeds = [r["speed"] for r in good]
    errors = [statistics.median(r["held_out_s"]) / reference - 1 for r in good]
    worst = max(errors, key=abs)
    return (f"{label:<12} {kernel:<3} {len(good):>2} {refused:>7} "
            f"{statistics.median(r['iterations'] for r in good):>7.1f} "
            f"{statistics.median(speeds) / 1e6:>9.0f} {max(speeds) / min(speeds) - 1:>+7.1%} "
            f"{statistics.median(errors):>+9.1%} {worst:>+7.1%}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a database with PingPong and single-rank NPB on `local`")
    parser.add_argument("--old", default="607a425", help="tree A's revision (default 607a425)")
    parser.add_argument("--new", default="", help="tree B's revision (default: this checkout)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--held-out", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--drift", type=int, default=0, metavar="PAIRS",
                        help="instead: PAIRS native runs and replays per kernel, interleaved"
                        )  # fmt: skip
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--inner-replay", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kernel", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args.db, args.kernel, args.held_out, args.tolerance)
        return
    if args.inner_replay:
        inner_replay(args.db, args.kernel)
        return
    kernels = [k for k in args.kernels.split(",") if k]
    with tempfile.TemporaryDirectory(prefix="hpceval-speed-ab-") as tmp:
        work = Path(tmp)
        db = args.db or f"sqlite:///{work / 'reference.db'}"
        if not args.db:
            suite = work / "suite.toml"
            suite.write_text(SUITE.format(kernels=kernels))
            subprocess.run([str(Path(sys.executable).parent / "hpceval"), "run", "--platform",
                            "local", "--suite", str(suite), "--db", db], check=True)  # fmt: skip
        if args.drift:
            drift(db, work, kernels, args.drift)
            return
        trees = {f"A {args.old}": tree_of(args.old, work),
                 f"B {args.new or 'this'}": tree_of(args.new, work) if args.new
                 else ROOT / "src"}  # fmt: skip
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        started = time.monotonic()
        for round_no in range(1, args.rounds + 1):
            for kernel in kernels:
                for label, src in trees.items():  # A, B, A, B…: both see the same drift
                    result = calibrate(src, db, kernel, args.held_out, args.tolerance)
                    results.setdefault((label, kernel), []).append(result)
                    shown = result.get("error") or (
                        f"speed {result['speed'] / 1e6:.0f} Mflop/s, {result['iterations']} "
                        f"replays, residual {result['residual']:+.1%}, held-out "
                        f"{[round(t, 3) for t in result['held_out_s']]} s "
                        f"(measured {result['reference_s']:.3f} s)")  # fmt: skip
                    print(f"round {round_no} {kernel} {label}: {shown}  "
                          f"[{time.monotonic() - started:.0f} s]", flush=True)  # fmt: skip
        print(f"\ncore-speed calibration, {args.rounds} rounds, tolerance {args.tolerance:.0%}, "
              f"{args.held_out} held-out replays at the kept speed")  # fmt: skip
        print(f"{'tree':<12} {'k':<3} {'n':>2} {'refused':>7} {'replays':>7} {'Mflop/s':>9} "
              f"{'spread':>7} {'held-out':>9} {'worst':>7}")  # fmt: skip
        for kernel in kernels:
            for label in trees:
                print(summary(label, kernel, results[(label, kernel)], args.tolerance))


if __name__ == "__main__":
    main()
