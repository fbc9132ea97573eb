"""NPB BT: hpceval's bt.c against the official NPB3.4-MPI BT, same compiler and flags.

The comparison is npb_app_vs_official.py's (interleaved rounds, median Mop/s ratio with a 95 %
t-interval, CV per side, CPU-second ratio, peak RSS of the largest rank, optional class C,
`--summarize LOG`). BT needs a square rank count (1, 4, 9...): the default pairs are np 1 and
4, 4 oversubscribing a 2-core machine.

Usage: .venv/bin/python perf/npb_bt_vs_official.py [--classes A,B] [--ranks 1,4]
           [--rounds 3] [--class-c-ranks 4] [--build-dir /work/ref/build-npb-bt/bench]
"""

from __future__ import annotations

from npb_app_vs_official import main

if __name__ == "__main__":
    raise SystemExit(main("bt", "1,4", __doc__.split("\n")[0]))
