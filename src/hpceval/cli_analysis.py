"""The analysis commands of `hpceval`: compare, cost, recommend, fit (Typer + rich).

`register_analysis_commands(app, out)` adds them to the main app; every table they print on
`out` can also be written whole to CSV (`--csv FILE`) and JSON (`--json FILE`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from hpceval.cli_common import DbOption, console, err, user_errors
from hpceval.cli_policy import (
    AllowMixedOriginsOption,
    BaselineOriginOption,
    MinRepetitionsOption,
    OriginOption,
    StatisticOption,
    origin_option,
    origin_rows,
    policy_option,
)
from hpceval.errors import UserError

TOP_DEFAULT: Final = 10


class _Consoles:
    """Where the commands print: the main app's console (set on registration)."""

    out: Console = console()
    err: Console = err


NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Read every measurement from the database, not from the frame cache "
        "(also: HPCEVAL_FRAME_CACHE=off).",
    ),
]
CsvOption = Annotated[
    Path | None, typer.Option("--csv", help="Write every row of the full table to this CSV file.")
]
JsonOption = Annotated[
    Path | None,
    typer.Option("--json", help="Write every row of the full table to this JSON file."),
]


def register_analysis_commands(app: typer.Typer, out: Console) -> None:
    """Add compare and fit to `app` (cost and recommend: hpceval.cli_cost); they print their
    tables on `out`."""
    _Consoles.out = out
    app.command("compare")(user_errors(compare_command))
    app.command("fit")(user_errors(fit_command))


# --------------------------------------------------------------------------- helpers


def _load(
    db: str | None,
    *,
    benchmark: str | None = None,
    metric: str | None = None,
    cache: bool = True,
) -> Any:
    """The measurement frame of the database (through the frame cache unless `cache` is
    False: a database unchanged since the last command is not decoded again); a UserError
    when there is nothing in it."""
    from hpceval.analysis.loading import load_frame
    from hpceval.store import open_store

    with open_store(db, create=False, read_only=True) as store:
        frame = load_frame(store, benchmark=benchmark, metric=metric, cache=cache)
        url = store.url
    if frame.empty:
        what = " ".join(x for x in (benchmark, metric) if x)
        raise UserError(f"{url}: no {what + ' ' if what else ''}measurements")
    return frame


def _mixed_implementations(
    db: str | None, platforms: Sequence[str], benchmark: str | None
) -> list[str]:
    """Benchmarks the compared platforms measured with different implementations."""
    from hpceval.analysis.implementations import mixed_implementations
    from hpceval.store import open_store

    with open_store(db, create=False, read_only=True) as store:
        rows = store.implementations()
    if benchmark is not None:
        rows = [r for r in rows if r[1] == benchmark]
    return mixed_implementations(rows, set(platforms))


def _export(table: pd.DataFrame, csv: Path | None, json: Path | None) -> None:
    """Write the whole table where asked; an unwritable path is a UserError."""
    for path, kind in ((csv, "CSV"), (json, "JSON")):
        if path is None:
            continue
        try:
            if kind == "CSV":
                table.to_csv(path, index=False)
            else:
                table.to_json(path, orient="records", indent=2)
        except OSError as e:
            raise UserError(f"{path}: cannot write the {kind} file ({e.strerror})") from None
        _Consoles.err.print(f"wrote {len(table)} rows to {path}", highlight=False)


def _num(value: Any, digits: int = 4) -> str:
    """A number for a table cell ('—' where missing)."""
    if value is None or value is pd.NA:
        return "—"
    v = float(value)
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞"
    return f"{v:.{digits}g}"


def _value(value: Any) -> str:
    """A parameter value for a table cell ('—' where missing, 2.0 as 2)."""
    if _missing(value):
        return "—"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _parameters(record: Mapping[str, Any], names: Sequence[str]) -> str:
    parts = []
    for name in names:
        value = record.get(name)
        if _missing(value):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(f"{name.removeprefix('parameter.')}={value}")
    return " ".join(parts)


# --------------------------------------------------------------------------- compare


