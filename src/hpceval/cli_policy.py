"""The options every analysis command shares, spelled the same everywhere: the statistics
policy (--statistic, --min-repetitions) and the origins (--baseline-origin,
--allow-mixed-origins). Error messages name these flags, never Python parameters."""

from __future__ import annotations

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
        help="Origin of the baseline's data when it has several: measured, emulated or "
        "simulated.",
    ),
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
