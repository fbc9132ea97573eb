"""NPB SP: hpceval's sp.c against the official NPB3.4-MPI SP, same compiler and flags.

The comparison is npb_app_vs_official.py's (interleaved rounds, median Mop/s ratio with a 95 %
t-interval, CV per side, CPU-second ratio official/hpceval, peak RSS of the largest rank,
optional class C, `--summarize LOG`). SP runs on square rank counts only (1, 4, 9...): the
default pairs are np 1 and 4, 4 oversubscribing a 2-core machine.

Usage: .venv/bin/python perf/npb_sp_vs_official.py [--classes A,B] [--ranks 1,4]
           [--rounds 3] [--class-c-ranks 4] [--build-dir /work/ref/build-npb-sp/bench]
"""

from __future__ import annotations

from npb_app_vs_official import main

if __name__ == "__main__":
    raise SystemExit(main("sp", "1,4", __doc__.split("\n")[0]))
