"""MPJ Express on hostfile hosts: one MPJ daemon per host started over SSH and held by its SSH
session (hpceval.launch.schedulers.mpj_daemons.held_daemons).

The argv and the device rules are checked exactly; real campaigns run hpceval in node 0 of an
emulated cluster whose two nodes each run sshd (as test_launch_hostfile does), the node names
resolving as on a real cluster: the Java ranks run on both nodes, no daemon or JVM is left
after the campaign, nor after hpceval is killed with SIGKILL, and an unreachable host is a
one-line error before anything runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpceval.build import cache_root
from hpceval.clusters.netns import install_hosts, remove_hosts
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.launch.schedulers.mpj_daemons import HELD_DAEMON_SCRIPT, held_daemon_argv
from hpceval.model import Placement
from hpceval.mpj import STARTER_CLASS, MpjInstallation
from hpceval.store import open_store

from .conftest import write
from .mpj_helpers import (
    LONG_PINGPONG,
    PINGPONG_ENTRY,
    jvms_of,
    settled_count,
    suite,
    wait_for_jvms,
)
from .test_launch_hostfile import SshCluster, in_node, requires_ssh, requires_sshd
from .test_mpibench_java import requires_mpj
from .test_netns import requires_netns

JAR = "/cache/mpibench-java.jar"


def hostfile_mpj(device: str = "niodev", hosts: tuple[str, ...] = ("n1", "n2")) -> Any:
    platform = PlatformConfig.model_validate(
        {
            "name": "h",
            "nodes": len(hosts),
            "hosts": list(hosts),
            "launcher": {"kind": "hostfile", "starter": "mpjrun", "device": device},
        }
    )
    return get_launcher_class("hostfile")(platform, MpiRuntime("Open MPI", "mpirun"))


# --------------------------------------------------------------------------- pure parts


@requires_mpj
def test_mpjrun_runs_here_with_a_machines_file() -> None:
    command = hostfile_mpj().command(Placement(2, 1, 1, "none"), [JAR, "--pattern=pingpong"])
    argv = list(command.argv)
    assert Path(argv[0]).name == "java"
    start = argv.index(STARTER_CLASS)
    assert argv[start:] == [
        STARTER_CLASS, "-np", "2", "-dev", "niodev", "-machinesfile", "machines",
        "-jar", JAR, "--pattern=pingpong",
    ]  # fmt: skip
    home = command.env["MPJ_HOME"]
    assert all(jar.startswith(f"{home}/lib/") for jar in argv[argv.index("-cp") + 1].split(":"))


@requires_mpj
def test_multicore_is_refused_on_hosts_in_one_line() -> None:
    with pytest.raises(UserError, match=r"launcher\.device multicore: the hostfile launcher runs"):
        hostfile_mpj("multicore").command(Placement(1, 2, 1, "none"), [JAR])


def test_the_held_daemon_gets_its_values_as_parameters() -> None:
    mpj = MpjInstallation(Path("/c a/mpj"), "0.44", "/usr/bin/java")
    # The script is fixed; paths with spaces travel as its positional parameters.
    assert held_daemon_argv(mpj, 40055) == [
        "/bin/sh", "-c", HELD_DAEMON_SCRIPT, "sh", "/c a/mpj", "/usr/bin/java", "40055",
    ]  # fmt: skip


# --------------------------------------------------------------------------- real SSH


@pytest.fixture
def named_ssh_cluster(tmp_path: Path) -> Iterator[SshCluster]:
    """Two emulated nodes running sshd, whose names resolve in every node (MPJ looks its
    host name up), as on a real cluster."""
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
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    cache_root().mkdir(parents=True, exist_ok=True)
    platform = PlatformConfig.model_validate({"name": "c", "nodes": 2})
    netns = get_launcher_class("netns")(platform, MpiRuntime("Open MPI", "mpirun"))
    with netns.session():
        layout = netns.layout
        install_hosts(layout)  # before sshd starts: `ip netns exec` mounts it then
        cluster = SshCluster(layout, keys)
        try:
            cluster.start_sshd(0)
            cluster.start_sshd(1)
            yield cluster
        finally:
            cluster.stop()
            remove_hosts([layout.namespace(n) for n in range(2)])


def platform_text(cluster: SshCluster, hosts: list[str], device: str = "niodev") -> str:
    return "\n".join([
        'name = "ssh-mpj"', f"nodes = {len(hosts)}", f"hosts = {json.dumps(hosts)}",
        "[launcher]", 'kind = "hostfile"', 'starter = "mpjrun"', f"device = {device!r}",
        f"ssh_args = {json.dumps(cluster.ssh_args())}", "connect_timeout_s = 2", "",
    ])  # fmt: skip


PINGPONG = suite("mpj-ssh", PINGPONG_ENTRY)


def java_header(stdout: str) -> dict[str, Any]:
    """The program's header record (MPJ prints its own banner lines before it)."""
    first = next(ln for ln in stdout.splitlines() if ln.startswith("{"))
    record = json.loads(first)
    assert record["record"] == "header"
    return dict(record)


