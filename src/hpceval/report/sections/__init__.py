"""The sections of the report, each built from the measurement frame by the analysis library.

Everything is aggregated before it is drawn: `pooled_points` pools the raw samples of every
(platform, origin, point) once, column-wise, and the sections select from that table; the
analyses (`fit_network`, `scaling`, `placement_sweeps`, `compare`, `cost_table`) do their own
vectorized pooling. Loops run over series, panels and figures, which are bounded by the
`MAX_*` constants of sections/base.py, never over measurements.

A section without data has an `empty` line saying what would fill it.

Each module of this package builds one section and registers its builder by name
(`register`); `PAGE_ORDER` places the sections on the page and `BUILD_FIRST` names the parts
the parallel build starts first. Adding a section is adding a module and its name there.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from hpceval.report.sections.base import Context, PriceSource, Section, joined_sections

# The report's sections, top to bottom of the page, by the name each module registers.
PAGE_ORDER: Final = (
    "findings",
    "summary",
    "point_to_point",
    "collectives",
    "hpcc",
    "npb",
    "java",
    "placement",
    "heatmap",
    "container",
    "cost",
    "other",
    "history",
    "provenance",
)
# The parts the parallel build starts first, longest first (measured on the 1M-measurement
# benchmark database), so that the workers finish together; the rest follow in page order.
BUILD_FIRST: Final = (
    "heatmap",
    "collectives",
    "npb",
    "point_to_point/others",
    "point_to_point/pingpong",
    "hpcc",
)

SectionBuilder = Callable[[Context], Section]


@dataclass(frozen=True)
class SectionPart:
    """A builder of one section, or of one part of a section built in parts (joined, in the
    order they were registered, by `joined_sections`)."""

    section: str
    part: str | None
    build: SectionBuilder

    @property
    def name(self) -> str:
        return self.section if self.part is None else f"{self.section}/{self.part}"


_REGISTRY: dict[str, list[SectionPart]] = {}


def register(section: str, build: SectionBuilder, *, part: str | None = None) -> None:
    """Register the builder of `section` (a name of PAGE_ORDER), or of one of its parts."""
    if section not in PAGE_ORDER:
        raise RuntimeError(f"report section {section!r} is not in PAGE_ORDER")
    parts = _REGISTRY.setdefault(section, [])
    if any(p.part is None or p.part == part for p in parts) or (part is None and parts):
        raise RuntimeError(f"report section {section!r} (part {part!r}) registered twice")
    parts.append(SectionPart(section, part, build))


def section_parts() -> list[SectionPart]:
    """Every registered builder, in page order (the parts of a section in their order)."""
    missing = [name for name in PAGE_ORDER if name not in _REGISTRY]
    if missing:
        raise RuntimeError(f"report sections without a builder: {missing}")
    return [part for name in PAGE_ORDER for part in _REGISTRY[name]]


def build_order(parts: Sequence[SectionPart]) -> list[int]:
    """The indices of `parts` in the order the parallel build starts them: BUILD_FIRST,
    then the others in page order."""
    index = {part.name: i for i, part in enumerate(parts)}
    unknown = [name for name in BUILD_FIRST if name not in index]
    if unknown:
        raise RuntimeError(f"BUILD_FIRST names no registered part: {unknown}")
    first = [index[name] for name in BUILD_FIRST]
    return first + [i for i in range(len(parts)) if i not in first]


def joined_by_section(parts: Sequence[SectionPart], built: Sequence[Section]) -> list[Section]:
    """The sections of the page from the parts `built` (in the order of `parts`)."""
    sections: dict[str, list[Section]] = {}
    for part, section in zip(parts, built, strict=True):
        sections.setdefault(part.section, []).append(section)
    return [joined_sections(*pieces) for pieces in sections.values()]


def _import_all() -> None:
    """Every module of this package registers its section: adding one is adding a module."""
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")


_import_all()

__all__ = [
    "BUILD_FIRST",
    "PAGE_ORDER",
    "Context",
    "PriceSource",
    "Section",
    "SectionBuilder",
    "SectionPart",
    "build_order",
    "joined_by_section",
    "joined_sections",
    "register",
    "section_parts",
]
