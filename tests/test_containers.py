"""Container platforms: the exact podman argv of both layouts, option errors, and real
containers (podman-local: mpirun inside; podman-ranks: one container per rank; a
Containerfile built locally) where podman can start one here."""

from __future__ import annotations

import atexit
import contextlib
import os
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from hpceval.campaign import load_platform
from hpceval.campaign.prepare import toolchain_and_launcher
from hpceval.config import PlatformConfig
from hpceval.containers import (
    NPROC_CEILING,
    ContainerOptions,
    check_runtime,
    image_reference,
    run_prefix,
    ulimit_flags,
)
from hpceval.errors import UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.model import Placement
from hpceval.transport import probe_transports


def launcher_of(**options: object) -> object:
    platform = PlatformConfig.model_validate(
        {"name": "c", "launcher": {"kind": "container", **options}}
    )
    return get_launcher_class("container")(platform, MpiRuntime("Open MPI", "/usr/bin/mpirun"))


def limits() -> list[str]:
    _, nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    _, nproc = resource.getrlimit(resource.RLIMIT_NPROC)
    nproc = NPROC_CEILING if nproc == resource.RLIM_INFINITY else min(nproc, NPROC_CEILING)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def test_ulimits_stay_within_what_crun_can_set() -> None:
    assert ulimit_flags() == limits()


def test_mpi_inside_wraps_the_whole_mpirun_argv() -> None:
    launcher = launcher_of(rootfs="/", binds=["/data"])
    command = launcher.command(Placement(1, 2, 1, "core"), ["/cache/build/x/prog", "--n", "3"])  # type: ignore[attr-defined]
    podman = ["podman", "run", "--rm", "--log-driver", "none", *limits()]
    podman += ["--network", "host", "--ipc", "host", "--env-host"]
    podman += ["--volume", "/tmp:/tmp", "--volume", "/data:/data"]
    podman += ["--volume", "/cache/build/x:/cache/build/x", "--rootfs", "/:O"]
    assert list(command.argv[: len(podman)]) == podman
    mpirun = list(command.argv[len(podman) :])
    assert mpirun[0] == "/usr/bin/mpirun" and mpirun[-3:] == ["/cache/build/x/prog", "--n", "3"]


def test_ranks_inside_puts_podman_under_mpirun() -> None:
    launcher = launcher_of(image="localhost/site:1", layout="ranks-inside", cpus=1.5)
    command = launcher.command(Placement(1, 2, 1, "core"), ["/b/prog"])  # type: ignore[attr-defined]
    argv = list(command.argv)
    assert argv[0] == "/usr/bin/mpirun"
    start = argv.index("podman")
    assert argv[start - 1] == "--"
    assert argv[start:] == [
        "podman",
        "run",
        "--rm",
        "--log-driver",
        "none",
        *limits(),
        "--network",
        "host",
        "--ipc",
        "host",
        "--env-host",
        "--pid",
        "host",
        "--cpus",
        "1.5",
        "--volume",
        "/tmp:/tmp",
        "--volume",
        "/b:/b",
        "--pull",
        "never",
        "localhost/site:1",
        "/b/prog",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "exactly one of rootfs"),
        ({"rootfs": "/", "image": "x"}, "given: rootfs, image"),
        ({"rootfs": "relative"}, "not an absolute path"),
        ({"rootfs": "/", "binds": ["/a:/b"]}, "binds"),
        ({"rootfs": "/", "layout": "sideways"}, "layout"),
        ({"rootfs": "/", "runtime": "docker"}, "runtime"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, object], message: str) -> None:
    with pytest.raises((ValidationError, ValueError), match=message):
        ContainerOptions.model_validate(options)


def _podman_unusable() -> str | None:
    if shutil.which("podman") is None:
        return "podman not installed (Debian: podman)"
    try:
        check_runtime(ContainerOptions(rootfs="/"))
    except UserError as e:
        return str(e)
    return None


