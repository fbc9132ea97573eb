"""Provenance: the facts of each environment measured."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hpceval.report.sections import register
from hpceval.report.sections.base import Context, Section
from hpceval.report.tables import ReportTable

PROVENANCE_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("cpu", "cpu.model"),
    ("sockets", "cpu.sockets"),
    ("cores", "cpu.cores"),
    ("threads", "cpu.threads"),
    ("memory_gb", "memory.total_bytes"),
    ("hypervisor", "virtualization.kind"),
    ("container", "container.kind"),
    ("nic_io_path", "network.path"),
    ("transport_intra_node", "transport.intra-node.description"),
    ("transport_inter_node", "transport.inter-node.description"),
    ("mpi", "mpi.implementation"),
    ("mpi_version", "mpi.version"),
    ("mpi_device", "mpi.device"),
    ("jvm", "mpi.jvm"),
    ("compiler", "compiler.version"),
    ("cflags", "compiler.cflags"),
    ("os", "os.name"),
    ("kernel", "os.kernel"),
    ("hpceval", "hpceval.version"),
)


def fact(facts: Mapping[str, Any], dotted: str) -> Any:
    value: Any = facts
    for key in dotted.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def provenance_row(facts: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column, dotted in PROVENANCE_FIELDS:
        v = fact(facts, dotted)
        if column == "memory_gb" and isinstance(v, int | float):
            v = round(v / 1e9, 1)
        elif isinstance(v, list):
            v = " ".join(str(x) for x in v)
        elif isinstance(v, Mapping):
            v = ", ".join(f"{k}={x}" for k, x in v.items())
        row[column] = v
    if row["hypervisor"] in (None, "none") and fact(facts, "virtualization.vm") is False:
        row["hypervisor"] = "none (bare metal)"
    return row


def provenance_section(ctx: Context) -> Section:
    table = ctx.provenance
    section = Section(
        "provenance",
        "Appendix: provenance",
        "The machine each platform's runs were measured on (one row per platform and distinct "
        "environment): CPU, hypervisor, NIC driver class (I/O path: native, paravirtual, "
        "SR-IOV, emulated), the transport the MPI library took per pair class (asked of the "
        "library by a probe run), MPI and compiler.",
    )
    if table.empty:
        section.empty = "No provenance recorded."
    else:
        section.tables.append(ReportTable("provenance", "Provenance per platform", table))
    return section


register("provenance", provenance_section)
