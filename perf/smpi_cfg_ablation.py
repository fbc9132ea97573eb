"""What one SMPI setting changes in a stored projection (issue 21: `network/weight-S:0`, which
the token-bucket model needs, had not been checked on its own).

Takes the smpirun command line a simulated mpibench execution of DB stored (the calibrated
platform file and SMPI settings hpceval gave it), reruns it for each PATTERN:SIZES with and
without `--cfg=SETTING`, and prints each size's simulated time (the median of the samples'
slowest rank) and the ratio. The platform files the stored command names must still exist
(the projection's cache under ~/.cache/hpceval/simulate). SMPI is deterministic: one run each.

    perf/smpi_cfg_ablation.py --db DB --case mpibench:bcast --cfg network/weight-S:0 \\
        natural_ring:8,1048576 alltoall:8,65536
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess


def stored_command(db: str, case: str) -> tuple[list[str], dict[str, str]]:
    with sqlite3.connect(db) as con:
        row = con.execute(
            "select argv, env from executions where case_key like ? order by id desc limit 1",
            (case + "%",),
        ).fetchone()
    if row is None:
        raise SystemExit(f"{db}: no execution of a case {case}*")
    return json.loads(row[0]), json.loads(row[1])


def simulated_us(argv: list[str], env: dict[str, str], pattern: str, sizes: str,
                 extra: list[str]) -> dict[int, float]:  # fmt: skip
    a = list(argv)
    a[a.index("--pattern") + 1] = pattern
    a[a.index("--sizes") + 1] = sizes
    program = next(i for i, x in enumerate(a) if x.endswith("/mpibench"))
    a[program:program] = extra  # settings go before the program
    done = subprocess.run(a, capture_output=True, text=True, env={**os.environ, **env},
                          check=True)  # fmt: skip
    out = {}
    for line in done.stdout.splitlines():
        record = json.loads(line)
        if record.get("record") == "point":
            out[int(record["size"])] = statistics.median(record["t_max_us"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--case", required=True, help="stored case key prefix, e.g. mpibench:bcast")
    parser.add_argument("--cfg", required=True, help="SMPI setting KEY:VALUE to add")
    parser.add_argument("patterns", nargs="+", metavar="PATTERN:SIZES")
    args = parser.parse_args()
    argv, env = stored_command(args.db, args.case)
    print(f"stored command of {args.case} in {args.db}; with and without --cfg={args.cfg}")
    for spec in args.patterns:
        pattern, sizes = spec.split(":", 1)
        without = simulated_us(argv, env, pattern, sizes, [])
        with_ = simulated_us(argv, env, pattern, sizes, [f"--cfg={args.cfg}"])
        cells = [f"{s} B {without[s]:.4g} -> {with_[s]:.4g} us ({with_[s] / without[s] - 1:+.2%})"
                 for s in without]  # fmt: skip
        print(f"{pattern}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
