"""podman, as hpceval starts it: `podman run` argv prefixes for the two layouts, the flags
that let it start where resource limits cannot be raised, local builds of a Containerfile,
and what a run records of it.

What makes `podman run` work on a host like this one (root in a container of a VM, cgroup v1
with a v2 `unified` hierarchy beside it), found by trying (docs/containers.md):

- rlimits: podman 4.3 writes RLIMIT_NOFILE 1048576 and RLIMIT_NPROC 32768 into the OCI spec
  and crun cannot raise them past the hard limits it inherits (`setrlimit RLIMIT_NPROC:
  Operation not permitted`); `--ulimit host` passes podman's own (raised) limits and fails
  the same way. Explicit `--ulimit nofile=H:H --ulimit nproc=P:P` with H the hard limit of
  this process and P at most 32768 (the RLIMIT_NPROC podman starts conmon with, measured
  here) start.
- `--rootfs /:O`: the host's own file system as an overlay (writes stay in the container);
  plain `--rootfs /` fails in crun's pivot_root (the root is busy).
- `--network host --ipc host`: the host's interfaces and /dev/shm, as MPI between ranks in
  different containers needs (TCP addresses, shared-memory segments); `--pid host` for the
  ranks-in-containers layout (CMA single copy reads the peer's memory by its pid).
- podman flags come before `--rootfs`: everything after the root file system is the command.
"""

from __future__ import annotations

import hashlib
import resource
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from hpceval.config import Argument, StrictModel
from hpceval.errors import ToolMissing, UserError
from hpceval.execute import last_line

# The RLIMIT_NPROC podman 4.3 gives conmon, which crun inherits and cannot raise.
NPROC_CEILING = 32768
COMMAND_TIMEOUT_S = 120.0
BUILD_TIMEOUT_S = 900.0
# Where the job's programs and Open MPI's session directory live: bound into the container at
# the same path (an image does not hold hpceval's builds; ranks find their daemon's sockets).
ALWAYS_BOUND = ("/tmp",)
HYBRID_CGROUP_HINT = (
    "crun refuses hybrid cgroups whose v2 hierarchy holds a controller; see docs/containers.md "
    "(bind that controller to a v1 hierarchy, e.g. mount -t cgroup -o hugetlb none DIR)"
)


class ContainerOptions(StrictModel):
    """The container launcher's keys in the platform's [launcher] table."""

    runtime: Literal["podman"] = "podman"
    podman: Argument = "podman"
    # Exactly one root: the host's file system ("/": the runtime alone is measured), a local
    # image, or a Containerfile built locally (its FROM must be a local image: no pull).
    rootfs: Argument | None = None
    image: Argument | None = None
    containerfile: Argument | None = None
    # mpi-inside: mpirun and its ranks in one container; ranks-inside: the host's mpirun
    # starts one container per rank.
    layout: Literal["mpi-inside", "ranks-inside"] = "mpi-inside"
    network: Literal["host", "private"] = "host"
    ipc: Literal["host", "private"] = "host"
    # Host directories mounted at the same path (fio's directory, input data).
    binds: list[Argument] = Field(default_factory=list)
    # Resource limits of the container (None: none), recorded with the run.
    cpus: float | None = None
    memory: Argument | None = None
    pids_limit: int | None = None

    @model_validator(mode="after")
    def _one_root(self) -> ContainerOptions:
        given = [k for k in ("rootfs", "image", "containerfile") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                'rootfs: give exactly one of rootfs ("/": the host\'s file system), image '
                f"or containerfile (given: {', '.join(given) or 'none'})"
            )
        for bind in self.binds:
            if not bind.startswith("/") or ":" in bind:
                raise ValueError(f"binds: {bind!r} is not an absolute path without ':'")
        if self.rootfs is not None and (not self.rootfs.startswith("/") or ":" in self.rootfs):
            raise ValueError(f"rootfs: {self.rootfs!r} is not an absolute path without ':'")
        return self


def ulimit_flags() -> list[str]:
    """--ulimit flags crun can apply: this process's hard limits, nproc at most 32768."""
    _, nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    _, nproc = resource.getrlimit(resource.RLIMIT_NPROC)
    if nproc == resource.RLIM_INFINITY or nproc > NPROC_CEILING:
        nproc = NPROC_CEILING
    if nofile == resource.RLIM_INFINITY:
        nofile = 1048576
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def image_reference(options: ContainerOptions) -> str | None:
    """The image a containerfile is built as (named by the file's hash), or the given one."""
    if options.containerfile is not None:
        digest = hashlib.sha256(Path(options.containerfile).read_bytes()).hexdigest()[:16]
        return f"localhost/hpceval-containerfile:{digest}"
    return options.image


