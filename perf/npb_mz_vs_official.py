"""NPB-MZ: hpceval's bt-mz / sp-mz / lu-mz against the official NPB3.4-MZ-MPI ones, same flags.

The comparison is npb_app_vs_official.py's (interleaved rounds, median Mop/s ratio with a 95 %
t-interval, CV per side, CPU-second ratio official/hpceval, peak RSS of the largest rank,
optional class C, `--summarize LOG`), run on placements RANKSxTHREADS (OMP_NUM_THREADS set
for both programs). The official tree is built with gfortran -fopenmp (NPB3.4-MZ's MPI +
OpenMP build). Default placements: 1x1, 2x1 and 1x2 (MZ on two cores as two ranks or as
one rank of two threads).

Usage: .venv/bin/python perf/npb_mz_vs_official.py bt-mz|sp-mz|lu-mz [--classes A,B]
           [--ranks 1x1,2x1,1x2] [--rounds 3] [--class-c-ranks 2]
           [--build-dir /work/ref/build-npb-bt-mz/bench]
"""

from __future__ import annotations

import sys

from npb_app_vs_official import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("bt-mz", "sp-mz", "lu-mz"):
        sys.exit("usage: npb_mz_vs_official.py {bt-mz,sp-mz,lu-mz} [options]")
    program = sys.argv.pop(1)
    raise SystemExit(main(program, "1x1,2x1,1x2", __doc__.split("\n")[0]))
