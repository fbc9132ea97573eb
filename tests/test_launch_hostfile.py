"""The hostfile launcher: exact argv, hostfiles, preflight against unreachable hosts, and a
real campaign over SSH (sshd started inside the nodes of an emulated netns cluster)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpceval.build import cache_root
from hpceval.campaign import load_platform
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError, UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.launch.schedulers import hostfile as hostfile_mod
from hpceval.model import Placement
from hpceval.store import open_store

from .conftest import requires_mpi, write
from .test_netns import header, requires_netns

PROGRAM = ["/cache/mpibench", "--pattern", "pingpong"]
HOSTS = ["node01", "node02", "node03"]


def launcher(cores: int = 4, impl: str = "Open MPI", hosts: list[str] = HOSTS, **keys: Any) -> Any:
    platform = PlatformConfig.model_validate(
        {
            "name": "cluster",
            "nodes": max(1, len(hosts)),
            "hosts": hosts,
            "cores_per_node": cores,
            "launcher": {"kind": "hostfile", **keys},
        }
    )
    mpirun = "/usr/bin/mpirun" if impl == "Open MPI" else "/usr/bin/mpiexec.hydra"
    return get_launcher_class("hostfile")(platform, MpiRuntime(impl, mpirun))


@pytest.fixture(autouse=True)
def as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: False)


# --------------------------------------------------------------------------- exact argv


def test_open_mpi_two_nodes_two_ranks_each() -> None:
    hf = launcher()
    cmd = hf.command(Placement(2, 2), PROGRAM)
    hostfile = hf.hostfile(Placement(2, 2))
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "4", "--hostfile", str(hostfile),
        "--map-by", "ppr:2:node", "--bind-to", "core",
        "--mca", "plm_rsh_agent", "ssh",
        "-x", "OMP_NUM_THREADS", "--", *PROGRAM,
    ]  # fmt: skip
    # Only the nodes of the placement, each with ranks_per_node slots: rank r on node r // 2.
    assert hostfile.read_text() == "node01 slots=2\nnode02 slots=2\n"
    assert dict(cmd.env) == {"OMP_NUM_THREADS": "1"}
    assert cmd.placement == Placement(2, 2, 1, "core") and not cmd.oversubscribed


def test_open_mpi_options_from_the_platform() -> None:
    hf = launcher(
        ssh="/usr/bin/ssh",
        ssh_args=["-p", "2222", "-o", "StrictHostKeyChecking=no"],
        interface="10.1.0.0/16",
        workdir="/shared/scratch",
        env={"UCX_TLS": "tcp"},
        extra_args=["--tag-output"],
    )
    cmd = hf.command(Placement(3, 1, 2, "socket"), PROGRAM)
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "3", "--hostfile", str(hf.hostfile(Placement(3, 1))),
        "--map-by", "ppr:1:node:PE=2", "--bind-to", "socket",
        "--mca", "plm_rsh_agent", "/usr/bin/ssh",
        "--mca", "plm_rsh_args", "-p 2222 -o StrictHostKeyChecking=no",
        "--mca", "btl_tcp_if_include", "10.1.0.0/16",
        "--mca", "oob_tcp_if_include", "10.1.0.0/16",
        "--wdir", "/shared/scratch",
        "-x", "OMP_NUM_THREADS", "-x", "OMP_PLACES", "-x", "OMP_PROC_BIND", "-x", "UCX_TLS",
        "--tag-output", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.env["OMP_NUM_THREADS"] == "2"


def test_open_mpi_oversubscribed_node() -> None:
    hf = launcher(cores=1)
    cmd = hf.command(Placement(2, 2), PROGRAM)
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "4", "--hostfile", str(hf.hostfile(Placement(2, 2))),
        "--map-by", "ppr:2:node", "--oversubscribe", "--bind-to", "none",
        "--mca", "plm_rsh_agent", "ssh",
        "-x", "OMPI_MCA_mpi_yield_when_idle", "-x", "OMP_NUM_THREADS", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.oversubscribed and cmd.placement.binding == "none"


def test_open_mpi_hwthread_binding_and_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hpceval.launch.schedulers.base.running_as_root", lambda: True)
    cmd = launcher().command(Placement(1, 2, 1, "hwthread"), PROGRAM)
    assert cmd.argv[5:10] == ("--map-by", "ppr:2:node", "--bind-to", "hwthread",
                              "--use-hwthread-cpus")  # fmt: skip
    assert cmd.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in cmd.argv


def test_mpich_hydra_argv() -> None:
    hf = launcher(impl="MPICH", interface="ib0", workdir="/scratch")
    cmd = hf.command(Placement(2, 2), PROGRAM)
    hostfile = hf.hostfile(Placement(2, 2))
    assert list(cmd.argv) == [
        "/usr/bin/mpiexec.hydra", "-n", "4", "-f", str(hostfile), "-ppn", "2",
        "-launcher", "ssh", "-launcher-exec", "ssh", "-bind-to", "core",
        "-iface", "ib0", "-wdir", "/scratch",
        "-genv", "OMP_NUM_THREADS", "1", *PROGRAM,
    ]  # fmt: skip
    assert hostfile.read_text() == "node01:2\nnode02:2\n"
    with pytest.raises(UserError, match=r"launcher\.ssh_args: MPICH's mpiexec passes no options"):
        launcher(impl="MPICH", ssh_args=["-p", "2222"]).command(Placement(2, 1), PROGRAM)


def test_placements_the_platform_cannot_hold() -> None:
    with pytest.raises(UserError, match=r"needs 4 nodes but platform 'cluster' has 3"):
        launcher().command(Placement(4, 1), PROGRAM)
    with pytest.raises(UserError, match="oversubscribe = false"):
        launcher(cores=1, oversubscribe=False).command(Placement(1, 2), PROGRAM)
    with pytest.raises(UserError, match=r"hosts: the hostfile launcher needs the host names"):
        launcher(hosts=[]).command(Placement(1, 1), PROGRAM)


def test_hostfiles_live_as_long_as_the_session() -> None:
    hf = launcher()
    with hf.session():
        path = hf.hostfile(Placement(2, 1))
        assert path.read_text() == "node01 slots=1\nnode02 slots=1\n"
        assert hf.hostfile(Placement(2, 1)) == path
    assert not path.parent.exists()


def test_platform_file_errors_name_the_field(tmp_path: Path) -> None:
    head = 'name = "x"\nnodes = 1\nhosts = ["a"]\n[launcher]\nkind = "hostfile"\n'
    spaced = write(tmp_path / "spaced.toml", head + 'ssh_args = ["-p 2222"]\n')
    with pytest.raises(ConfigError, match=r"spaced.toml: launcher.ssh_args: '-p 2222': one opt"):
        load_platform(str(spaced))
    typo = write(tmp_path / "typo.toml", head + 'interfce = "eth0"\n')
    with pytest.raises(ConfigError, match=r"typo.toml: launcher.interfce: unknown field"):
        load_platform(str(typo))


def test_the_shipped_example_loads() -> None:
    example = load_platform("hostfile-example").config
    assert example.launcher.kind == "hostfile" and example.hosts == ["node01", "node02"]
    cmd = get_launcher_class("hostfile")(example, MpiRuntime("Open MPI", "mpirun")).command(
        Placement(2, 1), PROGRAM
    )
    assert cmd.argv[cmd.argv.index("btl_tcp_if_include") + 1] == "eth0"


# --------------------------------------------------------------------------- preflight

requires_ssh = pytest.mark.skipif(
    shutil.which("ssh") is None, reason="ssh is not installed (Debian: openssh-client)"
)


@requires_ssh
def test_unreachable_hosts_are_named_before_the_campaign() -> None:
    # .invalid never resolves (RFC 6761); 192.0.2.1 (TEST-NET-1) never answers.
    hf = launcher(hosts=["nosuch.invalid", "192.0.2.1"], connect_timeout_s=1)
    started = time.monotonic()
    with pytest.raises(UserError) as info:
        hf.preflight()
    assert time.monotonic() - started < 8  # probed in parallel, each with a short timeout
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("platform 'cluster': unreachable hosts: nosuch.invalid (")
    assert "Could not resolve hostname nosuch.invalid" in message
    assert "; 192.0.2.1 (" in message
    assert message.endswith("`ssh HOST true` must work without a password prompt")


def test_this_machine_is_not_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_probe(*args: object) -> None:
        raise AssertionError("probed")

    monkeypatch.setattr(hostfile_mod, "_ssh_probe", no_probe)
    launcher(hosts=["localhost", "127.0.0.1"]).preflight()


@requires_ssh
def test_an_unreachable_host_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from .test_cli import hpceval, one_line_error

    platform = write(
        tmp_path / "hosts.toml",
        'name = "h"\nnodes = 2\nhosts = ["localhost", "nosuch.invalid"]\n'
        '[launcher]\nkind = "hostfile"\nconnect_timeout_s = 1\n',
    )
    line = one_line_error(hpceval("run", "--platform", str(platform), cwd=tmp_path))
    assert "unreachable host: nosuch.invalid (Could not resolve hostname" in line
    assert not (tmp_path / "hpceval.db").exists()


# --------------------------------------------------------------------------- real SSH


def _sshd() -> str | None:
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd",) if os.access(p, os.X_OK)), None
    )


requires_sshd = pytest.mark.skipif(
    _sshd() is None or shutil.which("ssh-keygen") is None,
    reason="sshd is not installed (Debian: openssh-server)",
)


def in_node(namespace: str, *argv: str) -> list[str]:
    """argv run inside an emulated node, under the node's own host name (as netns-rsh does)."""
    script = 'echo "$1" > /proc/sys/kernel/hostname && shift && exec "$@"'
    return ["ip", "netns", "exec", namespace, "unshare", "--uts",
            "/bin/sh", "-c", script, "sh", namespace, *argv]  # fmt: skip


