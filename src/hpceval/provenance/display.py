"""Display: facts as the lines `hpceval doctor` and `hpceval show` print."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpceval.units import format_bytes


def _get(facts: Mapping[str, Any], *keys: str) -> Any:
    value: Any = facts
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _or_unknown(value: Any) -> str:
    return "?" if value is None else str(value)


def _count(value: Any, noun: str) -> str:
    if value is None:
        return f"? {noun}s"
    return f"{value} {noun}" if value == 1 else f"{value} {noun}s"


def summarize(facts: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The lines worth showing in a terminal, as (label, value) pairs.

    Tolerates facts with missing topics (older or partial records)."""
    lines: list[tuple[str, str]] = []
    flags = _get(facts, "cpu", "flags") or {}
    isa = " ".join(f for f in ("avx2", "avx512f") if flags.get(f))
    cpu = _or_unknown(_get(facts, "cpu", "model"))
    lines.append(("CPU", f"{cpu} [{isa}]" if isa else cpu))
    counts = [
        _count(_get(facts, "cpu", key), noun)
        for key, noun in (
            ("sockets", "socket"),
            ("cores", "core"),
            ("threads", "thread"),
            ("numa_nodes", "NUMA node"),
        )
    ]
    lines.append(("Cores", ", ".join(counts)))
    caches = _get(facts, "cpu", "caches") or {}
    lines.append(
        (
            "Caches",
            ", ".join(f"{k.upper()} {format_bytes(caches.get(k))}" for k in ("l1d", "l2", "l3")),
        )
    )
    lines.append(("Memory", format_bytes(_get(facts, "memory", "total_bytes"))))
    lines.append(
        (
            "OS",
            f"{_or_unknown(_get(facts, 'os', 'name'))}, "
            f"kernel {_or_unknown(_get(facts, 'os', 'kernel'))}",
        )
    )
    hypervisor = _or_unknown(_get(facts, "virtualization", "kind"))
    lines.append(("Hypervisor", "none (bare metal)" if hypervisor == "none" else hypervisor))
    lines.append(("Container", _or_unknown(_get(facts, "container", "kind"))))
    lines.append(("Network path", _or_unknown(_get(facts, "network", "path"))))
    mpi = _get(facts, "mpi")
    if isinstance(mpi, Mapping):
        text = f"{mpi.get('implementation')} {_or_unknown(mpi.get('version'))}"
        if mpi.get("device") is not None or mpi.get("jvm") is not None:
            # Java ranks (MPJ Express): its device and the JVM.
            text += f" ({mpi.get('device')} device, JVM {_or_unknown(mpi.get('jvm'))})"
        if mpi.get("consistent") is False:
            text += (
                f" (mpicc is {mpi.get('wrapper_implementation')} "
                f"{_or_unknown(mpi.get('wrapper_version'))})"
            )
        lines.append(("MPI", text))
    else:
        lines.append(("MPI", "?"))
    compiler = _or_unknown(_get(facts, "compiler", "version"))
    cflags = " ".join(_get(facts, "compiler", "cflags") or [])
    lines.append(("Compiler", f"{compiler} {cflags}".strip()))
    revision = _get(facts, "hpceval", "revision")
    version = _or_unknown(_get(facts, "hpceval", "version"))
    if revision:
        dirty = ", dirty" if _get(facts, "hpceval", "dirty") else ""
        version += f" ({str(revision)[:12]}{dirty})"
    lines.append(("hpceval", version))
    for limit in emulation_limits(facts):
        lines.append(("Emulation", limit))
    return lines


def emulation_limits(facts: Mapping[str, Any]) -> list[str]:
    """The limits of an emulated platform recorded with a run (none on real hardware)."""
    limits = _get(facts, "emulation", "limits")
    return [str(x) for x in limits] if isinstance(limits, list) else []
