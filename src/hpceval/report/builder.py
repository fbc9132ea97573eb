"""Assemble the report: read the store, build the sections, write index.html, figures, tables.

Output layout (DIR given by --out):

    DIR/index.html          one self-contained page: figures as data: URIs, CSS inline,
                            no script, a Content-Security-Policy that forbids any fetch
    DIR/figures/NAME.svg    every figure, for papers
    DIR/figures/NAME.png
    DIR/tables/NAME.csv     every table, whole

The store is only read. A DIR that exists must be empty or hold a previous hpceval report
(whose figures/ and tables/ files are replaced), so that no other file is overwritten.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import functools
import multiprocessing
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import jinja2
import pandas as pd

import hpceval
from hpceval.analysis.cost import HourlyPrice, load_catalog, prices_from_store
from hpceval.analysis.loading import load_frame
from hpceval.analysis.platforms import platform_context
from hpceval.analysis.policy import StatisticPolicy
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.report.figures import RenderedFigure
from hpceval.report.sections import (
    Context,
    PriceSource,
    Section,
    build_order,
    joined_by_section,
    section_parts,
)
from hpceval.report.sections.provenance import provenance_row
from hpceval.report.styles import Palette
from hpceval.report.tables import ReportTable
from hpceval.store import RunRow, Store, open_store
from hpceval.workers import fork_workers

GENERATOR: Final = "hpceval"


@dataclass(frozen=True)
class ReportOptions:
    baseline: str | None = None
    platforms: Sequence[str] | None = None  # None: every platform of the database
    catalogs: Sequence[str] = ()  # shipped names or TOML files
    instances: Mapping[str, str] = field(default_factory=dict)  # platform -> catalog entry
    currency: str | None = None
    title: str = "hpceval report"
    cache: bool = True  # load through the frame cache (hpceval.analysis.loading.FrameCache)
    policy: StatisticPolicy = field(default_factory=StatisticPolicy)
    baseline_origin: str | None = None
    node_tflops: Mapping[str, float] = field(default_factory=dict)  # platform -> node peak
    deadline_s: float | None = None  # the findings state the cheapest run within it


@dataclass(frozen=True)
class ReportResult:
    index: Path
    figures: tuple[str, ...]
    tables: tuple[str, ...]
    empty_sections: tuple[str, ...]
    measurements: int
    seconds: float


def generate_report(db: str | None, out: Path, options: ReportOptions) -> ReportResult:
    """Read the database and write the report into `out` (see the module docstring)."""
    started = time.perf_counter()
    check_output(out)
    catalogs = [load_catalog(name) for name in options.catalogs]
    with open_store(db, create=False, read_only=True) as store:
        runs = store.runs()
        known = sorted({r.platform_name for r in runs})
        chosen = _chosen_platforms(known, options)
        # Every platform: no filter, so that the frame cache holds the one `compare` loads.
        frame = load_frame(
            store, platforms=chosen if options.platforms else None, cache=options.cache
        )
        if frame.empty:
            raise UserError(
                f"{store.url}: no measurements"
                + (f" of {', '.join(chosen)}" if options.platforms else "")
            )
        selected = [r for r in runs if r.platform_name in set(chosen)]
        provenance = provenance_table(store, selected)
        platforms = platform_context(store)
        file_prices = prices_from_store(store)
        source = store.url
    measured = sorted(str(p) for p in frame["platform"].unique())
    sources, notes = price_sources(measured, file_prices, catalogs, options)
    return write_report(
        frame,
        out,
        baseline=options.baseline,
        runs=runs_table(selected),
        provenance=provenance,
        price_sources=sources,
        price_notes=notes,
        source=source,
        title=options.title,
        started=started,
        policy=options.policy,
        baseline_origin=options.baseline_origin,
        platform_configs=platforms.configs,
        caveats=platforms.caveats,
        deadline_s=options.deadline_s,
    )


def _chosen_platforms(known: Sequence[str], options: ReportOptions) -> list[str]:
    for name in [*(options.platforms or []), *([options.baseline] if options.baseline else [])]:
        if name not in known:
            raise UserError(
                f"no platform {name!r} in the database (platforms: {', '.join(known) or 'none'})"
            )
    if not options.platforms:
        return list(known)
    chosen = list(dict.fromkeys(options.platforms))
    if options.baseline and options.baseline not in chosen:
        chosen.append(options.baseline)  # the baseline is always part of its own report
    return chosen


def price_sources(
    platforms: Sequence[str],
    file_prices: Mapping[str, HourlyPrice],
    catalogs: Sequence[Any],
    options: ReportOptions,
) -> tuple[list[PriceSource], list[str]]:
    """One source per currency of the platform files' prices, and one per catalog that
    prices a platform (an entry named like it, or named by --instance)."""
    sources: list[PriceSource] = []
    notes: list[str] = []
    by_currency: dict[str, dict[str, list[HourlyPrice]]] = {}
    for platform in platforms:
        if platform in file_prices:
            hp = file_prices[platform]
            by_currency.setdefault(hp.currency, {})[platform] = [hp]
    for currency, prices in sorted(by_currency.items()):
        sources.append(
            PriceSource(f"platform files ({currency})", prices, currency, short="platform file")
        )
    for platform in options.instances:
        if platform not in platforms:
            raise UserError(f"--instance: no platform {platform!r} in the report")
    for platform, entry in options.instances.items():
        if not any(entry in c.names() for c in catalogs):
            listed = ", ".join(c.name for c in catalogs) or "none given"
            raise UserError(
                f"--instance {platform}={entry}: no such entry in the catalogs ({listed})"
            )
    for catalog in catalogs:
        priced: dict[str, list[HourlyPrice]] = {}
        for platform in platforms:
            entry = options.instances.get(platform, platform)
            if entry not in catalog.names():
                continue
            pricings = catalog.pricings(entry)
            peak = options.node_tflops.get(platform)
            if not catalog.entry(entry).hourly and (peak is None or not pricings):
                notes.append(
                    f"catalog {catalog.name}: {entry!r} has prices per normalized node-hour or "
                    f"GB-hour only: no run cost for {platform} (give its node's peak with "
                    f"--node-tflops {platform}=TFLOPS)."
                )
                continue
            priced[platform] = [
                catalog.hourly(entry, pricing, node_tflops=peak) for pricing in pricings
            ]
        label = f"{catalog.name} ({catalog.date}, {catalog.source})"
        if not priced:
            notes.append(
                f"catalog {label}: no entry named like a platform "
                "(map one with --instance PLATFORM=ENTRY)."
            )
            continue
        sources.append(
            PriceSource(
                label,
                priced,
                options.currency or catalog.currency,
                catalog.rates,
                short=catalog.name,
            )
        )
    return sources, notes


def runs_table(runs: Sequence[RunRow]) -> pd.DataFrame:
    rows = [
        {
            "run": r.id,
            "platform": r.platform_name,
            "origin": r.origin.value,
            "suite": r.suite_name,
            "status": r.status.value,
            "started": dt.datetime.fromtimestamp(r.started, dt.UTC).strftime("%Y-%m-%d %H:%M"),
            "launcher": r.launcher,
            "host": r.host,
            "hpceval": r.hpceval_version,
            "note": r.note or "",
        }
        for r in sorted(runs, key=lambda r: r.id)
    ]
    return pd.DataFrame(rows)


def provenance_table(store: Store, runs: Sequence[RunRow]) -> pd.DataFrame:
    """One row per platform and environment (provenance fingerprint) of the runs."""
    facts: dict[int, Mapping[str, Any]] = {}
    grouped: dict[tuple[str, int], list[RunRow]] = {}
    for r in runs:
        grouped.setdefault((r.platform_name, r.environment_id), []).append(r)
        if r.environment_id not in facts:
            facts[r.environment_id] = store.environment(r.environment_id)
    rows = []
    for (platform, env), members in sorted(grouped.items()):
        rows.append(
            {
                "platform": platform,
                "origin": ", ".join(sorted({m.origin.value for m in members})),
                "runs": len(members),
                **provenance_row(facts[env]),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- writing


def check_output(out: Path) -> None:
    """`out` may be new, empty, or a previous hpceval report; anything else is refused."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not _is_report(out / "index.html"):
        raise UserError(
            f"{out}: not empty and not an hpceval report (no hpceval index.html): "
            "give a new or empty --out directory"
        )