def compare_command(
    baseline: Annotated[
        str, typer.Option("--baseline", "-b", help="The platform the others are compared with.")
    ],
    platforms: Annotated[
        list[str] | None,
        typer.Argument(
            help="Platforms to compare \\[default: every other platform].",
            metavar="PLATFORM...",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    benchmark: Annotated[
        str | None, typer.Option("--benchmark", help="Only this benchmark (mpibench, npb...).")
    ] = None,
    metric: Annotated[
        str | None, typer.Option("--metric", help="Only this metric (latency, time...).")
    ] = None,
    baseline_origin: BaselineOriginOption = None,
    allow_mixed_origins: AllowMixedOriginsOption = False,
    statistic: StatisticOption = None,
    min_repetitions: MinRepetitionsOption = None,
    mix_implementations: Annotated[
        bool,
        typer.Option(
            "--mix-implementations",
            help="Compare a benchmark measured by different implementations (official code "
            "versions) on the platforms; the rows are then labelled.",
        ),
    ] = False,
    top: Annotated[
        int, typer.Option("--top", min=0, help="Significant differences to show.")
    ] = TOP_DEFAULT,
    placement: Annotated[
        str,
        typer.Option(
            "--placement",
            help="Which placements are paired: default (each platform as a user would run "
            "it), best (each platform's best measured placement), same (like for like).",
        ),
    ] = "default",
    csv: CsvOption = None,
    json: JsonOption = None,
    no_cache: NoCacheOption = False,
) -> None:
    """Compare platforms with a baseline by workload: ratios with confidence intervals,
    verdicts and overhead summaries per category."""
    from hpceval.analysis.compare import compare
    from hpceval.analysis.matching import MODE_QUESTIONS, parse_mode

    mode = parse_mode(placement)
    policy = policy_option(statistic, min_repetitions)
    frame = _load(db, benchmark=benchmark, metric=metric, cache=not no_cache)
    context = _platform_context(db)
    result = compare(
        frame,
        baseline,
        platforms=platforms or None,
        baseline_origin=origin_option(baseline_origin),
        allow_mixed_origins=allow_mixed_origins,
        policy=policy,
        placement=mode,
        platform_configs=context.configs,
        mix_implementations=mix_implementations,
    )
    out = _Consoles.out
    mixed = _mixed_implementations(db, [baseline, *result.platforms], benchmark)
    if mixed and not mix_implementations:
        from hpceval.analysis.implementations import refusal

        raise UserError(refusal(mixed))
    for line in mixed:
        out.print(f"implementations mixed: {line}", style="yellow", highlight=False)
    table = result.table
    if table.empty:
        raise UserError(
            f"no point was measured on both the baseline {baseline!r} and "
            f"{', '.join(result.platforms) or 'another platform'}"
        )
    out.print(policy.describe(), highlight=False)
    summary = Table(
        title=f"overhead against {baseline} ({result.baseline_origin.value}), "
        f"{MODE_QUESTIONS[mode]}: geometric mean of the {policy.statistic} performance ratio "
        f"(> 1: better than the baseline), CIs by {result.method}",
        title_justify="left",
    )
    for col in ("platform", "category", "points", "geomean", "overhead", "GSD", "min", "max"):
        summary.add_column(col, justify="left" if col in ("platform", "category") else "right")
    for col in ("faster", "slower", "n.s.", "too few reps", "undet."):
        summary.add_column(col, justify="right")
    for s in result.summaries:
        name = f"{s.platform} ({s.origin.value})"
        summary.add_row(
            name,
            s.category.value,
            str(s.points),
            f"{s.geomean:.4f}",
            f"{s.overhead:+.1%}",
            f"{s.geometric_sd:.3f}",
            f"{s.minimum:.4f}",
            f"{s.maximum:.4f}",
            str(s.faster),
            str(s.slower),
            str(s.no_difference),
            str(s.too_few),
            str(s.undetermined),
        )
    out.print(summary)

    # Placements (platform / baseline) by a short key in the tables, spelled out below them.
    where: dict[str, int] = {}
    verdict = table["verdict"].astype(object).to_numpy()
    significant = table.loc[(verdict == "faster") | (verdict == "slower")]
    if len(significant) and top:
        out.print(_largest(significant, top, "significant differences", policy.statistic,
                           result.parameters, where))  # fmt: skip
    else:
        out.print("no significant difference at any point", highlight=False)
    too_few = table.loc[verdict == "too few repetitions"]
    if len(too_few):
        what = (f"no verdict, too few repetitions (need ≥{policy.min_repetitions} per side; "
                "--min-repetitions)")  # fmt: skip
        out.print(_largest(too_few, top or len(too_few), what, policy.statistic,
                           result.parameters, where))  # fmt: skip
    for label, key in where.items():
        out.print(f"[{key}] {label}", highlight=False, markup=False)
    _print_unmatched(result.unmatched_points)
    for line in context.caveat_lines([*result.platforms, baseline]):
        out.print(f"caveat: {line}", style="yellow", highlight=False, markup=False)
    for note in _transport_notes(db, [baseline, *result.platforms]):
        out.print(f"note: {note}", style="yellow", highlight=False)
    _export(table, csv, json)


def _transport_notes(db: str | None, platforms: list[str]) -> list[str]:
    """Where the compared platforms' MPI took different transports (their latest runs)."""
    from hpceval.store import open_store
    from hpceval.transport import transport_differences

    facts: dict[str, Any] = {}
    with open_store(db, create=False, read_only=True) as store:
        for row in sorted(store.runs(), key=lambda r: r.id):
            if row.platform_name in platforms:
                facts[row.platform_name] = store.environment(row.environment_id)
    return transport_differences(facts)


def _largest(
    rows: pd.DataFrame,
    top: int,
    what: str,
    statistic: str,
    parameters: Sequence[str],
    where: dict[str, int],
) -> Table:
    """The `top` rows of a comparison table farthest from a ratio of 1, as a table."""
    strength = np.abs(np.log(rows["performance"].to_numpy(dtype=np.float64)))
    chosen = rows.iloc[np.argsort(-strength, kind="stable")[:top]]
    table = Table(title=f"{what}: {len(chosen)} largest of {len(rows)}", title_justify="left")
    _point_columns(table, statistic)
    for record in chosen.to_dict("records"):
        _point_row(table, {str(k): v for k, v in record.items()}, parameters, where)
    return table


UNMATCHED_SHOWN = 40


def _print_unmatched(listed: pd.DataFrame) -> None:
    """The points without counterpart, with the reason (the first UNMATCHED_SHOWN)."""
    if listed.empty:
        return
    t = Table(title=f"{len(listed)} point(s) without counterpart", title_justify="left")
    columns = ("platform", "side", "benchmark", "metric", "workload", "placement", "reason")
    for col in columns:
        t.add_column(col, overflow="fold")
    for record in listed.head(UNMATCHED_SHOWN).to_dict("records"):
        t.add_row(*(str(record[c]) for c in columns))
    _Consoles.out.print(t)
    if len(listed) > UNMATCHED_SHOWN:
        _Consoles.out.print(f"... and {len(listed) - UNMATCHED_SHOWN} more", highlight=False)


def _workload(parameters: Sequence[str]) -> list[str]:
    """The parameters that say what was computed (the placement has its own column)."""
    from hpceval.labels import PLACEMENT_FACETS

    return [p for p in parameters if p.removeprefix("parameter.") not in PLACEMENT_FACETS]


def _platform_context(db: str | None) -> Any:
    """The platform files and caveats of the database's runs (analysis.platforms)."""
    from hpceval.analysis.platforms import platform_context
    from hpceval.store import open_store

    with open_store(db, create=False, read_only=True) as store:
        return platform_context(store)


def _point_columns(table: Table, statistic: str) -> None:
    # Key numbers first; the placements last (long: folded, never pushing numbers away).
    for col in ("platform", "benchmark", "metric", "point", statistic, f"baseline {statistic}",
                "ratio", "CI", "reps", "verdict"):  # fmt: skip
        left = col in ("platform", "benchmark", "metric", "point", "verdict")
        table.add_column(col, justify="left" if left else "right")
    table.add_column("where", justify="right")


def _point_row(
    table: Table, record: Mapping[str, Any], parameters: Sequence[str], where: dict[str, int]
) -> None:
    """One compared point: both sides' values, the ratio with its interval (and over what
    it was resampled), the repetitions on each side, the verdict."""
    over = "" if str(record["ci_over"]) in ("", "repetitions") else " (within-run)"
    placements = f"{record['placement']} / {record['baseline_placement']}"
    table.add_row(
        f"{record['platform']} ({record['origin']})",
        str(record["benchmark"]),
        str(record["metric"]),
        _parameters(record, _workload(parameters)),
        _num(record["value"]),
        _num(record["baseline_value"]),
        _num(record["ratio"]),
        f"[{_num(record['ratio_low'])}, {_num(record['ratio_high'])}]{over}",
        f"{record['repetitions']}/{record['baseline_repetitions']}",
        str(record["verdict"]),
        f"[{where.setdefault(placements, len(where) + 1)}]",
    )


# --------------------------------------------------------------------------- fit


def fit_command(
    db: DbOption = None,
    origin: OriginOption = None,
    statistic: StatisticOption = None,
    csv: CsvOption = None,
    json: JsonOption = None,
) -> None:
    """Hockney fits (time = α + n/β) of the ping-pong latency per platform, origin and
    placement, piecewise where the protocol changes: α, β and n½ of every segment with its
    size range, the half-bandwidth size of the whole curve, the runs that fed each fit, and a
    warning where the model misses the data."""
    from hpceval.analysis.network import MIN_POINTS, POOR_FIT_RMS, fit_network

    policy = policy_option(statistic)
    # Each origin's series are fitted apart and labelled: nothing is mixed to allow.
    frame = origin_rows(_load(db, benchmark="mpibench", metric="latency"), origin, True)
    fits = fit_network(frame, policy=policy)
    if not fits:
        raise UserError(
            f"no ping-pong latency series with at least {MIN_POINTS} message sizes to fit"
        )
    out = _Consoles.out
    segments = Table(
        title=f"Hockney fits of the ping-pong latency, t(n) = α + n/β, per segment "
        f"({policy.statistic} time per size)",
        title_justify="left",
    )
    for col in ("platform", "placement", "seg", "sizes B"):
        segments.add_column(col)
    for col in ("α µs", "β MB/s", "n½ = αβ B", "rms"):
        segments.add_column(col, justify="right")
    for f in fits:
        for row in f.segment_rows():
            segments.add_row(
                f"{row['platform']} ({row['origin']})",
                str(row["placement"]),
                f"{row['segment']}/{len(f.segments)}",
                f"{row['first_size']}–{row['last_size']}",
                _num(row["alpha_us"]),
                _num(row["beta_mb_s"]),
                _num(row["n_half_bytes"]),
                f"{float(row['rms_residual']):.1%}",
            )
    out.print(segments)
    whole = Table(
        title="per series: half-bandwidth size of the whole curve (n / t(n) = β/2), fit "
        f"quality (warning above {POOR_FIT_RMS:.0%} rms), the runs that fed it",
        title_justify="left",
    )
    for col in ("platform", "placement", "n½ B", "rms", "runs", "warning"):
        whole.add_column(col, justify="right" if col in ("n½ B", "rms") else "left")
    rows = [f.summary_row() for f in fits]
    for row in rows:
        whole.add_row(
            f"{row['platform']} ({row['origin']})",
            str(row["placement"]),
            _num(row["n_half_bytes"]),
            f"{float(row['rms_residual']):.1%}",
            str(row["runs"]) or "—",
            str(row["warning"]),
        )
    out.print(whole)
    for row in rows:
        if row["warning"]:
            _Consoles.err.print(
                f"warning: {row['platform']} ({row['origin']}) {row['placement']}: "
                f"{row['warning']}",
                highlight=False,
            )
    _export(pd.DataFrame([r for f in fits for r in _with_series(f)]), csv, json)


def _with_series(fit: Any) -> list[dict[str, Any]]:
    """The export rows of a fit: one per segment, with the series' figures beside."""
    series = fit.summary_row()
    return [
        {
            **row,
            "series_alpha_us": series["alpha_us"],
            "series_beta_mb_s": series["beta_mb_s"],
            "series_n_half_bytes": series["n_half_bytes"],
            "segments": series["segments"],
            "breakpoints": series["breakpoints"],
            "series_rms_residual": series["rms_residual"],
            "statistic": series["statistic"],
            "runs": series["runs"],
            "warning": series["warning"],
        }
        for row in fit.segment_rows()
    ]
