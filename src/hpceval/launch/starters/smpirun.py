"""`smpirun`: a program built with smpicc, run on a simulated platform (SimGrid's SMPI).

    smpirun -np N -platform PLATFORM.xml -hostfile F --cfg=KEY:VALUE... EXTRA PROGRAM

Every rank runs inside one smpirun process on this machine; time, hosts and the network
are SimGrid's, and measurements are labelled **simulated**. The platform file and the SMPI
settings (`cfg`: calibrated network factors, host speed) come from `hpceval simulate`
(hpceval.simulate), which writes a platform whose `[launcher]` is:

    kind = "smpi"                          # the local scheduler with this starter
    mpirun = "smpirun"
    mpicc = "smpicc"
    platform_file = "/path/platform.xml"   # SimGrid platform (XML v4.1)
    workdir = "/path"                      # hostfiles are written here
    cfg = { "smpi/host-speed" = "1e9f" }   # each becomes --cfg=KEY:VALUE

Ranks are numbered node by node: the hostfile lists `node-0` ranks_per_node times, then
`node-1`, ... (the simulated hosts, named by `simulated_host`). smpirun is a shell script that
takes the first word it does not know as the program: it has no `--`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from hpceval.config import Argument, StrictModel
from hpceval.errors import UserError
from hpceval.launch.command import Command, thread_environment
from hpceval.launch.starters import register
from hpceval.launch.starters.base import Starter, StartRequest
from hpceval.launch.starters.smpi_collectives import forced_in, forced_note
from hpceval.model import Origin, Placement

SIMULATED_HOST_PREFIX = "node-"
SHARED_CORES_NOTE = "more ranks than simulated cores: they share them"
# SimGrid 3.32's Open MPI selector aborts an MPI_Reduce on a one-rank communicator (its
# pipelined reduce sends to parent rank -1: "Actor pid=-1 is gone??"); Open MPI itself never
# reaches its tuned algorithms there (coll/self copies locally). One rank communicates nothing,
# so a one-rank smpirun goes without the selector: SimGrid's default algorithms copy locally.
COLLECTIVE_SELECTOR = "smpi/coll-selector"
SINGLE_RANK_NOTE = "one rank: no collective selector (nothing to communicate)"
# With the Open MPI selector, the programs' MPI_Bcast runs the algorithms SimGrid replaces
# with segmented ones (basic linear, chain/pipeline, binary tree) unsegmented, as Open MPI
# >= 4.1's fixed decision runs them, and MPI_Scan/MPI_Exscan run as Open MPI's chain (SimGrid
# posts all P(P-1)/2 messages at once), and an MPI_Allreduce of fewer elements than ranks
# that Open MPI would ring runs as its recursive doubling (SimGrid's ring falls back to a
# reduce + broadcast): hpceval/smpi_colls/ompi_colls.c, linked into every smpicc build, reads
# these variables.
OPEN_MPI_SELECTOR = "ompi"
BCAST_ENV = "HPCEVAL_SMPI_BCAST"
SCAN_ENV = "HPCEVAL_SMPI_SCAN"
ALLREDUCE_ENV = "HPCEVAL_SMPI_ALLREDUCE"
OPEN_MPI_BCAST_NOTE = (
    "MPI_Bcast as Open MPI 4.1 runs it: basic linear, chain and binary tree unsegmented "
    "(SimGrid's selector runs them segmented)"
)
OPEN_MPI_SCAN_NOTE = (
    "MPI_Scan and MPI_Exscan as Open MPI 4.1 runs them: a chain (SimGrid sends every prefix "
    "at once)"
)
OPEN_MPI_ALLREDUCE_NOTE = (
    "MPI_Allreduce of fewer elements than ranks where Open MPI 4.1 rings: its recursive "
    "doubling (SimGrid's ring falls back to a reduce and a broadcast)"
)


# Node links shaped by a token bucket (hpceval.simulate.token_bucket): the SimGrid plugin is
# preloaded into smpirun, which it reads its bucket from; SimGrid 3.32's Link::set_bandwidth,
# which it calls, aborts ("Variable penalty should not be negative") unless the SMPI model's
# RTT weighting is off.
BUCKET_ENV = "HPCEVAL_SMPI_BUCKET"
BUCKET_CFG = {"network/weight-S": "0"}
BUCKET_SPEC = r"^[0-9.eE+]+:[0-9.eE+]+:[A-Za-z0-9_,-]+$"


class TokenBucketLaunch(StrictModel):
    plugin: Argument  # the plugin's shared library
    spec: str = Field(pattern=BUCKET_SPEC)  # RATE:BURST:SUFFIXES (payload bytes/s, bytes)
    description: str = ""  # for the run's note


class SmpirunOptions(StrictModel):
    platform_file: Argument
    workdir: Argument
    cfg: dict[str, str] = Field(default_factory=dict)
    token_bucket: TokenBucketLaunch | None = None


def simulated_host(node: int) -> str:
    """The name of simulated node `node` in the platform files hpceval writes."""
    return f"{SIMULATED_HOST_PREFIX}{node}"


def hostfile_lines(placement: Placement) -> list[str]:
    """One line per rank, ranks numbered node by node as every hpceval launcher does."""
    return [
        simulated_host(n) for n in range(placement.nodes) for _ in range(placement.ranks_per_node)
    ]


def hostfile_path(options: SmpirunOptions, placement: Placement) -> Path:
    return Path(options.workdir) / f"hosts-{placement.nodes}x{placement.ranks_per_node}.txt"


def cfg_args(cfg: dict[str, str]) -> list[str]:
    """`--cfg=KEY:VALUE` per setting, sorted; smpirun splits on blanks, so none may hold one."""
    args = []
    for key in sorted(cfg):
        value = cfg[key]
        if any(c.isspace() for c in key + value):
            raise UserError(f"launcher.cfg.{key}: SMPI settings cannot contain blanks")
        args.append(f"--cfg={key}:{value}")
    return args


@register
class SmpirunStarter(Starter):
    name = "smpirun"
    implementations = frozenset({"SMPI"})
    origin = Origin.SIMULATED
    options_model = SmpirunOptions

    def command(self, request: StartRequest) -> Command:
        placement = request.placement
        if placement.threads_per_rank != 1:
            raise UserError(
                f"placement {placement.label()}: SMPI simulates one thread per rank "
                f"(threads_per_rank {placement.threads_per_rank})"
            )
        options: SmpirunOptions = request.options
        hostfile = hostfile_path(options, placement)
        cfg = dict(options.cfg)
        single = placement.ranks == 1 and cfg.pop(COLLECTIVE_SELECTOR, None) is not None
        bucket = options.token_bucket
        if bucket is not None:
            cfg.update(BUCKET_CFG)
        argv = [
            request.executable,
            "-np", str(placement.ranks),
            "-platform", options.platform_file,
            "-hostfile", str(hostfile),
            *cfg_args(cfg),
            *request.extra_args,
            *request.program,
        ]  # fmt: skip
        env = {**thread_environment(1), **request.rank_env}
        notes: tuple[str, ...] = ("simulated on SimGrid SMPI",)
        forced = forced_in(cfg)
        if cfg.get(COLLECTIVE_SELECTOR) == OPEN_MPI_SELECTOR:
            # A forced MPI_Bcast is SMPI's: the programs' own file then delegates to it.
            if "bcast" not in forced:
                env[BCAST_ENV] = "openmpi"
                notes += (OPEN_MPI_BCAST_NOTE,)
            env[SCAN_ENV] = "openmpi"  # SMPI has no scan algorithm to force
            notes += (OPEN_MPI_SCAN_NOTE,)
            if "allreduce" not in forced:
                env[ALLREDUCE_ENV] = "openmpi"
                notes += (OPEN_MPI_ALLREDUCE_NOTE,)
        if forced:
            notes += (forced_note(forced),)
        if bucket is not None:
            env["LD_PRELOAD"] = bucket.plugin
            env[BUCKET_ENV] = bucket.spec
            notes += ("token-bucket link model (SimGrid plugin, network/weight-S:0): "
                      + (bucket.description or bucket.spec),)  # fmt: skip
        if request.oversubscribed:
            notes += (SHARED_CORES_NOTE,)
        if single:
            notes += (SINGLE_RANK_NOTE,)
        files = {str(hostfile): "\n".join(hostfile_lines(placement)) + "\n"}
        return Command(tuple(argv), env, placement, request.oversubscribed, notes, files)