def _is_report(index: Path) -> bool:
    try:
        head = index.read_text(encoding="utf-8", errors="replace")[:600]
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}' in head


def _prepare(out: Path) -> tuple[Path, Path]:
    figures, tables = out / "figures", out / "tables"
    try:
        for folder in (figures, tables):
            folder.mkdir(parents=True, exist_ok=True)
        for stale in [*figures.glob("*.png"), *figures.glob("*.svg"), *tables.glob("*.csv")]:
            stale.unlink()
    except OSError as e:
        raise UserError(f"{out}: cannot write the report ({e.strerror})") from None
    return figures, tables


def write_report(
    frame: pd.DataFrame,
    out: Path,
    *,
    baseline: str | None = None,
    runs: pd.DataFrame | None = None,
    provenance: pd.DataFrame | None = None,
    price_sources: Sequence[PriceSource] = (),
    price_notes: Sequence[str] = (),
    source: str = "",
    title: str = "hpceval report",
    started: float | None = None,
    policy: StatisticPolicy | None = None,
    baseline_origin: str | None = None,
    platform_configs: Mapping[str, PlatformConfig] | None = None,
    caveats: Mapping[str, Sequence[str]] | None = None,
    deadline_s: float | None = None,
) -> ReportResult:
    """Build every section from `frame` and write the report into `out`."""
    started = time.perf_counter() if started is None else started
    check_output(out)
    if baseline is not None and baseline not in {str(p) for p in frame["platform"].unique()}:
        raise UserError(f"no measurements of baseline platform {baseline!r}")
    ctx = Context(
        frame=frame,
        palette=Palette(str(p) for p in frame["platform"].unique()),
        baseline=baseline,
        price_sources=price_sources,
        price_notes=price_notes,
        runs=runs if runs is not None else pd.DataFrame(),
        provenance=provenance if provenance is not None else pd.DataFrame(),
        policy=policy or StatisticPolicy(),
        baseline_origin=baseline_origin,
        platform_configs=platform_configs or {},
        caveats=caveats or {},
        deadline_s=deadline_s,
    )
    parts = section_parts()
    built = build_sections(
        [functools.partial(part.build, ctx) for part in parts], order=build_order(parts)
    )
    sections = with_caveats(joined_by_section(parts, built), ctx.caveats)
    figures_dir, tables_dir = _prepare(out)
    index, partial = out / "index.html", out / ".index.html.partial"
    figures = [f for s in sections for f in s.figures]
    tables = [t for s in sections for t in s.tables]
    _check_unique([f.name for f in figures], "figure")
    _check_unique([t.name for t in tables], "table")
    try:
        for f in figures:
            (figures_dir / f"{f.name}.svg").write_bytes(f.svg)
            (figures_dir / f"{f.name}.png").write_bytes(f.png)
        for t in tables:
            (tables_dir / f"{t.name}.csv").write_bytes(t.csv())
        html = render_html(sections, baseline=baseline, source=source, title=title)
        partial.write_text(html, encoding="utf-8")
        os.replace(partial, index)
    except OSError as e:
        # A full disk leaves no half-written page behind (the previous index.html stays).
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise UserError(f"{out}: cannot write the report ({e.strerror})") from None
    return ReportResult(
        index=index,
        figures=tuple(f.name for f in figures),
        tables=tuple(t.name for t in tables),
        empty_sections=tuple(s.title for s in sections if s.empty),
        measurements=len(frame),
        seconds=time.perf_counter() - started,
    )


