"""Transport check: parsers on real captured probe outputs (tests/data/transport/), the checks
on their records, and real probe runs on the local platforms (shared memory, forced TCP)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpceval.campaign import load_platform
from hpceval.campaign.prepare import toolchain_and_launcher
from hpceval.transport import (
    describe_transport,
    expected_fabric_warning,
    latency_warnings,
    parse_mpich_device,
    parse_ompi_info_single_copy,
    parse_openmpi,
    parse_ucx,
    probe_transports,
    transport_differences,
)

from .test_netns import requires_netns

DATA = Path(__file__).parent / "data" / "transport"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_openmpi_shared_memory_is_vader() -> None:
    t = parse_openmpi(read("openmpi-local-vader.txt"))
    assert (t.library, t.pml, t.components, t.kind) == (
        "Open MPI",
        "ob1",
        ("vader",),
        "shared-memory",
    )
    assert t.interfaces == ()
    assert t.latency_8B_us == pytest.approx(0.239)
    assert t.describe() == "ob1 + vader (shared-memory)"


def test_openmpi_forced_tcp_names_the_interface() -> None:
    t = parse_openmpi(read("openmpi-local-tcp.txt"))
    assert (t.pml, t.components, t.kind, t.interfaces) == ("ob1", ("tcp",), "tcp", ("eth0",))
    assert t.describe() == "ob1 + tcp over eth0 (tcp)"


def test_openmpi_without_a_choice_is_unknown() -> None:
    # pml ucx refused on a machine without a UCX device: the run failed, no BTL line.
    t = parse_openmpi(read("openmpi-local-pml-ucx.txt"))
    assert t.kind is None
    assert t.describe().startswith("unknown")


def test_mpich_ucx_shared_memory_and_tcp() -> None:
    shm = parse_ucx(read("mpich-local-ucx.txt"))
    assert shm.components == ("sysv/memory", "cma/memory") and shm.kind == "shared-memory"
    tcp = parse_ucx(read("mpich-local-ucx-tcp.txt"))
    assert tcp.kind == "tcp" and tcp.interfaces == ("lo", "eth0")


def test_library_facts_parsers() -> None:
    assert parse_ompi_info_single_copy(read("ompi_info-vader.txt")) == "cma"
    assert parse_mpich_device(read("mpichversion.txt")) == "ch4:ucx"
    assert parse_ompi_info_single_copy("") is None and parse_mpich_device("") is None


def record(name: str, **extra: object) -> dict[str, object]:
    return {**parse_openmpi(read(name)).as_facts(), **extra}


def test_latency_contradicting_shared_memory_is_warned() -> None:
    fast = {"intra-node": record("openmpi-local-vader.txt")}
    assert latency_warnings(fast) == []
    slow = {"intra-node": {**record("openmpi-local-vader.txt"), "latency_8B_us": 35.0}}
    (warning,) = latency_warnings(slow)
    assert "35.0 µs" in warning and "shared-memory" in warning
    # A measured ping-pong contradicts it too, the probe being fast.
    (warning,) = latency_warnings(fast, {"intra-node": 42.0})
    assert "ping-pong 8 B latency is 42.0" in warning
    # TCP at tens of µs is no contradiction.
    assert (
        latency_warnings({"intra-node": record("openmpi-local-tcp.txt")}, {"intra-node": 40.0})
        == []
    )


def test_expected_fabric_not_used_is_warned() -> None:
    tcp = {"inter-node": record("openmpi-local-tcp.txt")}
    warning = expected_fabric_warning(tcp, "rdma", nodes=2)
    assert warning is not None and "expects rdma" in warning and "tcp over eth0" in warning
    assert expected_fabric_warning(tcp, "tcp", nodes=2) is None
    assert expected_fabric_warning(tcp, None, nodes=2) is None
    assert "not recorded" in (expected_fabric_warning({}, "tcp", nodes=2) or "")


def test_compare_notes_a_transport_difference() -> None:
    facts = {
        "local": {"transport": {"intra-node": record("openmpi-local-vader.txt")}},
        "local-tcp": {"transport": {"intra-node": record("openmpi-local-tcp.txt")}},
    }
    (note,) = transport_differences(facts)
    assert note.startswith("transport intra-node differs") and "vader" in note and "tcp" in note
    assert transport_differences({"a": facts["local"], "b": facts["local"]}) == []


def test_describe_names_both_pair_classes() -> None:
    text = describe_transport(
        {
            "intra-node": record("openmpi-local-vader.txt", single_copy="cma"),
            "inter-node": record("openmpi-local-tcp.txt"),
        }
    )
    assert text is not None
    assert text.startswith("intra-node: ob1 + vader (shared-memory) [single copy cma, 8 B")
    assert "inter-node: ob1 + tcp over eth0 (tcp)" in text


needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")


@needs_mpirun
@pytest.mark.parametrize(
    ("platform", "kind", "component"),
    [("local", "shared-memory", "vader"), ("local-tcp", "tcp", "tcp")],
)
def test_probe_on_local_platforms(platform: str, kind: str, component: str) -> None:
    config = load_platform(platform).config
    toolchain, launcher = toolchain_and_launcher(config)
    with launcher.session():
        facts = probe_transports(launcher, toolchain, config)
    intra = facts["intra-node"]
    assert intra["kind"] == kind, intra
    assert intra["components"] == [component]
    assert intra["single_copy"] == "cma"
    assert intra["latency_8B_us"] > 0
    assert "inter-node" not in facts


def test_netns_captures_inter_node_tcp_over_the_veth() -> None:
    intra = parse_openmpi(read("openmpi-netns-2x2-intra-node.txt"))
    inter = parse_openmpi(read("openmpi-netns-2x2-inter-node.txt"))
    assert intra.kind == "shared-memory" and intra.hosts == ("hpce0-n0", "hpce0-n0")
    assert inter.components == ("tcp",) and inter.interfaces == ("eth0",)
    assert inter.hosts == ("hpce0-n0", "hpce0-n1")
    # MPICH (ch4:ucx) held to self,tcp, as netns-2x2-mpich once was, takes TCP within a node.
    mpich_intra = parse_ucx(read("mpich-netns-2x2-mpich-intra-node.txt"))
    assert mpich_intra.kind == "tcp" and mpich_intra.interfaces == ("eth0",)


@needs_mpirun
@requires_netns
def test_probe_on_the_netns_cluster() -> None:
    config = load_platform("netns-2x2").config
    toolchain, launcher = toolchain_and_launcher(config)
    with launcher.session():
        facts = probe_transports(launcher, toolchain, config)
    assert facts["intra-node"]["kind"] == "shared-memory"
    inter = facts["inter-node"]
    assert inter["kind"] == "tcp" and inter["interfaces"] == ["eth0"], inter
    assert inter["hosts"][0] != inter["hosts"][1]
    assert expected_fabric_warning(facts, "rdma", nodes=2) is not None


@requires_netns
def test_mpich_on_the_netns_cluster_shares_memory_within_a_node_only() -> None:
    """Each emulated node has its own IPC namespace: UCX takes shared memory between the
    ranks of one node and TCP over the veth between nodes (never memory across nodes)."""
    if shutil.which("mpiexec.mpich") is None or shutil.which("mpicc.mpich") is None:
        pytest.skip("MPICH is not installed (Debian: mpich libmpich-dev)")
    config = load_platform("netns-2x2-mpich").config
    toolchain, launcher = toolchain_and_launcher(config)
    with launcher.session():
        facts = probe_transports(launcher, toolchain, config)
    intra, inter = facts["intra-node"], facts["inter-node"]
    assert intra["kind"] == "shared-memory", intra
    assert intra["hosts"][0] == intra["hosts"][1]
    assert inter["kind"] == "tcp" and inter["components"] == ["tcp/eth0"], inter
    assert inter["hosts"][0] != inter["hosts"][1]


@needs_mpirun
def test_run_show_and_compare_name_the_transport(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hpceval.cli import app

    runner = CliRunner()
    db = str(tmp_path / "t.db")
    for platform in ("local-tcp", "local"):
        result = runner.invoke(app, ["run", "-p", platform, "-s", "smoke", "--db", db])
        assert result.exit_code == 0, result.output
        assert "transport: intra-node: ob1 + " in result.output
    shown = runner.invoke(app, ["show", "--db", db, "-r", "1"])
    assert "ob1 + tcp over" in shown.output
    compared = runner.invoke(app, ["compare", "-b", "local", "local-tcp", "--db", db])
    assert compared.exit_code == 0, compared.output
    assert "transport intra-node differs" in " ".join(compared.output.split())


def test_runs_of_one_platform_share_their_environment() -> None:
    from hpceval.provenance import fingerprint

    base = {"os": {"kernel": "6.1"}}
    first = {"intra-node": record("openmpi-local-vader.txt")}
    second = {"intra-node": {**first["intra-node"], "latency_8B_us": 0.9, "hosts": ["a", "b"]}}
    tcp = {"intra-node": record("openmpi-local-tcp.txt")}
    assert fingerprint({**base, "transport": first}) == fingerprint({**base, "transport": second})
    assert fingerprint({**base, "transport": first}) != fingerprint({**base, "transport": tcp})
    assert fingerprint({**base, "transport": tcp}, measured=False) == fingerprint(base)
