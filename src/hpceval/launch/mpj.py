"""`mpj`: Java programs on MPJ Express's starter (what `mpjrun` runs), on this machine.

The platform's `[launcher]`:

    kind = "mpj"
    device = "multicore"     # MPJ's device: multicore (ranks are threads of one JVM)

The program is an executable jar (`hpceval.mpj.compile_java_program`); the argv is

    java -cp starter.jar:runtimecommon.jar:log4j-1.2.jar runtime.starter.MPJRun
         -np N -dev multicore [extra_args] -jar PROGRAM.jar --opt=value ...

with MPJ_HOME set to hpceval's copy of MPJ Express (hpceval.mpj explains why a copy).
MPJRun reads ITS options anywhere on the command line (a program argument `-np 3` changes
the rank count) and knows no `--`: every program argument must therefore start with `--`
(MPJRun passes those through), which the launcher checks.

niodev and hybdev (ranks as separate JVMs connected over TCP) need an `mpjdaemon` on every
host; hpceval does not start those daemons yet, so they are refused with a one-line error.
The multicore device runs all ranks as threads of one JVM that MPJ does not pin: the
placement's binding is recorded as "none".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from hpceval.config import StrictModel
from hpceval.errors import UserError
from hpceval.launch import register
from hpceval.launch.base import PLACEMENT_PROBE, Command, Launcher
from hpceval.model import Placement
from hpceval.mpj import installation

# MPJ Express's devices; the ones hpceval can start today.
MpjDevice = Literal["multicore", "niodev", "hybdev"]
SUPPORTED_DEVICES = ("multicore",)


class MpjOptions(StrictModel):
    device: MpjDevice = "multicore"


def check_device(device: str) -> None:
    if device not in SUPPORTED_DEVICES:
        raise UserError(
            f"launcher.device {device}: MPJ's {device} device needs an mpjdaemon on every "
            'host, which hpceval does not start yet; use device = "multicore"',
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


def mpjrun_argv(
    starter: Sequence[str], device: str, ranks: int, extra: Sequence[str], program: Sequence[str]
) -> list[str]:
    """The starter's argv; `starter` is `java -cp ... runtime.starter.MPJRun`."""
    check_device(device)
    check_java_program(program)
    return [*starter, "-np", str(ranks), "-dev", device, *extra, "-jar", *program]


@register
class MpjLauncher(Launcher):
    name = "mpj"
    options_model = MpjOptions

    def preflight(self) -> None:
        options: MpjOptions = self.options()
        check_device(options.device)
        installation()  # ToolMissing (exit 2) when java or MPJ Express is not installed

    def command(self, placement: Placement, program: Sequence[str]) -> Command:
        options: MpjOptions = self.options()
        if placement.nodes != 1:
            raise UserError(
                f"launcher mpj runs on one node; placement {placement.label()} "
                f"asks for {placement.nodes}"
            )
        if placement.threads_per_rank != 1:
            raise UserError(
                f"placement {placement.label()}: launcher mpj runs one thread per rank "
                f"(threads_per_rank {placement.threads_per_rank})"
            )
        self.check_placement(placement)
        mpj = installation()
        argv = mpjrun_argv(
            mpj.starter_argv(),
            options.device,
            placement.ranks,
            self.platform.launcher.extra_args,
            program,
        )
        env = {"MPJ_HOME": str(mpj.home), **self.platform.launcher.env}
        oversubscribed = self.oversubscribed(placement)
        effective = replace(placement, binding="none")
        notes: tuple[str, ...] = (
            "MPJ multicore: ranks are threads of one JVM, not bound to cores",
        )
        if oversubscribed:
            notes += ("oversubscribed: more ranks than cores",)
        return Command(tuple(argv), env, effective, oversubscribed, notes)
