"""`hpceval cost` and `hpceval recommend`: what results cost, and where to run a workload
(Typer + rich). Times are the statistics policy's (--statistic), costs follow the price's
billing granularity, and every row names its placement and origin."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

import pandas as pd
import typer
from rich.table import Table

from hpceval.cli_analysis import CsvOption, JsonOption, _Consoles, _export, _load, _num, _value
from hpceval.cli_common import DbOption, OptionGroup, expand_option_groups, user_errors
from hpceval.cli_policy import (
    AllowMixedOriginsOption,
    MinRepetitionsOption,
    OriginOption,
    StatisticOption,
    node_peaks,
    origin_rows,
    platform_pairs,
    policy_option,
)
from hpceval.errors import UserError

# NPB KERNEL.CLASS[:RANKS]; multi-zone programs too (bt-mz.C:64).
_WORKLOAD = re.compile(r"^([A-Za-z]+(?:-[Mm][Zz])?)\.([A-Za-z])(?::([1-9][0-9]*))?$")

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


NodeTflopsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--node-tflops",
        help="PLATFORM=TFLOPS: the peak of one node of a platform priced per normalized "
        "node-hour (csc-2016): its hourly price is that price × TFLOPS (repeatable).",
    ),
]


@dataclass(frozen=True)
class PricingOptions(OptionGroup):
    """The options cost and recommend share: where prices come from, which results are
    priced, and in what currency."""

    catalog: CatalogOption = None
    instance: InstanceOption = None
    node_tflops: NodeTflopsOption = None
    db: DbOption = None
    currency: CurrencyOption = None
    origin: OriginOption = None
    allow_mixed_origins: AllowMixedOriginsOption = False

    @property
    def wanted_currency(self) -> str | None:
        return self.currency.upper() if self.currency else None


def register_cost_commands(app: typer.Typer) -> None:
    """Add cost and recommend to `app` (after `register_analysis_commands`: they print on
    its console)."""
    app.command("cost")(user_errors(expand_option_groups(cost_command)))
    app.command("recommend")(user_errors(expand_option_groups(recommend_command)))


def _prices(pricing: PricingOptions) -> Any:
    """(prices per platform, the catalog or None): platform files' prices, overridden by the
    catalog entries named with --instance or named like a platform; an entry priced per
    normalized node-hour is turned into an hourly price with --node-tflops."""
    from hpceval.analysis.cost import HourlyPrice, load_catalog, prices_from_store
    from hpceval.store import open_store

    catalog_name = pricing.catalog
    mapping = platform_pairs(pricing.instance, "--instance", "ENTRY")
    peaks = node_peaks(pricing.node_tflops)
    if mapping and catalog_name is None:
        raise UserError("--instance needs a --catalog to take the entries from")
    with open_store(pricing.db, create=False, read_only=True) as store:
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
            peak = peaks.get(platform)
            prices[platform] = [
                catalog.hourly(entry, pricing, node_tflops=peak)  # type: ignore[arg-type]
                for pricing in catalog.pricings(entry)
            ]
    return prices, catalog


# --------------------------------------------------------------------------- cost


# The time metric a run of each costable benchmark is priced by (its measured run time,
# start-up excluded), and the parameters its cost table shows.
COSTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "npb": ("time", ("kernel", "class", "ranks")),
    "lqcd": ("cg_time", ("lattice", "ranks")),
    "milc": ("time", ("lattice", "ranks")),
    "biobench": ("time", ("tool", "size", "threads_per_rank")),
}
CostBenchmarkOption = Annotated[
    str, typer.Option("--benchmark", help=f"What to cost: {', '.join(COSTED)}.")
]


def cost_command(
    pricing: PricingOptions,
    statistic: StatisticOption = None,
    min_repetitions: MinRepetitionsOption = None,
    csv: CsvOption = None,
    json: JsonOption = None,
    benchmark: CostBenchmarkOption = "npb",
) -> None:
    """Cost of every NPB run (or lattice-QCD, MILC, BioBench run) and its price per
    GOPS-hour, per platform, placement and pricing model: times by the named statistic,
    billed at the price's granularity."""
    from hpceval.analysis.cost import cost_table

    if benchmark not in COSTED:
        raise UserError(f"--benchmark {benchmark!r}: one of {', '.join(COSTED)}")
    time_metric, shown = COSTED[benchmark]
    label = "NPB" if benchmark == "npb" else benchmark
    policy = policy_option(statistic, min_repetitions)
    frame = origin_rows(
        _load(pricing.db, benchmark=benchmark), pricing.origin, pricing.allow_mixed_origins
    )
    prices, loaded = _prices(pricing)
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
    result = cost_table(
        frame,
        {p: prices[p] for p in measured},
        currency=pricing.wanted_currency,
        rates=loaded.rates if loaded is not None else None,
        policy=policy,
        benchmark=benchmark,
        time_metric=time_metric,
    )
    table = result.table
    if table.empty:
        raise UserError(f"no {label} time measurements to cost")
    params = [c for c in shown if c in table.columns]
    out = _Consoles.out
    out.print(policy.describe(), highlight=False)
    title = (
        f"cost of the {label} runs ({result.currency}; time: {policy.statistic} over repetitions)"
    )
    if loaded is not None:
        title += f"; prices: {loaded.name} ({loaded.date}, {loaded.source})"
    billing = ", ".join(sorted({str(b) for b in table["billing"]}))
    t = Table(title=f"{title}; billed {billing}", title_justify="left")
    # The instance column only where a catalog entry prices a platform under another name.
    named = bool((table["instance"].astype(str) != table["platform"].astype(str)).any())
    for col in ("platform", "pricing", *(["instance"] if named else []), *params, "placement"):
        t.add_column(col)
    money = result.currency
    for col in (f"time s ({policy.statistic})", "min / mean s", "reps", f"{money} per hour",
                "billed s", "run cost", "Mop/s", f"{money} per GOPS-hour"):  # fmt: skip
        t.add_column(col, justify="right")
    for record in table.to_dict("records"):
        t.add_row(
            f"{record['platform']} ({record['origin']})",
            str(record["pricing"]),
            *([str(record["instance"])] if named else []),
            *(_value(record.get(p)) for p in params),
            str(record["placement"]),
            _num(record["time_s"]),
            f"{_num(record['time_min'], 3)} / {_num(record['time_mean'], 3)}",
            str(record["repetitions"]),
            _num(record["hourly"]),
            _num(record["billed_s"]),
            _num(record["run_cost"]),
            _num(record["mops"]),
            _num(record["price_per_gops_hour"]),
        )
    out.print(t)
    for basis in sorted({str(b) for b in table["price_basis"] if b}):
        out.print(f"hourly price = {basis}", highlight=False)
    _export(table, csv, json)


