"""The options every analysis command shares, spelled the same everywhere: the statistics
policy (--statistic, --min-repetitions) and the origins (--baseline-origin,
--allow-mixed-origins). Error messages name these flags, never Python parameters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from hpceval.analysis.policy import (
    MIN_REPETITIONS_VARIABLE,
    STATISTIC_VARIABLE,
    STATISTICS,
    StatisticPolicy,
    policy_from_environment,
)

StatisticOption = Annotated[
    str | None,
    typer.Option(
        "--statistic",
        envvar=STATISTIC_VARIABLE,
        help=f"Statistic of every value, interval and ratio: {', '.join(STATISTICS)} "
        "(mean over iterations is the IMB/OSU convention) \\[default: median]. "
        "See docs/statistics.md.",
        show_default=False,
    ),
]
MinRepetitionsOption = Annotated[
    int | None,
    typer.Option(
        "--min-repetitions",
        envvar=MIN_REPETITIONS_VARIABLE,
        min=1,
        help="Independent repetitions a verdict needs on each side \\[default: 3].",
        show_default=False,
    ),
]
BaselineOriginOption = Annotated[
    str | None,
    typer.Option(
        "--baseline-origin",
        help="Origin of the baseline's data when it has several: measured, emulated or simulated.",
    ),
]
OriginOption = Annotated[
    str | None,
    typer.Option("--origin", help="Only data of this origin: measured, emulated or simulated."),
]
AllowMixedOriginsOption = Annotated[
    bool,
    typer.Option(
        "--allow-mixed-origins",
        help="Put measured, emulated and simulated data side by side (every row is "
        "labelled with its origin).",
    ),
]


def policy_option(statistic: str | None, min_repetitions: int | None = None) -> StatisticPolicy:
    """The policy of the options (or of $HPCEVAL_STATISTIC / $HPCEVAL_MIN_REPETITIONS)."""
    return policy_from_environment(statistic, min_repetitions)


def origin_option(value: str | None) -> Any:
    """--baseline-origin as an Origin (None when not given); a UserError naming the flag."""
    from hpceval.errors import UserError
    from hpceval.model import Origin

    if value is None:
        return None
    try:
        return Origin(value)
    except ValueError:
        names = ", ".join(o.value for o in Origin)
        raise UserError(f"--baseline-origin {value!r}: expected one of {names}") from None


def origin_rows(frame: Any, origin: str | None, allow_mixed: bool) -> Any:
    """The frame's rows of one origin (--origin), else all of them when they are of one
    origin or `allow_mixed` (--allow-mixed-origins); a UserError naming both flags
    otherwise."""
    from hpceval.errors import UserError
    from hpceval.model import Origin

    names = [o.value for o in Origin]
    if origin is not None and origin not in names:
        raise UserError(f"--origin {origin!r}: expected one of {', '.join(names)}")
    present = sorted(str(o) for o in frame["origin"].unique())
    if origin is not None:
        if origin not in present:
            raise UserError(f"--origin {origin}: no {origin} data (there is {', '.join(present)})")
        return frame.loc[(frame["origin"] == origin).to_numpy()]
    if len(present) > 1 and not allow_mixed:
        raise UserError(
            f"the data are {' and '.join(present)}: choose one with --origin, or put them "
            "side by side deliberately with --allow-mixed-origins"
        )
    return frame


def platform_pairs(items: Sequence[str] | None, option: str, what: str) -> dict[str, str]:
    """The PLATFORM=VALUE items of a repeatable option (--instance, --node-tflops)."""
    from hpceval.errors import UserError

    out: dict[str, str] = {}
    for item in items or []:
        platform, sep, value = item.partition("=")
        if not sep or not platform.strip() or not value.strip():
            raise UserError(f"{option} {item!r}: expected PLATFORM={what}")
        out[platform.strip()] = value.strip()
    return out


def node_peaks(items: Sequence[str] | None) -> dict[str, float]:
    """--node-tflops PLATFORM=TFLOPS items: the peak of one node of each platform."""
    from hpceval.errors import UserError

    peaks: dict[str, float] = {}
    for platform, text in platform_pairs(items, "--node-tflops", "TFLOPS").items():
        try:
            peak = float(text)
        except ValueError:
            peak = math.nan
        if not (math.isfinite(peak) and peak > 0):
            raise UserError(f"--node-tflops {platform}={text}: not a positive number")
        peaks[platform] = peak
    return peaks
