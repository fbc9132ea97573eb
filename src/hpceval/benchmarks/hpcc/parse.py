"""HPC Challenge (`hpcc` 1.5): its input file and its `hpccoutf.txt` (pure functions).

hpcc reads `hpccinf.txt` (HPL's input format plus PTRANS lines) from its working directory
and appends its report to `hpccoutf.txt` there: one section per test, then a summary
section of `key=value` lines, the machine-readable part. Units in the summary, as HPCC's
code computes them:

* `HPL_Tflops`: TFLOP/s (10^12) -> GFLOP/s here (x 1000);
* `*DGEMM_Gflops`, `*FFT_Gflops`: GFLOP/s;
* `*STREAM_*`, `PTRANS_GBs`, `*_GBytes` (b_eff): GB/s with 1 GB = 10^9 bytes -> MB/s
  (10^6 bytes, methodology.md) here (x 1000); b_eff's report states "1 MB/s = 10**6 byte/sec";
* `*RandomAccess_GUPs`: 10^9 updates per second (GUP/s);
* `*_usec`: µs. b_eff latencies are for 8-byte, bandwidths for 2,000,000-byte messages.

"Single" runs the test on one rank while the others wait, "Star" on every rank at once
(embarrassingly parallel; the figure is per rank, averaged), "MPI" on all ranks together.

How b_eff measures (its `bench_lat_bw` code, Rabenseifner et al., HLRS): ping-pong over as
many ordered rank pairs as its time budget allows, one pair at a time, half a round trip per
measurement, per pair the minimum over its measurements; Min/Avg/Max over the pairs. Rings:
every rank exchanges with both neighbours at once; naturally ordered, and the geometric mean
over random rank orders. On one rank these tests do not run and HPCC prints -1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Final

from hpceval.errors import BenchmarkFailure, ImpossibleValue
from hpceval.units import GFLOPS, MEGABYTE_PER_SECOND, MICROSECOND

GUPS: Final = "GUP/s"  # 10**9 updates per second (declared in benchmark.toml)

SUMMARY_BEGIN: Final = "Begin of Summary section."
SUMMARY_END: Final = "End of Summary section."
HPL_BEGIN: Final = "Begin of HPL section."
HPL_END: Final = "End of HPL section."
#: Message size of HPCC's b_eff latency figures (bytes).
LATENCY_MESSAGE_BYTES: Final = 8
#: Message size of HPCC's b_eff bandwidth figures (bytes).
BANDWIDTH_MESSAGE_BYTES: Final = 2_000_000
_THOUSAND = Decimal(1000)
_ONE = Decimal(1)


# More processes than any machine has: a CommWorldProcs beyond it is garbage.
MAX_RANKS: Final = 10**8


class HpccOutputError(BenchmarkFailure):
    """The hpcc report is incomplete, or a figure in it is missing, not a number or failed."""


@dataclass(frozen=True)
class Figure:
    metric: str  # hpceval's name
    key: str  # the summary key
    scale: Decimal  # summary value x scale = value in `unit`
    unit: str
    beff: bool = False  # a b_eff latency/bandwidth figure (not measured on one rank)


def _f(metric: str, key: str, scale: Decimal, unit: str, beff: bool = False) -> Figure:
    return Figure(metric, key, scale, unit, beff)


_MBS = MEGABYTE_PER_SECOND
_STREAM = tuple(
    _f(f"stream_{kernel.lower()}_{kind.lower()}", f"{kind}STREAM_{kernel}", _THOUSAND, _MBS)
    for kind in ("Star", "Single")
    for kernel in ("Copy", "Scale", "Add", "Triad")
)
FIGURES: Final[tuple[Figure, ...]] = (
    _f("hpl", "HPL_Tflops", _THOUSAND, GFLOPS),
    _f("dgemm_star", "StarDGEMM_Gflops", _ONE, GFLOPS),
    _f("dgemm_single", "SingleDGEMM_Gflops", _ONE, GFLOPS),
    *_STREAM,
    _f("ptrans", "PTRANS_GBs", _THOUSAND, _MBS),
    _f("randomaccess_mpi", "MPIRandomAccess_GUPs", _ONE, GUPS),
    _f("randomaccess_star", "StarRandomAccess_GUPs", _ONE, GUPS),
    _f("randomaccess_single", "SingleRandomAccess_GUPs", _ONE, GUPS),
    _f("fft_mpi", "MPIFFT_Gflops", _ONE, GFLOPS),
    _f("fft_star", "StarFFT_Gflops", _ONE, GFLOPS),
    _f("fft_single", "SingleFFT_Gflops", _ONE, GFLOPS),
    _f("pingpong_latency_min", "MinPingPongLatency_usec", _ONE, MICROSECOND, True),
    _f("pingpong_latency_avg", "AvgPingPongLatency_usec", _ONE, MICROSECOND, True),
    _f("pingpong_latency_max", "MaxPingPongLatency_usec", _ONE, MICROSECOND, True),
    _f("pingpong_bandwidth_min", "MinPingPongBandwidth_GBytes", _THOUSAND, _MBS, True),
    _f("pingpong_bandwidth_avg", "AvgPingPongBandwidth_GBytes", _THOUSAND, _MBS, True),
    _f("pingpong_bandwidth_max", "MaxPingPongBandwidth_GBytes", _THOUSAND, _MBS, True),
    _f("natural_ring_latency", "NaturallyOrderedRingLatency_usec", _ONE, MICROSECOND, True),
    _f("natural_ring_bandwidth", "NaturallyOrderedRingBandwidth_GBytes", _THOUSAND, _MBS, True),
    _f("random_ring_latency", "RandomlyOrderedRingLatency_usec", _ONE, MICROSECOND, True),
    _f("random_ring_bandwidth", "RandomlyOrderedRingBandwidth_GBytes", _THOUSAND, _MBS, True),
)

#: Compute figures (CPU, memory, FFT, RandomAccess, PTRANS) and b_eff messaging figures:
#: what analysis should file under "compute" and under messaging.
COMPUTE_METRICS: Final[frozenset[str]] = frozenset(f.metric for f in FIGURES if not f.beff)
MESSAGING_METRICS: Final[frozenset[str]] = frozenset(f.metric for f in FIGURES if f.beff)

# Summary keys copied into the measurements' details (how big each test was).
DETAIL_KEYS: Final[tuple[str, ...]] = (
    "HPL_N",
    "HPL_NB",
    "HPL_nprow",
    "HPL_npcol",
    "HPL_time",
    "DGEMM_N",
    "PTRANS_n",
    "STREAM_VectorSize",
    "STREAM_Threads",
    "RandomAccess_N",
    "MPIRandomAccess_N",
    "FFT_N",
    "MPIFFT_N",
    "MPIFFT_maxErr",
    "CommWorldProcs",
)

# How hpcc's STREAM arrays are stored: three arrays of doubles per process.
STREAM_ARRAYS = 3
IN_CACHE_NOTE = "in cache: L3 bandwidth, not memory"


def stream_working_set(values: Mapping[str, str], ranks_per_node: int) -> int | None:
    """Bytes of StarSTREAM's arrays on one node: every process of the node runs STREAM at
    once on STREAM_VectorSize doubles per array, three arrays (None if the report lacks it)."""
    vector = values.get("STREAM_VectorSize")
    if vector is None or not vector.strip().isdigit():
        return None
    return int(vector) * 8 * STREAM_ARRAYS * ranks_per_node


def stream_in_cache(working_set: int | None, llc_bytes: int | None) -> bool | None:
    """Whether the STREAM arrays fit in the node's last-level cache (then its "bandwidth" is
    the cache's); None when either size is unknown. STREAM's own rule asks for arrays 4x the
    cache; anything below the cache itself is flagged."""
    if working_set is None or not llc_bytes:
        return None
    return working_set <= llc_bytes


_RESIDUAL_RE = re.compile(r"^\|\|Ax-b\|\|_oo/\(eps.*=\s*(\S+)\s*\.+\s*(PASSED|FAILED)\s*$")
_THRESHOLD_RE = re.compile(r"scaled residuals are less than\s+(\S+)")
_RESULT_RE = re.compile(r"^(W[RC]\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")


def parse_summary_section(text: str) -> dict[str, str]:
    """All `key=value` lines of the last summary section of an `hpccoutf.txt`.

    HPCC appends to `hpccoutf.txt`, so a file may hold several runs; the last one wins.
    """
    begin = text.rfind(SUMMARY_BEGIN)
    if begin < 0:
        raise HpccOutputError(
            "no 'Begin of Summary section.' in the hpcc output (did hpcc finish?)"
        )
    end = text.find(SUMMARY_END, begin)
    if end < 0:
        raise HpccOutputError("the hpcc summary section is not terminated (hpcc output cut short?)")
    values: dict[str, str] = {}
    for line in text[begin + len(SUMMARY_BEGIN) : end].splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key:
            values[key] = value.strip()
    return values


def summary_number(values: Mapping[str, str], key: str) -> Decimal:
    """A positive figure of the summary (HPCC prints -1 for a test that did not run)."""
    if key not in values:
        raise HpccOutputError(f"hpcc summary has no {key}")
    try:
        number = Decimal(values[key])
    except InvalidOperation:
        raise HpccOutputError(f"hpcc summary: {key}={values[key]!r} is not a number") from None
    if not number.is_finite() or number <= 0:
        raise HpccOutputError(f"hpcc summary: {key}={values[key]} (not measured)")
    return number


@dataclass(frozen=True)
class HplResidual:
    residual: float
    verdict: str  # PASSED | FAILED
    threshold: float | None


def hpl_residuals(text: str) -> list[HplResidual]:
    """HPL's scaled-residual checks in the last HPL section of the report."""
    begin = text.rfind(HPL_BEGIN)
    if begin < 0:
        raise HpccOutputError("no HPL section in the hpcc output (did hpcc finish?)")
    end = text.find(HPL_END, begin)
    section = text[begin : end if end >= 0 else len(text)]
    found = _THRESHOLD_RE.search(section)
    threshold = float(found.group(1)) if found else None
    out = []
    for line in section.splitlines():
        m = _RESIDUAL_RE.match(line.strip())
        if m:
            out.append(HplResidual(float(m.group(1)), m.group(2), threshold))
    return out