def parse_workload(text: str) -> Any:
    """`cg.C`, `cg.C:64` or `bt-mz.C:64` (kernel.class[:ranks]) as an NPB Workload."""
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
        str,
        typer.Option(
            "--workload", "-w", help="NPB KERNEL.CLASS[:RANKS], e.g. cg.C:64, bt-mz.C:64."
        ),
    ],
    deadline: Annotated[
        float | None,
        typer.Option("--deadline", help="Seconds: the cheapest configuration meeting it."),
    ] = None,
    pricing: PricingOptions = PricingOptions(),
    allow_oversubscribed: Annotated[
        bool,
        typer.Option(
            "--allow-oversubscribed",
            help="Recommend configurations with more ranks than cores too.",
        ),
    ] = False,
    statistic: StatisticOption = None,
    min_repetitions: MinRepetitionsOption = None,
    csv: CsvOption = None,
    json: JsonOption = None,
) -> None:
    """Where and how to run a workload: the fastest, the cheapest, the Pareto front of time
    against cost, and the cheapest configuration that meets a deadline. Only configurations
    with enough repetitions (--min-repetitions) and, unless --allow-oversubscribed, not
    oversubscribed are recommended; the others are listed with the reason."""
    from hpceval.analysis.recommend import recommend

    wanted = parse_workload(workload)
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        raise UserError(f"--deadline {deadline:g}: not a positive number of seconds")
    policy = policy_option(statistic, min_repetitions)
    frame = origin_rows(_load(pricing.db, benchmark="npb", metric="time"), pricing.origin, True)
    prices, loaded = _prices(pricing)
    result = recommend(
        frame,
        wanted,
        prices=prices,
        currency=pricing.wanted_currency,
        rates=loaded.rates if loaded is not None else None,
        deadline_s=deadline,
        origin=pricing.origin,
        allow_mixed_origins=pricing.allow_mixed_origins,
        allow_oversubscribed=allow_oversubscribed,
        policy=policy,
    )
    out = _Consoles.out
    out.print(policy.describe(), highlight=False)

    def described(c: Any) -> str:
        cost = f", {c.cost}" if c.cost is not None else ", no price"
        spread = (f" [{c.time_low:.4g}, {c.time_high:.4g}]"
                  if math.isfinite(c.time_low) else "")  # fmt: skip
        return f"{c.label()}: {c.time_s:.4g} s{spread} ({c.repetitions} reps){cost}"

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
    for c in result.excluded:
        out.print(f"not recommended: {c.label()}: {c.excluded}", highlight=False)

    front = {id(c) for c in result.pareto}
    rows: list[dict[str, Any]] = []
    for c in (*result.candidates, *result.excluded):
        rows.append(
            {
                "platform": c.platform,
                "origin": c.origin.value,
                "configuration": c.label(),
                **{str(k): v for k, v in c.configuration.items()},
                "statistic": policy.statistic,
                "time_s": c.time_s,
                "time_low": c.time_low,
                "time_high": c.time_high,
                "repetitions": c.repetitions,
                "samples": c.samples,
                "billing": c.price.billing if c.price else None,
                "excluded": c.excluded,
                "pricing": c.price.pricing if c.price else None,
                "hourly": c.price.amount if c.price else None,
                "cost": c.cost.amount if c.cost else None,
                "currency": c.cost.currency if c.cost else None,
                "pareto": id(c) in front,
                "meets_deadline": None if deadline is None else c.time_s <= deadline,
            }
        )
    t = Table(
        title=f"configurations by {policy.statistic} time ({result.currency or 'no prices'}; "
        "* on the Pareto front)",
        title_justify="left",
    )
    for col in ("configuration", "time s", "CI", "reps", "cost", "pareto", "not recommended"):
        t.add_column(col, justify="right" if col in ("time s", "CI", "reps", "cost") else "left")
    for row in rows:
        t.add_row(
            str(row["configuration"]),
            _num(row["time_s"]),
            f"[{_num(row['time_low'])}, {_num(row['time_high'])}]",
            str(row["repetitions"]),
            _num(row["cost"]),
            "*" if row["pareto"] else "",
            str(row["excluded"]),
        )
    out.print(t)
    _export(pd.DataFrame(rows), csv, json)
