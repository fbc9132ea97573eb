"""How long `hpceval doctor`'s checks take on this machine, against the commands they run.

The target (formerly a timed unit test): doctor answers within 2 s on a quiet machine. The
reference, measured in the same run and interleaved by round: the same commands doctor ran
(its version and identity queries, recorded through provenance's RecordingHost), started
one after the other with subprocess. The ratio doctor / reference is what doctor adds
(Python, file reads, parsing); the reference itself is the programs' own start-up, which
hpceval does not control (LAMMPS' `lmp -h` alone can take seconds under load).

    python perf/doctor_speed.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import time

import numpy as np

from hpceval.doctor import run_checks
from hpceval.provenance import RecordingHost, SystemHost

TARGET_S = 2.0


def bootstrap_ratio(a: list[float], b: list[float], resamples: int = 5000) -> tuple[float, float]:
    """95 % percentile interval of the median of the paired ratios a/b."""
    ratios = np.asarray(a) / np.asarray(b)
    rng = np.random.default_rng(1)
    picks = rng.integers(0, len(ratios), size=(resamples, len(ratios)))
    medians = np.median(ratios[picks], axis=1)
    return float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    recorder = RecordingHost(SystemHost())
    run_checks(host=recorder)  # also a warm-up: file caches, imports
    commands = [shlex.split(c) for c in recorder.commands]
    print(f"load average {os.getloadavg()[0]:.1f}; doctor runs {len(commands)} commands")
    doctor_s: list[float] = []
    reference_s: list[float] = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        run_checks()
        doctor_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        for argv in commands:
            subprocess.run(argv, capture_output=True, check=False, timeout=60)
        reference_s.append(time.perf_counter() - start)
    low, high = bootstrap_ratio(doctor_s, reference_s)
    ratio = float(np.median(np.asarray(doctor_s) / np.asarray(reference_s)))
    print(f"doctor      median {np.median(doctor_s):.2f} s  (min {min(doctor_s):.2f}, "
          f"max {max(doctor_s):.2f})  target < {TARGET_S} s: "
          f"{'met' if np.median(doctor_s) < TARGET_S else 'NOT met'}")  # fmt: skip
    print(f"its commands median {np.median(reference_s):.2f} s  (min {min(reference_s):.2f}, "
          f"max {max(reference_s):.2f})")  # fmt: skip
    print(f"doctor / its commands {ratio:.2f} [{low:.2f}, {high:.2f}] (paired by round)")


if __name__ == "__main__":
    main()
