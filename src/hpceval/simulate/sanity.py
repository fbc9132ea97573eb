"""Is a PingPong curve fit to calibrate on? Checks made before any fit.

A PingPong curve of a real network rises with the message size, and its effective bandwidth
n / t(n) rises too (t = α + n/β gives n/t increasing towards β). A curve measured on a busy
host breaks both: a size preempted by another job is slower than a larger one, and a large
message that paid for it drags the bandwidth down (issue 21: 32 KiB in 58 µs, then 2 MiB in
8 ms, was fitted with a latency factor of 162). Such points are named, and the curve is
refused when they move it by more than the calibration could absorb.

- non-monotone: t(n) above the fastest larger size by more than NOISE (the slow point is
  named, not the ones after it); a small-message time (n < 1 KiB) far above both
  neighbours (a spike) counts as well;
- implausible bandwidth: from 1 KiB up, n / t(n) below BANDWIDTH_DROP of the best bandwidth
  of the smaller sizes. On links shaped by a token bucket (hpceval.simulate.token_bucket) the
  bandwidth falls from twice the line rate to the rate above the bucket by design: there the
  sizes above the bucket are held against the rate instead.

Below REFUSE (relative miss) a point is flagged (recorded with the calibration and printed);
from REFUSE up the curve is refused with a one-line error naming the points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from hpceval.errors import UserError
from hpceval.simulate.sources import Curve
from hpceval.simulate.token_bucket import TokenBucket

NOISE: Final = 0.03  # what timer noise moves a median by, relatively
REFUSE: Final = 0.10  # the calibration's default tolerance: a miss it could not absorb
BANDWIDTH_DROP: Final = 0.75  # n/t may fall this far under the best smaller size's
SPIKE: Final = 2.0  # a small-message time this many times both neighbours'
BANDWIDTH_FROM: Final = 1024


@dataclass(frozen=True)
class SuspectPoint:
    size: int
    time_us: float
    why: str
    miss: float  # how far off, relatively (0.25: 25 %)

    def describe(self) -> str:
        return f"{_size(self.size)} ({self.time_us:.4g} us): {self.why}"


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def suspect_points(curve: Curve, bucket: TokenBucket | None = None) -> list[SuspectPoint]:
    """The points of `curve` that a real network (shaped by `bucket`) would not produce,
    worst first."""
    sizes, times = curve.sizes, curve.times_us
    found: dict[int, SuspectPoint] = {}

    def note(point: SuspectPoint) -> None:
        if point.size not in found or found[point.size].miss < point.miss:
            found[point.size] = point

    best_bw = 0.0
    for i, (n, t) in enumerate(zip(sizes, times, strict=True)):
        later = min(times[i + 1 :], default=math.inf)
        if t > later * (1 + NOISE):
            note(SuspectPoint(n, t, f"slower than a larger size ({later:.4g} us)",
                              t / later - 1))  # fmt: skip
        if n < BANDWIDTH_FROM and 0 < i < len(sizes) - 1:
            around = max(times[i - 1], times[i + 1])
            if t > SPIKE * around:
                note(SuspectPoint(n, t, f"{t / around:.1f}x its neighbours", t / around - 1))
        bw = n / t
        if bucket is not None and n > bucket.payload_burst_bytes:
            rate = bucket.payload_rate_Bps / 1e6
            if bw < BANDWIDTH_DROP * rate:
                note(SuspectPoint(n, t, f"bandwidth {bw:.4g} MB/s, under the bucket's rate "
                                  f"{rate:.4g} MB/s", 1 - bw / rate))  # fmt: skip
        elif n >= BANDWIDTH_FROM and best_bw and bw < BANDWIDTH_DROP * best_bw:
            note(SuspectPoint(n, t, f"bandwidth {bw:.4g} MB/s, {best_bw:.4g} MB/s at a "
                              "smaller size", 1 - bw / best_bw))  # fmt: skip
        best_bw = max(best_bw, bw)
    return sorted(found.values(), key=lambda p: -p.miss)


def check_curve(curve: Curve, *, what: str, remedy: str, refuse: bool = True,
                bucket: TokenBucket | None = None) -> list[str]:  # fmt: skip
    """Flags (one line each) for the curve's suspect points; a one-line UserError naming
    them if one misses by REFUSE or more (unless not `refuse`: the user accepted the curve,
    they are flags then). `what` names the curve, `remedy` how to re-measure."""
    points = suspect_points(curve, bucket)
    bad = [p for p in points if p.miss >= REFUSE]
    if bad and refuse:
        named = "; ".join(p.describe() for p in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise UserError(
            f"{what} ({curve.origin}) is not a plausible PingPong curve, not calibrated: "
            f"{named}{more}; re-measure it on a quiet host ({remedy}), or calibrate on it "
            "as it is with --accept-curve"
        )
    return [f"{what}: {p.describe()} ({'accepted' if p.miss >= REFUSE else 'noise?'})"
            for p in points]  # fmt: skip
