"""NPB LU: hpceval's lu.c against the official NPB3.4-MPI LU, same compiler and flags.

The comparison is npb_app_vs_official.py's (interleaved rounds, median Mop/s ratio with a 95 %
t-interval, CV per side, peak RSS of the largest rank, optional class C). LU runs on NPB 3.4's
process grids (1, 2, 4, 6, 8, 9, ...): the default pairs are np 1 and 2.

Usage: .venv/bin/python perf/npb_lu_vs_official.py [--classes A,B] [--ranks 1,2]
           [--rounds 3] [--class-c-ranks 2] [--build-dir /work/ref/build-npb-lu/bench]
"""

from __future__ import annotations

from npb_app_vs_official import main

if __name__ == "__main__":
    raise SystemExit(main("lu", "1,2", __doc__.split("\n")[0]))
