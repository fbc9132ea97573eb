"""`hpceval validate`: hpceval's own NPB kernels held against the official NPB built from
the user's sources, on one platform, interleaved and repeated (hpceval.analysis.validation
says how the figures are made); `--code osu|imb`: mpibench's ping-pong against osu_latency
or IMB PingPong (cli_validate_network)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hpceval.cli_common import DbOption, SourceOption, err, user_errors
from hpceval.cli_policy import StatisticOption

KernelsOption = Annotated[
    str, typer.Option("--kernels", help="Comma-separated NPB kernels (ep,is,cg,mg,ft,bt,sp,lu).")
]
# Rows outside this band are flagged: the house rule for a benchmark under a standard's name.
TOLERANCE = 0.15
# The official code validate runs; its declaration names hpceval's counterpart ("npb").
OFFICIAL = "npb-official"


def _own() -> str:
    from hpceval.catalog import declaration

    found = declaration(OFFICIAL)
    if found is None or found.counterpart is None:
        raise RuntimeError(f"{OFFICIAL}'s benchmark.toml names no counterpart")
    return found.counterpart


class _Consoles:
    out: Console


def register_validate_command(app: typer.Typer, out: Console) -> None:
    _Consoles.out = out
    app.command("validate")(user_errors(validate_command))


def _split(text: str, what: str) -> list[str]:
    from hpceval.errors import UserError

    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UserError(f"--{what}: empty")
    return items


def _ranks(text: str) -> list[int]:
    from hpceval.errors import UserError

    try:
        return [int(r) for r in _split(text, "ranks")]
    except ValueError:
        raise UserError(f"--ranks {text!r}: not a list of integers") from None


def _plan(
    entry: dict[str, Any], official_entry: dict[str, Any], platform: Any
) -> tuple[list[Any], list[Any]]:
    """Both sides' cases (each with one point per round), from the same suite options."""
    from hpceval.cli_validate_common import entry_cases

    return entry_cases(_own(), entry, platform), entry_cases(OFFICIAL, official_entry, platform)