def run_prefix(
    options: ContainerOptions, *, binds: Sequence[str] = (), rank: bool = False
) -> list[str]:
    """`podman run … ROOT` with everything but the command: the command follows."""
    argv = [options.podman, "run", "--rm", "--log-driver", "none", *ulimit_flags()]
    # The environment podman is started with goes in: the launcher's (OMP_NUM_THREADS,
    # the platform's env, the transport probe's verbosity) and, for a rank in its own
    # container, the one its daemon sets (OMPI_*, PMIX_*).
    argv += ["--network", options.network, "--ipc", options.ipc, "--env-host"]
    if rank:
        # The other ranks' pids must be visible: CMA single copy reads their memory by pid.
        argv += ["--pid", "host"]
    if options.cpus is not None:
        argv += ["--cpus", f"{options.cpus:g}"]
    if options.memory is not None:
        argv += ["--memory", options.memory]
    if options.pids_limit is not None:
        argv += ["--pids-limit", str(options.pids_limit)]
    for path in dict.fromkeys([*ALWAYS_BOUND, *options.binds, *binds]):
        argv += ["--volume", f"{path}:{path}"]
    if options.rootfs is not None:
        return [*argv, "--rootfs", f"{options.rootfs}:O"]
    return [*argv, "--pull", "never", str(image_reference(options))]


def _run(
    argv: Sequence[str], timeout: float = COMMAND_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise ToolMissing(f"{argv[0]} not found: install podman (Debian: podman)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{argv[0]} {argv[1]} did not finish within {timeout:g} s") from None


def build_image(options: ContainerOptions) -> None:
    """Build the Containerfile (once per content) without pulling anything."""
    if options.containerfile is None:
        return
    path = Path(options.containerfile)
    if not path.is_file():
        raise UserError(f"launcher.containerfile: {path}: no such file")
    tag = str(image_reference(options))
    if _run([options.podman, "image", "exists", tag]).returncode == 0:
        return
    argv = [options.podman, "build", "--pull=never", "--file", str(path), "--tag", tag]
    proc = _run([*argv, "--", str(path.parent)], BUILD_TIMEOUT_S)
    if proc.returncode != 0:
        cause = last_line(proc.stderr) or f"exit status {proc.returncode}"
        raise UserError(f"launcher.containerfile: podman build failed: {cause}")


def check_runtime(options: ContainerOptions) -> None:
    """A container starts with these options, or a UserError says why and what to do."""
    if shutil.which(options.podman) is None:
        raise ToolMissing(f"{options.podman} not found: install podman (Debian: podman)")
    build_image(options)
    image = image_reference(options)
    if image is not None:
        # An image need not hold `true`: that it is here (never pulled) is what is checked.
        if _run([options.podman, "image", "exists", image]).returncode != 0:
            raise UserError(f"launcher.image: {image} is not a local image (nothing is pulled)")
        return
    proc = _run([*run_prefix(options), "true"])
    if proc.returncode != 0:
        cause = last_line(proc.stderr) or f"exit status {proc.returncode}"
        hint = f" ({HYBRID_CGROUP_HINT})" if "hybrid mode" in cause else ""
        raise UserError(f"podman cannot start a container here: {cause}{hint}")


def _output(argv: Sequence[str]) -> str | None:
    try:
        proc = _run(argv)
    except (ToolMissing, UserError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def container_facts(options: ContainerOptions) -> dict[str, Any]:
    """What a containerized run records: runtime and version, the root (image digest),
    cgroup version, manager and limits, network and IPC mode, layout."""
    info = _output(
        [
            options.podman,
            "info",
            "--format",
            "{{.Host.CgroupsVersion}}|{{.Host.CgroupManager}}|{{.Host.OCIRuntime.Name}}"
            "|{{.Host.OCIRuntime.Version}}",
        ]
    )
    cgroups, manager, oci, oci_version = info.split("|", 3) if info else [None] * 4
    image = image_reference(options)
    digest = None
    if image is not None:
        digest = _output([options.podman, "image", "inspect", "--format", "{{.Id}}", image])
    version = _output([options.podman, "--version"])
    return {
        "runtime": options.runtime,
        "version": version,
        "oci_runtime": oci,
        "oci_runtime_version": (oci_version or "").splitlines()[0] if oci_version else None,
        "root": f"rootfs {options.rootfs} (overlay)" if options.rootfs else image,
        "containerfile": options.containerfile,
        "image_id": digest,
        "layout": options.layout,
        "network": options.network,
        "ipc": options.ipc,
        "cgroups": cgroups,
        "cgroup_manager": manager,
        "limits": {
            "cpus": options.cpus,
            "memory": options.memory,
            "pids": options.pids_limit,
            "ulimits": ulimit_flags()[1::2],
        },
        "binds": list(dict.fromkeys([*ALWAYS_BOUND, *options.binds])),
    }
