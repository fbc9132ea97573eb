"""Loading suite and platform files with everything their entries name validated: each
benchmark's options, the launcher's scheduler and starter and the keys each of them owns.

The models and the TOML reading are `hpceval.config` (a leaf); this module sits above the
benchmark and launcher registries it consults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hpceval.benchmarks import get_benchmark
from hpceval.config import (
    FIELD_PREFIX,
    Loaded,
    PlatformConfig,
    SuiteConfig,
    read_toml,
    resolve,
    validation_message,
)
from hpceval.errors import ConfigError, UserError
from hpceval.launch import validate_launcher
from hpceval.sources import check_kind


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
    try:
        validate_launcher(platform.launcher)
    except UserError as e:
        raise ConfigError(str(e), source=source, field="launcher.kind") from e
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=f"launcher.{field}") from e
    except ValueError as e:
        if m := FIELD_PREFIX.match(str(e)):
            raise ConfigError(m.group(2), source=source, field=f"launcher.{m.group(1)}") from e
        raise ConfigError(str(e), source=source, field="launcher") from e
    return Loaded(platform, source, raw)


def load_suite(name_or_file: str) -> Loaded[SuiteConfig]:
    path, source = resolve("suites", name_or_file)
    return suite_from_raw(read_toml(path, source), source)


def suite_from_raw(raw: dict[str, Any], source: str) -> Loaded[SuiteConfig]:
    """A suite from its content (a file's, or one a study composes), every entry validated."""
    try:
        suite = SuiteConfig.model_validate(raw)
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=field) from e
    # Each benchmark validates its own options, so errors name the exact field.
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


def with_sources(
    loaded: Loaded[PlatformConfig], given: Mapping[str, str]
) -> Loaded[PlatformConfig]:
    """The platform with `hpceval run --source KIND=PATH` added to its `[sources]` (the
    command line wins); stored with the run as the platform it ran on."""
    if not given:
        return loaded
    for kind, path in given.items():
        check_kind(kind, f"--source {kind}={path}")
    sources = {**loaded.config.sources, **given}
    raw = {**loaded.raw, "sources": sources}
    return Loaded(loaded.config.model_copy(update={"sources": sources}), loaded.source, raw)
