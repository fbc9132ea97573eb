"""`hpceval report`: the HTML report of a results database (Typer)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from hpceval.cli_analysis import NoCacheOption
from hpceval.cli_common import DbOption, console, user_errors
from hpceval.cli_policy import (
    BaselineOriginOption,
    MinRepetitionsOption,
    StatisticOption,
    node_peaks,
    origin_option,
    platform_pairs,
    policy_option,
)
from hpceval.errors import UserError


class _Consoles:
    out: Console = console()


def register_report_command(app: typer.Typer, out: Console) -> None:
    """Add `report` to `app`; it prints where the report went on `out`."""
    _Consoles.out = out
    app.command("report")(user_errors(report_command))


def report_command(
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Directory of the report (new, empty, or a "
            "previous report, whose files are replaced).",
        ),
    ],
    db: DbOption = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Platform the others are compared with "
            "(overhead heat map); without it the heat map is left out.",
        ),
    ] = None,
    catalog: Annotated[
        list[str] | None,
        typer.Option(
            "--catalog",
            help="Price catalog: a shipped name (ec2-cc-2012, csc-2016) "
            "or a TOML file (repeatable). Platform files' `price` tables are used too.",
        ),
    ] = None,
    instance: Annotated[
        list[str] | None,
        typer.Option(
            "--instance",
            help="PLATFORM=ENTRY: price a platform as this catalog "
            "entry (repeatable; default: the entry named like the platform).",
        ),
    ] = None,
    platform: Annotated[
        list[str] | None,
        typer.Option(
            "--platform",
            "-p",
            help="Only these platforms (repeatable; the "
            "baseline is always included) \\[default: every platform].",
        ),
    ] = None,
    currency: Annotated[
        str | None,
        typer.Option(
            "--currency",
            help="Currency of the catalog amounts (converted with the catalog's rates).",
        ),
    ] = None,
    node_tflops: Annotated[
        list[str] | None,
        typer.Option(
            "--node-tflops",
            help="PLATFORM=TFLOPS: the node peak that prices a "
            "platform from a catalog's normalized node-hour (csc-2016).",
        ),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline",
            help="Seconds: the findings name, per NPB problem, the "
            "cheapest priced configuration that finishes within it.",
        ),
    ] = None,
    baseline_origin: BaselineOriginOption = None,
    statistic: StatisticOption = None,
    min_repetitions: MinRepetitionsOption = None,
    no_cache: NoCacheOption = False,
) -> None:
    """Write a self-contained HTML report (DIR/index.html), every figure as PNG and SVG
    (DIR/figures) and every table as CSV (DIR/tables)."""
    from hpceval.report import ReportOptions, generate_report

    instances = platform_pairs(instance, "--instance", "ENTRY")
    if instances and not catalog:
        raise UserError("--instance needs a --catalog to take the entries from")
    peaks = node_peaks(node_tflops)
    origin = origin_option(baseline_origin)
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        raise UserError(f"--deadline {deadline:g}: not a positive number of seconds")
    options = ReportOptions(
        baseline=baseline,
        platforms=platform or None,
        catalogs=tuple(catalog or ()),
        instances=instances,
        currency=currency.upper() if currency else None,
        cache=not no_cache,
        policy=policy_option(statistic, min_repetitions),
        baseline_origin=origin.value if origin is not None else None,
        node_tflops=peaks,
        deadline_s=deadline,
    )
    result = generate_report(db, out_dir, options)
    out = _Consoles.out
    out.print(
        f"wrote {result.index} ({len(result.figures)} figures, {len(result.tables)} tables, "
        f"{result.measurements:,} measurements, {result.seconds:.1f} s)",
        highlight=False,
    )
    if result.empty_sections:
        out.print(f"sections without data: {'; '.join(result.empty_sections)}", highlight=False)
