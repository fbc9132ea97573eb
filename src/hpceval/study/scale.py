"""Scaling a study's design down to the platform at hand: rank counts to its cores, processes
and threads per node to a node's cores, message sizes to a node's memory, NPB classes to what
fits (the benchmark's own memory estimate decides), fio files to the free disk; and, when the
user asks for the smallest sizes (a time-boxed run), each entry's `smallest` options. Every
change is a note: the study stores and prints what it scaled down."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hpceval.benchmarks import find_benchmark
from hpceval.benchmarks.npb import available_memory_per_node
from hpceval.config import PlatformConfig, parse_size, parse_sizes
from hpceval.errors import UserError

CLASS_ORDER = ("S", "W", "A", "B", "C", "D", "E")
# A message lives in a send and a receive buffer, twice over for the collectives' work
# arrays: four buffers per rank, every core of the node running a rank.
BUFFERS_PER_RANK = 4
# fio may take half of the free space (the rest is the user's).
DISK_SHARE = 0.5
MIN_FIO_SIZE = 4 * 2**20
DEFAULT_FIO_DIRECTORY = "/var/tmp"


@dataclass
class Capacity:
    """What the platform offers a study."""

    nodes: int
    cores_per_node: int
    memory_per_node: int | None  # bytes; None: unknown (nothing is scaled by memory)
    max_ranks: int | None = None  # the user's cap (a time box)

    @classmethod
    def of(cls, platform: PlatformConfig, max_ranks: int | None = None) -> Capacity:
        return cls(
            platform.nodes,
            platform.resolved_cores_per_node(),
            available_memory_per_node(platform),
            max_ranks,
        )

    @property
    def ranks(self) -> int:
        cores = self.nodes * self.cores_per_node
        return min(cores, self.max_ranks) if self.max_ranks else cores


@dataclass
class Scaled:
    options: dict[str, Any] | None  # None: nothing of the entry fits
    notes: list[str] = field(default_factory=list)


def scale_entry(
    options: Mapping[str, Any], capacity: Capacity, platform: PlatformConfig, *, smallest: bool
) -> Scaled:
    """The entry's options as this platform can run them, with a note per change."""
    name = options["name"]
    opts = {k: v for k, v in options.items() if k != "smallest"}
    notes: list[str] = []
    if smallest and isinstance(options.get("smallest"), Mapping):
        for key, value in options["smallest"].items():
            if opts.get(key) != value:
                notes.append(f"{name}: {key} {opts.get(key)!r} -> {value!r} (smallest sizes asked)")
            opts[key] = value
    for key, limit, why in (
        ("ranks", capacity.ranks, f"{capacity.ranks} ranks available"),
        ("ranks_per_node", capacity.cores_per_node, f"{capacity.cores_per_node} cores per node"),
        ("threads_per_rank", capacity.cores_per_node, f"{capacity.cores_per_node} cores per node"),
    ):
        values = opts.get(key)
        if isinstance(values, list):
            kept = [v for v in values if v <= limit]
            if kept != values:
                notes.append(f"{name}: {key} {values} -> {kept} ({why})")
                if not kept:
                    return Scaled(None, notes)
                opts[key] = kept
    if name == "mpibench" and capacity.memory_per_node is not None and "sizes" in opts:
        limit = capacity.memory_per_node // (BUFFERS_PER_RANK * capacity.cores_per_node)
        opts["sizes"] = _sizes_within(name, opts["sizes"], limit, notes)
    if name == "fio" and "size" in opts:
        _fit_disk(opts, notes)
    if "classes" in opts and not _fit_classes(opts, platform, notes):
        return Scaled(None, notes)
    return Scaled(opts, notes)


def _sizes_within(name: str, sizes: Any, limit: int, notes: list[str]) -> Any:
    parsed = parse_sizes(sizes)
    if max(parsed) <= limit:
        return sizes
    largest = max(s for s in (2**k for k in range(63)) if s <= limit)
    notes.append(
        f"{name}: message sizes up to {max(parsed)} B -> up to {largest} B "
        f"(a node's memory holds {BUFFERS_PER_RANK} buffers per core)"
    )
    if isinstance(sizes, list):
        return [s for s in sizes if parse_size(s) <= largest]
    low = str(sizes).split("..")[0]
    return f"{low}..{largest}"


def _fit_disk(opts: dict[str, Any], notes: list[str]) -> None:
    directory = Path(str(opts.get("directory", DEFAULT_FIO_DIRECTORY)))
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return  # fio itself says what is wrong with the directory
    jobs = int(opts.get("numjobs", 1))
    size = parse_size(opts["size"])
    allowed = int(free * DISK_SHARE) // jobs
    if size <= allowed:
        return
    fitted = max(MIN_FIO_SIZE, (allowed // MIN_FIO_SIZE) * MIN_FIO_SIZE)
    notes.append(
        f"fio: size {opts['size']} x {jobs} jobs -> {fitted // 2**20} MiB per job "
        f"({free / 1e9:.1f} GB free in {directory})"
    )
    opts["size"] = f"{fitted // 2**20}MiB"


def _fit_classes(opts: dict[str, Any], platform: PlatformConfig, notes: list[str]) -> bool:
    """Step the largest class down until the benchmark's memory estimate fits the node."""
    bench = find_benchmark(str(opts["name"]))
    if bench is None:
        return True
    settings_of = {k: v for k, v in opts.items() if k != "name"}
    while True:
        try:
            bench.cases(bench.parse_options(settings_of), platform, 0)
            opts["classes"] = settings_of["classes"]
            return True
        except (UserError, ValidationError, ValueError) as e:
            if "needs about" not in str(e):  # not a memory problem: planning says it later
                opts["classes"] = settings_of["classes"]
                return True
            classes = list(settings_of["classes"])
            largest = max(classes, key=CLASS_ORDER.index)
            index = CLASS_ORDER.index(largest)
            smaller = CLASS_ORDER[index - 1] if index else None
            rest = [c for c in classes if c != largest]
            if smaller is not None and smaller not in rest:
                rest.append(smaller)
            notes.append(f"{opts['name']}: classes {classes} -> {rest} ({e})")
            if not rest:
                return False
            settings_of["classes"] = sorted(rest, key=CLASS_ORDER.index)
