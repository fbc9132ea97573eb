"""Provenance: parsers on files captured from a real KVM guest, classification on synthetic
cases (tests/data/provenance/README.md says which is which), and whole collections replayed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hpceval.model import Environment
from hpceval.provenance import (
    PROVENANCE_VERSION,
    Host,
    RecordingHost,
    ReplayHost,
    SystemHost,
    classify_container,
    classify_hypervisor,
    classify_io_path,
    collect_environment,
    describe_interface,
    fingerprint,
    is_debian_like,
    parse_cgroup_hints,
    parse_cpuinfo,
    parse_default_route,
    parse_lstopo_xml,
    parse_meminfo,
    parse_os_release,
    parse_size,
    parse_sysfs_caches,
    summarize,
)
from hpceval.toolchain import CommandOutput, detect_mpi
from hpceval.units import format_bytes

DATA = Path(__file__).parent / "data" / "provenance"
CAPTURE = DATA / "kvm-docker-debian12"
ROOT = CAPTURE / "root"
SYNTHETIC = DATA / "synthetic"

CPU_MODEL = "Intel(R) Xeon(R) Processor"
CACHES = {"l1d": 48 * 1024, "l2": 2048 * 1024, "l3": 107520 * 1024}
MEMORY = 24682416 * 1024
GCC_LINE = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"


def read(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def command_output(line: str) -> str:
    meta = json.loads((CAPTURE / "host.json").read_text())
    output: str = meta["commands"][line]["output"]
    return (CAPTURE / output).read_text(encoding="utf-8")


def synthetic(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((SYNTHETIC / name).read_text())["cases"]
    return cases


# --- pure parsers on the real capture -------------------------------------------------------


def test_cpuinfo() -> None:
    assert parse_cpuinfo(read("proc/cpuinfo")) == {
        "model": CPU_MODEL,
        "vendor": "GenuineIntel",
        "sockets": 1,
        "cores": 2,
        "threads": 2,
        "flags": {"avx2": True, "avx512f": True, "hypervisor": True},
    }


def test_cpuinfo_without_topology_or_flags() -> None:
    # The shape of /proc/cpuinfo where the kernel reports neither physical/core ids nor flags.
    text = "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n"
    info = parse_cpuinfo(text)
    assert (info["sockets"], info["cores"], info["threads"]) == (None, None, 2)
    assert info["flags"] == {"avx2": None, "avx512f": None, "hypervisor": None}
    assert parse_cpuinfo("")["threads"] is None


def test_meminfo() -> None:
    assert parse_meminfo(read("proc/meminfo")) == MEMORY
    assert parse_meminfo("MemFree: 12 kB\n") is None


def test_os_release() -> None:
    fields = parse_os_release(read("etc/os-release"))
    assert fields["PRETTY_NAME"] == "Debian GNU/Linux 12 (bookworm)"
    assert fields["ID"] == "debian"
    assert fields["VERSION_ID"] == "12"
    assert is_debian_like(fields)
    assert is_debian_like(parse_os_release("ID=ubuntu\nID_LIKE=debian\n"))
    assert not is_debian_like(parse_os_release('ID="rocky"\nID_LIKE="rhel centos fedora"\n'))


def test_lstopo_xml() -> None:
    xml = command_output("/usr/bin/lstopo-no-graphics --no-io --of xml")
    assert parse_lstopo_xml(xml) == {
        "model": CPU_MODEL,
        "vendor": "GenuineIntel",
        "sockets": 1,
        "cores": 2,
        "threads": 2,
        "numa_nodes": 1,
        "caches": CACHES,
    }


def test_lstopo_rejects_what_is_not_a_topology() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        parse_lstopo_xml("<topology><object")
    with pytest.raises(ValueError, match="not <topology>"):
        parse_lstopo_xml("<html/>")


def test_sysfs_caches_agree_with_hwloc() -> None:
    base = "sys/devices/system/cpu/cpu0/cache"
    entries = {
        f"index{i}": {
            key: read(f"{base}/index{i}/{key}").strip() for key in ("level", "type", "size")
        }
        for i in range(4)
    }
    assert entries["index1"]["type"] == "Instruction"
    assert parse_sysfs_caches(entries) == CACHES
    # Where the kernel lists the instruction cache first, L1 must still be the data cache.
    swapped = {**entries, "index0": entries["index1"], "index1": entries["index0"]}
    assert parse_sysfs_caches(swapped) == CACHES


def test_sizes() -> None:
    assert parse_size("48K\n") == 49152
    assert parse_size("2M") == 2 * 1024**2
    assert parse_size("512") == 512
    assert parse_size("") is None
    assert format_bytes(49152) == "48 KiB"
    assert format_bytes(MEMORY) == "23.5 GiB"
    assert format_bytes(None) == "?"
    # A message size is shown exactly (hpceval show, the run summary).
    assert format_bytes(2_000_000, exact=True) == "2000000 B"
    assert [format_bytes(n, exact=True) for n in (0, 1536, 3 << 20, 1 << 30)] == [
        "0 B", "1536 B", "3 MiB", "1 GiB"
    ]


def test_default_route_and_cgroup() -> None:
    assert parse_default_route(read("proc/net/route")) == "eth0"
    assert parse_default_route("Iface\tDestination\n") is None
    # cgroup namespaces hide the runtime's path inside this Docker container.
    assert parse_cgroup_hints(read("proc/1/cgroup")) == []


# --- classification on synthetic cases ------------------------------------------------------


@pytest.mark.parametrize("case", synthetic("network.json"), ids=lambda c: c["case"])
def test_network_classification(case: dict[str, Any]) -> None:
    assert describe_interface(case["name"], case["reads"], in_vm=case["in_vm"]) == case["expected"]


@pytest.mark.parametrize("case", synthetic("hypervisor.json"), ids=lambda c: c["case"])
def test_hypervisor_classification(case: dict[str, Any]) -> None:
    result = classify_hypervisor(
        case["detect_virt"], case["cpuid_hypervisor"], case["dmi"], case["sys_hypervisor_type"]
    )
    assert {"kind": result["kind"], "vm": result["vm"]} == case["expected"]
    assert result["evidence"]["dmi"] == case["dmi"]


@pytest.mark.parametrize("case", synthetic("container.json"), ids=lambda c: c["case"])
def test_container_classification(case: dict[str, Any]) -> None:
    result = classify_container(
        case["detect_container"], case["dockerenv"], case["containerenv"], case["cgroup"]
    )
    assert result["kind"] == case["expected"]["kind"]
    assert result["evidence"]["cgroup_hints"] == case["expected"]["cgroup_hints"]


def test_io_path_unknown_vm_state_is_not_emulated() -> None:
    assert classify_io_path("e1000", has_device=True, is_vf=False, in_vm=None) == "native"
    assert classify_io_path("veth", has_device=True, is_vf=False, in_vm=False) == "virtual"


# --- whole collections replayed from the capture -------------------------------------------


class WithoutHwloc(ReplayHost):
    def which(self, name: str) -> str | None:
        return None if name == "lstopo-no-graphics" else super().which(name)


class BareHost:
    """A machine on which nothing can be read or run."""

    def read_text(self, path: str) -> str | None:
        return None

    def readlink(self, path: str) -> str | None:
        return None

    def listdir(self, path: str) -> list[str] | None:
        return None

    def exists(self, path: str) -> bool:
        return False

    def which(self, name: str) -> str | None:
        return None

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        return None

    def uname(self) -> tuple[str, str, str, str]:
        return ("Linux", "", "", "")

    def hostname(self) -> str:
        return "bare"

    def euid(self) -> int:
        return 1000


def replayed(host: Host | None = None, cflags: Sequence[str] = ("-O3",)) -> Environment:
    host = host or ReplayHost(CAPTURE)
    toolchain = detect_mpi(which=host.which, run=host.run)
    return collect_environment(toolchain, cflags=list(cflags), host=host)


def test_replayed_collection() -> None:
    facts = replayed().facts
    assert facts["provenance_version"] == PROVENANCE_VERSION
    assert facts["cpu"] == {
        "model": CPU_MODEL,
        "vendor": "GenuineIntel",
        "sockets": 1,
        "cores": 2,
        "threads": 2,
        "numa_nodes": 1,
        "caches": CACHES,
        "flags": {"avx2": True, "avx512f": True, "hypervisor": True},
    }
    assert facts["memory"] == {"total_bytes": MEMORY}
    assert facts["os"] == {
        "hostname": "vm",
        "system": "Linux",
        "kernel": "6.18.44-fc-v445",
        "kernel_build": "#1 SMP PREEMPT_DYNAMIC @0",
        "machine": "x86_64",
        "name": "Debian GNU/Linux 12 (bookworm)",
        "id": "debian",
        "version_id": "12",
    }
    assert facts["virtualization"] == {
        "kind": "kvm",
        "vm": True,
        "evidence": {
            "systemd_detect_virt": "kvm",
            "cpuid_hypervisor": True,
            "dmi": {"sys_vendor": None, "product_name": None, "bios_vendor": None},
            "sys_hypervisor_type": None,
        },
    }
    assert facts["container"] == {
        "kind": "docker",
        "evidence": {
            "systemd_detect_virt": "docker",
            "dockerenv": True,
            "containerenv": False,
            "cgroup_hints": [],
        },
    }
    virtual = {"driver": None, "type": "virtual", "io_path": "virtual", "sriov_vf": False}
    assert facts["network"] == {
        "interfaces": [
            {
                "name": "eth0",
                "driver": "virtio_net",
                "type": "physical",
                "io_path": "paravirtual",
                "sriov_vf": False,
                "speed_mbps": None,  # virtio_net reports -1
                "mtu": 1400,
            },
            {"name": "ifb0", **virtual, "speed_mbps": None, "mtu": 1500},
            {"name": "ifb1", **virtual, "speed_mbps": None, "mtu": 1500},
        ],
        "infiniband": [],
        "default_route_interface": "eth0",
        "path": "paravirtual (eth0, virtio_net)",
    }
    assert facts["mpi"]["implementation"] == "Open MPI"
    assert facts["mpi"]["version"] == "4.1.4"
    assert facts["mpi"]["consistent"] is True
    assert facts["mpi"]["link_flags"] == ["-L/usr/lib/x86_64-linux-gnu/openmpi/lib", "-lmpi"]
    assert facts["compiler"] == {"command": "gcc", "version": GCC_LINE, "cflags": ["-O3"]}
    # The capture was taken before the checkout had a commit.
    assert facts["hpceval"]["revision"] is None
    assert facts["python"]["version"].startswith("3.")
    assert facts["notes"] == []


def test_topology_fallback_without_hwloc_agrees() -> None:
    with_hwloc = replayed().facts
    without = replayed(WithoutHwloc(CAPTURE)).facts
    assert without["cpu"] == with_hwloc["cpu"]
    assert any("lstopo-no-graphics not found" in note for note in without["notes"])
    # How a fact was obtained is not part of what the platform is.
    assert fingerprint(without) == fingerprint(with_hwloc)


def test_nothing_readable_gives_nones_and_notes() -> None:
    env = collect_environment(None, cflags=["-O2"], host=BareHost())
    facts = env.facts
    assert facts["cpu"]["model"] is None
    assert facts["cpu"]["threads"] is None
    assert facts["memory"]["total_bytes"] is None
    assert facts["virtualization"]["kind"] == "unknown"
    assert facts["container"]["kind"] == "unknown"
    assert facts["network"]["interfaces"] == []
    assert facts["network"]["path"] is None
    assert facts["mpi"] is None
    assert facts["compiler"] == {"command": None, "version": None, "cflags": ["-O2"]}
    assert facts["hpceval"]["revision"] is None
    notes = "\n".join(facts["notes"])
    for expected in (
        "/proc/cpuinfo unreadable",
        "lstopo-no-graphics not found",
        "/proc/meminfo unreadable",
        "systemd-detect-virt not found",
        "/sys/class/net unreadable",
        "git not found",
        "no MPI toolchain given",
    ):
        assert expected in notes
    json.dumps(facts)
    assert len(env.fingerprint) == 64


def test_facts_are_json_and_fingerprint_is_canonical() -> None:
    env = replayed()
    round_tripped = json.loads(json.dumps(env.facts))
    assert round_tripped == env.facts
    assert fingerprint(round_tripped) == env.fingerprint
    assert replayed().fingerprint == env.fingerprint
    assert fingerprint({**env.facts, "notes": ["a probe timed out"]}) == env.fingerprint
    assert replayed(cflags=("-O2",)).fingerprint != env.fingerprint
    reordered = dict(reversed(list(env.facts.items())))
    assert fingerprint(reordered) == env.fingerprint


def test_summary_lines() -> None:
    assert summarize(replayed().facts) == [
        ("CPU", f"{CPU_MODEL} [avx2 avx512f]"),
        ("Cores", "1 socket, 2 cores, 2 threads, 1 NUMA node"),
        ("Caches", "L1D 48 KiB, L2 2 MiB, L3 105 MiB"),
        ("Memory", "23.5 GiB"),
        ("OS", "Debian GNU/Linux 12 (bookworm), kernel 6.18.44-fc-v445"),
        ("Hypervisor", "kvm"),
        ("Container", "docker"),
        ("Network path", "paravirtual (eth0, virtio_net)"),
        ("MPI", "Open MPI 4.1.4"),
        ("Compiler", f"{GCC_LINE} -O3"),
        ("hpceval", "0.1.0"),
    ]


def test_summary_of_partial_facts() -> None:
    lines = dict(summarize({"hpceval": {"version": "0.1.0", "revision": "0123456789abcdef"}}))
    assert lines["CPU"] == "?"
    assert lines["Memory"] == "?"
    assert lines["MPI"] == "?"
    assert lines["hpceval"] == "0.1.0 (0123456789ab)"
    mismatch = {
        "mpi": {
            "implementation": "Open MPI",
            "version": "4.1.4",
            "consistent": False,
            "wrapper_implementation": "MPICH",
            "wrapper_version": "4.0.2",
        }
    }
    assert dict(summarize(mismatch))["MPI"] == "Open MPI 4.1.4 (mpicc is MPICH 4.0.2)"


def test_record_and_replay_round_trip(tmp_path: Path) -> None:
    recorder = RecordingHost(ReplayHost(CAPTURE))
    original = replayed(recorder)
    recorder.save(tmp_path)
    assert (tmp_path / "root" / "proc" / "cpuinfo").read_text() == read("proc/cpuinfo")
    assert replayed(ReplayHost(tmp_path)).facts == original.facts


def test_replay_rejects_unknown_format(tmp_path: Path) -> None:
    (tmp_path / "host.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(ValueError, match="unknown capture format 99"):
        ReplayHost(tmp_path)


def test_this_machine() -> None:
    first = collect_environment(None, cflags=[])
    second = collect_environment(None, cflags=[], host=SystemHost())
    json.dumps(first.facts)
    assert any("no MPI toolchain given" in note for note in first.facts["notes"])
    # No timestamps or other changing values: two collections agree.
    assert first.fingerprint == second.fingerprint


def test_fingerprint_ignores_virtual_interfaces() -> None:
    from hpceval.provenance import fingerprint

    base = {
        "cpu": {"model": "x"},
        "network": {"interfaces": [{"name": "eth0", "type": "physical"}]},
    }
    with_veth = {
        "cpu": {"model": "x"},
        "network": {
            "interfaces": [
                {"name": "eth0", "type": "physical"},
                {"name": "hpce0br", "type": "virtual"},
            ]
        },
    }
    assert fingerprint(base) == fingerprint(with_veth)
    other_nic = {
        "cpu": {"model": "x"},
        "network": {"interfaces": [{"name": "eth1", "type": "physical"}]},
    }
    assert fingerprint(base) != fingerprint(other_nic)