class SshCluster:
    """Two emulated nodes, each running sshd that accepts a key made for the test."""

    def __init__(self, layout: Any, keys: Path) -> None:
        self.layout = layout
        self.keys = keys
        self.daemons: list[subprocess.Popen[bytes]] = []

    def ssh_args(self, port: int = 22) -> list[str]:
        return [
            "-i", str(self.keys / "user_key"), "-p", str(port),
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip

    def start_sshd(self, node: int, port: int = 22, private_cache: bool = False) -> None:
        """sshd in `node`; with private_cache, its sessions see an empty build cache."""
        config = str(self.keys / "sshd_config")
        argv = [_sshd() or "sshd", "-D", "-e", "-f", config, "-p", str(port)]
        if private_cache:
            mount = f'mount -t tmpfs tmpfs {cache_root()} && exec "$@"'
            argv = ["unshare", "--mount", "/bin/sh", "-c", mount, "sh", *argv]
        self.daemons.append(subprocess.Popen(in_node(self.layout.namespace(node), *argv)))
        probe = ["ssh", *self.ssh_args(port), "-o", "BatchMode=yes", self.layout.address(node)]
        deadline = time.monotonic() + 10
        while subprocess.run(in_node(self.layout.namespace(0), *probe, "true")).returncode:
            assert time.monotonic() < deadline, f"sshd on node {node} port {port} did not start"
            time.sleep(0.1)

    def stop(self) -> None:
        for d in self.daemons:
            d.terminate()
        for d in self.daemons:
            with contextlib.suppress(subprocess.TimeoutExpired):
                d.wait(timeout=5)


@pytest.fixture
def ssh_cluster(tmp_path: Path) -> Iterator[SshCluster]:
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host_key", "user_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
        )
    (keys / "authorized_keys").write_text((keys / "user_key.pub").read_text())
    write(
        keys / "sshd_config",
        f"HostKey {keys / 'host_key'}\nAuthorizedKeysFile {keys / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
        "StrictModes no\nPidFile none\nLogLevel ERROR\n",
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    cache_root().mkdir(parents=True, exist_ok=True)
    platform = PlatformConfig.model_validate({"name": "c", "nodes": 2})
    netns = get_launcher_class("netns")(platform, MpiRuntime("Open MPI", "mpirun"))
    with netns.session():
        cluster = SshCluster(netns.layout, keys)
        try:
            cluster.start_sshd(0)
            cluster.start_sshd(1)
            yield cluster
        finally:
            cluster.stop()


SSH_SUITE = """
name = "ssh-pingpong"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [0, 1024]
ranks = [2]
ranks_per_node = [1]
budget_s = 0.1
warmup_s = 0.01
min_samples = 5
max_samples = 40  # the header stays within the stored stdout tail
"""


@requires_mpi
@requires_ssh
@requires_sshd
@requires_netns
def test_a_campaign_over_ssh(tmp_path: Path, ssh_cluster: SshCluster) -> None:
    layout = ssh_cluster.layout
    hosts = [layout.address(0), layout.address(1)]
    ssh_args = ssh_cluster.ssh_args()

    def platform_text(hosts: list[str], ssh_args: list[str]) -> str:
        return "\n".join([
            'name = "ssh-pair"', "nodes = 2", f"hosts = {json.dumps(hosts)}",
            "[launcher]", 'kind = "hostfile"', f"ssh_args = {json.dumps(ssh_args)}",
            f'interface = "{layout.subnet}"', "connect_timeout_s = 2", "",
        ])  # fmt: skip

    platform = write(tmp_path / "ssh.toml", platform_text(hosts, ssh_args))
    suite = write(tmp_path / "suite.toml", SSH_SUITE)
    argv = [sys.executable, "-m", "hpceval", "run", "--platform", str(platform),
            "--suite", str(suite)]  # fmt: skip
    # hpceval on node 0, like a user on a cluster's first node; node 1 is reached over SSH.
    proc = subprocess.run(
        in_node(layout.namespace(0), *argv),
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HPCEVAL_CACHE": str(cache_root())},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.launcher == "hostfile"
    ms = [sm.measurement for sm in store.measurements(run.id)]
    assert {m.parameters["size"] for m in ms if m.metric == "latency"} == {0, 1024}
    assert {m.parameters["pair"] for m in ms} == {"inter-node"}
    (execution,) = store.executions(run.id)
    assert execution.argv[execution.argv.index("plm_rsh_args") + 1] == " ".join(ssh_args)
    # Rank 1 ran on node 1, under the sshd there (the header lists each rank's host name).
    assert header(execution.stdout_tail)["hosts"] == [layout.namespace(0), layout.namespace(1)]

    # Preflight, before anything is built or written: a host that does not answer...
    def fails(platform_text: str) -> str:
        where = Path(tempfile.mkdtemp(dir=tmp_path))
        bad = write(where / "bad.toml", platform_text)
        proc = subprocess.run(
            in_node(layout.namespace(0), *argv[:5], str(bad), *argv[6:]),
            cwd=where, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert not (where / "hpceval.db").exists()
        return proc.stderr

    stopped = fails(platform_text([hosts[0], "10.213.255.254"], ssh_args))
    assert "unreachable host: 10.213.255.254 (" in stopped
    # ... and a host that does not see the build cache (its sshd has a private one).
    ssh_cluster.start_sshd(1, port=2222, private_cache=True)
    unshared = fails(platform_text([hosts[1], hosts[1]], ssh_cluster.ssh_args(2222)))
    assert f"the build cache {cache_root()} is not shared with {hosts[1]}:" in unshared
