"""Suite and platform files: the typed models, TOML reading and error wording.

Every error names the file and the field (`suites/x.toml: benchmark[0].sizes: ...`) and is
raised before anything is measured or written. The loaders that also validate what each
benchmark, scheduler and starter owns (`load_suite`, `load_platform`) are in
`hpceval.campaign.configs`: this module is a leaf that everything may import.
"""

from __future__ import annotations

import importlib.resources
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from hpceval.errors import ConfigError, UserError
from hpceval.model import Placement

BINDINGS = ("core", "socket", "numa", "hwthread", "none")
# The most ranks x threads per core a platform may allow when it oversubscribes.
MAX_RANKS_PER_CORE = 64


# --------------------------------------------------------------------------- argument strings
# Strings of these files become arguments of mpirun, ssh, sbatch, fio...: one that starts
# with "-" would be read as an option (`-oProxyCommand=...` runs a command), one with a
# newline would add a line to a hostfile or a job script.

_HOST_RE = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_.:%@-]*")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _argument(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    if value.startswith("-"):
        raise ValueError(f"{value!r} starts with '-' and would be read as an option")
    if any(c in value for c in "\0\n\r"):
        raise ValueError(f"{value!r} holds a line break or a NUL")
    return value


def _host_name(value: str) -> str:
    # Names, IPv4/IPv6 addresses (with a %zone), user@host; nothing a shell or ssh reads.
    if len(value) > 253 or not _HOST_RE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a host name (letters, digits, '.', '-', '_', ':', '@'; "
            "not starting with '-')"
        )
    return value


def _env_names(env: dict[str, str]) -> dict[str, str]:
    for key in env:
        if not _ENV_NAME_RE.fullmatch(key):
            raise ValueError(f"{key!r} is not an environment variable name")
    return env


# A string that becomes one argument of a command (a program, a path, a name).
Argument = Annotated[str, AfterValidator(_argument)]
HostName = Annotated[str, AfterValidator(_host_name)]


class StrictModel(BaseModel):
    # Unknown keys are errors: a typo in a suite must not silently fall back to a default.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# --------------------------------------------------------------------------- platforms


class LauncherConfig(BaseModel):
    """The common launcher settings; the scheduler (`kind`) and the MPI starter (`starter`)
    validate their own extra keys (`options_model`), so a typo is an error naming
    `launcher.<key>`."""

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)
    kind: str = "local"  # the scheduler: local, hostfile, netns, slurm (smpi: local + smpirun)
    # The MPI starter: openmpi, mpich, srun, smpirun; "mpirun" or unset: the scheduler's own,
    # else the one of the MPI found (Open MPI's mpirun, MPICH's mpiexec).
    starter: str | None = None
    mpirun: Argument = "mpirun"
    mpicc: Argument = "mpicc"
    # Options for mpirun/srun on purpose: they are given as they are.
    extra_args: list[str] = Field(default_factory=list)
    env: Annotated[dict[str, str], AfterValidator(_env_names)] = Field(default_factory=dict)
    # Allow more ranks on a node than it has cores (needed for 4 ranks on a 2-core machine).
    oversubscribe: bool = True
    # ...but no more than this many (ranks x threads) per core: `ranks = [100000]` on two
    # cores is a typo, not a measurement. Raised explicitly, up to a ceiling.
    max_ranks_per_core: int = Field(8, ge=1, le=MAX_RANKS_PER_CORE)

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class InterconnectConfig(StrictModel):
    """What connects the nodes; the fields the analysis groups and explains results by."""

    name: str = ""
    kind: Literal[
        "shared-memory", "ethernet", "infiniband", "omni-path", "aries", "slingshot", "other"
    ] = "other"
    gbps: float | None = Field(None, gt=0)
    # The I/O virtualization path: it explains most of the network overhead (methodology §6).
    io_path: Literal["native", "sr-iov", "paravirtual", "emulated"] | None = None
    # The transport MPI must take across this interconnect (between nodes; within the node
    # on a one-node platform): a run whose transport probe finds another one is warned of
    # (a silent fall-back from the fabric to TCP). Kinds of hpceval.transport.parse.
    expected_transport: Literal["shared-memory", "tcp", "rdma", "libfabric"] | None = None


class PriceConfig(StrictModel):
    per_node_hour: float = Field(ge=0)
    currency: str = "USD"
    pricing: Literal["on-demand", "reserved", "spot", "academic", "on-premise"] = "on-demand"
    # How the provider rounds billed time (see hpceval.analysis.prices.Billing).
    billing: Literal["per-second", "per-minute", "per-started-hour"] = "per-second"
    source: str = ""
    date: str = ""


