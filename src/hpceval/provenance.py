"""Provenance: describe the platform a run happened on, as a JSON-serializable record.

`collect_environment` gathers CPU, memory, OS, virtualization, container, network I/O path,
MPI, compiler and hpceval facts. Every probe tolerates failure: a missing tool or file gives
`None` and a line in facts["notes"], never an exception.

Reading the machine goes through a `Host` (files, links, directories, commands), so that the
parsers below stay pure functions over text and a whole collection can be replayed from a
capture taken on another machine (`RecordingHost` saves one, `ReplayHost` reads it back).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import hpceval
from hpceval.model import Environment
from hpceval.toolchain import CommandOutput, MpiToolchain, run_command

# Bumped when the layout of `facts` changes, so stored environments can be told apart.
PROVENANCE_VERSION = 1

CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "hypervisor")

# Keys of `facts` left out of the fingerprint: diagnostics about how probing went (a timeout,
# a missing tool) describe this collection, not the platform.
VOLATILE_KEYS = ("notes",)


# --------------------------------------------------------------------------------------------
# Reading the machine


class Host(Protocol):
    """What provenance and doctor read from a machine. Every method returns None/False on
    failure instead of raising."""

    def read_text(self, path: str) -> str | None: ...
    def readlink(self, path: str) -> str | None: ...
    def listdir(self, path: str) -> list[str] | None: ...
    def exists(self, path: str) -> bool: ...
    def which(self, name: str) -> str | None: ...
    def run(self, argv: Sequence[str]) -> CommandOutput | None: ...
    def uname(self) -> tuple[str, str, str, str]: ...  # sysname, release, version, machine
    def hostname(self) -> str: ...
    def euid(self) -> int: ...


class SystemHost:
    """The machine hpceval runs on."""

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def readlink(self, path: str) -> str | None:
        try:
            return os.readlink(path)
        except OSError:
            return None

    def listdir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        return run_command(argv)

    def uname(self) -> tuple[str, str, str, str]:
        u = platform.uname()
        return u.system, u.release, u.version, u.machine

    def hostname(self) -> str:
        return socket.gethostname()

    def euid(self) -> int:
        return os.geteuid()


CAPTURE_FORMAT = 1


@dataclass
class RecordingHost:
    """Wraps a Host and remembers every answer, to save them as a replayable capture."""

    inner: Host
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str | None] = field(default_factory=dict)
    dirs: dict[str, list[str] | None] = field(default_factory=dict)
    existing: dict[str, bool] = field(default_factory=dict)
    found: dict[str, str | None] = field(default_factory=dict)
    commands: dict[str, CommandOutput | None] = field(default_factory=dict)

    def read_text(self, path: str) -> str | None:
        text = self.inner.read_text(path)
        if text is not None:
            self.files[path] = text
        return text

    def readlink(self, path: str) -> str | None:
        self.links[path] = target = self.inner.readlink(path)
        return target

    def listdir(self, path: str) -> list[str] | None:
        self.dirs[path] = entries = self.inner.listdir(path)
        return entries

    def exists(self, path: str) -> bool:
        self.existing[path] = answer = self.inner.exists(path)
        return answer

    def which(self, name: str) -> str | None:
        self.found[name] = path = self.inner.which(name)
        return path

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        self.commands[shlex.join(argv)] = result = self.inner.run(argv)
        return result

    def uname(self) -> tuple[str, str, str, str]:
        return self.inner.uname()

    def hostname(self) -> str:
        return self.inner.hostname()

    def euid(self) -> int:
        return self.inner.euid()

    def save(self, directory: Path) -> None:
        """Write files under directory/root/, command outputs under directory/commands/,
        everything else in directory/host.json."""
        for path, text in self.files.items():
            target = directory / "root" / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        commands: dict[str, Any] = {}
        for index, (line, result) in enumerate(sorted(self.commands.items())):
            if result is None:
                commands[line] = None
                continue
            name = f"{index:02d}-{Path(shlex.split(line)[0]).name}.txt"
            out = directory / "commands" / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(result.output, encoding="utf-8")
            commands[line] = {"returncode": result.returncode, "output": f"commands/{name}"}
        meta = {
            "format": CAPTURE_FORMAT,
            "uname": list(self.inner.uname()),
            "hostname": self.inner.hostname(),
            "euid": self.inner.euid(),
            "links": self.links,
            "dirs": self.dirs,
            "exists": self.existing,
            "which": self.found,
            "commands": commands,
        }
        (directory / "host.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


class ReplayHost:
    """Answers like the machine a RecordingHost capture was taken on; unknown questions get
    the answer of a machine without that file or program."""

    def __init__(self, directory: Path):
        self.directory = directory
        meta = json.loads((directory / "host.json").read_text())
        if meta.get("format") != CAPTURE_FORMAT:
            raise ValueError(f"{directory}/host.json: unknown capture format {meta.get('format')}")
        self._meta = meta

    def _file(self, path: str) -> Path:
        return self.directory / "root" / path.lstrip("/")

    def read_text(self, path: str) -> str | None:
        file = self._file(path)
        return file.read_text(encoding="utf-8") if file.is_file() else None

    def readlink(self, path: str) -> str | None:
        target: str | None = self._meta["links"].get(path)
        return target

    def listdir(self, path: str) -> list[str] | None:
        entries: list[str] | None = self._meta["dirs"].get(path)
        return entries

    def exists(self, path: str) -> bool:
        if path in self._meta["exists"]:
            return bool(self._meta["exists"][path])
        return self._file(path).exists() or self._meta["links"].get(path) is not None

    def which(self, name: str) -> str | None:
        path: str | None = self._meta["which"].get(name)
        return path

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        entry = self._meta["commands"].get(shlex.join(argv))
        if entry is None:
            return None
        output = (self.directory / entry["output"]).read_text(encoding="utf-8")
        return CommandOutput(int(entry["returncode"]), output)

    def uname(self) -> tuple[str, str, str, str]:
        sysname, release, version, machine = self._meta["uname"]
        return str(sysname), str(release), str(version), str(machine)

    def hostname(self) -> str:
        return str(self._meta["hostname"])

    def euid(self) -> int:
        return int(self._meta["euid"])


# --------------------------------------------------------------------------------------------
# Pure parsers


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


# --------------------------------------------------------------------------------------------
# Classification


# systemd-detect-virt already names hypervisors this way; DMI strings are mapped onto it.
_DMI_HYPERVISORS = (
    ("Amazon EC2", "amazon"),
    ("Google Compute Engine", "google"),
    ("Virtual Machine", "microsoft"),  # Hyper-V's product_name; Microsoft also sells hardware
    ("VMware", "vmware"),
    ("VMW", "vmware"),
    ("innotek GmbH", "oracle"),
    ("VirtualBox", "oracle"),
    ("Xen", "xen"),
    ("KVM", "kvm"),
    ("OpenStack", "kvm"),
    ("KubeVirt", "kvm"),
    ("QEMU", "qemu"),
    ("SeaBIOS", "qemu"),
    ("Bochs", "bochs"),
    ("Parallels", "parallels"),
    ("BHYVE", "bhyve"),
)


def classify_hypervisor(
    detect_virt: str | None,
    cpuid_hypervisor: bool | None,
    dmi: Mapping[str, str | None],
    sys_hypervisor_type: str | None = None,
) -> dict[str, Any]:
    """Which hypervisor, if any, with the evidence it was decided on.

    `detect_virt` is the output of `systemd-detect-virt --vm` (None when not available),
    `cpuid_hypervisor` the cpuinfo "hypervisor" flag, `dmi` the sys_vendor / product_name /
    bios_vendor strings, `sys_hypervisor_type` /sys/hypervisor/type (set in Xen guests).
    kind: a systemd-detect-virt name (kvm, xen, vmware, microsoft, amazon, ...), "other" for
    a VM of unknown make, "none", or "unknown" when nothing could be read.
    """
    evidence: dict[str, Any] = {
        "systemd_detect_virt": detect_virt,
        "cpuid_hypervisor": cpuid_hypervisor,
        "dmi": dict(dmi),
        "sys_hypervisor_type": sys_hypervisor_type,
    }
    kind: str | None = None
    if detect_virt and detect_virt != "none":
        kind = detect_virt
    # Mainstream x86 hypervisors all set the CPUID bit; a DMI vendor without it is the same
    # vendor's bare-metal hardware (AWS *.metal instances still say "Amazon EC2").
    if kind is None and cpuid_hypervisor is not False:
        dmi_text = " ".join(v for v in dmi.values() if v)
        kind = next((name for marker, name in _DMI_HYPERVISORS if marker in dmi_text), None)
    if kind is None and sys_hypervisor_type:
        kind = sys_hypervisor_type
    if kind is None and cpuid_hypervisor:
        kind = "other"
    if kind is None:
        kind = "none" if (detect_virt == "none" or cpuid_hypervisor is False) else "unknown"
    vm = None if kind == "unknown" else kind != "none"
    return {"kind": kind, "vm": vm, "evidence": evidence}


# systemd-detect-virt names kept as they are, except libvirt's LXC driver, which is still LXC.
_CONTAINER_NAMES = {"lxc-libvirt": "lxc"}
_CGROUP_CONTAINERS = {"docker": "docker", "libpod": "podman", "lxc": "lxc"}


def classify_container(
    detect_container: str | None,
    dockerenv: bool,
    containerenv: bool,
    cgroup_text: str | None,
) -> dict[str, Any]:
    """Which container runtime, if any: docker, podman, lxc, another systemd-detect-virt name,
    "other" (some runtime's trace in cgroups), "none", or "unknown" (nothing could be read)."""
    hints = parse_cgroup_hints(cgroup_text) if cgroup_text is not None else []
    evidence: dict[str, Any] = {
        "systemd_detect_virt": detect_container,
        "dockerenv": dockerenv,
        "containerenv": containerenv,
        "cgroup_hints": hints,
    }
    kind: str | None = None
    if detect_container and detect_container != "none":
        kind = _CONTAINER_NAMES.get(detect_container, detect_container)
    elif containerenv:
        kind = "podman"
    elif dockerenv:
        kind = "docker"
    elif hints:
        kind = next((_CGROUP_CONTAINERS[h] for h in hints if h in _CGROUP_CONTAINERS), "other")
    elif detect_container == "none" or cgroup_text is not None:
        kind = "none"
    return {"kind": kind or "unknown", "evidence": evidence}


PARAVIRTUAL_DRIVERS = frozenset(
    {"virtio_net", "xen_netfront", "netfront", "vif", "vmxnet3", "hv_netvsc", "gve"}
)
EMULATED_DRIVERS = frozenset({"e1000", "e1000e", "8139too", "8139cp", "rtl8139", "ne2k-pci"})
VF_DRIVERS = frozenset({"ixgbevf", "iavf", "i40evf", "igbvf", "mlx4_core", "mlx5_core"})
# Drivers that only ever drive a virtual function (or, for ena, AWS's SR-IOV-style device).
ALWAYS_SRIOV_DRIVERS = frozenset({"ena", "ixgbevf", "iavf", "i40evf", "igbvf"})
VIRTUAL_DRIVERS = frozenset(
    {"veth", "bridge", "tun", "tap", "dummy", "ifb", "macvlan", "ipvlan", "vxlan", "bonding"}
)


def classify_io_path(
    driver: str | None, *, has_device: bool, is_vf: bool, in_vm: bool | None
) -> str:
    """The I/O virtualization path of a network device.

    "virtual" (software device: veth, bridge, tun, ifb...), "paravirtual" (virtio_net, Xen
    netfront, vmxnet3, hv_netvsc), "emulated" (an e1000/rtl8139 model inside a VM),
    "sr-iov" (a virtual function, or ena), "passthrough" (another physical NIC inside a VM:
    direct assignment), "native".
    """
    if not has_device or driver is None or driver in VIRTUAL_DRIVERS:
        return "virtual"
    if driver in PARAVIRTUAL_DRIVERS:
        return "paravirtual"
    if driver in EMULATED_DRIVERS:
        return "emulated" if in_vm else "native"
    # A VF handed to a guest has no physfn link inside the guest: the driver must tell.
    if driver in ALWAYS_SRIOV_DRIVERS or is_vf or (in_vm and driver in VF_DRIVERS):
        return "sr-iov"
    if in_vm:
        return "passthrough"
    return "native"


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def describe_interface(
    name: str, reads: Mapping[str, Any], *, in_vm: bool | None
) -> dict[str, Any]:
    """One network interface from its sysfs reads: {"driver": "virtio_net" | None,
    "has_device": bool, "is_vf": bool, "speed": "10000" | None, "mtu": "1500" | None}."""
    driver = reads.get("driver")
    has_device = bool(reads.get("has_device"))
    is_vf = bool(reads.get("is_vf"))
    speed = _int_or_none(reads.get("speed"))
    io_path = classify_io_path(driver, has_device=has_device, is_vf=is_vf, in_vm=in_vm)
    return {
        "name": name,
        "driver": driver if has_device else None,
        "type": "virtual" if io_path == "virtual" else "physical",
        "io_path": io_path,
        "sriov_vf": is_vf,
        # Virtual NICs report -1 or refuse to answer: no speed is better than a made-up one.
        "speed_mbps": speed if speed is not None and speed > 0 else None,
        "mtu": _int_or_none(reads.get("mtu")),
    }


# --------------------------------------------------------------------------------------------
# Probes (each returns facts for one topic and appends to notes on failure)


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


def fingerprint(facts: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of `facts` without its volatile keys.

    Virtual network interfaces (veths, bridges, tunnels) are left out: containers and
    emulated clusters create and delete them all the time, and they say nothing of the
    machine; a fingerprint that followed them would refuse every --resume on a busy host.
    """
    stable = {key: value for key, value in facts.items() if key not in VOLATILE_KEYS}
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


# --------------------------------------------------------------------------------------------
# Display


def format_bytes(count: int | None) -> str:
    """Binary-prefixed size: 49152 -> "48 KiB", 110100480 -> "105 MiB"."""
    if count is None:
        return "?"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _get(facts: Mapping[str, Any], *keys: str) -> Any:
    value: Any = facts
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _or_unknown(value: Any) -> str:
    return "?" if value is None else str(value)


def _count(value: Any, noun: str) -> str:
    if value is None:
        return f"? {noun}s"
    return f"{value} {noun}" if value == 1 else f"{value} {noun}s"


def summarize(facts: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The lines worth showing in a terminal, as (label, value) pairs.

    Tolerates facts with missing topics (older or partial records)."""
    lines: list[tuple[str, str]] = []
    flags = _get(facts, "cpu", "flags") or {}
    isa = " ".join(f for f in ("avx2", "avx512f") if flags.get(f))
    cpu = _or_unknown(_get(facts, "cpu", "model"))
    lines.append(("CPU", f"{cpu} [{isa}]" if isa else cpu))
    counts = [
        _count(_get(facts, "cpu", key), noun)
        for key, noun in (
            ("sockets", "socket"),
            ("cores", "core"),
            ("threads", "thread"),
            ("numa_nodes", "NUMA node"),
        )
    ]
    lines.append(("Cores", ", ".join(counts)))
    caches = _get(facts, "cpu", "caches") or {}
    lines.append(
        (
            "Caches",
            ", ".join(f"{k.upper()} {format_bytes(caches.get(k))}" for k in ("l1d", "l2", "l3")),
        )
    )
    lines.append(("Memory", format_bytes(_get(facts, "memory", "total_bytes"))))
    lines.append(
        (
            "OS",
            f"{_or_unknown(_get(facts, 'os', 'name'))}, "
            f"kernel {_or_unknown(_get(facts, 'os', 'kernel'))}",
        )
    )
    hypervisor = _or_unknown(_get(facts, "virtualization", "kind"))
    lines.append(("Hypervisor", "none (bare metal)" if hypervisor == "none" else hypervisor))
    lines.append(("Container", _or_unknown(_get(facts, "container", "kind"))))
    lines.append(("Network path", _or_unknown(_get(facts, "network", "path"))))
    mpi = _get(facts, "mpi")
    if isinstance(mpi, Mapping):
        text = f"{mpi.get('implementation')} {_or_unknown(mpi.get('version'))}"
        if mpi.get("consistent") is False:
            text += (
                f" (mpicc is {mpi.get('wrapper_implementation')} "
                f"{_or_unknown(mpi.get('wrapper_version'))})"
            )
        lines.append(("MPI", text))
    else:
        lines.append(("MPI", "?"))
    compiler = _or_unknown(_get(facts, "compiler", "version"))
    cflags = " ".join(_get(facts, "compiler", "cflags") or [])
    lines.append(("Compiler", f"{compiler} {cflags}".strip()))
    revision = _get(facts, "hpceval", "revision")
    version = _or_unknown(_get(facts, "hpceval", "version"))
    if revision:
        dirty = ", dirty" if _get(facts, "hpceval", "dirty") else ""
        version += f" ({str(revision)[:12]}{dirty})"
    lines.append(("hpceval", version))
    return lines
