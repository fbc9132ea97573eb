"""Pure parsers of what the machine says (/proc, /sys, os-release, lstopo, ip route)."""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "hypervisor")


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Model, vendor, sockets, cores, hardware threads and flags of interest from /proc/cpuinfo.

    Sockets and cores are None where the kernel does not report `physical id` / `core id`
    (most non-x86 machines); flags are None where there is no `flags` line.
    """
    processors: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if "processor" in current:
                processors.append(current)
            current = {}
            continue
        key, _, value = line.partition(":")
        current[key.strip()] = value.strip()
    first = processors[0] if processors else {}
    packages = {p["physical id"] for p in processors if "physical id" in p}
    cores = {(p.get("physical id", ""), p["core id"]) for p in processors if "core id" in p}
    flags_line = first.get("flags", first.get("Features"))
    flags: dict[str, bool | None]
    if flags_line is None:
        flags = dict.fromkeys(CPU_FLAGS_OF_INTEREST)
    else:
        present = set(flags_line.split())
        flags = {flag: flag in present for flag in CPU_FLAGS_OF_INTEREST}
    return {
        "model": first.get("model name"),
        "vendor": first.get("vendor_id"),
        "sockets": len(packages) or None,
        "cores": len(cores) or None,
        "threads": len(processors) or None,
        "flags": flags,
    }


def parse_meminfo(text: str) -> int | None:
    """MemTotal from /proc/meminfo, in bytes."""
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value pairs of /etc/os-release, with shell quoting removed."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value]
        fields[key] = " ".join(words)
    return fields


def is_debian_like(os_release: Mapping[str, str]) -> bool:
    ids = {os_release.get("ID", ""), *os_release.get("ID_LIKE", "").split()}
    return "debian" in ids or "ubuntu" in ids


_CACHE_OBJECT = {"L1Cache": 1, "L2Cache": 2, "L3Cache": 3}
_CACHE_KEYS = {1: "l1d", 2: "l2", 3: "l3"}


def parse_lstopo_xml(text: str) -> dict[str, Any]:
    """CPU topology from `lstopo-no-graphics --of xml` (hwloc 2.x; hwloc 1.x names accepted).

    Raises ValueError when the text is not an hwloc topology.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"lstopo XML does not parse: {exc}") from exc
    if root.tag != "topology":
        raise ValueError(f"lstopo XML: root element is <{root.tag}>, not <topology>")
    counts: dict[str, int] = {}
    caches: dict[str, int | None] = dict.fromkeys(_CACHE_KEYS.values())
    infos: dict[str, str] = {}
    for obj in root.iter("object"):
        kind = obj.get("type", "")
        counts[kind] = counts.get(kind, 0) + 1
        for info in obj.findall("info"):
            # The first Package's CPU description wins; a Machine-level one is a fallback.
            infos.setdefault(info.get("name", ""), info.get("value", ""))
        # hwloc 2 names cache levels in the type; hwloc 1 used type="Cache" with a depth.
        level = _CACHE_OBJECT.get(kind) or (int(obj.get("depth", "0")) if kind == "Cache" else 0)
        # cache_type 0 is unified, 1 data, 2 instruction: L1 counts the data cache only.
        if level in _CACHE_KEYS and obj.get("cache_type", "0") in ("0", "1"):
            key = _CACHE_KEYS[level]
            if caches[key] is None and obj.get("cache_size"):
                size = int(obj.get("cache_size", "0"))
                if size < 0:
                    raise ValueError(f"lstopo XML: cache_size {size}")
                caches[key] = size
    sockets = counts.get("Package", 0) + counts.get("Socket", 0)
    return {
        "model": infos.get("CPUModel"),
        "vendor": infos.get("CPUVendor"),
        "sockets": sockets or None,
        "cores": counts.get("Core") or None,
        "threads": counts.get("PU") or None,
        # hwloc 1.x leaves NUMANode out on machines with a single memory node.
        "numa_nodes": max(counts.get("NUMANode", 0), 1),
        "caches": caches,
    }


_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)", re.IGNORECASE)
_SIZE_FACTOR = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text: str) -> int | None:
    """A sysfs cache size such as "48K" or "107520K", in bytes."""
    match = _SIZE.match(text)
    return int(match.group(1)) * _SIZE_FACTOR[match.group(2).upper()] if match else None


def parse_sysfs_caches(entries: Mapping[str, Mapping[str, str]]) -> dict[str, int | None]:
    """L1d/L2/L3 sizes from /sys/devices/system/cpu/cpu0/cache: {"index0": {"level": "1",
    "type": "Data", "size": "48K"}, ...}."""
    caches: dict[str, int | None] = dict.fromkeys(_CACHE_KEYS.values())
    for name in sorted(entries):
        entry = entries[name]
        if entry.get("type", "").strip() == "Instruction":
            continue
        try:
            level = int(entry.get("level", "0"))
        except ValueError:
            continue
        key = _CACHE_KEYS.get(level)
        if key is not None and caches[key] is None:
            caches[key] = parse_size(entry.get("size", ""))
    return caches


def parse_default_route(text: str) -> str | None:
    """The interface of the IPv4 default route in /proc/net/route."""
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "00000000" and fields[7] == "00000000":
            return fields[0]
    return None


_CGROUP_HINTS = ("docker", "libpod", "lxc", "kubepods", "containerd", "crio")


def parse_cgroup_hints(text: str) -> list[str]:
    """Container runtimes named in /proc/1/cgroup paths (empty with cgroup namespaces)."""
    hints: list[str] = []
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        for hint in _CGROUP_HINTS:
            if hint in path and hint not in hints:
                hints.append(hint)
    return hints
