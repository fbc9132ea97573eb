"""Exact argv of every MPI starter x placement (pure: nothing runs), and how a platform picks
its starter (`[launcher] starter`, or the default of its scheduler and MPI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpceval.campaign import load_platform
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError, UserError
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.launch.command import Command
from hpceval.launch.starters import get_starter_class, starter_names
from hpceval.launch.starters.base import Nodes, RemoteShell, StartRequest
from hpceval.launch.starters.mpjrun import MpjrunOptions, MpjStartRequest
from hpceval.model import Origin, Placement

from .conftest import write

PROGRAM = ("/cache/npb/cg.B", "--verify")


def request(placement: Placement, implementation: str, **fields: object) -> StartRequest:
    return StartRequest(
        placement=placement, program=PROGRAM, implementation=implementation,
        executable="/usr/bin/mpirun", **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def openmpi(placement: Placement, **fields: object) -> list[str]:
    cmd = get_starter_class("openmpi")().command(request(placement, "Open MPI", **fields))
    return list(cmd.argv)


def mpich(placement: Placement, **fields: object) -> list[str]:
    cmd = get_starter_class("mpich")().command(request(placement, "MPICH", **fields))
    return list(cmd.argv)


def test_registry() -> None:
    assert starter_names() == ["mpich", "mpjrun", "openmpi", "smpirun", "srun"]
    with pytest.raises(UserError, match="unknown starter 'x'"):
        get_starter_class("x")


# --------------------------------------------------------------------------- Open MPI


@pytest.mark.parametrize(
    ("placement", "fields", "mapping"),
    [
        # this machine: core by core; T threads reserve T cores when bound
        (Placement(1, 2), {}, ["--map-by", "core", "--bind-to", "core"]),
        (Placement(1, 2, 4, "socket"), {}, ["--map-by", "slot:PE=4", "--bind-to", "socket"]),
        (Placement(1, 2, 2, "none"), {}, ["--map-by", "core", "--bind-to", "none"]),
        (Placement(1, 2, 1, "hwthread"), {},
         ["--map-by", "core", "--bind-to", "hwthread", "--use-hwthread-cpus"]),
        (Placement(1, 4), {"oversubscribed": True}, ["--oversubscribe", "--bind-to", "none"]),
        # nodes from the scheduler's allocation: node by node
        (Placement(2, 3), {"nodes": Nodes(allocation=True)},
         ["--map-by", "ppr:3:node", "--bind-to", "core"]),
        (Placement(2, 2, 4, "numa"), {"nodes": Nodes(allocation=True)},
         ["--map-by", "ppr:2:node:PE=4", "--bind-to", "numa"]),
        (Placement(1, 4), {"nodes": Nodes(allocation=True), "oversubscribed": True},
         ["--map-by", "ppr:4:node", "--oversubscribe", "--bind-to", "none"]),
        (Placement(2, 2, 2, "core"), {"nodes": Nodes(allocation=True),
                                      "unbound_reason": "no binding here"},
         ["--map-by", "ppr:2:node", "--bind-to", "none"]),
    ],
)  # fmt: skip
def test_open_mpi_mapping_and_binding(
    placement: Placement, fields: dict[str, object], mapping: list[str]
) -> None:
    argv = openmpi(placement, **fields)
    assert argv[:3] == ["/usr/bin/mpirun", "-np", str(placement.ranks)]
    assert argv[3 : 3 + len(mapping)] == mapping
    assert argv[-3:] == ["--", *PROGRAM]


def test_open_mpi_hosts_remote_shell_interface_and_environment() -> None:
    starter = get_starter_class("openmpi")()
    cmd = starter.command(
        request(
            Placement(2, 2, 2, "core"),
            "Open MPI",
            nodes=Nodes(hosts=("n1", "n2"), hostfile="/tmp/h/hosts-2x2"),
            remote_shell=RemoteShell("ssh", ("-p", "2222")),
            interface="eth0",
            workdir="/scratch",
            rank_env={"UCX_TLS": "tcp"},
            extra_args=("--tag-output",),
            as_root=True,
        )
    )
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "4", "--hostfile", "/tmp/h/hosts-2x2",
        "--map-by", "ppr:2:node:PE=2", "--bind-to", "core",
        "--mca", "plm_rsh_agent", "ssh", "--mca", "plm_rsh_args", "-p 2222",
        "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0",
        "--wdir", "/scratch",
        "-x", "OMP_NUM_THREADS", "-x", "OMP_PLACES", "-x", "OMP_PROC_BIND", "-x", "UCX_TLS",
        "--tag-output", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.files == {"/tmp/h/hosts-2x2": "n1 slots=2\nn2 slots=2\n"}
    # mpirun's own permission to run as root is set for mpirun, not exported to the ranks
    assert cmd.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and "OMPI_ALLOW_RUN_AS_ROOT" not in cmd.argv
    assert cmd.env["UCX_TLS"] == "tcp" and cmd.placement == Placement(2, 2, 2, "core")


def test_open_mpi_hosts_on_the_command_line_tcp_only_and_yielding() -> None:
    cmd = get_starter_class("openmpi")().command(
        request(
            Placement(2, 1),
            "Open MPI",
            nodes=Nodes(hosts=("a", "b")),
            unbound_reason="nodes share cores",
            yield_when_idle=True,
            tcp_only=True,
        )
    )
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-np", "2", "--host", "a:1,b:1",
        "--map-by", "ppr:1:node", "--bind-to", "none", "--mca", "btl", "self,vader,tcp",
        "-x", "OMPI_MCA_mpi_yield_when_idle", "-x", "OMP_NUM_THREADS", "--", *PROGRAM,
    ]  # fmt: skip
    assert cmd.notes == ("nodes share cores",) and cmd.placement.binding == "none"
    assert cmd.files == {}


# --------------------------------------------------------------------------- MPICH (Hydra)


@pytest.mark.parametrize(
    ("placement", "fields", "expected"),
    [
        (Placement(1, 2), {}, ["-n", "2", "-bind-to", "core"]),
        (Placement(1, 2, 4, "socket"), {}, ["-n", "2", "-bind-to", "socket:4"]),
        (Placement(1, 4), {"oversubscribed": True}, ["-n", "4", "-bind-to", "none"]),
        (Placement(2, 2, 2, "hwthread"), {"nodes": Nodes(allocation=True)},
         ["-n", "4", "-ppn", "2", "-bind-to", "hwthread:2"]),
        (Placement(2, 3), {"nodes": Nodes(hosts=("a", "b"))},
         ["-n", "6", "-hosts", "a:3,b:3", "-ppn", "3", "-bind-to", "core"]),
    ],
)  # fmt: skip
def test_mpich_argv(placement: Placement, fields: dict[str, object], expected: list[str]) -> None:
    argv = mpich(placement, **fields)
    threads = str(placement.threads_per_rank)
    assert argv[: len(expected) + 4] == [
        "/usr/bin/mpirun", *expected, "-genv", "OMP_NUM_THREADS", threads
    ]  # fmt: skip
    # Hydra takes the first word it does not know as the program: no `--` (it refuses one).
    assert argv[-2:] == list(PROGRAM) and "--" not in argv


def test_mpich_hostfile_remote_shell_interface() -> None:
    starter = get_starter_class("mpich")()
    cmd = starter.command(
        request(
            Placement(2, 1),
            "MPICH",
            nodes=Nodes(hosts=("n1", "n2"), hostfile="/h/f"),
            remote_shell=RemoteShell("/usr/bin/ssh"),
            interface="ib0",
            workdir="/w",
            rank_env={"A": "x y"},
        )
    )
    assert list(cmd.argv) == [
        "/usr/bin/mpirun", "-n", "2", "-f", "/h/f", "-ppn", "1",
        "-launcher", "ssh", "-launcher-exec", "/usr/bin/ssh", "-bind-to", "core",
        "-iface", "ib0", "-wdir", "/w", "-genv", "A", "x y", "-genv", "OMP_NUM_THREADS", "1",
        *PROGRAM,
    ]  # fmt: skip
    assert cmd.files == {"/h/f": "n1:1\nn2:1\n"}
    with pytest.raises(UserError, match="MPICH's mpiexec passes no options to ssh"):
        starter.command(request(Placement(1, 1), "MPICH", remote_shell=RemoteShell("ssh", ("-v",))))


# --------------------------------------------------------------------------- srun, smpirun


def test_srun_argv_and_the_scheduler_s_plugin() -> None:
    starter = get_starter_class("srun")()
    assert starter.program == "srun"
    cmd = starter.command(
        StartRequest(
            placement=Placement(2, 2, 3, "numa"), program=PROGRAM, implementation="MPICH",
            executable="srun", pmi="pmi2", extra_args=("--exclusive",),
        )
    )  # fmt: skip
    assert list(cmd.argv) == [
        "srun", "--mpi=pmi2", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2",
        "--cpus-per-task=3", "--distribution=block:block", "--cpu-bind=ldoms",
        "--kill-on-bad-exit=1", "--exclusive", "--", *PROGRAM,
    ]  # fmt: skip
    # MPICH ranks do not read Open MPI's yield variable
    over = starter.command(
        StartRequest(
            placement=Placement(1, 4), program=PROGRAM, implementation="MPICH",
            executable="srun", oversubscribed=True,
        )
    )  # fmt: skip
    assert "--overcommit" in over.argv and "--cpu-bind=none" in over.argv
    assert dict(over.env) == {"OMP_NUM_THREADS": "1"}


def test_smpirun_writes_its_hostfile_through_the_scheduler(tmp_path: Path) -> None:
    starter = get_starter_class("smpirun")()
    options = starter.options_model.model_validate(  # type: ignore[union-attr]
        {"platform_file": "/p.xml", "workdir": str(tmp_path), "cfg": {"smpi/x": "1"}}
    )
    cmd = starter.command(
        StartRequest(
            placement=Placement(2, 1), program=PROGRAM, implementation="SMPI",
            executable="smpirun", options=options,
        )
    )  # fmt: skip
    hostfile = str(tmp_path / "hosts-2x1.txt")
    assert list(cmd.argv) == [
        "smpirun", "-np", "2", "-platform", "/p.xml", "-hostfile", hostfile, "--cfg=smpi/x:1",
        *PROGRAM,
    ]  # fmt: skip
    assert cmd.files == {hostfile: "node-0\nnode-1\n"}
    assert starter.origin is Origin.SIMULATED


def test_smpirun_runs_one_rank_without_the_collective_selector(tmp_path: Path) -> None:
    # SimGrid 3.32's Open MPI selector aborts a one-rank MPI_Reduce (tests/test_smpi_programs
    # runs FT both ways); one rank communicates nothing, so it goes without.
    starter = get_starter_class("smpirun")()
    cfg = {"smpi/coll-selector": "ompi", "smpi/x": "1"}
    options = starter.options_model.model_validate(  # type: ignore[union-attr]
        {"platform_file": "/p.xml", "workdir": str(tmp_path), "cfg": cfg}
    )

    def command(ranks: int) -> Command:
        return starter.command(StartRequest(
            placement=Placement(1, ranks), program=PROGRAM, implementation="SMPI",
            executable="smpirun", options=options,
        ))  # fmt: skip

    one, two = command(1), command(2)
    assert "--cfg=smpi/coll-selector:ompi" not in one.argv and "--cfg=smpi/x:1" in one.argv
    assert any("no collective selector" in n for n in one.notes)
    assert "--cfg=smpi/coll-selector:ompi" in two.argv
    assert options.cfg == cfg  # the platform's settings are left as they were
    # Open MPI's broadcasts (smpi_colls/ompi_colls.c) go with the Open MPI selector only.
    assert two.env.get("HPCEVAL_SMPI_BCAST") == "openmpi"
    assert any("MPI_Bcast as Open MPI 4.1 runs it" in n for n in two.notes)
    assert "HPCEVAL_SMPI_BCAST" not in one.env
    # So do its scans (a chain; SimGrid sends every prefix at once).
    assert two.env.get("HPCEVAL_SMPI_SCAN") == "openmpi"
    assert any("MPI_Scan and MPI_Exscan as Open MPI 4.1 runs them" in n for n in two.notes)
    assert "HPCEVAL_SMPI_SCAN" not in one.env
    # And its small allreduces (recursive doubling where SimGrid's ring reduces + broadcasts).
    assert two.env.get("HPCEVAL_SMPI_ALLREDUCE") == "openmpi"
    assert any("MPI_Allreduce of fewer elements than ranks" in n for n in two.notes)
    assert "HPCEVAL_SMPI_ALLREDUCE" not in one.env
    forced = starter.command(StartRequest(
        placement=Placement(1, 2), program=PROGRAM, implementation="SMPI", executable="smpirun",
        options=options.model_copy(update={"cfg": {**cfg, "smpi/allreduce": "rdb"}}),
    ))  # fmt: skip
    assert "HPCEVAL_SMPI_ALLREDUCE" not in forced.env
    assert forced.env.get("HPCEVAL_SMPI_BCAST") == "openmpi"


def test_smpirun_keeps_smpi_broadcasts_under_another_selector(tmp_path: Path) -> None:
    starter = get_starter_class("smpirun")()
    options = starter.options_model.model_validate(  # type: ignore[union-attr]
        {"platform_file": "/p.xml", "workdir": str(tmp_path),
         "cfg": {"smpi/coll-selector": "mpich"}}
    )  # fmt: skip
    cmd = starter.command(StartRequest(
        placement=Placement(2, 2), program=PROGRAM, implementation="SMPI",
        executable="smpirun", options=options,
    ))  # fmt: skip
    assert "HPCEVAL_SMPI_BCAST" not in cmd.env and "HPCEVAL_SMPI_SCAN" not in cmd.env
    assert "HPCEVAL_SMPI_ALLREDUCE" not in cmd.env
    assert not any("MPI_Bcast" in n or "MPI_Scan" in n or "MPI_Allreduce" in n
                   for n in cmd.notes)  # fmt: skip


# --------------------------------------------------------------------------- platforms


def platform(**launcher: object) -> PlatformConfig:
    return PlatformConfig.model_validate(
        {"name": "p", "nodes": 2, "cores_per_node": 4, "launcher": launcher}
    )


def test_default_starters_follow_the_scheduler_and_the_mpi() -> None:
    def starter(kind: str, impl: str, **keys: object) -> str:
        scheduler = get_launcher_class(kind)(platform(kind=kind, **keys), MpiRuntime(impl, "m"))
        return scheduler.starter.name

    assert starter("local", "Open MPI") == "openmpi"
    assert starter("local", "MPICH") == "mpich"
    assert starter("hostfile", "MPICH") == "mpich"
    assert starter("slurm", "Open MPI") == "srun"
    assert starter("slurm", "MPICH", starter="mpirun") == "mpich"
    assert starter("slurm", "Open MPI", starter="openmpi") == "openmpi"
    with pytest.raises(UserError, match="openmpi starts Open MPI programs, but m is MPICH"):
        starter("local", "MPICH", starter="openmpi")


def test_a_platform_names_its_starter(tmp_path: Path) -> None:
    good = write(tmp_path / "g.toml", "name='g'\n[launcher]\nkind='slurm'\nstarter='mpich'\n")
    assert load_platform(str(good)).config.launcher.starter == "mpich"
    bad = write(tmp_path / "b.toml", "name='b'\n[launcher]\nkind='local'\nstarter='ssh'\n")
    with pytest.raises(ConfigError, match=r"launcher\.starter: unknown starter 'ssh'"):
        load_platform(str(bad))
    # smpirun's own keys are accepted with it, refused without it
    sim = "name='s'\n[launcher]\nkind='{}'\nplatform_file='/p.xml'\nworkdir='/w'\n"
    assert load_platform(str(write(tmp_path / "s.toml", sim.format("smpi")))).config
    with pytest.raises(ConfigError, match=r"launcher\.platform_file: unknown field"):
        load_platform(str(write(tmp_path / "l.toml", sim.format("local"))))


# --------------------------------------------------------------------------- MPJ Express


def mpjrun(placement: Placement, device: str, **fields: object) -> Command:
    request = MpjStartRequest(
        placement=placement, program=("/c/mb.jar", "--pattern=barrier"),
        implementation="Open MPI", executable="/usr/bin/java",
        options=MpjrunOptions.model_validate({"device": device}), mpj_home="/m", **fields,  # type: ignore[arg-type]
    )  # fmt: skip
    return get_starter_class("mpjrun")().command(request)


MPJ_CLASS_PATH = "/m/lib/starter.jar:/m/lib/runtimecommon.jar:/m/lib/log4j-1.2.jar"


@pytest.mark.parametrize(
    ("placement", "device", "fields", "middle"),
    [
        (Placement(1, 2, 1, "core"), "multicore", {}, ["-np", "2", "-dev", "multicore"]),
        (
            Placement(1, 4, 1, "none"),
            "multicore",
            {"extra_args": ("-Xmx1g",)},
            ["-np", "4", "-dev", "multicore", "-Xmx1g"],
        ),
        (
            Placement(1, 2, 1, "none"),
            "niodev",
            {"nodes": Nodes(hosts=("localhost",), hostfile="/w/machines")},
            ["-np", "2", "-dev", "niodev", "-machinesfile", "/w/machines"],
        ),
    ],
)
def test_mpjrun_argv(
    placement: Placement, device: str, fields: dict[str, object], middle: list[str]
) -> None:
    cmd = mpjrun(placement, device, **fields)
    assert list(cmd.argv) == [
        "/usr/bin/java", "-cp", MPJ_CLASS_PATH, "runtime.starter.MPJRun", *middle,
        "-jar", "/c/mb.jar", "--pattern=barrier",
    ]  # fmt: skip
    assert cmd.env["MPJ_HOME"] == "/m" and cmd.placement.binding == "none" and not cmd.files


@pytest.mark.parametrize(
    ("placement", "device", "fields", "cause"),
    [
        (Placement(1, 2), "hybdev", {}, "launcher.device hybdev: no machines file"),
        (Placement(2, 1), "multicore", {}, "multicore runs on one node"),
        (Placement(1, 2), "niodev", {}, "no machines file"),
        (Placement(1, 2, 2), "multicore", {}, "one thread per rank"),
        (
            Placement(1, 2),
            "multicore",
            {"program": ("/c/mb.jar", "-np", "3")},
            "'-np' does not start with '--'",
        ),
        (Placement(1, 2), "multicore", {"program": ("/usr/bin/mpibench",)}, "a .jar"),
    ],
)
def test_mpjrun_refuses(
    placement: Placement, device: str, fields: dict[str, object], cause: str
) -> None:
    program = fields.pop("program", ("/c/mb.jar",))
    mpj_request = MpjStartRequest(
        placement=placement, program=program, implementation="Open MPI",  # type: ignore[arg-type]
        executable="java", options=MpjrunOptions.model_validate({"device": device}),
        mpj_home="/m", **fields,  # type: ignore[arg-type]
    )  # fmt: skip
    with pytest.raises(UserError, match=re.escape(cause)):
        get_starter_class("mpjrun")().command(mpj_request)


def test_mpjrun_needs_the_mpj_scheduler() -> None:
    with pytest.raises(UserError, match='launcher kind "mpj" \\(this machine\\), "netns"'):
        get_starter_class("mpjrun")().command(request(Placement(1, 2), "Open MPI"))