def hpceval_in_node0(cluster: SshCluster, cwd: Path, *args: str) -> list[str]:
    argv = [sys.executable, "-m", "hpceval", "run", *args]
    return in_node(cluster.layout.namespace(0), *argv)


@requires_ssh
@requires_sshd
@requires_netns
@requires_mpj
@pytest.mark.parametrize("device", ["niodev", "hybdev"])
def test_java_ranks_on_two_hosts_over_ssh(
    tmp_path: Path, named_ssh_cluster: SshCluster, device: str
) -> None:
    """niodev (a JVM per rank) and hybdev (a JVM per host, niodev between hosts) really run
    across the two hosts, each rank on its own host."""
    cluster = named_ssh_cluster
    names = [cluster.layout.namespace(0), cluster.layout.namespace(1)]
    platform = write(tmp_path / "ssh.toml", platform_text(cluster, names, device))
    suite = write(tmp_path / "suite.toml", PINGPONG)
    cache = tmp_path / "cache"  # the JVMs' class paths name it: they can be told apart
    env = {**os.environ, "HPCEVAL_CACHE": str(cache)}
    homes_before = set(Path("/tmp").glob("hpceval-mpj-*/.mpj_users"))
    proc = subprocess.run(
        hpceval_in_node0(cluster, tmp_path, "-p", str(platform), "-s", str(suite)),
        cwd=tmp_path, capture_output=True, text=True, timeout=400, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.launcher == "hostfile"
    ms = [sm.measurement for sm in store.measurements(run.id)]
    assert {m.parameters["size"] for m in ms if m.metric == "latency"} == {0, 1024}
    assert {m.parameters["pair"] for m in ms} == {"inter-node"}
    assert {m.details["mpj_device"] for m in ms} == {device}
    (execution,) = store.executions(run.id)
    # Rank 1 ran on node 1, started by the daemon there (each rank's host name in the header).
    assert java_header(execution.stdout_tail)["hosts"] == names
    # Nothing of the campaign is left: no daemon, no rank JVM, no daemon home on the hosts.
    assert jvms_of(str(cache)) == []
    assert set(Path("/tmp").glob("hpceval-mpj-*/.mpj_users")) <= homes_before  # homes removed


@requires_ssh
@requires_sshd
@requires_netns
@requires_mpj
def test_sigkill_leaves_no_daemon_on_the_hosts(
    tmp_path: Path, named_ssh_cluster: SshCluster
) -> None:
    cluster = named_ssh_cluster
    names = [cluster.layout.namespace(0), cluster.layout.namespace(1)]
    platform = write(tmp_path / "ssh.toml", platform_text(cluster, names))
    suite = write(tmp_path / "suite.toml", LONG_PINGPONG)
    cache = tmp_path / "cache"  # the JVMs' class paths name it: they can be told apart
    env = {**os.environ, "HPCEVAL_CACHE": str(cache)}
    dirs_before = set(Path("/tmp").glob("hpceval-mpj-*"))
    proc = subprocess.Popen(
        hpceval_in_node0(cluster, tmp_path, "-p", str(platform), "-s", str(suite)),
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # 2 daemons (one per host, started over SSH), MPJRun and the 2 ranks' JVMs.
        wait_for_jvms(proc, cache, 5, timeout_s=300)
        assert settled_count("daemon.jar", cache, 2) == 2
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30

        def left() -> list[Any]:
            # The hosts' daemon homes, and this side's directory of machines files and logs
            # (its reapers remove it: hpceval could not).
            homes = set(Path("/tmp").glob("hpceval-mpj-*")) - dirs_before
            return [*jvms_of(str(cache)), *homes]

        while left() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left() == []  # no daemon, no rank JVM, and the hosts' daemon homes removed
    finally:
        if proc.poll() is None:
            proc.kill()


@requires_ssh
@requires_sshd
@requires_netns
@requires_mpj
def test_an_unreachable_host_is_one_line(tmp_path: Path, named_ssh_cluster: SshCluster) -> None:
    cluster = named_ssh_cluster
    hosts = [cluster.layout.namespace(0), "10.213.255.254"]
    platform = write(tmp_path / "ssh.toml", platform_text(cluster, hosts))
    suite = write(tmp_path / "suite.toml", PINGPONG)
    proc = subprocess.run(
        hpceval_in_node0(cluster, tmp_path, "-p", str(platform), "-s", str(suite)),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unreachable host: 10.213.255.254 (" in lines[0]
    assert not (tmp_path / "hpceval.db").exists()
