"""The JSON-lines records hpceval's C programs print (header, points/results, end, error)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hpceval.errors import BenchmarkFailure
from hpceval.model import Placement


def decode_record(line: str, program: str) -> dict[str, Any] | None:
    """One record; None for blank or foreign lines (an MPI library's warnings on stdout)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchmarkFailure(f"{program} printed a malformed record: {e}") from None
    if not isinstance(record, dict) or "record" not in record:
        raise BenchmarkFailure(f"{program} printed a record without a type")
    return record


def check_program_header(
    record: Mapping[str, Any], program: str, protocol: str, placement: Placement
) -> None:
    """The header names the program and a protocol we read, and ran where it was placed."""
    if record.get("program") != program:
        raise BenchmarkFailure(f"unexpected program {record.get('program')!r} in header")
    if str(record.get("version", "")).split(".")[0] != protocol.split(".")[0]:
        raise BenchmarkFailure(f"{program} protocol {record.get('version')} is not supported")
    if record.get("nranks") != placement.ranks:
        raise BenchmarkFailure(
            f"{program} ran on {record.get('nranks')} ranks, expected {placement.ranks}"
        )
    distinct = len(set(record.get("hosts") or []))
    if distinct != placement.nodes:
        raise BenchmarkFailure(
            f"placement check: ranks ran on {distinct} host(s), expected {placement.nodes}"
        )
