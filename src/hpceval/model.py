"""The core records: Placement, Statistics, Measurement, Environment, Run, Execution.

These are plain immutable values. The store persists them; benchmarks produce Measurements
from a benchmark program's output; analysis derives everything else from raw samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from hpceval.errors import ImpossibleValue
from hpceval.units import check_unit

# A parameter value must be JSON-representable and comparable: sizes, counts, names, flags.
ParamValue = int | float | str | bool


class Origin(StrEnum):
    """Where a number comes from. Never mixed silently in tables or analysis."""

    MEASURED = "measured"  # real hardware, real platform
    EMULATED = "emulated"  # real programs on an emulated cluster (network namespaces)
    SIMULATED = "simulated"  # SimGrid SMPI projection


class Status(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"  # every case ran (some may have failed)
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM, or found dead (kill -9); resumable
    FAILED = "failed"  # the campaign itself could not go on


class ExecutionStatus(StrEnum):
    OK = "ok"  # exit 0 and the sanity/verification check passed
    FAILED = "failed"  # non-zero exit, crash, or failed sanity/verification
    TIMEOUT = "timeout"  # killed at its time limit
    INTERRUPTED = "interrupted"  # killed because the campaign was interrupted
    # Not started: the benchmark's tool is missing here (Benchmark.unavailable gives the
    # reason); not a failure, and `hpceval run --resume` tries the case again.
    SKIPPED = "skipped"


# The implementation of hpceval's own benchmark programs; an official code's is
# OFFICIAL_PREFIX + its name and version.
HPCEVAL_IMPLEMENTATION = "hpceval"
OFFICIAL_PREFIX = "official/"


def official_implementation(name_and_version: str) -> str:
    """ "NPB 3.4.2" -> "official/NPB 3.4.2"."""
    return OFFICIAL_PREFIX + name_and_version


@dataclass(frozen=True)
class Placement:
    """How ranks are laid out: nodes x ranks per node, threads per rank, core binding."""

    nodes: int = 1
    ranks_per_node: int = 1
    threads_per_rank: int = 1
    binding: str = "core"  # core | socket | numa | hwthread | none

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node

    def as_parameters(self) -> dict[str, ParamValue]:
        return {
            "ranks": self.ranks,
            "nodes": self.nodes,
            "ranks_per_node": self.ranks_per_node,
            "threads_per_rank": self.threads_per_rank,
            "binding": self.binding,
        }

    def label(self) -> str:
        return f"{self.nodes}x{self.ranks_per_node}x{self.threads_per_rank}"


@dataclass(frozen=True)
class Statistics:
    """Statistics derived from raw samples (see hpceval.statistics)."""

    count: int
    minimum: float
    maximum: float
    median: float
    mean: float
    stdev: float
    # Confidence interval of the mean; None when it is undefined (a single sample).
    ci_low: float | None
    ci_high: float | None
    confidence: float = 0.95
    extra: Mapping[str, float] = field(default_factory=dict)

    @property
    def ci_half_width(self) -> float:
        if self.ci_low is None or self.ci_high is None:
            return math.inf
        return (self.ci_high - self.ci_low) / 2

    @property
    def relative_ci(self) -> float:
        """Half-width of the confidence interval relative to the mean (inf if undefined)."""
        return self.ci_half_width / abs(self.mean) if self.mean else math.inf

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["extra"] = dict(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Statistics:
        return cls(**{**d, "extra": dict(d.get("extra", {}))})


@dataclass(frozen=True)
class Measurement:
    """One value of one metric at one parameter point, with its unit, samples and origin.

    `value` is the statistic named by `statistic` (normally the mean of `samples`).
    `parameters` identify the point (pattern, size, ranks, placement...); `details` hold how
    it was measured (warm-up iterations, loops per sample, why sampling stopped).
    """

    benchmark: str
    metric: str
    value: float
    unit: str
    parameters: Mapping[str, ParamValue] = field(default_factory=dict)
    samples: tuple[float, ...] = ()
    statistics: Statistics | None = None
    statistic: str = "mean"
    origin: Origin = Origin.MEASURED
    details: Mapping[str, Any] = field(default_factory=dict)
    # Whose program measured it: hpceval's own ("hpceval") or an official code built from
    # the user's sources ("official/NPB 3.4.2", "official/OSU 7.2"). Never mixed silently.
    implementation: str = HPCEVAL_IMPLEMENTATION

    def __post_init__(self) -> None:
        check_unit(self.unit)
        # Every number of every benchmark passes here: the choke point for inf and nan.
        where = f"{self.benchmark}.{self.metric}"
        if not self.implementation or "\n" in self.implementation:
            raise ValueError(f"{where}: implementation {self.implementation!r} is not a name")
        if not math.isfinite(self.value):
            raise ImpossibleValue(f"{where}: value {self.value} is not finite")
        # The sum first (fast in C): only an inf or a nan, or an overflow, makes it non-finite.
        if (
            not _READING_STORED.get()
            and not math.isfinite(sum(self.samples))
            and not all(map(math.isfinite, self.samples))
        ):
            raise ImpossibleValue(f"{where}: a sample is not finite")

    @classmethod
    def from_stored(cls, **fields: Any) -> Measurement:
        """A measurement as a database holds it. Databases written before hpceval refused
        non-finite samples may hold some (an inf in a simulated run's samples): reading them
        must not fail or lose them, so only the samples check is left out here."""
        token = _READING_STORED.set(True)
        try:
            return cls(**fields)
        finally:
            _READING_STORED.reset(token)


# Set while a stored measurement is rebuilt (Measurement.from_stored).
_READING_STORED: ContextVar[bool] = ContextVar("reading_stored_measurement", default=False)


@dataclass(frozen=True)
class Environment:
    """Provenance of a run: hardware, virtualization, network path, software stack.

    `facts` is the full nested record (see hpceval.provenance); `fingerprint` a hash of it
    so identical environments are stored once.
    """

    facts: Mapping[str, Any]
    fingerprint: str


@dataclass(frozen=True)
class ExecutionRecord:
    """One launched benchmark command: exactly what ran and how it ended."""

    case_key: str
    benchmark: str
    argv: tuple[str, ...]
    env: Mapping[str, str]  # only the variables hpceval set, not the whole environment
    status: ExecutionStatus
    exit_code: int | None
    started: float  # Unix time
    ended: float
    stdout_tail: str = ""
    stderr_tail: str = ""
    error: str = ""  # one line: why it failed
