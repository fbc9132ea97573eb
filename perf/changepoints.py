"""Change-point detection (hpceval.history.detect) on planted series: hit rate, false-alarm
rate and time, for series of 30, 100 and 1,000 runs.

Each run's value is 100 x lognormal noise (run-to-run CV --cv, 3 % by default; with
--heavy, Student-t(3) noise of the same scale: occasional outliers, as on shared machines).
Planted: one step of --step (default +10 %) at a uniformly drawn run, at least 3 runs from
either end; a hit is a change reported within --tolerance runs of it (exact position counted
apart), with the planted size inside the reported 95 % CI counted too. Stationary: the same
noise, no step; a false alarm is any reported change. The documented level is alpha (0.01):
the false-alarm rate should be near it, with a binomial 95 % interval (Wilson) printed.

With --stationary N, N stationary series per length (default: as many as planted ones),
for a false-alarm rate with a narrow interval (--lengths picks the lengths):

    python perf/changepoints.py [--trials 200] [--trials-long 40] [--stationary 5000]
        [--lengths 30,100,1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import binomtest

from hpceval.history import DEFAULT_ALPHA, DEFAULT_MIN_SIZE, detect


def noise(rng: np.random.Generator, n: int, cv: float, heavy: bool) -> np.ndarray:
    draws = rng.standard_t(3, n) / np.sqrt(3.0) if heavy else rng.standard_normal(n)
    return np.asarray(np.exp(cv * draws), dtype=np.float64)


def rate(k: int, n: int) -> str:
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{k / n:6.1%} [{ci.low:5.1%}, {ci.high:5.1%}] ({k}/{n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="series per length (30, 100)")
    parser.add_argument("--trials-long", type=int, default=40, help="series of 1,000 runs")
    parser.add_argument("--cv", type=float, default=0.03)
    parser.add_argument("--step", type=float, default=0.10)
    parser.add_argument("--tolerance", type=int, default=2)
    parser.add_argument("--heavy", action="store_true")
    parser.add_argument(
        "--stationary",
        type=int,
        default=0,
        help="stationary series per length (default: as many as planted)",
    )
    parser.add_argument("--lengths", default="30,100,1000", help="series lengths, runs")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    noise_kind = "Student-t(3)" if args.heavy else "lognormal"
    print(f"alpha {DEFAULT_ALPHA}, min size {DEFAULT_MIN_SIZE}, noise {noise_kind} CV "
          f"{args.cv:.0%}, step {args.step:+.0%}, hit within ±{args.tolerance} runs")  # fmt: skip
    for n in (int(length) for length in args.lengths.split(",")):
        trials = args.trials if n < 1000 else args.trials_long
        flat_trials = args.stationary or trials
        hits = exact = covered = extra = alarms = 0
        planted_s: list[float] = []
        stationary_s: list[float] = []
        for t in range(trials):
            at = int(rng.integers(DEFAULT_MIN_SIZE, n - DEFAULT_MIN_SIZE + 1))
            series = 100 * noise(rng, n, args.cv, args.heavy)
            series[at:] *= 1 + args.step
            start = time.perf_counter()
            found = detect(series, seed=t)
            planted_s.append(time.perf_counter() - start)
            near = [c for c in found if abs(c.index - at) <= args.tolerance]
            hits += bool(near)
            exact += any(c.index == at for c in found)
            covered += any(c.ratio_low <= 1 + args.step <= c.ratio_high for c in near)
            extra += len(found) - min(1, len(near))
        for t in range(flat_trials):
            flat = 100 * noise(rng, n, args.cv, args.heavy)
            start = time.perf_counter()
            alarms += bool(detect(flat, seed=10_000 + t))
            stationary_s.append(time.perf_counter() - start)
        print(f"\n{n} runs, {trials} planted + {flat_trials} stationary series")
        print(f"  hit rate            {rate(hits, trials)}")
        print(f"  exact position      {rate(exact, trials)}")
        print(f"  step inside 95% CI  {rate(covered, trials)}")
        print(f"  extra changes       {extra} in {trials} planted series")
        print(f"  false-alarm rate    {rate(alarms, flat_trials)}   (documented: "
              f"{DEFAULT_ALPHA:.0%})")  # fmt: skip
        print(f"  time per series     median {np.median(planted_s) * 1e3:.1f} ms planted, "
              f"{np.median(stationary_s) * 1e3:.1f} ms stationary, max "
              f"{max(planted_s + stationary_s) * 1e3:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
