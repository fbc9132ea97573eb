"""Parsers of what an MPI library says about the transport it chose: pure functions over the
text of a transport probe run (tests/data/transport/ holds real captures).

Open MPI (ob1) names, per peer, the BTL its BML picked ("mca: bml: Using vader btl for send
to [[job,1],1] on node n"), and its PML/MTL selection ("select: component ob1 selected",
"mtl) Selected component [ofi]"); the TCP BTL names its interfaces ("using ipv4 interface
eth0"). UCX (MPICH ch4:ucx, Open MPI's pml ucx) prints one line per endpoint configuration
with the transports of each operation ("ep_cfg[1]: tag(sysv/memory cma/memory) ...").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

# What each component or UCX transport is, in the words the checks use.
SHARED_MEMORY = "shared-memory"
TCP = "tcp"
RDMA = "rdma"
LIBFABRIC = "libfabric"
SELF = "self"
TRANSPORT_KINDS = (SHARED_MEMORY, TCP, RDMA, LIBFABRIC)

_COMPONENT_KIND = {
    "vader": SHARED_MEMORY,
    "sm": SHARED_MEMORY,
    "smcuda": SHARED_MEMORY,
    "tcp": TCP,
    "openib": RDMA,
    "uct": RDMA,
    "usnic": LIBFABRIC,
    "ofi": LIBFABRIC,
    "psm": RDMA,
    "psm2": RDMA,
    "portals4": RDMA,
    "self": SELF,
}
# UCX transport names (the part before "/device").
_UCX_KIND = {
    "sysv": SHARED_MEMORY,
    "posix": SHARED_MEMORY,
    "cma": SHARED_MEMORY,
    "xpmem": SHARED_MEMORY,
    "knem": SHARED_MEMORY,
    "tcp": TCP,
    "rc": RDMA,
    "rc_verbs": RDMA,
    "rc_mlx5": RDMA,
    "ud": RDMA,
    "ud_verbs": RDMA,
    "ud_mlx5": RDMA,
    "dc_mlx5": RDMA,
    "self": SELF,
}

_BML_RE = re.compile(r"mca: bml: Using (\S+) btl for send to \[\[\d+,\d+\],(\d+)\] on node (\S+)")
_PML_RE = re.compile(r"select: component (\S+) selected")
_MTL_RE = re.compile(r"mtl\) Selected component \[(\S+)\]")
_TCP_IF_RE = re.compile(r"btl:tcp: using ipv[46] interface (\S+)")
_UCX_EP_RE = re.compile(r"UCX\s+INFO\s+ep_cfg\[\d+\]: tag\(([^)]*)\)")
_PROBE_RE = re.compile(r"^\{\"probe\": \"transport\".*\}\s*$", re.M)


@dataclass(frozen=True)
class Transport:
    """The transport one pair of ranks used, as the library reported it."""

    library: str  # "Open MPI" | "MPICH"
    kind: str | None  # shared-memory, tcp, rdma, libfabric; None: the library said nothing
    components: tuple[str, ...]  # BTLs (Open MPI ob1) or UCX transports ("sysv/memory")
    pml: str | None = None
    mtl: str | None = None
    interfaces: tuple[str, ...] = field(default_factory=tuple)
    latency_8B_us: float | None = None
    hosts: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        """`ob1 + vader (shared-memory)`, `ucx: tcp/eth0 (tcp)`."""
        if not self.components and self.mtl is None:
            return "unknown (the library reported no choice)"
        if self.mtl is not None:
            head = f"{self.pml or 'cm'} + mtl {self.mtl}"
        elif self.pml is not None:
            head = f"{self.pml} + {' + '.join(self.components)}"
        else:
            # UCX names its transports with their devices (tcp/eth0) already.
            return f"ucx: {' '.join(self.components)} ({self.kind or 'unknown'})"
        where = f" over {', '.join(self.interfaces)}" if self.interfaces else ""
        return f"{head}{where} ({self.kind or 'unknown'})"

    def as_facts(self) -> dict[str, Any]:
        facts = asdict(self)
        facts["components"] = list(self.components)
        facts["interfaces"] = list(self.interfaces)
        facts["hosts"] = list(self.hosts)
        facts["description"] = self.describe()
        return facts


def _kind_of(kinds: Iterable[str | None]) -> str | None:
    """The kind of a set of components, SELF left out; the fastest named first wins (a UCX
    endpoint lists sysv and cma together: both shared memory)."""
    named = [k for k in kinds if k is not None and k != SELF]
    for kind in (RDMA, LIBFABRIC, SHARED_MEMORY, TCP):
        if kind in named:
            return kind
    return None


def probe_result(text: str) -> dict[str, Any] | None:
    """The JSON line rank 0 of the probe prints (latency, hosts), None when missing."""
    found = _PROBE_RE.findall(text)
    return json.loads(found[-1]) if found else None


def parse_ucx_endpoints(text: str) -> list[tuple[str, ...]]:
    """The tag-matching transports of every UCX endpoint configuration but a rank's own
    (`self/...`), in order of appearance, duplicates dropped."""
    seen: list[tuple[str, ...]] = []
    for match in _UCX_EP_RE.finditer(text):
        transports = tuple(match.group(1).split())
        if any(t.startswith("self/") for t in transports):
            continue
        if transports and transports not in seen:
            seen.append(transports)
    return seen


def parse_openmpi(text: str, *, peer_rank: int = 1) -> Transport:
    """The transport rank 0 used to reach `peer_rank` in an Open MPI probe run."""
    pml = next(iter(_PML_RE.findall(text)), None)
    mtl = next(iter(_MTL_RE.findall(text)), None)
    btls: list[str] = []
    for btl, rank, _node in _BML_RE.findall(text):
        # Rank 1 names the self BTL to reach itself: the pair's path is the other one.
        if int(rank) == peer_rank and btl != "self" and btl not in btls:
            btls.append(btl)
    probe = probe_result(text) or {}
    if pml == "ucx" or (pml is None and not btls and _UCX_EP_RE.search(text)):
        return _ucx_transport("Open MPI", text, probe, pml="ucx")
    if pml == "cm" or mtl is not None:
        kind = _COMPONENT_KIND.get(mtl or "", LIBFABRIC if mtl else None)
        return Transport("Open MPI", kind, (), pml=pml, mtl=mtl, **_probe_fields(probe))
    interfaces = tuple(dict.fromkeys(_TCP_IF_RE.findall(text))) if "tcp" in btls else ()
    return Transport(
        "Open MPI",
        _kind_of(_COMPONENT_KIND.get(b) for b in btls),
        tuple(btls),
        pml=pml,
        interfaces=interfaces,
        **_probe_fields(probe),
    )


def parse_ucx(text: str, library: str = "MPICH") -> Transport:
    """The transport of a UCX probe run (MPICH ch4:ucx)."""
    return _ucx_transport(library, text, probe_result(text) or {}, pml=None)


def _ucx_transport(library: str, text: str, probe: dict[str, Any], pml: str | None) -> Transport:
    endpoints = parse_ucx_endpoints(text)
    transports = endpoints[0] if endpoints else ()
    kind = _kind_of(_UCX_KIND.get(t.split("/", 1)[0]) for t in transports)
    interfaces = tuple(
        dict.fromkeys(t.split("/", 1)[1] for t in transports if t.startswith("tcp/") and "/" in t)
    )
    return Transport(
        library, kind, transports, pml=pml, interfaces=interfaces, **_probe_fields(probe)
    )


def _probe_fields(probe: dict[str, Any]) -> dict[str, Any]:
    latency = probe.get("latency_8B_us")
    hosts = tuple(str(probe[k]) for k in ("host0", "host1") if k in probe)
    return {"latency_8B_us": float(latency) if latency is not None else None, "hosts": hosts}


def parse_probe(text: str, implementation: str) -> Transport:
    """The probe's output read as the library that produced it speaks."""
    if implementation == "Open MPI":
        return parse_openmpi(text)
    if implementation == "MPICH":
        return parse_ucx(text, "MPICH")
    raise ValueError(f"no transport parser for {implementation}")


def parse_ompi_info_single_copy(text: str) -> str | None:
    """The vader BTL's single-copy mechanism (cma, xpmem, knem, emulated, none) from
    `ompi_info --param btl vader --level 9 --parsable`."""
    m = re.search(r"^mca:btl:vader:param:btl_vader_single_copy_mechanism:value:(\S+)", text, re.M)
    return m.group(1) if m else None


def parse_mpich_device(text: str) -> str | None:
    """MPICH's device and netmod (`ch4:ucx`, `ch4:ofi`, `ch3:nemesis`) from `mpichversion`."""
    m = re.search(r"^MPICH Device:\s*(\S+)", text, re.M)
    return m.group(1) if m else None
