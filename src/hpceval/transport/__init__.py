"""Which transport the MPI library really used: a probe run per pair class asks the library
(parse: its own words; probe: the run; checks: what contradicts the record)."""

from __future__ import annotations

from hpceval.transport.checks import (
    SHARED_MEMORY_LATENCY_LIMIT_US,
    describe_transport,
    expected_fabric_warning,
    latency_warnings,
    measured_pingpong_latency,
    transport_checks,
    transport_differences,
)
from hpceval.transport.parse import (
    TRANSPORT_KINDS,
    Transport,
    parse_mpich_device,
    parse_ompi_info_single_copy,
    parse_openmpi,
    parse_probe,
    parse_ucx,
)
from hpceval.transport.probe import pair_classes, probe_transports, with_facts

__all__ = [
    "SHARED_MEMORY_LATENCY_LIMIT_US",
    "TRANSPORT_KINDS",
    "Transport",
    "describe_transport",
    "expected_fabric_warning",
    "latency_warnings",
    "measured_pingpong_latency",
    "pair_classes",
    "parse_mpich_device",
    "parse_ompi_info_single_copy",
    "parse_openmpi",
    "parse_probe",
    "parse_ucx",
    "probe_transports",
    "transport_checks",
    "transport_differences",
    "with_facts",
]
