"""Suite and platform files: TOML validated into typed models.

Every error names the file and the field (`suites/x.toml: benchmark[0].sizes: ...`) and is
raised before anything is measured or written.
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
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from hpceval.errors import ConfigError, UserError

BINDINGS = ("core", "socket", "numa", "hwthread", "none")


class StrictModel(BaseModel):
    # Unknown keys are errors: a typo in a suite must not silently fall back to a default.
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- platforms


class LauncherConfig(BaseModel):
    """The common launcher settings; each launcher kind validates its own extra keys
    (`Launcher.options_model`), so a typo is an error naming `launcher.<key>`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str = "local"
    mpirun: str = "mpirun"
    mpicc: str = "mpicc"
    extra_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    # Allow more ranks on a node than it has cores (needed for 4 ranks on a 2-core machine).
    oversubscribe: bool = True

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


class PriceConfig(StrictModel):
    per_node_hour: float = Field(ge=0)
    currency: str = "USD"
    pricing: Literal["on-demand", "reserved", "spot", "academic", "on-premise"] = "on-demand"
    source: str = ""
    date: str = ""


class PlatformConfig(StrictModel):
    name: str
    description: str = ""
    launcher: LauncherConfig = LauncherConfig()
    nodes: int = Field(1, ge=1)
    hosts: list[str] = Field(default_factory=list)
    # "auto": the cores of this machine (only meaningful for the local launcher).
    cores_per_node: int | Literal["auto"] = "auto"
    sockets_per_node: int | None = Field(None, ge=1)
    memory_gb_per_node: float | None = Field(None, gt=0)
    interconnect: InterconnectConfig = InterconnectConfig()
    price: PriceConfig | None = None
    cflags: list[str] = Field(default_factory=lambda: ["-O2"])

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


# --------------------------------------------------------------------------- suites


class BenchmarkEntry(BaseModel):
    """One `[[benchmark]]` table: `name` picks the benchmark, which validates the rest."""

    model_config = ConfigDict(extra="allow", frozen=True)
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


_FIELD_PREFIX = re.compile(r"^([a-z_]+): (.*)$", re.S)


def validation_message(err: ValidationError) -> tuple[str, str]:
    """The first error as (field path, message): one line, the user fixes one thing at a time."""
    first = err.errors()[0]
    msg = first["msg"].removeprefix("Value error, ")
    loc = tuple(first["loc"])
    # Cross-field validators raise "field: cause"; move the field into the location.
    if first["type"] == "value_error" and (m := _FIELD_PREFIX.match(msg)):
        loc, msg = (*loc, m.group(1)), m.group(2)
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    elif first["type"] == "missing":
        msg = "required field is missing"
    more = len(err.errors()) - 1
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return format_location(loc), msg


def read_toml(path: Path, source: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror}", source=source) from e
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"malformed TOML: {e}", source=source) from e


def _shipped_dir(kind: str) -> Traversable:
    return importlib.resources.files("hpceval") / "data" / kind


def shipped_names(kind: Literal["suites", "platforms"]) -> list[str]:
    return sorted(
        p.name.removesuffix(".toml")
        for p in _shipped_dir(kind).iterdir()
        if p.name.endswith(".toml")
    )


def resolve(kind: Literal["suites", "platforms"], name_or_file: str) -> tuple[Path, str]:
    """A shipped name or a file path -> (path, display source)."""
    candidate = Path(name_or_file)
    if name_or_file.endswith(".toml") or os.sep in name_or_file or candidate.is_file():
        if not candidate.is_file():
            raise UserError(f"{name_or_file}: no such {kind[:-1]} file")
        return candidate, str(candidate)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name_or_file):
        raise UserError(f"{name_or_file!r} is not a valid {kind[:-1]} name")
    shipped = _shipped_dir(kind) / f"{name_or_file}.toml"
    if not shipped.is_file():
        known = ", ".join(shipped_names(kind))
        raise UserError(f"unknown {kind[:-1]} {name_or_file!r} (shipped: {known}; or give a file)")
    with importlib.resources.as_file(shipped) as p:
        return Path(p), f"{kind}/{name_or_file}.toml"


def load_platform(name_or_file: str) -> Loaded[PlatformConfig]:
    path, source = resolve("platforms", name_or_file)
    raw = read_toml(path, source)
    try:
        platform = PlatformConfig.model_validate(raw)
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=field) from e
    if platform.hosts and len(platform.hosts) != platform.nodes:
        raise ConfigError(
            f"{len(platform.hosts)} hosts listed but nodes = {platform.nodes}",
            source=source,
            field="hosts",
        )
    from hpceval.launch import get_launcher_class

    try:
        launcher_cls = get_launcher_class(platform.launcher.kind)
    except UserError as e:
        raise ConfigError(str(e), source=source, field="launcher.kind") from e
    try:
        launcher_cls.validate_options(platform.launcher.options())
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=f"launcher.{field}") from e
    except ValueError as e:
        if m := _FIELD_PREFIX.match(str(e)):
            raise ConfigError(m.group(2), source=source, field=f"launcher.{m.group(1)}") from e
        raise ConfigError(str(e), source=source, field="launcher") from e
    return Loaded(platform, source, raw)


def load_suite(name_or_file: str) -> Loaded[SuiteConfig]:
    path, source = resolve("suites", name_or_file)
    raw = read_toml(path, source)
    try:
        suite = SuiteConfig.model_validate(raw)
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=field) from e
    # Each benchmark validates its own options, so errors name the exact field.
    from hpceval.benchmarks import get_benchmark

    for i, entry in enumerate(suite.benchmark):
        where = f"benchmark[{i}]"
        try:
            bench = get_benchmark(entry.name)
        except UserError as e:
            raise ConfigError(str(e), source=source, field=f"{where}.name") from e
        try:
            entry._settings = bench.parse_options(entry.options())
        except ValidationError as e:
            field, msg = validation_message(e)
            raise ConfigError(msg, source=source, field=f"{where}.{field}") from e
        except ValueError as e:
            raise ConfigError(str(e), source=source, field=where) from e
    return Loaded(suite, source, raw)


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
