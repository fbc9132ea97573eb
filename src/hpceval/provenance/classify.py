"""Classification: hypervisor, container and network I/O path from the facts read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpceval.provenance.parsers import (
    parse_cgroup_hints,
)

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
