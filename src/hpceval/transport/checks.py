"""Checks of a recorded transport: does it agree with the latency measured over it, with the
fabric the platform expects, and with the transport of another platform being compared?

Pure functions over provenance facts (facts["transport"], see hpceval.transport.probe) and
measurements; each returns the warnings to print, worded with what to look at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hpceval.model import Measurement
from hpceval.statistics import measurement_value
from hpceval.transport.parse import SHARED_MEMORY

# An 8-byte round trip / 2 over shared memory takes well under 2 µs on any CPU of the last
# decade (0.2-0.4 µs measured here); ten times that is a path through a NIC or a kernel
# socket, or ranks that wait for a core. Above it a "shared-memory" record is doubtful.
SHARED_MEMORY_LATENCY_LIMIT_US = 10.0
PROBE_SIZE_BYTES = 8


def pair_records(transport: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """The per-pair-class records of facts["transport"] (intra-node, inter-node)."""
    if not isinstance(transport, Mapping):
        return {}
    return {k: v for k, v in transport.items() if isinstance(v, Mapping)}


def describe_transport(transport: Mapping[str, Any] | None) -> str | None:
    """One line for `show`: `intra-node: ob1 + vader (shared-memory); inter-node: ...`."""
    if not isinstance(transport, Mapping):
        return None
    if "error" in transport and not pair_records(transport):
        return f"not recorded: {transport['error']}"
    parts = []
    for pair, record in pair_records(transport).items():
        text = record.get("error") or record.get("description") or "?"
        single_copy = record.get("single_copy") if record.get("kind") == SHARED_MEMORY else None
        extra = [f"single copy {single_copy}"] if single_copy else []
        extra += [f"device {record['device']}"] if record.get("device") else []
        latency = record.get("latency_8B_us")
        extra += [f"8 B {latency:.2f} µs"] if isinstance(latency, (int, float)) else []
        parts.append(f"{pair}: {text}" + (f" [{', '.join(extra)}]" if extra else ""))
    return "; ".join(parts) or None


def latency_warnings(
    transport: Mapping[str, Any] | None, measured: Mapping[str, float] | None = None
) -> list[str]:
    """A shared-memory record contradicted by an 8-byte latency of tens of µs: the probe's
    own latency, and `measured` (pair class -> 8 B ping-pong latency in µs) when given."""
    warnings = []
    for pair, record in pair_records(transport).items():
        if record.get("error"):
            warnings.append(f"transport {pair}: {record['error']}")
            continue
        if record.get("kind") is None:
            warnings.append(f"transport {pair}: the MPI library reported no choice")
            continue
        if record.get("kind") != SHARED_MEMORY:
            continue
        seen = [("probe", record.get("latency_8B_us"))]
        seen.append(("ping-pong", (measured or {}).get(pair)))
        for source, latency in seen:
            if isinstance(latency, (int, float)) and latency > SHARED_MEMORY_LATENCY_LIMIT_US:
                warnings.append(
                    f"transport {pair}: recorded as {record.get('description')}, but the "
                    f"{source} 8 B latency is {latency:.1f} µs (shared memory takes under "
                    f"{SHARED_MEMORY_LATENCY_LIMIT_US:g} µs): ranks were oversubscribed or "
                    "the traffic took another path"
                )
    return warnings


def expected_fabric_warning(
    transport: Mapping[str, Any] | None, expected: str | None, nodes: int
) -> str | None:
    """The platform declares `interconnect.expected_transport`: the pair class that crosses
    it (inter-node, or intra-node on a one-node platform) must have used it."""
    if expected is None:
        return None
    records = pair_records(transport)
    pair = "inter-node" if nodes >= 2 else "intra-node"
    record = records.get(pair)
    if record is None:
        return f"transport {pair}: not recorded, expected {expected} could not be checked"
    if record.get("kind") != expected:
        used = record.get("description") or record.get("error") or "unknown"
        return (
            f"transport {pair}: the platform expects {expected} (interconnect."
            f"expected_transport) but the MPI library used {used}"
        )
    return None


def transport_differences(
    facts_by_platform: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """Notes for `compare`: pair classes whose transport kind differs between platforms."""
    kinds: dict[str, dict[str, str]] = {}
    for platform, facts in facts_by_platform.items():
        for pair, record in pair_records(facts.get("transport")).items():
            kinds.setdefault(pair, {})[platform] = str(
                record.get("description") or record.get("error") or "unknown"
            )
    notes = []
    for pair, by_platform in sorted(kinds.items()):
        if len(by_platform) > 1 and len(set(by_platform.values())) > 1:
            listed = "; ".join(f"{p}: {d}" for p, d in by_platform.items())
            notes.append(f"transport {pair} differs: {listed}")
    return notes


def measured_pingpong_latency(measurements: Iterable[Measurement]) -> dict[str, float]:
    """Pair class -> the smallest 8 B ping-pong latency of the run (µs), each point by the
    median of its samples (the statistics policy's default; the mean before 2026-11-25)."""
    best: dict[str, float] = {}
    for m in measurements:
        p = m.parameters
        if (
            m.benchmark == "mpibench"
            and m.metric == "latency"
            and p.get("pattern") == "pingpong"
            and p.get("size") == PROBE_SIZE_BYTES
            and isinstance(p.get("pair"), str)
        ):
            pair = str(p["pair"])
            latency = measurement_value(m, "median")
            best[pair] = min(best.get(pair, latency), latency)
    return best


def transport_checks(
    facts: Mapping[str, Any], platform_raw: Mapping[str, Any], measurements: Iterable[Measurement]
) -> list[str]:
    """Every warning of a stored run: latency against the record (the probe's and the run's
    own 8 B ping-pong), and the platform's expected transport."""
    transport = facts.get("transport")
    if transport is None:
        return []
    warnings = latency_warnings(transport, measured_pingpong_latency(measurements))
    interconnect = platform_raw.get("interconnect")
    expected = interconnect.get("expected_transport") if isinstance(interconnect, Mapping) else None
    nodes = platform_raw.get("nodes", 1)
    warning = expected_fabric_warning(
        transport,
        expected if isinstance(expected, str) else None,
        nodes if isinstance(nodes, int) else 1,
    )
    return [*warnings, *([warning] if warning else [])]