def validate_command(
    platform: Annotated[
        str, typer.Option("--platform", "-p", help="Shipped platform name or a TOML file.")
    ] = "local",
    kernels: KernelsOption = "ep,is,cg,mg,ft",
    classes: Annotated[str, typer.Option("--classes", help="Comma-separated classes.")] = "A",
    ranks: Annotated[str, typer.Option("--ranks", help="Comma-separated rank counts.")] = "1,2",
    rounds: Annotated[
        int, typer.Option("--rounds", min=1, max=100, help="Pairs per kernel, class and ranks.")
    ] = 3,
    variant: Annotated[
        str, typer.Option("--variant", help="Official code: mpi (npb-mpi) or omp (npb-omp).")
    ] = "mpi",
    source: SourceOption = None,
    db: DbOption = None,
    code: Annotated[
        str,
        typer.Option(
            "--code",
            help="Official code: npb (NPB kernels), osu (osu_latency) or imb (IMB PingPong) "
            "against mpibench's ping-pong.",
        ),
    ] = "npb",
    sizes: Annotated[
        str, typer.Option("--sizes", help="osu/imb: message sizes (list or MIN..MAX).")
    ] = "0,8,1KiB,64KiB,1MiB,4MiB",
    metrics: Annotated[
        str, typer.Option("--metrics", help="osu/imb: latency (and bandwidth, imb only).")
    ] = "latency",
    statistic: StatisticOption = None,
) -> None:
    """Run hpceval's benchmark and the official code side by side (own, official, own, …),
    store each point's ratio own/official with its confidence interval: NPB kernels against
    NPB, or mpibench's ping-pong against osu_latency / IMB PingPong (--code)."""
    from hpceval.analysis.validation import describe_figure, figure_measurement, paired_figures
    from hpceval.benchmarks import Case
    from hpceval.campaign import Campaign, load_platform, prepare_run, with_sources
    from hpceval.cli_run import RichReporter, case_label
    from hpceval.cli_validate_common import run_interleaved, start_run
    from hpceval.model import Status
    from hpceval.sources import SOURCE_KINDS, parse_source_options, resolve_source
    from hpceval.store import open_store

    loaded = with_sources(load_platform(platform), parse_source_options(source or []))
    if code in ("osu", "imb"):
        from hpceval.cli_policy import policy_option
        from hpceval.cli_validate_network import validate_point_to_point

        ok = validate_point_to_point(
            code=code, loaded=loaded, sizes=sizes, metrics=_split(metrics, "metrics"),
            rounds=rounds, statistic=policy_option(statistic).statistic, db=db,
            out=_Consoles.out,
        )  # fmt: skip
        if not ok:
            raise typer.Exit(1)
        return
    if code != "npb":
        from hpceval.errors import UserError

        raise UserError(f"--code {code!r}: npb, osu or imb")
    kind = {"mpi": "npb-mpi", "omp": "npb-omp"}.get(variant)
    if kind is None:
        from hpceval.errors import UserError

        raise UserError(f"--variant {variant!r}: mpi or omp")
    resolve_source(kind, loaded.config.sources)  # one-line error when not given
    entry: dict[str, Any] = {
        "kernels": _split(kernels, "kernels"),
        "classes": _split(classes, "classes"),
        "ranks": _ranks(ranks),
        "repeat": rounds,
    }
    own_cases, official_cases = _plan(entry, {**entry, "variant": variant}, loaded.config)
    # The figures' cases: one per own case, holding the ratio measurement (benchmark npb).
    figure_cases = [
        Case(
            key=f"{c.key}:validation",
            benchmark=c.benchmark,
            placement=c.placement,
            parameters=c.parameters,
            points=("ratio",),
            time_limit_s=c.time_limit_s,
        )
        for c in own_cases
    ]
    prepared = prepare_run(loaded.config, [*own_cases, *official_cases])
    store = open_store(db)
    campaign = Campaign(store, prepared.launcher, prepared.programs, RichReporter(err))
    own_name = _own()
    suite = {"name": "validate", own_name: entry, OFFICIAL: {**entry, "variant": variant}}
    with prepared.launcher.session():
        label = SOURCE_KINDS[kind].label
        run_id = start_run(
            store, prepared, loaded, [*own_cases, *official_cases, *figure_cases], suite,
            note=f"hpceval validate against {label}",
            plan=f"{len(own_cases)} kernel placements x {rounds} rounds against {label}",
        )  # fmt: skip
        steps = [
            (case, [case.points[index]])
            for index in range(rounds)
            for own, official in zip(own_cases, official_cases, strict=True)
            for case in (own, official)
        ]
        failed = run_interleaved(store, campaign, run_id, steps, figure_cases)
        stored = store.measurements(run_id)
        own_side = [
            (s.point_key, s.measurement) for s in stored if s.measurement.benchmark == own_name
        ]
        official_side = [
            (s.point_key, s.measurement) for s in stored if s.measurement.benchmark == OFFICIAL
        ]
        figures = {
            tuple(sorted(f.parameters.items())): f for f in paired_figures(own_side, official_side)
        }
        measured = []
        for fc, own in zip(figure_cases, own_cases, strict=True):
            key = tuple(sorted({**own.parameters, **own.placement.as_parameters()}.items()))
            figure = next((f for k, f in figures.items() if set(k) <= set(key)), None)
            if figure is None:
                store.set_case_status(run_id, fc.key, "failed")
                continue
            m = figure_measurement(figure, own_name)
            store.add_measurement(run_id, None, fc.key, "ratio", m)
            store.set_case_status(run_id, fc.key, "done")
            measured.append(m)
        store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    _Consoles.out.print(_table(run_id, measured))
    for m in measured:
        _Consoles.out.print(describe_figure(m), highlight=False)
    for failed_key in sorted(failed):
        case = _find(failed_key, [*own_cases, *official_cases])
        err.print(f"failed: {case.benchmark} {case_label(case)}", style="red", highlight=False)
    if failed or len(measured) < len(figure_cases):
        raise typer.Exit(1)


def _find(key: str, cases: Sequence[Any]) -> Any:
    return next(c for c in cases if c.key == key)


def _table(run_id: int, measured: Sequence[Any]) -> Table:
    t = Table(
        title=f"run {run_id}: hpceval / official Mop/s (geometric mean of the pairs, "
        "95 % t-interval on the log ratios)",
        title_justify="left",
    )
    for col in ("kernel", "class", "ranks", "pairs", "hpceval Mop/s", "official Mop/s",
                "ratio", "95 % CI", "±15 %"):  # fmt: skip
        t.add_column(
            col, justify="left" if col in ("kernel", "class", "±15 %") else "right", no_wrap=True
        )
    for m in measured:
        p, s = m.parameters, m.statistics
        ci = "" if s is None or s.ci_low is None else f"{s.ci_low:.3f}–{s.ci_high:.3f}"
        own = sorted(m.details["own"])[len(m.details["own"]) // 2]
        official = sorted(m.details["official"])[len(m.details["official"]) // 2]
        flag = "within" if abs(m.value - 1) <= TOLERANCE else "OUTSIDE"
        t.add_row(
            str(p["kernel"]).upper(), str(p["class"]), str(p["ranks"]), str(len(m.samples)),
            f"{own:.1f}", f"{official:.1f}", f"{m.value:.3f}", ci, flag,
        )  # fmt: skip
    return t
