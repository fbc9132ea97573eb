"""Importers: results of programs that hpceval did not run itself, brought into the store.

Each importer has a pure parser (text -> report; for NPB,
hpceval.benchmarks.npb.official_output, which the `npb-official` benchmark uses too) and an
`import_*` function that validates every file before it writes anything, then records one
run of its own.
"""

from __future__ import annotations

from hpceval.benchmarks.npb.official_output import NpbOutputError, NpbReport, parse_npb_output
from hpceval.importers.npb import import_npb

__all__ = ["NpbOutputError", "NpbReport", "import_npb", "parse_npb_output"]
