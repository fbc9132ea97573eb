"""`hpceval history` (a platform's runs over time, with change points) and `hpceval check
--against history` (the regression gate for a site's CI or cron)."""

from __future__ import annotations

import enum
import json as json_module
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hpceval.cli_common import DbOption, err, user_errors
from hpceval.errors import UserError

BenchmarkFilter = Annotated[
    str | None, typer.Option("--benchmark", help="Only this benchmark (mpibench, npb...).")
]
MetricFilter = Annotated[str | None, typer.Option("--metric", help="Only this metric.")]
CaseFilter = Annotated[
    str | None,
    typer.Option("--case", help="Only cases whose key matches this glob (mpibench:pingpong:*)."),
]
PlatformArgument = Annotated[str, typer.Argument(help="The platform's name as stored.")]


class Against(enum.StrEnum):
    history = "history"


def _load(db: str | None, platform: str, **filters: str | None) -> list[Any]:
    from hpceval.history import load_history
    from hpceval.store import open_store

    with open_store(db, create=False, read_only=True) as store:
        series = load_history(store, platform, **filters)
    if not series:
        wanted = " ".join(f"--{k} {v}" for k, v in filters.items() if v)
        raise UserError(f"platform {platform!r}: no measurement matches {wanted or 'any'}")
    return series


def _check_alpha(alpha: float) -> None:
    # Checked here, not by typer's range: its error is a multi-line usage panel.
    if not 0 < alpha <= 0.5:
        raise UserError(f"--alpha: {alpha} is not in (0, 0.5]")


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def register_history_commands(app: typer.Typer, out: Console) -> None:
    @app.command("history")
    @user_errors
    def history_command(
        platform: PlatformArgument,
        db: DbOption = None,
        benchmark: BenchmarkFilter = None,
        metric: MetricFilter = None,
        case: CaseFilter = None,
        alpha: Annotated[
            float, typer.Option("--alpha", help="False-alarm rate per series (0-0.5].")
        ] = 0.01,
        json: Annotated[
            Path | None, typer.Option("--json", help="Write series and changes as JSON here.")
        ] = None,
    ) -> None:
        """Every stored run of a platform over time, per point with its spread, and the
        change points of each series (date, size with CI, provenance that changed)."""
        from hpceval.history import series_changes, utc

        _check_alpha(alpha)
        series = _load(db, platform, benchmark=benchmark, metric=metric, case=case)
        changes = series_changes(series, alpha=alpha)
        at = {(id(c.series), c.change.index) for c in changes}
        for s in series:
            values = s.values
            spread = float(values.std(ddof=1) / values.mean()) if len(values) > 1 else None
            title = f"{s.label()}: {len(values)} runs" + (
                f", run-to-run CV {spread:.1%}" if spread is not None and values.mean() else ""
            )
            t = Table(title=title, title_justify="left")
            for col in ("run", "date (UTC)", "value", "run's 95% CI", "change"):
                t.add_column(col, justify="left" if col.startswith(("date", "change")) else "right")
            for i, p in enumerate(s.points):
                ci = f"[{_num(p.low)}, {_num(p.high)}]" if p.low is not None else ""
                mark = "◆ level moved" if (id(s), i) in at else ""
                t.add_row(str(p.run_id), utc(p.started), _num(p.value), ci, mark)
            out.print(t)
        _print_changes(out, changes, alpha)
        if json is not None:
            _write_json(json, series, changes)

    @app.command("check")
    @user_errors
    def check_command(
        against: Annotated[
            Against, typer.Option("--against", help="What the newest run is held against.")
        ],
        platform: Annotated[str, typer.Option("--platform", "-p", help="The platform.")],
        db: DbOption = None,
        benchmark: BenchmarkFilter = None,
        metric: MetricFilter = None,
        case: CaseFilter = None,
        window: Annotated[
            int, typer.Option("--window", help="Earlier runs forming the baseline (>= 3).")
        ] = 10,
        alpha: Annotated[
            float, typer.Option("--alpha", help="Significance over all series (0-0.5].")
        ] = 0.01,
        min_effect: Annotated[
            float, typer.Option("--min-effect", help="Smallest worsening that fails (>= 0).")
        ] = 0.05,
    ) -> None:
        """Exit 1 when the newest run of a platform is significantly worse than its recent
        runs (for a site's CI or cron); 0 when not."""
        from hpceval.history import check_against_history

        _check_alpha(alpha)
        if window < 3:
            raise UserError(f"--window: {window} runs are too few for a baseline (at least 3)")
        if min_effect < 0:
            raise UserError(f"--min-effect: {min_effect} is negative")
        series = _load(db, platform, benchmark=benchmark, metric=metric, case=case)
        results, short = check_against_history(
            series, window=window, alpha=alpha, min_effect=min_effect
        )
        if not results:
            raise UserError(
                f"platform {platform!r}: no series has more than 3 runs: nothing to judge yet"
            )
        failed = [r for r in results if r.regressed]
        t = Table(
            title=f"newest run against the {window} runs before it (fails: p < "
            f"{results[0].threshold:.2g} and worse by ≥ {min_effect:.0%})",
            title_justify="left",
        )
        for col in ("series", "baseline", "newest", "worse by", "p", "verdict"):
            t.add_column(col, justify="left" if col in ("series", "verdict") else "right")
        for r in sorted(results, key=lambda r: r.p_value):
            verdict = "REGRESSION" if r.regressed else "ok"
            t.add_row(
                r.series.label(),
                f"{r.baseline_mean:.4g} ({r.baseline_runs} runs)",
                f"{r.newest:.4g}",
                f"{r.effect:+.1%}",
                f"{r.p_value:.2g}",
                verdict,
                style="red" if r.regressed else None,
            )
        out.print(t)
        if short:
            err.print(f"{len(short)} series with 3 runs or fewer not judged", highlight=False)
        if failed:
            err.print(
                f"{len(failed)} of {len(results)} series regressed on platform {platform!r}",
                style="red",
                highlight=False,
            )
            raise typer.Exit(1)
        out.print(f"no regression in {len(results)} series", highlight=False)


