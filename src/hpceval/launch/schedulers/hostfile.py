"""`hostfile`: mpirun over SSH on the platform's hosts, with a generated hostfile.

The hostfile lists the first `nodes` hosts of the placement with `ranks_per_node` slots
each (in the starter's syntax), and ranks are mapped node by node (rank r on node
r // ranks_per_node, as the benchmarks' pair cases expect). The starter (Open MPI's mpirun or
MPICH's mpiexec) starts its daemons on the hosts through `ssh`.

mpirun starts the benchmark by the path it was built at, on every host: the build cache
must be on a file system the hosts share at the same path (set HPCEVAL_CACHE to one).
`preflight()` checks, before the campaign, that every host answers `ssh HOST true` without a
password and sees the build cache, and names the hosts that do not.

With `starter = "mpjrun"` (Java programs on MPJ Express, device niodev or hybdev) the session
starts one MPJ daemon on every host over the same ssh (hpceval.launch.schedulers.mpj_daemons:
held by its SSH session, ended when the session closes or hpceval dies), MPJRun runs here,
and a machines file places the ranks node by node. MPJ Express's copy (MPJ_HOME) is in the
build cache, which the hosts share; java must be at the same path on every host.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from pydantic import Field, field_validator

from hpceval.build import cache_root
from hpceval.config import Argument, PlatformConfig, StrictModel
from hpceval.errors import UserError
from hpceval.execute import last_line
from hpceval.launch.command import MpiRuntime
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.base import Scheduler, write_if_changed
from hpceval.launch.schedulers.mpj import check_daemon_device, mpj_request
from hpceval.launch.schedulers.mpj_daemons import held_daemons
from hpceval.launch.starters.base import Nodes, RemoteShell, StartRequest
from hpceval.launch.starters.mpjrun import machines_file
from hpceval.model import Placement
from hpceval.mpj import DEFAULT_DAEMON_PORT, MPJ_STARTER, installation

MAX_PARALLEL_PROBES = 32
PROBE_GRACE_S = 5  # beyond ConnectTimeout: login and `true` on the host


class HostfileOptions(StrictModel):
    """The hostfile launcher's keys in the platform's [launcher] table."""

    ssh: Argument = "ssh"  # the remote shell mpirun starts its daemons with
    ssh_args: list[str] = Field(default_factory=list)  # options of that remote shell
    interface: Argument | None = None  # MPI TCP traffic only here: "eth0" or "10.0.0.0/24"
    workdir: Argument | None = None  # working directory of the ranks on the hosts
    connect_timeout_s: int = Field(5, ge=1, le=300)
    check_shared_cache: bool = True

    @field_validator("ssh_args")
    @classmethod
    def _no_spaces(cls, v: list[str]) -> list[str]:
        for arg in v:
            if not arg or any(c.isspace() for c in arg):
                raise ValueError(
                    f"{arg!r}: one option per item, without spaces (mpirun splits them on spaces)"
                )
        return v


def _this_machine() -> set[str]:
    name = socket.gethostname()
    return {"localhost", "127.0.0.1", "::1", name, name.split(".")[0], socket.getfqdn()}


def _ssh_probe(argv: Sequence[str], timeout: float) -> str | None:
    """None if the command succeeded on the host, else why not (one line)."""
    try:
        proc = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        return f"{argv[0]} not found"
    except subprocess.TimeoutExpired:
        return f"no answer within {timeout:g} s"
    if proc.returncode == 0:
        return None
    cause = last_line(proc.stderr).removeprefix("ssh: ")
    return cause or f"exit status {proc.returncode}"


def _probe_all(
    hosts: Sequence[str], argv_for: dict[str, list[str]], timeout: float
) -> dict[str, str]:
    """Run one probe per host in parallel; {host: why it failed}."""
    if not hosts:
        return {}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_PROBES, len(hosts))) as pool:
        results = pool.map(lambda h: (h, _ssh_probe(argv_for[h], timeout)), hosts)
        return {h: why for h, why in results if why is not None}


@register
class HostfileScheduler(Scheduler):
    name = "hostfile"
    options_model = HostfileOptions

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        super().__init__(platform, runtime)
        self._dir: Path | None = None
        self._cleanup: Callable[[], object] | None = None
        self.mpj_workdir: Path | None = None  # the MPJ daemons' directory (starter mpjrun)

    @property
    def runs_mpj(self) -> bool:
        return self.starter.name == MPJ_STARTER

    def _check_mpj_device(self) -> None:
        check_daemon_device(self.starter_options().device, "the hostfile launcher")

    # ----------------------------------------------------------------- hosts and hostfiles

    def hosts(self) -> list[str]:
        if not self.platform.hosts:
            raise UserError(
                f"platform {self.platform.name!r}: hosts: the hostfile launcher needs the "
                'host names (hosts = ["node01", "node02", ...])'
            )
        return list(self.platform.hosts)

    def _hostfile_dir(self) -> Path:
        if self._dir is None or not self._dir.is_dir():
            self._dir = Path(tempfile.mkdtemp(prefix="hpceval-hosts-"))
            # Removed when the session ends, or with the launcher at the latest.
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, True)
        return self._dir

    def hostfile(self, placement: Placement) -> Path:
        """The hostfile of a placement (written once, reused by every command using it)."""
        path = self.hostfile_path(placement)
        text = self.starter.hostfile_text(self.hosts()[: placement.nodes], placement.ranks_per_node)
        write_if_changed(path, text)
        return path

    def hostfile_path(self, placement: Placement) -> Path:
        return self._hostfile_dir() / f"hosts-{placement.nodes}x{placement.ranks_per_node}"

    def session(self) -> contextlib.AbstractContextManager[None]:
        return self._hosts_session()

    @contextlib.contextmanager
    def _hosts_session(self) -> Iterator[None]:
        with self._session():
            if not self.runs_mpj:
                yield
                return
            self._check_mpj_device()
            here = _this_machine()

            def remote_shell(host: str) -> list[str] | None:
                return None if host in here else self.ssh_argv(host)

            daemons = held_daemons(self.hosts(), remote_shell, installation(), DEFAULT_DAEMON_PORT)
            with daemons as workdir:
                self.mpj_workdir = workdir
                try:
                    yield
                finally:
                    self.mpj_workdir = None

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()
        self._dir = None

    # ----------------------------------------------------------------- command

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        options: HostfileOptions = self.options()
        hosts = self.hosts()
        if placement.nodes > len(hosts):
            raise UserError(
                f"placement {placement.label()} needs {placement.nodes} hosts but platform "
                f"{self.platform.name!r} lists {len(hosts)}"
            )
        if self.runs_mpj:
            self._check_mpj_device()
            chosen = tuple(hosts[: placement.nodes])
            machines = Path("machines")  # outside a session (the placement check): not read
            if self.mpj_workdir is not None:
                machines = self.mpj_workdir / f"machines-{placement.label()}"
                device = self.starter_options().device
                write_if_changed(machines, machines_file(chosen, placement, device))
            request = super().start_request(placement, program)
            return mpj_request(request, Nodes(hosts=chosen, hostfile=str(machines)))
        return replace(
            super().start_request(placement, program),
            nodes=Nodes(
                hosts=tuple(hosts[: placement.nodes]),
                hostfile=str(self.hostfile_path(placement)),
            ),
            remote_shell=RemoteShell(options.ssh, tuple(options.ssh_args)),
            interface=options.interface,
            workdir=options.workdir,
        )

    # ----------------------------------------------------------------- preflight

    def ssh_argv(self, host: str, *remote: str) -> list[str]:
        """How preflight runs a command on a host: never a password prompt, a short timeout."""
        options: HostfileOptions = self.options()
        return [
            options.ssh, *options.ssh_args,
            "-o", "BatchMode=yes", "-o", f"ConnectTimeout={options.connect_timeout_s}",
            "--", host, *remote,
        ]  # fmt: skip

    def preflight(self) -> None:
        """Every host reachable over ssh and sharing the build cache, or a UserError naming
        the hosts that are not."""
        options: HostfileOptions = self.options()
        if self.runs_mpj:
            self._check_mpj_device()
            installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed
        here = _this_machine()
        remote = [h for h in self.hosts() if h not in here]
        timeout = options.connect_timeout_s + PROBE_GRACE_S
        failed = _probe_all(remote, {h: self.ssh_argv(h, "true") for h in remote}, timeout)
        if failed:
            listed = "; ".join(f"{h} ({why})" for h, why in failed.items())
            raise UserError(
                f"platform {self.platform.name!r}: unreachable host"
                f"{'s' if len(failed) > 1 else ''}: {listed}; `{options.ssh} HOST true` must "
                "work without a password prompt"
            )
        if options.check_shared_cache and remote:
            self._check_shared_cache(remote, timeout)

    def _check_shared_cache(self, hosts: Sequence[str], timeout: float) -> None:
        """A marker written into the build cache here must be visible at the same path there."""
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        marker = root / f".shared-check-{uuid.uuid4().hex}"
        marker.write_text(f"written by hpceval on {socket.gethostname()} (pid {os.getpid()})\n")
        try:
            # ssh gives the remote shell one command line: quote the path for it.
            probe = ["test", "-f", shlex.quote(str(marker))]
            failed = _probe_all(hosts, {h: self.ssh_argv(h, *probe) for h in hosts}, timeout)
        finally:
            marker.unlink(missing_ok=True)
        if failed:
            raise UserError(
                f"platform {self.platform.name!r}: the build cache {root} is not shared with "
                f"{', '.join(failed)}: the benchmark programs are built there and started by "
                "that path on every host; set HPCEVAL_CACHE to a directory on a file system "
                "all hosts share at the same path"
            )
