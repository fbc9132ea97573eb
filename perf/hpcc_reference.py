"""HPC Challenge (Debian's ``hpcc``) as the independent reference for mpibench's ping-pong.

Runs ``mpirun -np N hpcc`` on a tiny input in a temporary directory and reads the b_eff
(latency/bandwidth) figures from the summary section of ``hpccoutf.txt``.

How HPCC measures them (its ``bench_lat_bw`` code, Rabenseifner et al., HLRS):

* Ping-pong, for every ordered pair of ranks (client, server) that its time budget allows,
  one pair at a time while the other ranks wait: the client times ``loop`` round trips of
  ``MPI_Send``/``MPI_Recv`` after one untimed round trip; one measurement is
  ``time / (2 * loop)``, i.e. half a round trip. Latency uses 8-byte messages, ``loop`` = 8
  (raised by 1.5x until the timed loop lasts at least 10 ticks of ``MPI_Wtick``, floored at
  1 µs) and 5 measurements; bandwidth uses 2,000,000-byte messages, ``loop`` = 1 and
  2 measurements. Per pair the MINIMUM over the measurements is kept; Min/Avg/Max are then
  the minimum, arithmetic mean and maximum over the pairs. Bandwidth = message bytes / that
  one-way time. With 2 ranks there are 2 pairs (0->1 and 1->0).
* Rings: every rank exchanges with both neighbours at once (best of two ``MPI_Sendrecv`` and
  ``MPI_Irecv``/``MPI_Isend`` x2), time per iteration / 2; the slowest rank counts, then the
  minimum over the measurements. The random-ring figure is the geometric mean over 30 (latency)
  or 10 (bandwidth) random rank orders. Ring bandwidth = message bytes / that time, i.e. bytes
  per process = 2 n per iteration.

Units: latencies in µs as HPCC prints them; HPCC's ``*_GBytes`` figures are GB/s with
1 GB = 10^9 bytes (the code multiplies bytes/s by 1e-9 and its report states
"1 MB/s = 10**6 byte/sec"), returned here as MB/s (10^6 bytes/s) under ``*_MBps`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

# The parsing and the input file are hpceval's (the `hpcc` benchmark): one implementation.
from hpceval.benchmarks.hpcc.parse import (
    BANDWIDTH_MESSAGE_BYTES,
    LATENCY_MESSAGE_BYTES,
    hpccinf_text,
    parse_summary_section,
    process_grid,
    summary_number,
)
from hpceval.benchmarks.hpcc.parse import HpccOutputError as HpccError

HPCC_BINARY = "/usr/bin/hpcc"

#: b_eff latency figures in the summary, in µs; returned under the same names.
LATENCY_KEYS: tuple[str, ...] = (
    "MaxPingPongLatency_usec",
    "MinPingPongLatency_usec",
    "AvgPingPongLatency_usec",
    "NaturallyOrderedRingLatency_usec",
    "RandomlyOrderedRingLatency_usec",
)

#: b_eff bandwidth figures in the summary (GB/s, 10^9 bytes) -> returned name (MB/s, 10^6 bytes).
BANDWIDTH_KEYS: dict[str, str] = {
    "MaxPingPongBandwidth_GBytes": "MaxPingPongBandwidth_MBps",
    "MinPingPongBandwidth_GBytes": "MinPingPongBandwidth_MBps",
    "AvgPingPongBandwidth_GBytes": "AvgPingPongBandwidth_MBps",
    "NaturallyOrderedRingBandwidth_GBytes": "NaturallyOrderedRingBandwidth_MBps",
    "RandomlyOrderedRingBandwidth_GBytes": "RandomlyOrderedRingBandwidth_MBps",
}

_MB_PER_GB = Decimal(1000)

__all__ = [
    "BANDWIDTH_MESSAGE_BYTES",
    "LATENCY_MESSAGE_BYTES",
    "HpccError",
    "hpccinf_text",
    "parse_summary_section",
    "process_grid",
]


def parse_hpcc_summary(text: str) -> dict[str, float]:
    """The b_eff figures of an ``hpccoutf.txt``: latencies in µs, bandwidths in MB/s.

    Keys: the five ``*_usec`` names of ``LATENCY_KEYS`` (values as HPCC prints them) and the
    five ``*_MBps`` names of ``BANDWIDTH_KEYS`` (HPCC's GB/s times 1000). Latencies are for
    ``LATENCY_MESSAGE_BYTES`` and bandwidths for ``BANDWIDTH_MESSAGE_BYTES`` messages. Raises
    ``HpccError`` when the summary or a figure is missing or was not measured.
    """
    values = parse_summary_section(text)
    figures: dict[str, float] = {}
    for key in LATENCY_KEYS:
        figures[key] = float(summary_number(values, key))
    for key, name in BANDWIDTH_KEYS.items():
        figures[name] = float(summary_number(values, key) * _MB_PER_GB)
    return figures


@dataclass(frozen=True)
class HpccRun:
    """One hpcc run: its b_eff figures (see ``parse_hpcc_summary``) and how it was made."""

    figures: dict[str, float]
    nranks: int
    wall_s: float
    command: tuple[str, ...]
    output_text: str


def _mpirun_env() -> dict[str, str]:
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Open MPI refuses to run as root without both of these.
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_hpcc(
    nranks: int = 2,
    *,
    n: int = 1000,
    nb: int = 80,
    mpirun: str = "mpirun",
    hpcc: str = HPCC_BINARY,
    mpirun_args: Sequence[str] = (),
    timeout_s: float = 600.0,
) -> HpccRun:
    """Run ``mpirun -np nranks [mpirun_args] hpcc`` on a tiny input and parse its figures."""
    if nranks < 2:
        raise ValueError("the b_eff latency/bandwidth test needs at least 2 ranks")
    mpirun_path = shutil.which(mpirun)
    if mpirun_path is None:
        raise HpccError(f"{mpirun} not found (Debian: openmpi-bin)")
    hpcc_path = shutil.which(hpcc)
    if hpcc_path is None:
        raise HpccError(f"{hpcc} not found (Debian: hpcc)")
    command = (mpirun_path, "-np", str(nranks), *mpirun_args, hpcc_path)
    with tempfile.TemporaryDirectory(prefix="hpcc-ref-") as tmp:
        workdir = Path(tmp)
        (workdir / "hpccinf.txt").write_text(hpccinf_text(nranks, n, nb))
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                command,
                cwd=workdir,
                env=_mpirun_env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HpccError(f"hpcc did not finish within {timeout_s:g} s") from None
        wall_s = time.perf_counter() - start
        outfile = workdir / "hpccoutf.txt"
        output_text = outfile.read_text(errors="replace") if outfile.exists() else ""
    if proc.returncode != 0:
        raise HpccError(
            f"{' '.join(command)} exited {proc.returncode}:\n{_tail(proc.stdout + proc.stderr)}"
        )
    if not output_text:
        raise HpccError("hpcc wrote no hpccoutf.txt")
    return HpccRun(
        figures=parse_hpcc_summary(output_text),
        nranks=nranks,
        wall_s=wall_s,
        command=command,
        output_text=output_text,
    )


def median_figures(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per-figure median over several runs' figures (HPCC's own spread is several %)."""
    if not runs:
        raise ValueError("no runs")
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def _report(figures: dict[str, float]) -> str:
    rows = [
        f"# HPCC b_eff: latency with {LATENCY_MESSAGE_BYTES}-byte, bandwidth with "
        f"{BANDWIDTH_MESSAGE_BYTES}-byte messages; 1 MB = 10^6 bytes"
    ]
    for key in LATENCY_KEYS:
        rows.append(f"{key:<40} {figures[key]:>14.6f} us")
    for name in BANDWIDTH_KEYS.values():
        rows.append(f"{name:<40} {figures[name]:>14.3f} MB/s")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run Debian's hpcc (HPC Challenge) as the reference for mpibench's "
        "ping-pong and ring figures, and print its b_eff results.",
    )
    parser.add_argument("-n", "--nranks", type=int, default=2, help="MPI ranks (default 2)")
    parser.add_argument(
        "--hpl-n",
        type=int,
        default=1000,
        help="HPL matrix order; sizes every other test (default 1000)",
    )
    parser.add_argument("--nb", type=int, default=80, help="HPL block size (default 80)")
    parser.add_argument("--mpirun", default="mpirun", help="MPI launcher (default mpirun)")
    parser.add_argument("--hpcc", default=HPCC_BINARY, help=f"hpcc binary (default {HPCC_BINARY})")
    parser.add_argument(
        "--mpirun-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra mpirun argument, repeatable (--mpirun-arg=--oversubscribe)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument(
        "--save-output",
        type=Path,
        metavar="FILE",
        help="also write hpcc's hpccoutf.txt (of the last run) to FILE",
    )
    parser.add_argument(
        "--parse", type=Path, metavar="FILE", help="do not run hpcc; parse an existing hpccoutf.txt"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="run hpcc K times and report the per-figure median (default 1)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    try:
        if args.parse is not None:
            figures = parse_hpcc_summary(args.parse.read_text(errors="replace"))
            meta: dict[str, object] = {"source": str(args.parse)}
        else:
            if args.repeat < 1:
                raise ValueError("--repeat must be >= 1")
            runs = [
                run_hpcc(
                    args.nranks,
                    n=args.hpl_n,
                    nb=args.nb,
                    mpirun=args.mpirun,
                    hpcc=args.hpcc,
                    mpirun_args=args.mpirun_arg,
                    timeout_s=args.timeout,
                )
                for _ in range(args.repeat)
            ]
            figures = median_figures([run.figures for run in runs])
            meta = {
                "source": "hpcc",
                "nranks": args.nranks,
                "runs": len(runs),
                "statistic": "median over runs" if len(runs) > 1 else "single run",
                "wall_s": [round(run.wall_s, 3) for run in runs],
                "command": list(runs[0].command),
            }
            if len(runs) > 1:
                meta["per_run"] = [run.figures for run in runs]
            if args.save_output is not None:
                args.save_output.parent.mkdir(parents=True, exist_ok=True)
                args.save_output.write_text(runs[-1].output_text)
    except (HpccError, OSError, ValueError) as exc:
        print(f"hpcc_reference: error: {exc}", file=sys.stderr)
        return 1

    if args.json:
        print(
            json.dumps(
                {
                    **meta,
                    "latency_bytes": LATENCY_MESSAGE_BYTES,
                    "bandwidth_bytes": BANDWIDTH_MESSAGE_BYTES,
                    "figures": figures,
                }
            )
        )
    else:
        if "wall_s" in meta:
            print(
                f"# hpcc on {meta['nranks']} ranks, {meta['statistic']}; wall s: {meta['wall_s']}"
            )
        print(_report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
