"""The MPI starter interface: (a start request) -> argv + environment, a pure function.

A starter knows one tool that starts MPI ranks (Open MPI's mpirun, MPICH's Hydra mpiexec,
Slurm's srun, SimGrid's smpirun): its options for mapping, binding, hosts, remote shells,
network interfaces and exported variables. It knows nothing of how the job is started and
followed: that is the scheduler's (`launch.schedulers`), which fills a `StartRequest` with
what it decided (which hosts, whether a node is oversubscribed, whether binding is possible)
and runs the argv the starter returns. Starters never run anything, never read the machine,
and are tested argv by argv.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from hpceval.launch.command import OVERSUBSCRIBED_NOTE, Command, thread_environment
from hpceval.model import Origin, Placement

# Ranks that busy-poll on an oversubscribed node starve each other (and veth traffic);
# yielding keeps them moving at the cost of latency, which the `oversubscribed` flag records.
OPEN_MPI_YIELD_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}


@dataclass(frozen=True)
class Nodes:
    """Where the ranks run, as the scheduler names it.

    No hosts and no allocation: this machine only. `hosts` lists the placement's nodes in
    rank order (ranks go node by node); with `hostfile` the starter writes them into that file
    (`Command.files`), else it names them on its command line. `allocation`: the scheduler's
    job allocation holds the nodes and the starter finds them there (mpirun inside Slurm)."""

    hosts: tuple[str, ...] = ()
    hostfile: str | None = None
    allocation: bool = False

    @property
    def several(self) -> bool:
        """The ranks may span nodes: they are mapped node by node."""
        return bool(self.hosts) or self.allocation


@dataclass(frozen=True)
class RemoteShell:
    """How the starter reaches the other nodes: ssh, or an agent that behaves like rsh (takes
    HOST COMMAND..., and no ssh options such as -x)."""

    program: str
    args: tuple[str, ...] = ()
    kind: Literal["ssh", "rsh"] = "ssh"


@dataclass(frozen=True)
class StartRequest:
    """Everything a starter needs; the scheduler decides every field."""

    placement: Placement  # as planned; the starter drops the binding it cannot honour
    program: tuple[str, ...]  # the benchmark's argv
    implementation: str  # the MPI library the program is built with ("Open MPI", "MPICH", "SMPI")
    executable: str  # the starter's own program (mpirun's path...)
    nodes: Nodes = Nodes()
    oversubscribed: bool = False  # more ranks x threads than cores on a node
    unbound_reason: str | None = None  # set: the scheduler cannot bind ranks, and why
    yield_when_idle: bool | None = None  # None: when oversubscribed
    rank_env: Mapping[str, str] = field(default_factory=dict)  # the platform's [launcher.env]
    extra_args: tuple[str, ...] = ()  # the platform's [launcher] extra_args
    remote_shell: RemoteShell | None = None
    interface: str | None = None  # MPI's TCP traffic only on this device ("eth0")
    subnet: str | None = None  # ... or this subnet ("10.0.0.0/24"), where the starter can say so
    tcp_only: bool = False  # ranks of different nodes talk TCP, nothing else
    workdir: str | None = None  # working directory of the ranks
    as_root: bool = False  # hpceval runs as root (Open MPI's mpirun must be told)
    pmi: str | None = None  # the scheduler's plugin that wires up the ranks (srun --mpi)
    options: Any = None  # the starter's own validated [launcher] keys (options_model)

    @property
    def ranks_yield(self) -> bool:
        return self.oversubscribed if self.yield_when_idle is None else self.yield_when_idle


class Starter(ABC):
    """Builds the argv and environment that start a program's ranks; registered by name."""

    name: ClassVar[str]
    # The MPI implementations whose programs it starts (None: any, e.g. srun with PMI).
    implementations: ClassVar[frozenset[str] | None] = None
    # Measurements of programs it starts are labelled so (SIMULATED for smpirun).
    origin: ClassVar[Origin] = Origin.MEASURED
    # Ranks are bound by the scheduler's own machinery (srun: Slurm's task plugin), not by
    # the starter: the scheduler says whether that machinery binds.
    binds_through_scheduler: ClassVar[bool] = False
    # The starter's own keys in the platform's [launcher] table (None: it has none).
    options_model: ClassVar[type[BaseModel] | None] = None
    # The program it runs when the platform does not name one (None: [launcher] mpirun).
    program: ClassVar[str | None] = None

    @abstractmethod
    def command(self, request: StartRequest) -> Command:
        """The argv + environment that start `request.program` (pure)."""

    def hostfile_text(self, hosts: Sequence[str], slots: int) -> str:
        """The hostfile listing `hosts` with `slots` ranks each, in this tool's syntax."""
        raise NotImplementedError(f"the {self.name} starter reads no hostfile")


# --------------------------------------------------------------------------- shared rules


def effective_placement(request: StartRequest) -> Placement:
    """The placement as it will really be: an oversubscribed node or a scheduler that cannot
    bind leaves the ranks unbound (binding several ranks to one core would serialize them)."""
    if request.oversubscribed or request.unbound_reason is not None:
        return replace(request.placement, binding="none")
    return request.placement


def notes(request: StartRequest) -> tuple[str, ...]:
    if request.oversubscribed:
        return (OVERSUBSCRIBED_NOTE,)
    if request.unbound_reason is not None:
        return (request.unbound_reason,)
    return ()


def rank_environment(request: StartRequest) -> dict[str, str]:
    """What every rank gets: OpenMP settings, Open MPI's yield, then the platform's own."""
    p = request.placement
    env = thread_environment(p.threads_per_rank, oversubscribed=request.oversubscribed)
    if request.ranks_yield and request.implementation == "Open MPI":
        env.update(OPEN_MPI_YIELD_ENV)
    env.update(request.rank_env)
    return env
