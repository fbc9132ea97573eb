"""Implementations are never mixed silently: hpceval's own programs and the official codes
(and two versions of an official code) measure under different benchmark names or different
implementation labels (model.Measurement.implementation), and a comparison whose sides hold
the same benchmark measured by different implementations is refused unless asked for, then
labelled."""

from __future__ import annotations

from collections.abc import Collection, Iterable

MIX_FLAG = "--mix-implementations"


def mixed_implementations(
    rows: Iterable[tuple[str, str, str]], platforms: Collection[str]
) -> list[str]:
    """One line per benchmark that `platforms` measured with no implementation in common
    (points pair only with the same implementation's, so nothing of it would pair), from
    (platform, benchmark, implementation) rows: "npb-official: official/NPB 3.4.2 on a;
    official/NPB 3.4.3 on b". A platform that ran C and Java (a `standard` suite on local)
    shares the C implementation with a C platform: its Java points are then left unpaired,
    not mixed."""
    found: dict[str, dict[str, set[str]]] = {}
    for platform, benchmark, implementation in rows:
        if platform in platforms:
            found.setdefault(benchmark, {}).setdefault(implementation, set()).add(platform)
    lines = []
    for benchmark, by_implementation in sorted(found.items()):
        measured_on = set().union(*by_implementation.values())
        shared = [i for i, names in by_implementation.items() if names == measured_on]
        if len(by_implementation) > 1 and not shared:
            where = "; ".join(
                f"{implementation} on {', '.join(sorted(names))}"
                for implementation, names in sorted(by_implementation.items())
            )
            lines.append(f"{benchmark}: {where}")
    return lines


def refusal(lines: list[str]) -> str:
    """The one-line error of a mixed comparison."""
    return (
        f"the platforms' measurements of {lines[0]} come from different implementations "
        f"({len(lines)} benchmark(s)); compare them anyway with {MIX_FLAG} (then labelled)"
    )
