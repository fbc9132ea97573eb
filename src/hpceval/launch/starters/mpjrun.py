"""`mpjrun`: Java programs on MPJ Express's starter (what MPJ's `mpjrun` script runs).

    java -cp starter.jar:runtimecommon.jar:log4j-1.2.jar runtime.starter.MPJRun
         -np N -dev DEVICE [-machinesfile F] [EXTRA] -jar PROGRAM.jar --opt=value ...

with MPJ_HOME set to hpceval's copy of MPJ Express (hpceval.mpj explains why a copy). The
`mpj` scheduler (launch.schedulers.mpj) fills the request: the JVM (`executable`), MPJ's
home, and for niodev the machines file naming the hosts whose MPJ daemons start the ranks.

MPJRun reads ITS options anywhere on the command line (a program argument `-np 3` changes
the rank count) and knows no `--`: every program argument must therefore start with `--`
(MPJRun passes those through), which the starter checks. MPJ binds no rank to a core: the
placement's binding is recorded as "none".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from hpceval.config import StrictModel
from hpceval.errors import UserError
from hpceval.launch.command import PLACEMENT_PROBE, Command
from hpceval.launch.starters import register
from hpceval.launch.starters.base import Starter, StartRequest
from hpceval.model import Placement
from hpceval.mpj import MPJ_STARTER, STARTER_CLASS, STARTER_JARS

# MPJ Express's devices; the ones hpceval can start today.
MpjDevice = Literal["multicore", "niodev", "hybdev"]
SUPPORTED_DEVICES = ("multicore", "niodev", "hybdev")
# The devices whose ranks MPJ's daemons start (a machines file names the hosts).
DAEMON_DEVICES = ("niodev", "hybdev")
OVERSUBSCRIBED = "oversubscribed: more ranks than cores"
DEVICE_NOTES = {
    "multicore": "MPJ multicore: ranks are threads of one JVM, not bound to cores",
    "niodev": "MPJ niodev: one JVM per rank over TCP, started by MPJ daemons, not bound to cores",
    "hybdev": "MPJ hybdev: one JVM per node (its ranks threads, shared memory), niodev between "
    "nodes, not bound to cores",
}


# Where MPJRun cannot start ranks (docs/java.md): MPJ Express 0.44 starts them in one JVM
# (multicore) or through an MPJ daemon on every host (niodev, hybdev), which only the
# schedulers below start (this machine, the netns cluster's nodes, hostfile hosts over SSH,
# a Slurm job's nodes).
NOT_THIS_SCHEDULER = (
    'the mpjrun starter runs under launcher kind "mpj" (this machine), "netns" (emulated '
    'cluster), "hostfile" (hosts over SSH), "slurm" or "slurm-netns" (a job\'s nodes): they '
    "start the MPJ daemon on every host through which MPJ Express starts its ranks"
)


class MpjrunOptions(StrictModel):
    device: MpjDevice = "multicore"


@dataclass(frozen=True)
class MpjStartRequest(StartRequest):
    """A StartRequest with what only MPJ needs: its home (the class path's jars, MPJ_HOME)."""

    mpj_home: str = ""


def check_device(device: str) -> None:
    if device not in SUPPORTED_DEVICES:
        raise UserError(
            f"launcher.device {device}: not supported by hpceval yet "
            '(supported: "multicore" on one node, "niodev" and "hybdev" with MPJ daemons)',
        )


def check_java_program(program: Sequence[str]) -> None:
    """The program is a jar, and MPJRun's option parser can read none of its arguments."""
    if tuple(program) == PLACEMENT_PROBE:
        return
    if not program or not program[0].endswith(".jar"):
        shown = program[0] if program else "nothing"
        raise UserError(
            f"launcher mpj starts Java programs (a .jar), not {shown}: run native benchmarks "
            "on a platform whose launcher is local"
        )
    for arg in program[1:]:
        if not arg.startswith("--"):
            raise UserError(
                f"launcher mpj: program argument {arg[:64]!r} does not start with '--' "
                "(MPJRun would read it as its own option)"
            )


def machines_file(hosts: Sequence[str], placement: Placement, device: str = "niodev") -> str:
    """MPJRun's machines file, the ranks node by node as the placement has them (pure).

    niodev: rank r on line r (MPJ starts rank r on that line's daemon); hybdev: one line per
    node (MPJ gives each node's JVM an equal block of the ranks, measured)."""
    if len(hosts) < placement.nodes:
        raise UserError(
            f"placement {placement.label()}: {placement.nodes} nodes, {len(hosts)} hosts known"
        )
    per_node = 1 if device == "hybdev" else placement.ranks_per_node
    return "".join(f"{hosts[n]}\n" for n in range(placement.nodes) for _ in range(per_node))


def class_path(mpj_home: str) -> str:
    return os.pathsep.join(os.path.join(mpj_home, "lib", jar) for jar in STARTER_JARS)


@register
class MpjrunStarter(Starter):
    name = MPJ_STARTER
    options_model = MpjrunOptions
    program = "java"

    def command(self, request: StartRequest) -> Command:
        if not isinstance(request, MpjStartRequest) or not request.mpj_home:
            raise UserError(NOT_THIS_SCHEDULER)
        placement = request.placement
        if placement.threads_per_rank != 1:
            raise UserError(
                f"placement {placement.label()}: launcher mpj runs one thread per rank "
                f"(threads_per_rank {placement.threads_per_rank})"
            )
        options: MpjrunOptions = request.options or MpjrunOptions()
        check_device(options.device)
        check_java_program(request.program)
        hosts: list[str] = []
        if options.device in DAEMON_DEVICES:
            if request.nodes.hostfile is None:
                raise UserError(
                    f"launcher.device {options.device}: no machines file (no MPJ daemon runs)"
                )
            hosts = ["-machinesfile", request.nodes.hostfile]
        elif placement.nodes > 1:
            raise UserError(
                f"placement {placement.label()}: launcher.device multicore runs on one node "
                '(use device = "niodev" across nodes)'
            )
        argv = [
            request.executable, "-cp", class_path(request.mpj_home), STARTER_CLASS,
            "-np", str(placement.ranks), "-dev", options.device, *hosts,
            *request.extra_args, "-jar", *request.program,
        ]  # fmt: skip
        env = {"MPJ_HOME": request.mpj_home, **request.rank_env}
        notes: tuple[str, ...] = (DEVICE_NOTES[options.device],)
        if request.oversubscribed:
            notes += (OVERSUBSCRIBED,)
        effective = replace(placement, binding="none")
        return Command(tuple(argv), env, effective, request.oversubscribed, notes)
