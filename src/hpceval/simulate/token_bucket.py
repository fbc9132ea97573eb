"""Links shaped by a token bucket (Linux `tc tbf`), as the emulated clusters' links are.

An emulated cluster (hpceval.clusters.netns) shapes each veth with tbf: a bucket of b bytes
filled at the line rate r, a packet leaving at the veth's own speed while the bucket holds
it. Its PingPong is the bucket's steady state, not a Hockney curve: each direction's
buckets refill while the other direction's message is on the way, so up to 2 b a message
takes m / (2 r) one way (twice the line rate: 240-247 MB/s measured on 1 Gbit/s links), above
it (m - b) / r. A message after an idle spell leaves at the veth's speed (CG class A's 56 KB
exchanges, 1.5 ms apart). SMPI's factors fitted on that curve charged every message the
PingPong's drained figure (issue 21: CG class A +34 % at 2 ranks, Allreduce 1 MiB -37 %).

With a bucket, the node links (SPLITDUPLEX: tbf shapes what a node sends and what the
bridge delivers to it, each direction apart) run at the veth's speed in the platform file,
and a SimGrid plugin (hpceval/smpi_plugins/token_bucket.cpp, built here with g++ against
libsimgrid, cached by source hash; loaded into smpirun with LD_PRELOAD by the smpirun
starter) drops a link to the rate while its bucket is empty. tbf counts frames, a message
moves payload: rate and bucket are given to the plugin in payload bytes (TCP over Ethernet:
MTU - 52 payload bytes in every MTU + 14 frame bytes). The calibration then fits the
latency factors only; the bandwidth factors stay 1 (the bucket and the rate make the curve's
shape, hpceval.simulate.calibrate).

The veth's speed (the peak) cannot be read from a PingPong that drains the bucket: it is a
stated assumption (PEAK_ASSUMED_BPS, or `hpceval simulate --bucket-peak-gbps`).
"""

from __future__ import annotations

import functools
import math
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from hpceval.build import compile_program
from hpceval.errors import ToolMissing, UserError
from hpceval.toolchain import parse_compiler_version, run_command

PLUGIN_SOURCE: Final = Path(__file__).parent.parent / "smpi_plugins" / "token_bucket.cpp"
PLUGIN_NAME: Final = "libhpceval_token_bucket.so"
CXX: Final = "g++"
CXX_FLAGS: Final = ("-O2", "-std=c++17", "-shared", "-fPIC")
# The node links of hpceval's platform files, both directions (SPLITDUPLEX): SimGrid's
# cluster names them CLUSTER_link_I_UP / _DOWN, the flat zone HOST-link_UP / _DOWN.
NODE_LINK_SUFFIXES: Final = ("_UP", "_DOWN")
# A veth moves a TCP stream at memory-copy speed; not measurable from a shaped PingPong.
PEAK_ASSUMED_BPS: Final = 2e9
DEFAULT_MTU: Final = 1500
ETHERNET_HEADER_BYTES: Final = 14  # what tbf counts beside the IP packet
TCP_IP_HEADER_BYTES: Final = 52  # IPv4 20 + TCP 20 + timestamps 12
SHAPER: Final = "tc tbf"


@dataclass(frozen=True)
class TokenBucket:
    """A tbf bucket on every node link, each direction: line rate (bit/s, frames), bucket
    (frame bytes), the MTU, and the speed of a link whose bucket holds tokens."""

    line_rate_bit_s: float
    burst_bytes: float
    mtu: int
    peak_Bps: float
    source: str  # where rate and bucket come from, in words
    peak_source: str

    def __post_init__(self) -> None:
        for name in ("line_rate_bit_s", "burst_bytes", "peak_Bps"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"token bucket: {name} {value!r} is not positive")
        if self.mtu <= TCP_IP_HEADER_BYTES:
            raise ValueError(f"token bucket: MTU {self.mtu} holds no TCP payload")
        if self.peak_Bps < self.payload_rate_Bps:
            raise ValueError(f"token bucket: the peak {self.peak_Bps:.4g} B/s is below the "
                             f"rate {self.payload_rate_Bps:.4g} B/s")  # fmt: skip

    @property
    def payload_share(self) -> float:
        """Payload bytes per byte tbf counts (a full TCP segment in its Ethernet frame)."""
        return (self.mtu - TCP_IP_HEADER_BYTES) / (self.mtu + ETHERNET_HEADER_BYTES)

    @property
    def payload_rate_Bps(self) -> float:
        return self.line_rate_bit_s / 8 * self.payload_share

    @property
    def payload_burst_bytes(self) -> float:
        return self.burst_bytes * self.payload_share

    def plugin_spec(self) -> str:
        """The plugin's HPCEVAL_SMPI_BUCKET: payload rate, payload bucket, link suffixes."""
        return (f"{self.payload_rate_Bps:.9g}:{self.payload_burst_bytes:.9g}:"
                + ",".join(NODE_LINK_SUFFIXES))  # fmt: skip

    def describe(self) -> str:
        return (f"node links shaped as {SHAPER}: {self.line_rate_bit_s / 1e9:g} Gbit/s, "
                f"{self.burst_bytes:.0f} B bucket, MTU {self.mtu} ({self.source}); "
                f"{self.peak_Bps / 1e6:.4g} MB/s while the bucket holds tokens "
                f"({self.peak_source})")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TokenBucket:
        return cls(**d)


def emulation_bucket(emulation: Mapping[str, Any] | None, origin: str) -> TokenBucket | None:
    """The bucket an emulated platform's stored facts describe, its peak the stated
    assumption (None: links not shaped by tbf)."""
    if not emulation or emulation.get("shaper") != SHAPER:
        return None
    rate, burst = emulation.get("rate_bit_s"), emulation.get("burst_bytes")
    if not isinstance(rate, int | float) or not isinstance(burst, int | float):
        raise UserError(f"{origin}: the emulation facts name {SHAPER} without a rate_bit_s "
                        "and a burst_bytes")  # fmt: skip
    mtu = emulation.get("mtu")
    if not isinstance(mtu, int):
        mtu, origin = DEFAULT_MTU, f"{origin}, MTU {DEFAULT_MTU} assumed"
    try:
        return TokenBucket(float(rate), float(burst), mtu, PEAK_ASSUMED_BPS, origin,
                           "assumed: a veth's speed, not seen by a drained PingPong")  # fmt: skip
    except ValueError as e:
        raise UserError(f"{origin}: {e}") from None


@functools.cache
def compiler_identity(cxx: str) -> str:
    """The first line of `cxx --version`, probed once per process: every smpirun platform a
    calibration writes asks for the plugin."""
    probe = run_command([cxx, "--version"])
    return (parse_compiler_version(probe.output) if probe else None) or cxx


def build_plugin(simgrid_version: str) -> Path:
    """The plugin's shared library, built once per source, compiler and SimGrid version."""
    cxx = shutil.which(CXX)
    if cxx is None:
        raise ToolMissing(f"{CXX} not found: the token-bucket link model is a C++ SimGrid "
                          "plugin (Debian: g++; ./setup.sh deps installs it)")  # fmt: skip
    try:
        return compile_program(
            PLUGIN_NAME, [PLUGIN_SOURCE], compiler=cxx,
            compiler_identity=f"{compiler_identity(cxx)}; SimGrid {simgrid_version}",
            cflags=list(CXX_FLAGS), ldflags=["-lsimgrid"],
        )  # fmt: skip
    except UserError as e:
        raise UserError(f"the token-bucket plugin does not build: {e}") from None