class PlatformConfig(StrictModel):
    name: str
    description: str = ""
    launcher: LauncherConfig = LauncherConfig()
    nodes: int = Field(1, ge=1)
    hosts: list[HostName] = Field(default_factory=list)
    # "auto": the cores of this machine (only meaningful for the local launcher).
    cores_per_node: int | Literal["auto"] = "auto"
    sockets_per_node: int | None = Field(None, ge=1)
    memory_gb_per_node: float | None = Field(None, gt=0)
    interconnect: InterconnectConfig = InterconnectConfig()
    price: PriceConfig | None = None
    cflags: list[str] = Field(default_factory=lambda: ["-O2"])
    # The official codes' sources (hpceval.sources): kind -> a directory or .tar.gz
    # ("npb-mpi" = "/opt/src/NPB3.4.2/NPB3.4-MPI"); `hpceval run --source` adds to them.
    sources: dict[str, str] = Field(default_factory=dict)
    # Ask the MPI library which transport it takes, per pair class, before a run
    # (hpceval.transport; two short extra MPI starts).
    transport_probe: bool = True

    @field_validator("interconnect", mode="before")
    @classmethod
    def _interconnect_text(cls, v: object) -> object:
        # `interconnect = "10 GbE"` is shorthand for a table with just the name.
        return {"name": v} if isinstance(v, str) else v

    @field_validator("cores_per_node")
    @classmethod
    def _positive_cores(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 1:
            raise ValueError('must be >= 1 or "auto"')
        return v

    def resolved_cores_per_node(self) -> int:
        if self.cores_per_node == "auto":
            return os.cpu_count() or 1
        return self.cores_per_node

    def default_placement(self, ranks: int, threads: int = 1, binding: str = "core") -> Placement:
        """Where `ranks` x `threads` run when the suite names no ranks_per_node: the fewest
        nodes that an even split fits (filling nodes of `cores_per_node` cores); a UserError
        when the ranks cannot be spread evenly over the nodes."""
        per_node = max(1, self.resolved_cores_per_node() // threads)
        if ranks <= per_node or self.nodes == 1:
            return Placement(1, ranks, threads, binding)
        # Fewest nodes with an even split: the largest divisor of `ranks` that fits a node.
        ppn = max(d for d in range(1, per_node + 1) if ranks % d == 0)
        nodes = ranks // ppn
        if nodes > self.nodes:
            if ranks % self.nodes:
                raise UserError(
                    f"ranks {ranks} cannot be spread evenly over the {self.nodes} nodes of "
                    f"platform {self.name!r}"
                )
            nodes, ppn = self.nodes, ranks // self.nodes
        return Placement(nodes, ppn, threads, binding)

    def placement_problem(self, placement: Placement) -> str | None:
        """Why this platform cannot hold `placement` (None if it can)."""
        if placement.nodes > self.nodes:
            return (
                f"placement {placement.label()} needs {placement.nodes} nodes but platform "
                f"{self.name!r} has {self.nodes}"
            )
        cores = self.resolved_cores_per_node()
        used = placement.ranks_per_node * placement.threads_per_rank
        if used > cores and not self.launcher.oversubscribe:
            return (
                f"placement {placement.label()} needs {used} cores per node but platform "
                f"{self.name!r} has {cores} and oversubscribe = false"
            )
        per_core = self.launcher.max_ranks_per_core
        if used > cores * per_core:
            return (
                f"placement {placement.label()} needs {used} cores per node but platform "
                f"{self.name!r} has {cores} and allows {per_core} ranks x threads per core "
                f"(launcher.max_ranks_per_core, at most {MAX_RANKS_PER_CORE})"
            )
        return None


# --------------------------------------------------------------------------- suites


class BenchmarkEntry(BaseModel):
    """One `[[benchmark]]` table: `name` picks the benchmark, which validates the rest."""

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)
    name: str
    # The options validated by the benchmark's model when the suite was loaded (load_suite).
    _settings: BaseModel | None = PrivateAttr(None)

    def options(self) -> dict[str, Any]:
        """The options as written in the suite (what a run stores)."""
        return dict(self.model_extra or {})

    def settings(self) -> BaseModel:
        """The options typed by the benchmark's model (set by load_suite)."""
        if self._settings is None:
            raise RuntimeError(f"benchmark {self.name!r}: suite entry not loaded by load_suite")
        return self._settings


class SuiteConfig(StrictModel):
    name: str
    description: str = ""
    benchmark: list[BenchmarkEntry] = Field(min_length=1)


# --------------------------------------------------------------------------- loading


T = TypeVar("T")


@dataclass(frozen=True)
class Loaded(Generic[T]):
    """A validated config with where it came from and its raw content (stored with a run)."""

    config: T
    source: str
    raw: Mapping[str, Any]


def format_location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


FIELD_PREFIX = re.compile(r"^([a-z_]+): (.*)$", re.S)


def validation_message(err: ValidationError) -> tuple[str, str]:
    """The first error as (field path, message): one line, the user fixes one thing at a time."""
    first = err.errors()[0]
    msg = first["msg"].removeprefix("Value error, ")
    loc = tuple(first["loc"])
    # Cross-field validators raise "field: cause"; move the field into the location.
    if first["type"] == "value_error" and (m := FIELD_PREFIX.match(msg)):
        loc, msg = (*loc, m.group(1)), m.group(2)
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    elif first["type"] == "missing":
        msg = "required field is missing"
    elif first["type"] == "finite_number":
        msg = f"{first['input']!r} is not a number (nan and inf are refused)"
    more = len(err.errors()) - 1
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return format_location(loc), msg


def read_toml(path: Path, source: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror}", source=source) from e
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"not a UTF-8 text file (byte {e.object[e.start]:#04x} at offset {e.start})",
            source=source,
        ) from e
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"malformed TOML: {e}", source=source) from e


