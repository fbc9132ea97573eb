"""The real official codes through hpceval, where their sources are on this machine.

For each code whose source tree is present (NPB 3.4-MPI, NPB 3.4-MZ-MPI, the OSU
micro-benchmarks, IMB), runs a small suite through `hpceval run --source KIND=PATH` (built
in a build cache outside the repository, never in the source tree), then prints what was
stored: benchmark, implementation, metric, the points and their median; then, with
--validate, `hpceval validate` of the given NPB kernels against NPB 3.4-MPI. A code whose
sources are absent is reported as skipped, with the path it looked for.

Usage: .venv/bin/python perf/official_codes.py [--npb-src DIR] [--npb-mz-src DIR]
       [--osu-src DIR] [--imb-src DIR] [--cache DIR] [--validate cg,mg] [--rounds 3] [--save]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = {
    "npb-mpi": ('name = "npb-official"\nkernels = ["cg", "mg", "is"]\nclasses = ["W"]\n'
                "ranks = [1, 2]\n"),
    "npb-mz-mpi": ('name = "npb-mz-official"\nbenchmarks = ["bt-mz"]\nclasses = ["S"]\n'
                   "ranks = [2]\n"),
    "osu": 'name = "osu"\ntests = ["latency", "bw", "allreduce"]\nranks = [2]\nmax_size = 65536\n',
    "imb": ('name = "imb"\nbenchmarks = ["PingPong", "Allreduce"]\nranks = [2]\n'
            "max_size = 65536\niterations = 1000\n"),
}  # fmt: skip


def hpceval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpceval", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def stored(db: Path) -> list[str]:
    """One line per (benchmark, implementation, metric, unit): points and the median value."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT benchmark, implementation, metric, unit, value FROM measurements"
        ).fetchall()
    groups: dict[tuple[str, str, str, str], list[float]] = {}
    for benchmark, implementation, metric, unit, value in rows:
        groups.setdefault((benchmark, implementation, metric, unit), []).append(float(value))
    return [
        f"  {b:16} {i:22} {m:18} {len(v):4} points, median {statistics.median(v):10.4g} {u}"
        for (b, i, m, u), v in sorted(groups.items())
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--npb-src", type=Path, default=Path("/work/ref/llnl-npb/NPB3.4/NPB3.4-MPI")
    )
    parser.add_argument(
        "--npb-mz-src", type=Path, default=Path("/work/ref/llnl-npb/NPB3.4-MZ/NPB3.4-MZ-MPI")
    )
    parser.add_argument("--osu-src", type=Path, default=Path("/work/ref/build-osu-src"))
    parser.add_argument("--imb-src", type=Path, default=Path("/work/ref/imb"))
    parser.add_argument("--cache", type=Path, help="build cache (default: a temporary one)")
    parser.add_argument("--validate", default="", help="NPB kernels for hpceval validate")
    parser.add_argument("--classes", default="A")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", action="store_true", help="write perf/results/...txt")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hpceval-official-"))
    cache = opts.cache or work / "cache"
    env = {**os.environ, "HPCEVAL_CACHE": str(cache), "COLUMNS": "160"}
    sources = {"npb-mpi": opts.npb_src, "npb-mz-mpi": opts.npb_mz_src, "osu": opts.osu_src,
               "imb": opts.imb_src}  # fmt: skip
    lines = [f"# official_codes {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average "
             f"{os.getloadavg()[0]:.1f}, build cache {cache}"]  # fmt: skip
    failures = 0
    for kind, path in sources.items():
        if not path.exists():
            lines.append(f"{kind}: skipped, no sources at {path}")
            continue
        (work / f"{kind}.toml").write_text(f'name = "{kind}"\n[[benchmark]]\n{SUITES[kind]}')
        db = work / f"{kind}.db"
        proc = hpceval("run", "-s", f"{kind}.toml", "--db", str(db), "--source",
                       f"{kind}={path}", cwd=work, env=env)  # fmt: skip
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
        failures += proc.returncode != 0
        lines.append(f"{kind}: {path}: {status}")
        if proc.returncode != 0:
            lines.append("  " + (proc.stderr.strip() or proc.stdout.strip()[-400:]))
        if db.exists():
            lines += stored(db)
    if opts.validate and opts.npb_src.exists():
        proc = hpceval("validate", "--db", str(work / "validate.db"), "--kernels", opts.validate,
                       "--classes", opts.classes, "--ranks", "1,2", "--rounds", str(opts.rounds),
                       "--source", f"npb-mpi={opts.npb_src}", cwd=work, env=env)  # fmt: skip
        failures += proc.returncode != 0
        lines.append(f"validate {opts.validate} class {opts.classes}: exit {proc.returncode}")
        lines += ["  " + ln for ln in proc.stdout.splitlines() if ln.startswith("hpceval ")]
    print("\n".join(lines))
    if opts.save:
        out = REPO / "perf" / "results" / f"official-codes-{datetime.now(UTC):%Y-%m-%d}.txt"
        out.write_text("\n".join(lines) + "\n")
        print(f"saved {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
