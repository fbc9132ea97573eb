"""Errors that end a command with a one-line message.

A `UserError` is bad input or a missing tool: the CLI prints its message on one line and
exits with status 2, before anything is written half-way. Anything else is a bug.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input, an unknown name or a missing tool; the message names the file/field/cause."""

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        where = ": ".join(p for p in (source, field) if p)
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(UserError):
    """A suite or platform file that cannot be used (malformed TOML, invalid field)."""


class ToolMissing(UserError):
    """A program hpceval needs (mpicc, mpirun, hwloc...) is not installed."""


class BenchmarkFailure(Exception):
    """A benchmark execution that crashed, timed out, or failed its sanity check.

    Not a UserError: the campaign records it as a failed execution and goes on.
    """


class StartupFailure(BenchmarkFailure):
    """The program's runtime failed to start its ranks, before any of them measured anything,
    by a known race of that runtime (not of the benchmark): the campaign records the failed
    execution and tries the case's execution once more."""


class ImpossibleValue(BenchmarkFailure, ValueError):
    """A figure that cannot be a measurement: inf, nan, a negative time, a rate of zero.

    Raised where output becomes numbers (parsers, Measurement); the execution that printed
    it fails with this reason, and nothing of it is stored."""
