"""The analysis commands of `hpceval`: compare, cost, recommend, fit (Typer + rich).

`register_analysis_commands(app, out)` adds them to the main app; every table they print on
`out` can also be written whole to CSV (`--csv FILE`) and JSON (`--json FILE`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from hpceval.cli_common import DbOption, console, err, user_errors
from hpceval.errors import UserError

TOP_DEFAULT: Final = 10
_WORKLOAD = re.compile(r"^([A-Za-z]+)\.([A-Za-z])(?::([1-9][0-9]*))?$")


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
CatalogOption = Annotated[
    str | None,
    typer.Option(
        "--catalog",
        help="Price catalog: a shipped name (ec2-cc-2012, csc-2016) or a TOML file. "
        "Without it, the prices of the platform files (`price`) are used.",
    ),
]
InstanceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--instance",
        help="PLATFORM=ENTRY: price a platform as this catalog entry (repeatable; default: "
        "the entry named like the platform).",
    ),
]
CurrencyOption = Annotated[
    str | None,
    typer.Option(
        "--currency", help="Currency of the amounts (converted with the catalog's rates)."
    ),
]




def register_analysis_commands(app: typer.Typer, out: Console) -> None:
    """Add compare, cost, recommend and fit to `app`; they print their tables on `out`."""
    _Consoles.out = out
    app.command("compare")(user_errors(compare_command))
    app.command("cost")(user_errors(cost_command))
    app.command("recommend")(user_errors(recommend_command))
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


def _prices(db: str | None, catalog_name: str | None, instances: Sequence[str] | None) -> Any:
    """(prices per platform, the catalog or None): platform files' prices, overridden by the
    catalog entries named with --instance or named like a platform."""
    from hpceval.analysis.cost import HourlyPrice, load_catalog, prices_from_store
    from hpceval.store import open_store

    mapping: dict[str, str] = {}
    for item in instances or []:
        platform, sep, entry = item.partition("=")
        if not sep or not platform.strip() or not entry.strip():
            raise UserError(f"--instance {item!r}: expected PLATFORM=ENTRY")
        mapping[platform.strip()] = entry.strip()
    if mapping and catalog_name is None:
        raise UserError("--instance needs a --catalog to take the entries from")
    with open_store(db, create=False, read_only=True) as store:
        prices: dict[str, list[HourlyPrice]] = {
            p: [hp] for p, hp in prices_from_store(store).items()
        }
        platforms = {r.platform_name for r in store.runs()}
    catalog = load_catalog(catalog_name) if catalog_name is not None else None
    if catalog is not None:
        for platform, entry in mapping.items():
            if platform not in platforms:
                raise UserError(
                    f"--instance: no platform {platform!r} in the database "
                    f"(platforms: {', '.join(sorted(platforms)) or 'none'})"
                )
            catalog.entry(entry)  # unknown entry: a UserError naming the entries
        for platform in sorted(platforms):
            entry = mapping.get(platform, platform if platform in catalog.names() else "")
            if not entry:
                continue
            hourly = catalog.entry(entry).hourly
            if not hourly:
                catalog.hourly(entry)  # raises: this catalog gives no hourly price
            prices[platform] = [catalog.hourly(entry, pricing) for pricing in hourly]
    return prices, catalog


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
    allow_cross_origin: Annotated[
        bool,
        typer.Option(
            "--allow-cross-origin", help="Compare measured with emulated or simulated data."
        ),
    ] = False,
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
    csv: CsvOption = None,
    json: JsonOption = None,
    no_cache: NoCacheOption = False,
) -> None:
    """Compare platforms with a baseline: ratios with confidence intervals, verdicts and
    overhead summaries per category."""
    from hpceval.analysis.compare import compare

    frame = _load(db, benchmark=benchmark, metric=metric, cache=not no_cache)
    result = compare(
        frame,
        baseline,
        platforms=platforms or None,
        allow_cross_origin=allow_cross_origin,
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
    level = f"{result.confidence:.0%}"
    summary = Table(
        title=f"overhead against {baseline} ({result.baseline_origin.value}): geometric mean "
        f"of the performance ratio (> 1: better than the baseline), {level} CI by "
        f"{result.method}",
        title_justify="left",
    )
    for col in ("platform", "category", "points", "geomean", "overhead", "GSD", "min", "max"):
        summary.add_column(col, justify="left" if col in ("platform", "category") else "right")
    for col in ("faster", "slower", "n.s.", "undet."):
        summary.add_column(col, justify="right")
    for s in result.summaries:
        name = s.platform + (f" ({s.origin.value})" if s.origin != s.baseline_origin else "")
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
            str(s.undetermined),
        )
    out.print(summary)

    verdict = table["verdict"].astype(object).to_numpy()
    significant = table.loc[(verdict == "faster") | (verdict == "slower")]
    if len(significant) and top:
        strength = np.abs(np.log(significant["performance"].to_numpy(dtype=np.float64)))
        chosen = significant.iloc[np.argsort(-strength, kind="stable")[:top]]
        points = Table(
            title=f"significant differences: {min(top, len(significant))} largest of "
            f"{len(significant)}",
            title_justify="left",
        )
        for col in ("platform", "benchmark", "metric", "point", "ratio", "CI", "verdict"):
            points.add_column(col, justify="right" if col in ("ratio", "CI") else "left")
        for record in chosen.to_dict("records"):
            points.add_row(
                str(record["platform"]),
                str(record["benchmark"]),
                str(record["metric"]),
                _parameters(record, result.parameters),
                _num(record["ratio"]),
                f"[{_num(record['ratio_low'])}, {_num(record['ratio_high'])}]",
                str(record["verdict"]),
            )
        out.print(points)
    else:
        out.print("no significant difference at any point", highlight=False)
    for name, count in sorted(result.unmatched.items()):
        if count:
            out.print(f"{name}: {count} point(s) without a baseline counterpart", highlight=False)
    _export(table, csv, json)


# --------------------------------------------------------------------------- cost


def cost_command(
    catalog: CatalogOption = None,
    instance: InstanceOption = None,
    db: DbOption = None,
    currency: CurrencyOption = None,
    csv: CsvOption = None,
    json: JsonOption = None,
) -> None:
    """Cost of every NPB run and its price per GOPS, per platform and pricing model."""
    from hpceval.analysis.cost import cost_table

    frame = _load(db, benchmark="npb")
    prices, loaded = _prices(db, catalog, instance)
    measured = sorted(str(p) for p in frame["platform"].unique())
    for platform in measured:
        if platform not in prices:
            how = (
                f"no entry of catalog {loaded.name} is named {platform!r}: map one with "
                f"--instance {platform}=ENTRY"
                if loaded is not None
                else "give a --catalog, or a `price` table in its platform file"
            )
            raise UserError(f"platform {platform!r} has no price ({how})")
    wanted = currency.upper() if currency else None
    result = cost_table(
        frame,
        {p: prices[p] for p in measured},
        currency=wanted,
        rates=loaded.rates if loaded is not None else None,
    )
    table = result.table
    if table.empty:
        raise UserError("no NPB time measurements to cost")
    params = [c for c in ("kernel", "class", "ranks", "nodes") if c in table.columns]
    if "nodes" not in params:
        params.append("nodes")
    out = _Consoles.out
    title = f"cost of the NPB runs ({result.currency})"
    if loaded is not None:
        title += f"; prices: {loaded.name} ({loaded.date}, {loaded.source})"
    t = Table(title=title, title_justify="left")
    for col in ("platform", "pricing", "instance", *params):
        t.add_column(col)
    for col in ("time s", "per hour", "run cost", "Mop/s", "per GOPS"):
        t.add_column(col, justify="right")
    for record in table.to_dict("records"):
        t.add_row(
            str(record["platform"]),
            str(record["pricing"]),
            str(record["instance"]),
            *(_value(record.get(p)) for p in params),
            _num(record["time_s"]),
            _num(record["hourly"]),
            _num(record["run_cost"]),
            _num(record["mops"]),
            _num(record["price_per_gops"]),
        )
    out.print(t)
    _export(table, csv, json)


# --------------------------------------------------------------------------- recommend


def parse_workload(text: str) -> Any:
    """`cg.C` or `cg.C:64` (kernel.class[:ranks]) as an NPB Workload."""
    from hpceval.analysis.recommend import Workload

    match = _WORKLOAD.match(text.strip())
    if match is None:
        raise UserError(f"workload {text!r}: expected KERNEL.CLASS[:RANKS], e.g. cg.C:64")
    kernel, class_name, ranks = match.groups()
    return Workload(
        "npb",
        {"kernel": kernel.lower(), "class": class_name.upper()},
        int(ranks) if ranks else None,
    )


def recommend_command(
    workload: Annotated[
        str, typer.Option("--workload", "-w", help="NPB KERNEL.CLASS[:RANKS], e.g. cg.C:64.")
    ],
    deadline: Annotated[
        float | None,
        typer.Option("--deadline", help="Seconds: the cheapest configuration meeting it."),
    ] = None,
    catalog: CatalogOption = None,
    instance: InstanceOption = None,
    db: DbOption = None,
    currency: CurrencyOption = None,
    csv: CsvOption = None,
    json: JsonOption = None,
) -> None:
    """Where and how to run a workload: the fastest, the cheapest, the Pareto front of time
    against cost, and the cheapest configuration that meets a deadline."""
    from hpceval.analysis.recommend import recommend

    wanted = parse_workload(workload)
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        raise UserError(f"--deadline {deadline:g}: not a positive number of seconds")
    frame = _load(db, benchmark="npb", metric="time")
    prices, loaded = _prices(db, catalog, instance)
    result = recommend(
        frame,
        wanted,
        prices=prices,
        currency=currency.upper() if currency else None,
        rates=loaded.rates if loaded is not None else None,
        deadline_s=deadline,
    )
    out = _Consoles.out

    def described(c: Any) -> str:
        cost = f", {c.cost}" if c.cost is not None else ", no price"
        return f"{c.label()}: {c.time_s:.4g} s{cost}"

    out.print(f"workload {wanted.label()}", highlight=False)
    if result.fastest is not None:
        out.print(f"fastest:  {described(result.fastest)}", highlight=False)
    out.print(
        f"cheapest: {described(result.cheapest)}"
        if result.cheapest is not None
        else "cheapest: none (no configuration has a price)",
        highlight=False,
    )
    if deadline is not None:
        line = result.deadline_message
        if result.within_deadline is None:
            line = "none meets it: " + line
        out.print(f"deadline: {line}", highlight=False)
    if result.unpriced:
        out.print(f"without a price: {', '.join(result.unpriced)}", highlight=False)

    front = {id(c) for c in result.pareto}
    rows: list[dict[str, Any]] = []
    for c in result.candidates:
        rows.append(
            {
                "platform": c.platform,
                "origin": c.origin.value,
                "configuration": c.label(),
                **{str(k): v for k, v in c.configuration.items()},
                "time_s": c.time_s,
                "samples": c.samples,
                "pricing": c.price.pricing if c.price else None,
                "hourly": c.price.amount if c.price else None,
                "cost": c.cost.amount if c.cost else None,
                "currency": c.cost.currency if c.cost else None,
                "pareto": id(c) in front,
                "meets_deadline": None if deadline is None else c.time_s <= deadline,
            }
        )
    t = Table(
        title=f"configurations by time ({result.currency or 'no prices'}; * on the Pareto front)",
        title_justify="left",
    )
    for col in ("configuration", "time s", "cost", "pareto"):
        t.add_column(col, justify="right" if col in ("time s", "cost") else "left")
    for row in rows:
        t.add_row(
            str(row["configuration"]),
            _num(row["time_s"]),
            _num(row["cost"]),
            "*" if row["pareto"] else "",
        )
    out.print(t)
    _export(pd.DataFrame(rows), csv, json)


# --------------------------------------------------------------------------- fit


def fit_command(
    db: DbOption = None,
    csv: CsvOption = None,
    json: JsonOption = None,
) -> None:
    """Hockney fits (time = α + n/β) of the ping-pong latency per platform and placement,
    piecewise where the protocol changes: α, β, n½, breakpoints and residuals."""
    from hpceval.analysis.network import MIN_POINTS, fit_network

    frame = _load(db, benchmark="mpibench", metric="latency")
    fits = fit_network(frame)
    if not fits:
        raise UserError(
            f"no ping-pong latency series with at least {MIN_POINTS} message sizes to fit"
        )
    rows = [f.summary_row() for f in fits]
    t = Table(title="Hockney fits of the ping-pong latency: t(n) = α + n/β", title_justify="left")
    for col in ("platform", "placement"):
        t.add_column(col)
    for col in ("α µs", "β MB/s", "n½ B", "breakpoints B", "rms residual"):
        t.add_column(col, justify="right")
    for row in rows:
        t.add_row(
            str(row["platform"]) + ("" if row["origin"] == "measured" else f" ({row['origin']})"),
            str(row["placement"]),
            _num(row["alpha_us"]),
            _num(row["beta_mb_s"]),
            _num(row["n_half_bytes"]),
            str(row["breakpoints"]) or "—",
            f"{float(row['rms_residual']):.2%}",
        )
    _Consoles.out.print(t)
    _export(pd.DataFrame(rows), csv, json)
