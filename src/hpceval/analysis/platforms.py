"""What the runs of a database say about their platforms: the platform file each ran with
(for the default placements of `compare`) and the caveats that qualify their results
(an emulated platform's limits, recorded in its runs' provenance)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Final

from pydantic import ValidationError

from hpceval.config import PlatformConfig
from hpceval.model import Origin
from hpceval.provenance import emulation_limits
from hpceval.store import Store

# An emulated run recorded before its limits were part of the provenance.
EMULATED_WITHOUT_LIMITS: Final = (
    "emulated on this machine: the nodes share its cores; not hardware figures"
)
SIMULATED: Final = "simulated (SimGrid): a projection from calibrated models, not a measurement"


@dataclass(frozen=True)
class PlatformContext:
    """Per platform name: its latest platform file and its results' caveats."""

    configs: dict[str, PlatformConfig] = field(default_factory=dict)
    caveats: dict[str, list[str]] = field(default_factory=dict)

    def caveat_lines(self, platforms: list[str] | None = None) -> list[str]:
        """`platform: caveat` lines for the platforms named (every one by default)."""
        names = sorted(self.caveats) if platforms is None else platforms
        return [f"{p}: {c}" for p in names for c in self.caveats.get(p, [])]


def platform_context(store: Store) -> PlatformContext:
    context = PlatformContext()
    for run in sorted(store.runs(), key=lambda r: r.id):
        _, raw = store.platform_config(run.platform_id)
        # A platform file of an older version: its default placement stays unknown.
        with contextlib.suppress(ValidationError):
            context.configs[run.platform_name] = PlatformConfig.model_validate(raw)
        caveats: list[str] = []
        if run.origin is Origin.EMULATED:
            caveats = emulation_limits(store.environment(run.environment_id))
            caveats = caveats or [EMULATED_WITHOUT_LIMITS]
        elif run.origin is Origin.SIMULATED:
            caveats = [SIMULATED]
        if caveats:
            context.caveats[run.platform_name] = caveats
    return context
