"""Exact argv for every launcher: what runs is exactly what the test says."""

from __future__ import annotations

import pytest

from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.launch import MpiRuntime, get_launcher_class, launcher_names
from hpceval.launch import command as launch_command
from hpceval.launch.schedulers import base as scheduler_base
from hpceval.model import Placement

PROGRAM = ["/cache/mpibench", "--pattern", "pingpong"]


def local(cores: int = 2, impl: str = "Open MPI", **launcher: object) -> object:
    platform = PlatformConfig.model_validate(
        {"name": "t", "cores_per_node": cores, "launcher": {"kind": "local", **launcher}}
    )
    return get_launcher_class("local")(platform, MpiRuntime(impl, "/usr/bin/mpirun"))


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_base, "running_as_root", lambda: False)


def test_registry() -> None:
    assert "local" in launcher_names()
    with pytest.raises(UserError, match="unknown launcher 'x'"):
        get_launcher_class("x")


def test_open_mpi_two_ranks_bound_to_cores(as_user: None) -> None:
    cmd = local().command(Placement(1, 2), PROGRAM)  # type: ignore[attr-defined]
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "2", "--map-by", "core", "--bind-to", "core",
        "-x", "OMP_NUM_THREADS", "--", *PROGRAM,
    ]  # fmt: skip
    assert dict(cmd.env) == {"OMP_NUM_THREADS": "1"}
    assert not cmd.oversubscribed
    assert cmd.placement.binding == "core"


def test_open_mpi_oversubscribed_drops_binding_and_yields(as_user: None) -> None:
    cmd = local(cores=2).command(Placement(1, 4), PROGRAM)  # type: ignore[attr-defined]
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "4", "--oversubscribe", "--bind-to", "none",
        "-x", "OMPI_MCA_mpi_yield_when_idle", "-x", "OMP_NUM_THREADS", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.env["OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert cmd.oversubscribed
    assert cmd.placement.binding == "none"


def test_open_mpi_hybrid_reserves_cores_per_rank(as_user: None) -> None:
    cmd = local(cores=8).command(Placement(1, 2, 4, "core"), PROGRAM)  # type: ignore[attr-defined]
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "2", "--map-by", "slot:PE=4", "--bind-to", "core",
        "-x", "OMP_NUM_THREADS", "-x", "OMP_PLACES", "-x", "OMP_PROC_BIND", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.env["OMP_NUM_THREADS"] == "4"


def test_open_mpi_as_root_sets_the_allow_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_base, "running_as_root", lambda: True)
    cmd = local().command(Placement(1, 2), PROGRAM)  # type: ignore[attr-defined]
    assert cmd.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert cmd.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    # mpirun reads these itself: they are not exported to the ranks.
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in cmd.argv


def test_extra_args_and_env_from_the_platform(as_user: None) -> None:
    launcher = local(extra_args=["--mca", "btl", "self,vader"], env={"UCX_TLS": "sm"})
    cmd = launcher.command(Placement(1, 2), PROGRAM)  # type: ignore[attr-defined]
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "2", "--map-by", "core", "--bind-to", "core",
        "-x", "OMP_NUM_THREADS", "-x", "UCX_TLS", "--mca", "btl", "self,vader", "--", *PROGRAM,
    ]  # fmt: skip


def test_mpich_argv(as_user: None) -> None:
    cmd = local(impl="MPICH").command(Placement(1, 2), PROGRAM)  # type: ignore[attr-defined]
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-n", "2", "-bind-to", "core",
        "-genv", "OMP_NUM_THREADS", "1", *PROGRAM,
    ]  # fmt: skip


def test_local_refuses_several_nodes_and_forbidden_oversubscription() -> None:
    with pytest.raises(UserError, match="one node"):
        local().command(Placement(2, 1), PROGRAM)  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="oversubscribe = false"):
        local(oversubscribe=False).command(Placement(1, 4), PROGRAM)  # type: ignore[attr-defined]


def test_thread_environment() -> None:
    assert launch_command.thread_environment(1) == {"OMP_NUM_THREADS": "1"}
    assert launch_command.thread_environment(2)["OMP_PROC_BIND"] == "close"


def test_thread_environment_oversubscribed_waits_passively_and_unpinned() -> None:
    env = launch_command.thread_environment(2, oversubscribed=True)
    assert env == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}
    # one thread per rank needs no wait policy: there is no OpenMP barrier to spin at
    assert launch_command.thread_environment(1, oversubscribed=True) == {"OMP_NUM_THREADS": "1"}


def test_local_oversubscribed_hybrid_exports_passive_wait() -> None:
    cmd = local().command(Placement(1, 4, threads_per_rank=2), PROGRAM)
    assert cmd.oversubscribed
    assert cmd.env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_PROC_BIND" not in cmd.env
    assert "OMP_WAIT_POLICY" in cmd.argv
