"""`hostfile`: mpirun over SSH on the platform's hosts, with a generated hostfile.

The hostfile lists the first `nodes` hosts of the placement with `ranks_per_node` slots
each, and ranks are mapped node by node (rank r on node r // ranks_per_node, as the
benchmarks' pair cases expect). Binding and oversubscription follow the local launcher.

mpirun starts the benchmark by the path it was built at, on every host: the build cache
must be on a file system the hosts share at the same path (set HPCEVAL_CACHE to one).
`preflight()` checks, before the campaign, that every host answers `ssh HOST true` without a
password and sees the build cache, and names the hosts that do not.
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
from hpceval.launch import register
from hpceval.launch.base import (
    Command,
    Launcher,
    MpiRuntime,
    running_as_root,
    thread_environment,
)
from hpceval.launch.local import OPEN_MPI_YIELD_ENV, environment_args, mpich_args
from hpceval.model import Placement
from hpceval.toolchain import run_as_root_requirements

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


def hostfile_text(hosts: Sequence[str], slots: int, implementation: str) -> str:
    """One line per host: Open MPI's `HOST slots=N`, MPICH hydra's `HOST:N`."""
    if implementation == "Open MPI":
        return "".join(f"{h} slots={slots}\n" for h in hosts)
    return "".join(f"{h}:{slots}\n" for h in hosts)


def open_mpi_mapping(placement: Placement, oversubscribed: bool) -> tuple[list[str], Placement]:
    """Ranks node by node (ppr), bound as the local launcher binds them."""
    ppr = f"ppr:{placement.ranks_per_node}:node"
    if oversubscribed:
        return ["--map-by", ppr, "--oversubscribe", "--bind-to", "none"], replace(
            placement, binding="none"
        )
    if placement.threads_per_rank > 1 and placement.binding != "none":
        # PE=n reserves n cores per rank so each rank's threads get their own cores.
        ppr += f":PE={placement.threads_per_rank}"
    args = ["--map-by", ppr, "--bind-to", placement.binding]
    if placement.binding == "hwthread":
        args.append("--use-hwthread-cpus")
    return args, placement


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
class HostfileLauncher(Launcher):
    name = "hostfile"
    options_model = HostfileOptions

    def __init__(self, platform: PlatformConfig, runtime: MpiRuntime) -> None:
        super().__init__(platform, runtime)
        self._dir: Path | None = None
        self._cleanup: Callable[[], object] | None = None

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
        hosts = self.hosts()[: placement.nodes]
        path = self._hostfile_dir() / f"hosts-{placement.nodes}x{placement.ranks_per_node}"
        text = hostfile_text(hosts, placement.ranks_per_node, self.runtime.implementation)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        return path

    def session(self) -> contextlib.AbstractContextManager[None]:
        return self._session()

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        try:
            yield
        finally:
            if self._cleanup is not None:
                self._cleanup()
            self._dir = None

    # ----------------------------------------------------------------- command

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        self.check_placement(placement)
        options: HostfileOptions = self.options()
        hosts = self.hosts()
        if placement.nodes > len(hosts):
            raise UserError(
                f"placement {placement.label()} needs {placement.nodes} hosts but platform "
                f"{self.platform.name!r} lists {len(hosts)}"
            )
        oversubscribed = self.oversubscribed(placement)
        impl = self.runtime.implementation
        hostfile = str(self.hostfile(placement))
        rank_env = thread_environment(placement.threads_per_rank, oversubscribed=oversubscribed)
        launcher_env: dict[str, str] = {}
        argv = [self.runtime.mpirun]
        if impl == "Open MPI":
            mapping, effective = open_mpi_mapping(placement, oversubscribed)
            if running_as_root():
                launcher_env.update(run_as_root_requirements(impl).env)
            if oversubscribed:
                rank_env.update(OPEN_MPI_YIELD_ENV)
            argv += ["-np", str(placement.ranks), "--hostfile", hostfile, *mapping]
            argv += ["--mca", "plm_rsh_agent", options.ssh]
            if options.ssh_args:
                argv += ["--mca", "plm_rsh_args", " ".join(options.ssh_args)]
            if options.interface:
                argv += ["--mca", "btl_tcp_if_include", options.interface]
                argv += ["--mca", "oob_tcp_if_include", options.interface]
            if options.workdir:
                argv += ["--wdir", options.workdir]
        else:
            if options.ssh_args:
                raise UserError(
                    f"platform {self.platform.name!r}: launcher.ssh_args: {impl}'s mpiexec "
                    "passes no options to ssh; put them in ~/.ssh/config instead"
                )
            mapping, effective = mpich_args(placement, oversubscribed)
            argv += ["-n", str(placement.ranks), "-f", hostfile]
            argv += ["-ppn", str(placement.ranks_per_node)]
            argv += ["-launcher", "ssh", "-launcher-exec", options.ssh, *mapping]
            if options.interface:
                argv += ["-iface", options.interface]
            if options.workdir:
                argv += ["-wdir", options.workdir]
        rank_env.update(self.platform.launcher.env)
        argv += environment_args(impl, rank_env)
        argv += self.platform.launcher.extra_args
        argv += list(program)
        notes = (
            ("oversubscribed: binding disabled, ranks yield when idle",) if oversubscribed else ()
        )
        return Command(tuple(argv), {**launcher_env, **rank_env}, effective, oversubscribed, notes)

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