def check_report(text: str) -> dict[str, str]:
    """The summary of a complete, verified report; HpccOutputError if it is not one.

    HPL's residual check must pass (a failure quotes the residual beside the threshold);
    any other test HPCC marks FAILED (PTRANS's check, STREAM's validation...) fails the run.
    """
    values = parse_summary_section(text)
    residuals = hpl_residuals(text)
    if not residuals:
        raise HpccOutputError("the HPL section has no residual check (HPL did not finish?)")
    for r in residuals:
        if r.verdict != "PASSED":
            against = f"threshold {r.threshold:g}" if r.threshold is not None else "its threshold"
            raise HpccOutputError(
                f"HPL residual check FAILED: scaled residual {r.residual:g} against {against} "
                f"(N={values.get('HPL_N', '?')}, NB={values.get('HPL_NB', '?')}, "
                f"{values.get('HPL_nprow', '?')}x{values.get('HPL_npcol', '?')} grid)"
            )
    for line in text.splitlines():
        if "FAILED" in line or "Failed Validation" in line:
            raise HpccOutputError(f"hpcc reports a failed check: {line.strip()}")
    if values.get("Success") != "1":
        raise HpccOutputError(f"hpcc summary says Success={values.get('Success')!r}")
    return values


def summary_ranks(values: Mapping[str, str]) -> int:
    """CommWorldProcs, the processes hpcc ran on: a whole number, at most MAX_RANKS."""
    procs = summary_number(values, "CommWorldProcs")
    if procs != procs.to_integral_value() or procs > MAX_RANKS:
        raise HpccOutputError(f"hpcc summary: CommWorldProcs={values['CommWorldProcs']}")
    return int(procs)


