"""The tables of the results database (schema version SCHEMA_VERSION)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa

SCHEMA_VERSION: Final = 5

EXECUTION_RUNNING: Final = "running"  # executions.status while the command has not ended


class CaseStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # its tool was missing; --resume tries it again


# Facts of an Environment copied into their own indexed columns, so that runs can be selected
# by CPU, hypervisor or MPI without reading JSON: column -> dotted path into the facts that
# hpceval.provenance.collect_environment gathers (a missing one is NULL).
INDEXED_FACTS: Final[Mapping[str, str]] = {
    "cpu_model": "cpu.model",
    "hypervisor": "virtualization.kind",
    "mpi_implementation": "mpi.implementation",
    "mpi_version": "mpi.version",
    "hpceval_version": "hpceval.version",
}


# Stable constraint names, so that a future migration can name what it alters on both dialects.
metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

platforms = sa.Table(
    "platforms",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("config_hash", sa.String(64), nullable=False),  # sha256 of the canonical JSON
    sa.UniqueConstraint("name", "config_hash"),
)

environments = sa.Table(
    "environments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("fingerprint", sa.Text, nullable=False, unique=True),
    sa.Column("facts", sa.JSON, nullable=False),
    *(sa.Column(column, sa.Text, nullable=True, index=True) for column in INDEXED_FACTS),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),  # uuid4: survives merging stores
    sa.Column("suite_name", sa.Text, nullable=False),
    sa.Column("suite_config", sa.JSON, nullable=False),
    sa.Column("platform_id", sa.Integer, sa.ForeignKey("platforms.id"), nullable=False),
    sa.Column("environment_id", sa.Integer, sa.ForeignKey("environments.id"), nullable=False),
    sa.Column("launcher", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("ended", sa.Float, nullable=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("hpceval_version", sa.Text, nullable=False),
    sa.Column("git_revision", sa.Text, nullable=True),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("note", sa.Text, nullable=True),
)

run_cases = sa.Table(
    "run_cases",
    metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("case_key", sa.Text, primary_key=True),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("description", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.UniqueConstraint("run_id", "ordinal"),
)

executions = sa.Table(
    "executions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, nullable=False, index=True),
    sa.Column("case_key", sa.Text, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("argv", sa.JSON, nullable=False),
    sa.Column("env", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("exit_code", sa.Integer, nullable=True),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("ended", sa.Float, nullable=True),
    sa.Column("stdout_tail", sa.Text, nullable=False, default=""),
    sa.Column("stderr_tail", sa.Text, nullable=False, default=""),
    sa.Column("error", sa.Text, nullable=False, default=""),
    # An execution belongs to a case of its run, not merely to the run.
    sa.ForeignKeyConstraint(["run_id", "case_key"], ["run_cases.run_id", "run_cases.case_key"]),
)

# What a measurement measures, once per distinct (origin, benchmark, metric, unit, statistic,
# parameters) (schema version 3): a million measurements share a few thousand series, and the
# analysis reads a measurement's series id instead of six texts (see measurement_columns).
# The measurement keeps those columns too: they are what queries filter on and what a
# RunBundle carries.
series = sa.Table(
    "series",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("key", sa.String(64), nullable=False, unique=True),  # see series_key
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("unit", sa.String(16), nullable=False),
    sa.Column("statistic", sa.String(16), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
)

measurements = sa.Table(
    "measurements",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, nullable=False),
    sa.Column("execution_id", sa.Integer, sa.ForeignKey("executions.id"), nullable=True),
    sa.Column("case_key", sa.Text, nullable=False),
    sa.Column("point_key", sa.Text, nullable=False),
    sa.Column("benchmark", sa.Text, nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("unit", sa.String(16), nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("statistic", sa.String(16), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("statistics", sa.JSON(none_as_null=True), nullable=True),
    # The raw samples as float64, little-endian, one after the other (schema version 3; JSON
    # before): read in bulk as one array, NaN and infinities as they are.
    sa.Column("samples", sa.LargeBinary, nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id"), nullable=False),
    # Whose program measured it (schema version 4): "hpceval", or "official/NPB 3.4.2" for an
    # official code built from the user's sources (model.Measurement.implementation).
    sa.Column("implementation", sa.Text, nullable=False, server_default="hpceval"),
    sa.ForeignKeyConstraint(["run_id", "case_key"], ["run_cases.run_id", "run_cases.case_key"]),
    # Serves "everything of a run" (prefix) and completed_points (the whole key).
    sa.Index("ix_measurements_run_point", "run_id", "case_key", "point_key"),
    sa.Index("ix_measurements_benchmark_metric", "benchmark", "metric"),
)

# SimGrid SMPI calibrations (schema version 2; see hpceval.simulate.calibrate): the fitted
# network factors and host speed of a simulated platform, the residuals per message size
# against the measured (or published) curve they were fitted on, and where that curve came
# from. Simulated runs name the calibration they used by uid (in their suite_config).
calibrations = sa.Table(
    "calibrations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),
    # Same key = same inputs (platform or profile, source curves, SimGrid, options): reusable.
    sa.Column("key", sa.String(64), nullable=False, index=True),
    sa.Column("platform_name", sa.Text, nullable=False),
    sa.Column("source_kind", sa.String(16), nullable=False),  # platform | profile
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("source_run_ids", sa.JSON, nullable=False),
    sa.Column("simgrid_version", sa.Text, nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("residuals", sa.JSON, nullable=False),
    sa.Column("max_residual", sa.Float, nullable=False),
    sa.Column("tolerance", sa.Float, nullable=False),
    sa.Column("iterations", sa.Integer, nullable=False),
    sa.Column("converged", sa.Boolean, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


# Study runs (schema version 5; hpceval.study): one row per `hpceval study run`, and the runs
# it made (one per platform), with what the study scaled down on that platform.
studies = sa.Table(
    "studies",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),
    sa.Column("name", sa.Text, nullable=False, index=True),
    sa.Column("recipe", sa.JSON, nullable=False),  # the recipe file as read
    sa.Column("baseline", sa.Text, nullable=False),
    sa.Column("options", sa.JSON, nullable=False),  # platforms, smallest, max_ranks
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("ended", sa.Float, nullable=True),
)

study_runs = sa.Table(
    "study_runs",
    metadata,
    sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("platform", sa.Text, nullable=False),
    sa.Column("notes", sa.JSON, nullable=False),  # what was scaled down or left out, and why
)


def inserted_id(result: sa.CursorResult[Any]) -> int:
    primary_key = result.inserted_primary_key
    if primary_key is None:  # only an executemany() insert has none
        raise RuntimeError("an insert returned no primary key")
    return int(primary_key[0])


def fact_at(facts: Mapping[str, Any], dotted_path: str) -> str | None:
    value: Any = facts
    for key in dotted_path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return None if value is None else str(value)
