"""Whether two runs of one platform were measured on the same setup.

A platform's stored runs may span a change of what they measure: another MPI library or
version, another compiler or its flags, another CPU or kernel (a resized or moved instance),
another shaping of an emulated network, another MPI transport. Pooling their figures (the
simulator's calibration and --validate pool every run of a platform) would then mix two
platforms. The facts compared are those that change the figures; the rest of the
provenance (host names, a dirty tree, the 8-byte latency the transport probe timed) differs
from run to run without changing the setup. A fact only one of the two runs recorded (an
older provenance) is not a difference: nothing says it changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

# (section, key) pairs compared as they are.
PLAIN_FACTS: Final = (
    ("mpi", "implementation"),
    ("mpi", "version"),
    ("compiler", "command"),
    ("compiler", "version"),
    ("cpu", "model"),
    ("cpu", "sockets"),
    ("cpu", "cores"),
    ("cpu", "threads"),
    ("os", "kernel"),
    ("virtualization", "kind"),
    ("container", "kind"),
)
# Each path's transport (inter-node, intra-node): what carries the messages.
TRANSPORT_FACTS: Final = ("library", "kind", "pml", "mtl", "components", "single_copy")
# An emulated network's shaping: everything but its limits (prose about the emulation).
EMULATION_SKIPPED: Final = frozenset({"limits"})


def _facts(facts: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(dotted name, value) of every compared fact `facts` records."""

    def section(name: str) -> Mapping[str, Any]:
        value = facts.get(name)
        return value if isinstance(value, Mapping) else {}

    for name, key in PLAIN_FACTS:
        if section(name).get(key) is not None:
            yield f"{name}.{key}", section(name)[key]
    # "npb: -O3 -march=native": one entry per benchmark built; compared benchmark by
    # benchmark, since a run builds only the benchmarks its suite has.
    cflags = section("compiler").get("cflags")
    if isinstance(cflags, list | tuple):
        for entry in cflags:
            benchmark, _, flags = str(entry).partition(": ")
            yield f"compiler.cflags[{benchmark}]", flags
    elif cflags is not None:  # not as hpceval records it: compared as it is
        yield "compiler.cflags", cflags
    for path, transport in sorted(section("transport").items()):
        if isinstance(transport, Mapping):
            for key in TRANSPORT_FACTS:
                if transport.get(key) is not None:
                    yield f"transport.{path}.{key}", transport[key]
    for key, value in sorted(section("emulation").items()):
        if key not in EMULATION_SKIPPED and value is not None:
            yield f"emulation.{key}", value


def setup_differences(facts: Mapping[str, Any], reference: Mapping[str, Any]) -> list[str]:
    """The compared facts both runs recorded and that differ: "mpi.version 4.1.2 (4.1.4)",
    the value of `facts` first, the reference's in brackets; empty: the same setup."""
    mine, theirs = dict(_facts(facts)), dict(_facts(reference))
    return [f"{name} {_text(mine[name])} ({_text(theirs[name])})"
            for name in mine if name in theirs and mine[name] != theirs[name]]  # fmt: skip


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "+".join(map(str, value)) or "none"
    return str(value)
