"""A real one-node Slurm cluster on this machine, for the slurm launcher's tests.

The session fixture `slurm_cluster` starts, as root, Debian's `munged` (with a key generated
in a temporary directory), `slurmctld` and `slurmd` with a generated slurm.conf (this
machine's CPUs and memory as node `localhost`, one partition `debug`, free ports, state and
spool directories in the temporary directory, no cgroups: proctrack/linuxproc with
task/affinity binding, which works in a container), waits until `sinfo` shows the node idle,
and afterwards cancels what is left in the queue and stops the three daemons, also when the
tests failed. Client commands find the cluster through `SLURM_CONF` (see `SlurmCluster.env`).

Use it in a test module with `from .slurm_cluster import slurm_cluster  # noqa: F401`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpceval.clusters.slurm_netns import daemon_settings

PARTITION = "debug"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "scancel", "sinfo", "squeue")


@dataclass(frozen=True)
class SlurmCluster:
    directory: Path
    conf: Path
    partition: str

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with SLURM_CONF pointing at the cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def queue(self) -> list[str]:
        """Ids of the jobs slurmctld still has pending, running or completing."""
        return self.run("squeue", "--noheader", "--format=%i").stdout.split()

    def copy_config(self, path: Path, changes: Mapping[str, str]) -> Path:
        """A copy of slurm.conf with some `Key=value` lines changed."""
        text = self.conf.read_text()
        for key, value in changes.items():
            text, n = re.subn(rf"^{key}=.*$", f"{key}={value}", text, flags=re.M)
            if not n:
                text += f"{key}={value}\n"
        path.write_text(text)
        return path


def why_not_here() -> str | None:
    """The reason the daemons cannot run on this machine, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd needs root"
    missing = [p for p in DAEMONS if not os.path.exists(p)]
    missing += [c for c in CLIENTS if shutil.which(c) is None]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} missing; "
            "./setup.sh installs slurmctld slurmd slurm-client munge)"
        )
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _node_line() -> str:
    """This machine's hardware as `slurmd -C` sees it, as node `localhost`."""
    out = subprocess.run(
        ["/usr/sbin/slurmd", "-C"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("NodeName="))
    fields = line.split()[1:]  # drop this host's name
    return " ".join(["NodeName=localhost", "NodeAddr=127.0.0.1", *fields, "State=UNKNOWN"])


def slurm_conf(d: Path, ctld_port: int, node_port: int, node_line: str) -> str:
    settings = daemon_settings(
        d, cluster="hpceval-test", controller="localhost(127.0.0.1)", ctld_port=ctld_port,
        slurmd_port=node_port, task_plugin="task/affinity", min_job_age_s=5,
    )  # fmt: skip
    return f"""\
{settings}{node_line}
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def running_cluster() -> Iterator[SlurmCluster]:
    """Start the daemons; on leaving, empty the queue and stop them (whatever happened)."""
    d = Path(tempfile.mkdtemp(prefix="hpceval-slurm-", dir="/tmp"))  # short: socket paths
    d.chmod(0o755)  # munged wants its socket's directory searchable by all
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    cluster = SlurmCluster(d, d / "slurm.conf", PARTITION)

    def start(name: str, argv: list[str]) -> None:
        with (d / f"{name}.out").open("wb") as out:
            procs[name] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=cluster.env, start_new_session=True,
            )  # fmt: skip

    def died() -> str | None:
        for name, proc in procs.items():
            if proc.poll() is not None:
                log = d / f"{name}.log"
                return f"{name} exited with {proc.returncode}:\n{_tail(d / f'{name}.out')}\n" + (
                    _tail(log) if log.exists() else ""
                )
        return None

    try:
        key = d / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        start(
            "munged",
            [
                "/usr/sbin/munged", "--foreground", "--force",
                f"--socket={d}/munge.socket", f"--key-file={key}",
                f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
                f"--seed-file={d}/munged.seed",
            ],
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (d / "munge.socket").exists():
            if (why := died()) or time.monotonic() > deadline:
                pytest.fail(f"munged did not start: {why or 'no socket'}")
            time.sleep(0.05)
        ctld_port = _free_port()
        node_port = _free_port()
        while node_port == ctld_port:
            node_port = _free_port()
        cluster.conf.write_text(slurm_conf(d, ctld_port, node_port, _node_line()))
        start("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(cluster.conf)])
        start("slurmd", ["/usr/sbin/slurmd", "-D", "-N", "localhost", "-f", str(cluster.conf)])
        while True:
            if why := died():
                pytest.fail(f"the Slurm test cluster did not start: {why}")
            state = cluster.run("sinfo", "--noheader", "--Node", "--format=%t", timeout=30)
            if state.stdout.strip() == "idle":
                break
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the Slurm node is not idle after {START_TIMEOUT_S:g} s "
                    f"(sinfo: {state.stdout.strip() or state.stderr.strip()}):\n"
                    f"{_tail(d / 'slurmctld.log')}\n{_tail(d / 'slurmd.log')}"
                )
            time.sleep(0.2)
        yield cluster
    finally:
        if procs.get("slurmctld") and procs["slurmctld"].poll() is None:
            jobs = cluster.queue()
            if jobs:
                cluster.run("scancel", *jobs)
                until = time.monotonic() + STOP_TIMEOUT_S
                while cluster.queue() and time.monotonic() < until:
                    time.sleep(0.2)
        for name in ("slurmd", "slurmctld", "munged"):
            if name in procs:
                _stop(procs[name])
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    with running_cluster() as cluster:
        yield cluster
