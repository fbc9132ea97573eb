"""How the report draws things: one style per origin, one colour per platform, safe labels.

Measured, emulated and simulated data must never look alike (methodology: simulated numbers
are projections, emulated ones ran on a pretend cluster), so each origin has its own line
style, marker, bar hatch and legend suffix, used by every figure of the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from matplotlib import colormaps
from matplotlib.colors import to_hex, to_rgb

from hpceval.model import Origin


@dataclass(frozen=True)
class OriginStyle:
    linestyle: str
    marker: str
    filled: bool
    hatch: str
    suffix: str  # appended to legend labels ("" for measured, the default)


ORIGIN_STYLES: Final[dict[str, OriginStyle]] = {
    Origin.MEASURED.value: OriginStyle("-", "o", True, "", ""),
    Origin.EMULATED.value: OriginStyle("--", "s", True, "..", " [emulated]"),
    Origin.SIMULATED.value: OriginStyle(":", "^", False, "//", " [simulated]"),
}
ORIGIN_ORDER: Final[tuple[str, ...]] = tuple(o.value for o in Origin)


def origin_style(origin: str) -> OriginStyle:
    return ORIGIN_STYLES.get(origin, ORIGIN_STYLES[Origin.MEASURED.value])


def mpl_text(text: str) -> str:
    """`text` shown literally by matplotlib: '$' would start mathtext (and a lone one raises)."""
    return text.replace("$", r"\$")


def labelled(platform: str, origin: str, detail: str = "") -> str:
    """A legend label: platform, detail, and the origin unless measured (already escaped)."""
    text = platform + (f", {detail}" if detail else "") + origin_style(origin).suffix
    return mpl_text(text)


class Palette:
    """One colour per platform, the same in every figure of a report."""

    def __init__(self, platforms: Iterable[str]) -> None:
        names = sorted(set(platforms))
        cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
        size = 10 if len(names) <= 10 else 20
        self._colors = {name: to_hex(cmap(i % size)) for i, name in enumerate(names)}

    def color(self, platform: str, shade: int = 0) -> str:
        """The platform's colour; shade k > 0 mixes it with white (another series of it)."""
        base = self._colors.get(platform, "#555555")
        if shade <= 0:
            return base
        mix = min(0.4 * shade, 0.75)
        r, g, b = to_rgb(base)
        return to_hex((r + (1 - r) * mix, g + (1 - g) * mix, b + (1 - b) * mix))
