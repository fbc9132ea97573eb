"""Provenance: describe the platform a run happened on, as a JSON-serializable record.

`collect_environment` gathers CPU, memory, OS, virtualization, container, network I/O path,
MPI, compiler and hpceval facts. Every probe tolerates failure: a missing tool or file gives
`None` and a line in facts["notes"], never an exception.

Reading the machine goes through a `Host` (files, links, directories, commands), so that the
parsers below stay pure functions over text and a whole collection can be replayed from a
capture taken on another machine (`RecordingHost` saves one, `ReplayHost` reads it back).
"""

from __future__ import annotations

from hpceval.provenance.classify import (
    ALWAYS_SRIOV_DRIVERS,
    EMULATED_DRIVERS,
    PARAVIRTUAL_DRIVERS,
    VF_DRIVERS,
    VIRTUAL_DRIVERS,
    classify_container,
    classify_hypervisor,
    classify_io_path,
    describe_interface,
)
from hpceval.provenance.display import emulation_limits, summarize
from hpceval.provenance.host import CAPTURE_FORMAT, Host, RecordingHost, ReplayHost, SystemHost
from hpceval.provenance.parsers import (
    CPU_FLAGS_OF_INTEREST,
    is_debian_like,
    parse_cgroup_hints,
    parse_cpuinfo,
    parse_default_route,
    parse_lstopo_xml,
    parse_meminfo,
    parse_os_release,
    parse_size,
    parse_sysfs_caches,
)
from hpceval.provenance.probes import (
    MEASURED_KEYS,
    PROVENANCE_VERSION,
    VOLATILE_KEYS,
    collect_environment,
    fingerprint,
    last_level_cache,
    network_path,
)

__all__ = [
    "ALWAYS_SRIOV_DRIVERS",
    "CAPTURE_FORMAT",
    "CPU_FLAGS_OF_INTEREST",
    "EMULATED_DRIVERS",
    "MEASURED_KEYS",
    "PARAVIRTUAL_DRIVERS",
    "PROVENANCE_VERSION",
    "VF_DRIVERS",
    "VIRTUAL_DRIVERS",
    "VOLATILE_KEYS",
    "Host",
    "RecordingHost",
    "ReplayHost",
    "SystemHost",
    "classify_container",
    "classify_hypervisor",
    "classify_io_path",
    "collect_environment",
    "describe_interface",
    "emulation_limits",
    "fingerprint",
    "is_debian_like",
    "last_level_cache",
    "network_path",
    "parse_cgroup_hints",
    "parse_cpuinfo",
    "parse_default_route",
    "parse_lstopo_xml",
    "parse_meminfo",
    "parse_os_release",
    "parse_size",
    "parse_sysfs_caches",
    "summarize",
]