def findings_text(db: str | None, baseline: str) -> str:
    """The report's findings as text lines (for scripts: perf/study_compare.py)."""
    from hpceval.report.sections.findings import findings_lines

    with open_store(db, create=False, read_only=True) as store:
        frame = load_frame(store, cache=False)
        platforms = platform_context(store)
    ctx = Context(
        frame=frame,
        palette=Palette(str(p) for p in frame["platform"].unique()),
        baseline=baseline,
        platform_configs=platforms.configs,
        caveats=platforms.caveats,
    )
    return "\n".join(findings_lines(ctx))


# Sections whose figures and tables show measurements (the caveats of emulated and simulated
# platforms are printed beside them), and the caveat's lead.
QUALIFIED_SECTIONS: Final = frozenset(
    {"findings", "point-to-point", "collectives", "hpcc", "npb", "placement", "overhead", "cost"}
)


def with_caveats(sections: list[Section], caveats: Mapping[str, Sequence[str]]) -> list[Section]:
    """Each section that shows results gets the caveats of the platforms it may show."""
    for section in sections:
        if section.id in QUALIFIED_SECTIONS and not section.empty:
            section.caveats = [f"{p}: {c}" for p, lines in sorted(caveats.items()) for c in lines]
    return sections


# --------------------------------------------------------------------------- parallel build