def _print_changes(out: Console, changes: list[Any], alpha: float) -> None:
    if not changes:
        out.print(f"no change point (false-alarm rate {alpha:g} per series)", highlight=False)
        return
    t = Table(title=f"change points (permutation p ≤ {alpha:g})", title_justify="left")
    for col in ("series", "run", "date (UTC)", "after/before", "95% CI", "p", "changed"):
        t.add_column(col, justify="left" if col in ("series", "date (UTC)", "changed") else "right")
    for c in changes:
        changed = "; ".join(f"{k}: {a} → {b}" for k, (a, b) in c.changed.items())
        t.add_row(
            c.series.label(),
            str(c.run_id),
            c.date,
            f"{c.change.ratio:.3f}" + (" (worse)" if c.worse else " (better)"),
            f"[{c.change.ratio_low:.3f}, {c.change.ratio_high:.3f}]",
            f"{c.change.p_value:.3f}",
            changed or "nothing recorded",
        )
    out.print(t)


def _write_json(path: Path, series: list[Any], changes: list[Any]) -> None:
    document = {
        "series": [
            {
                "label": s.label(),
                "benchmark": s.benchmark,
                "metric": s.metric,
                "unit": s.unit,
                "parameters": dict(s.parameters),
                "runs": [
                    {
                        "run": p.run_id,
                        "started": p.started,
                        "value": p.value,
                        "low": p.low,
                        "high": p.high,
                    }
                    for p in s.points
                ],
            }
            for s in series
        ],
        "changes": [
            {
                "series": c.series.label(),
                "run": c.run_id,
                "date": c.date,
                "ratio": c.change.ratio,
                "ratio_low": c.change.ratio_low,
                "ratio_high": c.change.ratio_high,
                "p_value": c.change.p_value,
                "changed": {k: list(v) for k, v in c.changed.items()},
            }
            for c in changes
        ],
    }
    try:
        path.write_text(json_module.dumps(document, indent=1, default=str))
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror}") from None