def _bind_hugetlb_to_v1() -> bool:
    """crun refuses this machine's hybrid cgroups while the v2 hierarchy holds `hugetlb`
    (docs/containers.md). As root, the tests bind that controller to a v1 hierarchy of their
    own for the session, as a site would once, and undo it when the session ends."""
    if os.geteuid() != 0:
        return False
    mountpoint = tempfile.mkdtemp(prefix="hpceval-test-hugetlb-")
    mounted = subprocess.run(
        ["mount", "-t", "cgroup", "-o", "hugetlb", "hpceval-test-hugetlb", mountpoint],
        capture_output=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        os.rmdir(mountpoint)
        return False

    def undo() -> None:
        # lazy: a container's cgroup may still be going away when the session ends
        subprocess.run(["umount", "-l", mountpoint], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            os.rmdir(mountpoint)

    atexit.register(undo)
    return True


_UNUSABLE = _podman_unusable()
if _UNUSABLE is not None and "hybrid" in _UNUSABLE and _bind_hugetlb_to_v1():
    _UNUSABLE = _podman_unusable()
requires_podman = pytest.mark.skipif(_UNUSABLE is not None, reason=_UNUSABLE or "")
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")


@requires_podman
@needs_mpirun
@pytest.mark.parametrize("platform", ["podman-local", "podman-ranks"])
def test_transport_probe_runs_in_containers(platform: str) -> None:
    config = load_platform(platform).config
    toolchain, launcher = toolchain_and_launcher(config)
    launcher.preflight()
    with launcher.session():
        facts = probe_transports(launcher, toolchain, config)
        runtime = launcher.provenance()
    assert facts["intra-node"]["kind"] == "shared-memory", facts
    assert facts["intra-node"]["components"] == ["vader"]
    assert runtime is not None
    assert runtime["version"].startswith("podman version")
    assert runtime["root"] == "rootfs / (overlay)" and runtime["network"] == "host"
    assert runtime["layout"] == config.launcher.options()["layout"]


@requires_podman
@needs_mpirun
def test_a_run_on_the_container_platform_records_the_runtime(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hpceval.cli import app
    from hpceval.store import open_store

    db = str(tmp_path / "c.db")
    result = CliRunner().invoke(app, ["run", "-p", "podman-local", "-s", "smoke", "--db", db])
    assert result.exit_code == 0, result.output
    with open_store(db, create=False) as store:
        facts = store.environment(store.latest_run().environment_id)  # type: ignore[union-attr]
    assert facts["container_runtime"]["oci_runtime"] in ("crun", "runc")
    assert facts["transport"]["intra-node"]["kind"] == "shared-memory"


@requires_podman
def test_a_containerfile_is_built_locally_and_run(tmp_path: Path) -> None:
    source = tmp_path / "hello.c"
    source.write_text('#include <stdio.h>\nint main(void){puts("hello from the image");}\n')
    built = subprocess.run(
        ["gcc", "-static", "-O2", "-o", str(tmp_path / "hello"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        pytest.skip(f"no static C library to build the image's program: {built.stderr[-200:]}")
    (tmp_path / "Containerfile").write_text("FROM scratch\nCOPY hello /hello\n")
    options = ContainerOptions(containerfile=str(tmp_path / "Containerfile"))
    launcher = launcher_of(containerfile=str(tmp_path / "Containerfile"))
    try:
        launcher.preflight()  # type: ignore[attr-defined]  # builds the image
        out = subprocess.run(
            [*run_prefix(options), "/hello"], capture_output=True, text=True, check=False
        )
        assert out.stdout.strip() == "hello from the image", out.stderr
        facts = launcher.provenance()  # type: ignore[attr-defined]
        assert facts["image_id"] and facts["root"] == image_reference(options)
    finally:
        subprocess.run(
            ["podman", "rmi", "-f", str(image_reference(options))],
            check=False,
            capture_output=True,
        )


def test_a_containerfile_that_would_pull_is_refused(tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman not installed (Debian: podman)")
    (tmp_path / "Containerfile").write_text("FROM docker.io/library/debian:hpceval-never\n")
    launcher = launcher_of(containerfile=str(tmp_path / "Containerfile"))
    with pytest.raises(UserError, match="podman build failed"):
        launcher.preflight()  # type: ignore[attr-defined]