WORKERS_ENV: Final = "HPCEVAL_REPORT_WORKERS"
# The section builders of the report being built, for the forked workers to call by index:
# they inherit them (with the frame and the pooled points) from the parent's memory, so only
# an index goes to a worker and only the finished Section (figure bytes, small tables) comes
# back.
_BUILDERS: list[Callable[[], Section]] = []


def report_workers() -> int:
    """$HPCEVAL_REPORT_WORKERS, else the CPUs this process may run on; 1 where there is no
    fork (the workers must inherit the frame, not receive it)."""
    return fork_workers(WORKERS_ENV)


def _build_in_worker(index: int) -> Section | None:
    """Section `index`, or None when it raised: the parent then builds it again itself, so
    that the error (a UserError, say) is raised there as it is (not pickled across)."""
    try:
        section = _BUILDERS[index]()
        for table in section.tables:
            table.csv()  # rendered here, in parallel, rather than by the parent
        return section
    except Exception:  # the parent raises it
        return None


def build_sections(
    builders: Sequence[Callable[[], Section]], order: Sequence[int] | None = None
) -> list[Section]:
    """Call every builder (analysis, then drawing and rendering its figures), in forked
    worker processes when there is more than one CPU; the sections come in builder order.

    Drawing dominates (savefig is most of a report's time) and the sections are independent:
    each worker builds whole sections, started in `order` (longest first).
    """
    workers = min(report_workers(), len(builders))
    if workers <= 1:
        return [build() for build in builders]
    sequence = list(order) if order is not None else list(range(len(builders)))
    if sorted(sequence) != list(range(len(builders))):
        raise ValueError("order: not a permutation of the builders")
    _BUILDERS[:] = builders
    try:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("fork")
        ) as pool:
            futures = {i: pool.submit(_build_in_worker, i) for i in sequence}
            built: dict[int, Section | None] = {}
            for i, future in futures.items():
                try:
                    built[i] = future.result()
                except Exception:  # a worker lost, a result that does not pickle: built here
                    built[i] = None
    finally:
        _BUILDERS.clear()
    return [
        section if (section := built[i]) is not None else builders[i]()
        for i in range(len(builders))
    ]


def _check_unique(names: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise AssertionError(f"two report {what}s named {name!r}")
        seen.add(name)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("hpceval.report", "templates"),
        autoescape=True,  # every user string (platform names, notes...) is escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )


def _figure_view(f: RenderedFigure) -> dict[str, Any]:
    uri = "data:image/svg+xml;base64," + base64.b64encode(f.svg).decode("ascii")
    return {
        "name": f.name,
        "title": f.title,
        "caption": f.caption,
        "uri": uri,
        "width": f.width,
        "height": f.height,
    }


def _table_view(t: ReportTable) -> dict[str, Any]:
    return {
        "name": t.name,
        "title": t.title,
        "note": t.note,
        "columns": t.html_columns(),
        "rows": t.html_rows(),
        "hidden": t.hidden_rows,
        "size": len(t.data),
    }


def render_html(
    sections: Sequence[Section], *, baseline: str | None, source: str, title: str
) -> str:
    views = [
        {
            "id": s.id,
            "title": s.title,
            "intro": s.intro,
            "empty": s.empty,
            "notes": s.notes,
            "caveats": s.caveats,
            "figures": [_figure_view(f) for f in s.figures],
            "tables": [_table_view(t) for t in s.tables],
        }
        for s in sections
    ]
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        version=hpceval.__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        source=source,
        baseline=baseline,
        sections=views,
        figure_count=sum(len(s.figures) for s in sections),
        table_count=sum(len(s.tables) for s in sections),
    )