_SINGULAR: Final = {"suites": "suite", "platforms": "platform", "studies": "study"}


def _shipped_dir(kind: str) -> Traversable:
    return importlib.resources.files("hpceval") / "data" / kind


def shipped_names(kind: Literal["suites", "platforms", "studies"]) -> list[str]:
    return sorted(
        p.name.removesuffix(".toml")
        for p in _shipped_dir(kind).iterdir()
        if p.name.endswith(".toml")
    )


def resolve(kind: Literal["suites", "platforms", "studies"], name_or_file: str) -> tuple[Path, str]:
    """A shipped name or a file path -> (path, display source)."""
    candidate = Path(name_or_file)
    if name_or_file.endswith(".toml") or os.sep in name_or_file or candidate.is_file():
        if not candidate.is_file():
            raise UserError(f"{name_or_file}: no such {_SINGULAR[kind]} file")
        return candidate, str(candidate)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name_or_file):
        raise UserError(f"{name_or_file!r} is not a valid {_SINGULAR[kind]} name")
    shipped = _shipped_dir(kind) / f"{name_or_file}.toml"
    if not shipped.is_file():
        known = ", ".join(shipped_names(kind))
        raise UserError(
            f"unknown {_SINGULAR[kind]} {name_or_file!r} (shipped: {known}; or give a file)"
        )
    with importlib.resources.as_file(shipped) as p:
        return Path(p), f"{kind}/{name_or_file}.toml"


# --------------------------------------------------------------------------- sizes

_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 10**6}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB|kB|MB)?\s*$")


def parse_size(text: str | int) -> int:
    """`4096`, `"4KiB"`, `"2MB"` -> bytes."""
    if isinstance(text, bool):
        raise ValueError(f"invalid size {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size {text} is negative")
        return text
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"invalid size {text!r} (use bytes, or a number with B/KiB/MiB/GiB/kB/MB)")
    return int(m.group(1)) * _UNITS[m.group(2) or ""]


def parse_sizes(spec: str | list[int | str]) -> list[int]:
    """A list of sizes, or a range `"MIN..MAX"` of powers of two (0 included when MIN is 0)."""
    if isinstance(spec, list):
        sizes = [parse_size(s) for s in spec]
    else:
        if ".." not in spec:
            raise ValueError(f"invalid size range {spec!r} (expected MIN..MAX, e.g. 0..4MiB)")
        lo_text, hi_text = spec.split("..", 1)
        lo, hi = parse_size(lo_text), parse_size(hi_text)
        if hi < lo:
            raise ValueError(f"size range {spec!r} is empty (MAX < MIN)")
        sizes = [0] if lo == 0 else []
        p = 1
        while p <= hi:
            if p >= lo:
                sizes.append(p)
            p *= 2
    if not sizes:
        raise ValueError("no message sizes")
    if len(set(sizes)) != len(sizes):
        raise ValueError("message sizes repeat")
    if max(sizes) > 1024**3:
        raise ValueError(f"size {max(sizes)} exceeds 1 GiB")
    return sizes
