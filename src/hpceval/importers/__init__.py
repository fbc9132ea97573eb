"""Importers: results of programs that hpceval did not run itself, brought into the store.

Each importer is one module with a pure parser (text -> report) and an `import_*` function
that validates every file before it writes anything, then records one run of its own.
"""

from __future__ import annotations

from hpceval.importers.npb import NpbOutputError, NpbReport, import_npb, parse_npb_output

__all__ = ["NpbOutputError", "NpbReport", "import_npb", "parse_npb_output"]