def figures(values: Mapping[str, str]) -> dict[str, tuple[float, str]]:
    """metric -> (value, unit) for every figure of a checked summary.

    b_eff figures are left out on one rank (HPCC does not run them there, and prints -1);
    on more ranks every figure must be there and positive.
    """
    ranks = summary_ranks(values)
    out: dict[str, tuple[float, str]] = {}
    for fig in FIGURES:
        if fig.beff and ranks == 1:
            continue
        value = float(summary_number(values, fig.key) * fig.scale)
        if not math.isfinite(value):
            raise ImpossibleValue(f"hpcc summary: {fig.key}={values[fig.key]} is not finite")
        out[fig.metric] = (value, fig.unit)
    return out


def process_grid(nranks: int) -> tuple[int, int]:
    """HPL's P x Q grid for `nranks` processes: P <= Q, as square as possible."""
    if nranks < 1:
        raise ValueError("nranks must be >= 1")
    p = math.isqrt(nranks)
    while nranks % p:
        p -= 1
    return p, nranks // p


def hpccinf_text(nranks: int, n: int = 1000, nb: int = 80, threshold: float = 16.0) -> str:
    """An `hpccinf.txt`: one HPL problem of order `n`, block `nb`, on a P x Q grid of all ranks.

    Every HPCC test sizes itself from HPL's memory, `8 n^2 / (P Q)` bytes per process
    (PTRANS uses n/2; STREAM, RandomAccess, FFT and DGEMM derive their sizes from it), so
    `n` sets the length of the whole run. b_eff does not depend on it (fixed 8 and
    2,000,000-byte messages). `threshold` is HPL's residual threshold (16.0 is HPL's).
    """
    if n < 1 or nb < 1:
        raise ValueError("n and nb must be >= 1")
    p, q = process_grid(nranks)
    lines = [
        ("HPC Challenge input written by hpceval", ""),
        ("lines 1-4 are ignored by hpcc; output goes to hpccoutf.txt", ""),
        ("hpccoutf.txt", "output file (ignored)"),
        ("8", "device out (ignored)"),
        ("1", "number of problem sizes N"),
        (str(n), "N"),
        ("1", "number of block sizes NB"),
        (str(nb), "NB"),
        ("0", "process mapping: 0 row-major"),
        ("1", "number of process grids"),
        (str(p), "P"),
        (str(q), "Q"),
        (f"{threshold:g}", "residual threshold"),
        ("1", "number of panel factorizations"),
        ("2", "PFACT: 2 right-looking"),
        ("1", "number of recursive stopping criteria"),
        ("4", "NBMIN"),
        ("1", "number of panels in recursion"),
        ("2", "NDIV"),
        ("1", "number of recursive panel factorizations"),
        ("1", "RFACT: 1 Crout"),
        ("1", "number of broadcasts"),
        ("1", "BCAST: 1 increasing-ring (modified)"),
        ("1", "number of look-ahead depths"),
        ("1", "DEPTH"),
        ("2", "SWAP: 2 mix"),
        ("64", "swapping threshold"),
        ("0", "L1 form: 0 transposed"),
        ("0", "U form: 0 transposed"),
        ("1", "equilibration: 1 yes"),
        ("8", "memory alignment in doubles"),
        ("#" * 20, "line 32 is ignored"),
        ("0", "number of additional PTRANS problem sizes"),
        ("0", "(none)"),
        ("0", "number of additional PTRANS block sizes"),
        ("0", "(none)"),
    ]
    return "".join(f"{value:<16} {note}\n" if note else f"{value}\n" for value, note in lines)
