"""Probes (each returns facts for one topic and appends to notes on failure), and
collect_environment, which runs them all.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import hpceval
from hpceval.model import Environment
from hpceval.provenance.classify import (
    classify_container,
    classify_hypervisor,
    classify_io_path,
    describe_interface,
)
from hpceval.provenance.host import Host, SystemHost
from hpceval.provenance.parsers import (
    _CACHE_KEYS,
    CPU_FLAGS_OF_INTEREST,
    parse_cpuinfo,
    parse_default_route,
    parse_lstopo_xml,
    parse_meminfo,
    parse_os_release,
    parse_sysfs_caches,
)
from hpceval.toolchain import CommandOutput, MpiToolchain

# Bumped when the layout of `facts` changes, so stored environments can be told apart.
PROVENANCE_VERSION = 1

# Keys of `facts` left out of the fingerprint: diagnostics about how probing went (a timeout,
# a missing tool) describe this collection, not the platform.
VOLATILE_KEYS = ("notes",)
# Keys filled by running MPI (the transport probe, hpceval.transport) inside the launcher's
# session, once the rest was collected. They are part of the fingerprint (two platforms of one
# machine that differ in transport are two environments), but a resumed run, which keeps the
# record of its first start, is checked on the rest (`fingerprint(..., measured=False)`).
MEASURED_KEYS = ("transport", "container_runtime")
# What a transport record holds of the probe run itself, not of the platform: left out of
# the fingerprint, so that runs of one platform share their environment.
TRANSPORT_RUN_KEYS = ("latency_8B_us", "hosts")


def _first_line(result: CommandOutput | None) -> str | None:
    if result is None:
        return None
    lines = [ln.strip() for ln in result.output.splitlines() if ln.strip()]
    return lines[0] if lines else None


def _probe_cpu(host: Host, notes: list[str]) -> dict[str, Any]:
    cpuinfo_text = host.read_text("/proc/cpuinfo")
    cpuinfo = parse_cpuinfo(cpuinfo_text) if cpuinfo_text is not None else None
    if cpuinfo is None:
        notes.append("/proc/cpuinfo unreadable: CPU model and flags unknown")

    topology: dict[str, Any] | None = None
    lstopo = host.which("lstopo-no-graphics")
    if lstopo is None:
        notes.append("lstopo-no-graphics not found (install hwloc): topology from /proc and /sys")
    else:
        result = host.run([lstopo, "--no-io", "--of", "xml"])
        if result is None or result.returncode != 0:
            notes.append("lstopo-no-graphics failed: topology from /proc and /sys")
        else:
            try:
                topology = parse_lstopo_xml(result.output)
            except ValueError as exc:
                notes.append(f"{exc}: topology from /proc and /sys")
    if topology is None:
        topology = _sysfs_topology(host, cpuinfo)

    flags = cpuinfo["flags"] if cpuinfo else dict.fromkeys(CPU_FLAGS_OF_INTEREST)
    return {
        "model": topology.get("model") or (cpuinfo or {}).get("model"),
        "vendor": topology.get("vendor") or (cpuinfo or {}).get("vendor"),
        "sockets": topology.get("sockets"),
        "cores": topology.get("cores"),
        "threads": topology.get("threads"),
        "numa_nodes": topology.get("numa_nodes"),
        "caches": topology.get("caches"),
        "flags": flags,
    }


def last_level_cache(host: Host) -> tuple[int, str] | None:
    """The machine's last-level cache in bytes, all sockets together, and where that comes
    from ("L3 36 MiB x 1 socket"); None when neither lstopo nor sysfs tells.

    The provenance records one size per level (that of the first core's cache): a socket's
    L3 is shared by its cores, so the machine has `sockets` of them (an L2 that is the last
    level is per core, so `cores` of them).
    """
    cpu = _probe_cpu(host, [])
    caches = cpu.get("caches") or {}
    for level, per in (("l3", "sockets"), ("l2", "cores")):
        size = caches.get(level)
        if size:
            count = int(cpu.get(per) or 1)
            return int(size) * count, f"{level.upper()} {size} B x {count} ({per})"
    return None


def _sysfs_topology(host: Host, cpuinfo: Mapping[str, Any] | None) -> dict[str, Any]:
    cache_dir = "/sys/devices/system/cpu/cpu0/cache"
    entries: dict[str, dict[str, str]] = {}
    for name in host.listdir(cache_dir) or []:
        if not name.startswith("index"):
            continue
        entry = {}
        for key in ("level", "type", "size"):
            text = host.read_text(f"{cache_dir}/{name}/{key}")
            if text is not None:
                entry[key] = text.strip()
        entries[name] = entry
    nodes = host.listdir("/sys/devices/system/node")
    numa = len([n for n in nodes if re.fullmatch(r"node\d+", n)]) if nodes is not None else None
    info = cpuinfo or {}
    return {
        "model": info.get("model"),
        "vendor": info.get("vendor"),
        "sockets": info.get("sockets"),
        "cores": info.get("cores"),
        "threads": info.get("threads"),
        "numa_nodes": numa or None,
        "caches": parse_sysfs_caches(entries) if entries else dict.fromkeys(_CACHE_KEYS.values()),
    }


def _probe_os(host: Host, notes: list[str]) -> dict[str, Any]:
    sysname, release, version, machine = host.uname()
    text = host.read_text("/etc/os-release")
    if text is None:
        notes.append("/etc/os-release unreadable: OS name unknown")
    fields = parse_os_release(text) if text is not None else {}
    return {
        "hostname": host.hostname(),
        "system": sysname,
        "kernel": release,
        "kernel_build": version,
        "machine": machine,
        "name": fields.get("PRETTY_NAME"),
        "id": fields.get("ID"),
        "version_id": fields.get("VERSION_ID"),
    }


def _detect_virt(host: Host, option: str, notes: list[str]) -> str | None:
    program = host.which("systemd-detect-virt")
    if program is None:
        notes.append(f"systemd-detect-virt not found: {option.strip('-')} from other evidence")
        return None
    # It exits 1 when it finds nothing, printing "none": the text is the answer either way.
    return _first_line(host.run([program, option]))


def _read_stripped(host: Host, path: str) -> str | None:
    text = host.read_text(path)
    return text.strip() if text is not None and text.strip() else None


def _probe_virtualization(
    host: Host, cpu_flags: Mapping[str, bool | None], notes: list[str]
) -> dict[str, Any]:
    dmi = {
        key: _read_stripped(host, f"/sys/class/dmi/id/{key}")
        for key in ("sys_vendor", "product_name", "bios_vendor")
    }
    return classify_hypervisor(
        _detect_virt(host, "--vm", notes),
        cpu_flags.get("hypervisor"),
        dmi,
        _read_stripped(host, "/sys/hypervisor/type"),
    )


def _probe_container(host: Host, notes: list[str]) -> dict[str, Any]:
    return classify_container(
        _detect_virt(host, "--container", notes),
        host.exists("/.dockerenv"),
        host.exists("/run/.containerenv"),
        host.read_text("/proc/1/cgroup"),
    )


def _device_reads(host: Host, base: str) -> dict[str, Any]:
    driver_link = host.readlink(f"{base}/device/driver")
    return {
        "has_device": host.exists(f"{base}/device"),
        "driver": driver_link.rsplit("/", 1)[-1] if driver_link else None,
        "is_vf": host.exists(f"{base}/device/physfn"),
    }


def _probe_network(host: Host, in_vm: bool | None, notes: list[str]) -> dict[str, Any]:
    names = host.listdir("/sys/class/net")
    if names is None:
        notes.append("/sys/class/net unreadable: network interfaces unknown")
    interfaces = []
    for name in names or []:
        if name == "lo":
            continue
        base = f"/sys/class/net/{name}"
        reads = {
            **_device_reads(host, base),
            "speed": host.read_text(f"{base}/speed"),
            "mtu": host.read_text(f"{base}/mtu"),
        }
        interfaces.append(describe_interface(name, reads, in_vm=in_vm))

    infiniband = []
    for name in host.listdir("/sys/class/infiniband") or []:
        base = f"/sys/class/infiniband/{name}"
        reads = _device_reads(host, base)
        ports = []
        for port in host.listdir(f"{base}/ports") or []:
            ports.append(
                {
                    "port": port,
                    "state": _read_stripped(host, f"{base}/ports/{port}/state"),
                    "rate": _read_stripped(host, f"{base}/ports/{port}/rate"),
                    "link_layer": _read_stripped(host, f"{base}/ports/{port}/link_layer"),
                }
            )
        infiniband.append(
            {
                "name": name,
                "driver": reads["driver"],
                "io_path": classify_io_path(
                    reads["driver"],
                    has_device=reads["has_device"],
                    is_vf=reads["is_vf"],
                    in_vm=in_vm,
                ),
                "ports": ports,
            }
        )

    route = host.read_text("/proc/net/route")
    default_interface = parse_default_route(route) if route is not None else None
    return {
        "interfaces": interfaces,
        "infiniband": infiniband,
        "default_route_interface": default_interface,
        "path": network_path(interfaces, infiniband, default_interface),
    }


def network_path(
    interfaces: Sequence[Mapping[str, Any]],
    infiniband: Sequence[Mapping[str, Any]],
    default_interface: str | None,
) -> str | None:
    """The I/O path MPI traffic most likely takes: an active InfiniBand port first, then the
    default-route interface, then the first physical interface."""
    for device in infiniband:
        if any("ACTIVE" in (port.get("state") or "") for port in device.get("ports", [])):
            return f"{device.get('io_path')} (InfiniBand {device.get('name')})"
    chosen = next((i for i in interfaces if i.get("name") == default_interface), None)
    chosen = chosen or next((i for i in interfaces if i.get("type") == "physical"), None)
    chosen = chosen or (interfaces[0] if interfaces else None)
    if chosen is None:
        return None
    driver = chosen.get("driver") or "no driver"
    return f"{chosen.get('io_path')} ({chosen.get('name')}, {driver})"


def _probe_git(host: Host, notes: list[str]) -> dict[str, Any]:
    package_dir = str(Path(__file__).resolve().parent)
    answer: dict[str, Any] = {"revision": None, "dirty": None}
    git = host.which("git")
    if git is None:
        notes.append("git not found: hpceval revision unknown")
        return answer
    # The package must be tracked by the checkout found above it: a virtual environment that
    # lives inside some other repository must not lend that repository's revision.
    tracked = host.run([git, "-C", package_dir, "ls-files", "--error-unmatch", "__init__.py"])
    if tracked is None or tracked.returncode != 0:
        return answer
    head = host.run([git, "-C", package_dir, "rev-parse", "HEAD"])
    if head is None or head.returncode != 0:
        return answer
    answer["revision"] = head.output.strip()
    status = host.run([git, "-C", package_dir, "status", "--porcelain", "--untracked-files=no"])
    if status is not None and status.returncode == 0:
        answer["dirty"] = bool(status.output.strip())
    return answer


def _mpi_facts(toolchain: MpiToolchain | None) -> dict[str, Any] | None:
    if toolchain is None:
        return None
    return {
        "implementation": toolchain.implementation,
        "version": toolchain.version,
        "mpicc": toolchain.mpicc,
        "mpirun": toolchain.mpirun,
        "wrapper_implementation": toolchain.wrapper_implementation,
        "wrapper_version": toolchain.wrapper_version,
        "consistent": toolchain.consistent,
        "compile_flags": list(toolchain.compile_flags),
        "link_flags": list(toolchain.link_flags),
    }


def collect_environment(
    toolchain: MpiToolchain | None, *, cflags: list[str], host: Host | None = None
) -> Environment:
    """Describe this machine (or `host`) for the provenance of a run. Never raises for a
    missing tool or file: the fact is None and facts["notes"] says why."""
    host = host or SystemHost()
    notes: list[str] = []
    cpu = _probe_cpu(host, notes)
    meminfo = host.read_text("/proc/meminfo")
    if meminfo is None:
        notes.append("/proc/meminfo unreadable: memory size unknown")
    virtualization = _probe_virtualization(host, cpu["flags"], notes)
    if toolchain is None:
        notes.append("no MPI toolchain given: MPI and compiler unknown")
    facts: dict[str, Any] = {
        "provenance_version": PROVENANCE_VERSION,
        "cpu": cpu,
        "memory": {"total_bytes": parse_meminfo(meminfo) if meminfo is not None else None},
        "os": _probe_os(host, notes),
        "virtualization": virtualization,
        "container": _probe_container(host, notes),
        "network": _probe_network(host, virtualization["vm"], notes),
        "mpi": _mpi_facts(toolchain),
        "compiler": {
            "command": toolchain.compiler if toolchain else None,
            "version": toolchain.compiler_version if toolchain else None,
            "cflags": list(cflags),
        },
        "hpceval": {"version": hpceval.__version__, **_probe_git(host, notes)},
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
        },
        "notes": notes,
    }
    return Environment(facts=facts, fingerprint=fingerprint(facts))


def fingerprint(facts: Mapping[str, Any], *, measured: bool = True) -> str:
    """sha256 of the canonical JSON of `facts` without its volatile keys (nor its
    MEASURED_KEYS when `measured` is False).

    Virtual network interfaces (veths, bridges, tunnels) are left out: containers and
    emulated clusters create and delete them all the time, and they say nothing of the
    machine; a fingerprint that followed them would refuse every --resume on a busy host.
    """
    left_out = VOLATILE_KEYS if measured else (*VOLATILE_KEYS, *MEASURED_KEYS)
    stable = {key: value for key, value in facts.items() if key not in left_out}
    transport = stable.get("transport")
    if isinstance(transport, Mapping):
        # The transport taken is the platform's; the probe's latency and the host names of
        # its ranks (an emulated cluster's change with its index) are this run's.
        stable["transport"] = {
            pair: {k: v for k, v in record.items() if k not in TRANSPORT_RUN_KEYS}
            if isinstance(record, Mapping)
            else record
            for pair, record in transport.items()
        }
    network = stable.get("network")
    if isinstance(network, Mapping) and isinstance(network.get("interfaces"), list):
        stable["network"] = {
            **network,
            "interfaces": [
                i
                for i in network["interfaces"]
                if not (isinstance(i, Mapping) and i.get("type") == "virtual")
            ],
        }
    canonical = json.dumps(stable, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
