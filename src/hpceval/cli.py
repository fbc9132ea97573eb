"""The `hpceval` command line (Typer + rich)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from hpceval import __version__
from hpceval.benchmarks import Case, Program, get_benchmark
from hpceval.campaign import (
    Campaign,
    CampaignResult,
    Interrupted,
    case_description,
    case_from_description,
    plan_cases,
    skipped_benchmarks,
)
from hpceval.cli_analysis import register_analysis_commands
from hpceval.cli_common import DbOption, err, user_errors
from hpceval.cli_db import db_app
from hpceval.cli_report import register_report_command
from hpceval.cli_simulate import register_simulate_commands
from hpceval.config import (
    Loaded,
    PlatformConfig,
    SuiteConfig,
    load_platform,
    load_suite,
    shipped_names,
)
from hpceval.errors import UserError
from hpceval.launch import Launcher, MpiRuntime, get_launcher_class
from hpceval.model import Environment, ExecutionStatus, Status
from hpceval.provenance import collect_environment, fingerprint, summarize
from hpceval.store import Store, StoreUnavailable, close_open_stores, open_store
from hpceval.toolchain import MpiToolchain, detect_mpi

app = typer.Typer(
    name="hpceval",
    help="Measure how well a platform serves parallel scientific codes (MPI), and store it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

out = Console(soft_wrap=True)



# --------------------------------------------------------------------------- progress


class RichReporter:
    """A progress bar with the current case and an ETA weighted by each case's estimate."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[case]}"),
            BarColumn(),
            TextColumn("{task.fields[points]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self.task: TaskID | None = None
        self.weights: dict[str, float] = {}
        self.points_total = 0
        self.points_done = 0
        self.case_index = ""

    def begin(self, work: Sequence[tuple[Case, Sequence[str]]]) -> None:
        for case, points in work:
            self.weights[case.key] = case.estimate_s / max(1, len(case.points))
            self.points_total += len(points)
        total = sum(self.weights[c.key] * len(p) for c, p in work)
        self.progress.start()
        self.task = self.progress.add_task("", total=total or 1, case="", points="")

    def _update(self, case: Case) -> None:
        assert self.task is not None
        self.progress.update(
            self.task,
            case=f"{self.case_index} {case_label(case)}",
            points=f"{self.points_done}/{self.points_total} points",
        )

    def case_started(self, case: Case, index: int, total: int) -> None:
        self.case_index = f"[{index + 1}/{total}]"
        self._update(case)

    def point_done(self, case: Case, point: str) -> None:
        assert self.task is not None
        self.points_done += 1
        self.progress.advance(self.task, self.weights.get(case.key, 0.0))
        self._update(case)

    def case_finished(self, case: Case, status: ExecutionStatus, error: str) -> None:
        label = case_label(case)
        if status is ExecutionStatus.OK:
            self.console.print(f"[green]✓[/] {label}", highlight=False)
        elif status is ExecutionStatus.SKIPPED:
            self.console.print(f"[yellow]○ {label}: skipped: {error}[/]", highlight=False)
        else:
            self.console.print(f"[red]✗ {label}: {status.value}: {error}[/]", highlight=False)

    def end(self) -> None:
        self.progress.stop()


# --------------------------------------------------------------------------- run


def _toolchain_and_launcher(platform: PlatformConfig) -> tuple[MpiToolchain, Launcher]:
    toolchain = detect_mpi(platform.launcher.mpicc, platform.launcher.mpirun)
    if not toolchain.consistent:
        raise UserError(
            f"{toolchain.mpicc} is {toolchain.wrapper_implementation} but {toolchain.mpirun} is "
            f"{toolchain.implementation}: programs built by one do not start under the other "
            "(Debian: update-alternatives --config mpi / mpirun)"
        )
    launcher_cls = get_launcher_class(platform.launcher.kind)
    runtime = MpiRuntime(toolchain.implementation, toolchain.mpirun)
    return toolchain, launcher_cls(platform, runtime)


def _build_programs(
    cases: Sequence[Case], platform: PlatformConfig, toolchain: MpiToolchain
) -> dict[str, Program]:
    programs = {}
    # A benchmark whose tool is missing is not built: its cases are recorded as skipped.
    # Its placeholder has no flags, like an installed external tool's, so the environment
    # (and its fingerprint) stays the same once the tool is installed and the run resumed.
    skipped = skipped_benchmarks(cases, platform)
    for name in sorted({c.benchmark for c in cases}):
        if name in skipped:
            programs[name] = Program(path=Path(), compiler="", cflags=())
            continue
        programs[name] = get_benchmark(name).build(
            compiler=toolchain.mpicc,
            compiler_identity=toolchain.identity(),
            cflags=platform.cflags,
        )
    return programs


def _environment(toolchain: MpiToolchain, programs: dict[str, Program]) -> Environment:
    # Each program has its own flags (communication: -O2; NPB kernels: -O3 -march=native).
    # External tools (fio, hpcc) compile nothing and have no flags to record.
    flags = [f"{name}: {' '.join(p.cflags)}" for name, p in sorted(programs.items()) if p.cflags]
    return collect_environment(toolchain, cflags=flags)


def _check_commands(launcher: Launcher, cases: Sequence[Case]) -> None:
    """Every placement must be launchable before the first case runs."""
    for case in cases:
        launcher.command(case.placement, ["true"])


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _summary(store: Store, run_id: int, result: CampaignResult) -> Table:
    measurements = store.measurements(run_id)
    by_case: dict[str, list[Any]] = {}
    points: dict[str, set[str]] = {}
    for sm in measurements:
        by_case.setdefault(sm.case_key, []).append(sm.measurement)
        points.setdefault(sm.case_key, set()).add(sm.point_key)
    t = Table(title=f"run {run_id}: summary", title_justify="left")
    t.add_column("case", overflow="fold")
    for col in ("status", "points", "headline", "wall s"):
        t.add_column(col, justify="right" if col in ("points", "wall s") else "left")
    for o in result.outcomes:
        ms = by_case.get(o.case.key, [])
        if o.status is ExecutionStatus.SKIPPED:
            t.add_row(case_label(o.case), "[yellow]skipped[/]", "", o.error, "")
            continue
        t.add_row(
            case_label(o.case),
            "[green]ok[/]" if o.status is ExecutionStatus.OK else f"[red]{o.status.value}[/]",
            f"{len(points.get(o.case.key, ()))}/{len(o.case.points)}",
            _headline(ms) if o.status is ExecutionStatus.OK else o.error[:80],
            f"{o.wall_s:.1f}",
        )
    return t


def case_label(case: Case) -> str:
    """`pingpong np=2 1x2x1 intra-node`: the case key without benchmark and planned binding."""
    parts = [p for p in case.key.split(":")[1:] if not p.startswith("bind=")]
    return " ".join(p.removeprefix("pair=") for p in parts)


def _headline(ms: Sequence[Any]) -> str:
    """The figure a user looks for first in a case's measurements."""
    from hpceval.show import (
        APPLICATION_SECOND,
        application_headline,
        fio_headline,
        format_size,
        format_value,
        hpcc_headline,
    )

    if any(m.benchmark in APPLICATION_SECOND for m in ms):
        return application_headline(ms)
    if any(m.benchmark == "fio" for m in ms):
        return fio_headline(ms)
    if any(m.benchmark == "hpcc" for m in ms):
        return hpcc_headline(ms)
    if any(m.benchmark == "npb" for m in ms):
        best = max((m for m in ms if m.metric == "mops_total"), key=lambda m: m.value, default=None)
        fastest = min((m.value for m in ms if m.metric == "time"), default=None)
        if best is None or fastest is None:
            return ""
        return f"{format_value(best.value)} Mop/s, {format_value(fastest)} s (verified)"
    parts = []
    # A 0-byte collective returns at once in most MPIs: quote the smallest real message.
    times = [
        m for m in ms if m.metric == "latency" or (m.metric == "time" and m.parameters["size"] > 0)
    ] or [m for m in ms if m.metric == "time"]
    if times:
        smallest = min(times, key=lambda m: m.parameters["size"])
        parts.append(
            f"{smallest.metric} {format_value(smallest.value)} µs @ "
            f"{format_size(int(smallest.parameters['size']))}"
        )
    bws = [m for m in ms if m.metric == "bandwidth"]
    if bws:
        best_bw = max(bws, key=lambda m: m.value)
        at = format_size(int(best_bw.parameters["size"]))
        parts.append(f"max {format_value(best_bw.value)} MB/s @ {at}")
    return "; ".join(parts)


@dataclass
class Prepared:
    """A campaign ready to go: validated, built, with the work still to do."""

    platform: PlatformConfig
    toolchain: MpiToolchain
    launcher: Launcher
    programs: dict[str, Program]
    environment: Environment
    work: list[tuple[Case, list[str]]]


def _prepare(platform: PlatformConfig, cases: Sequence[Case]) -> Prepared:
    """Toolchain, launcher, placements, builds and provenance: all before anything is written."""
    toolchain, launcher = _toolchain_and_launcher(platform)
    _check_commands(launcher, cases)
    launcher.preflight()
    programs = _build_programs(cases, platform, toolchain)
    environment = _environment(toolchain, programs)
    return Prepared(platform, toolchain, launcher, programs, environment, [])


def _start_new_run(
    prepared: Prepared,
    store: Store,
    suite: Loaded[SuiteConfig],
    platform: Loaded[PlatformConfig],
    cases: Sequence[Case],
) -> int:
    env = prepared.environment
    run_id = store.create_run(
        suite_name=suite.config.name,
        suite_config=suite.raw,
        platform_id=store.add_platform(platform.config.name, platform.raw),
        environment_id=store.add_environment(env),
        launcher=prepared.launcher.name,
        cases=[(c.key, c.benchmark, case_description(c)) for c in cases],
        hpceval_version=__version__,
        git_revision=(env.facts.get("hpceval") or {}).get("revision"),
        origin=prepared.launcher.origin,
        host=socket.gethostname(),
        pid=os.getpid(),
    )
    prepared.work = [(c, list(c.points)) for c in cases]
    err.print(
        f"run {run_id}: suite {suite.config.name!r} on platform {platform.config.name!r}: "
        f"{len(cases)} cases, {sum(len(c.points) for c in cases)} points → {store.url}",
        highlight=False,
    )
    return run_id


def _remaining_work(store: Store, run_id: int) -> list[tuple[Case, list[str]]]:
    """The planned cases of a run that are still pending or were skipped (their tool was
    missing: it may be there now), with the points they still lack."""
    completed = store.completed_points(run_id)
    work: list[tuple[Case, list[str]]] = []
    for row in store.cases(run_id):
        if row.status not in ("pending", "skipped"):
            continue
        case = case_from_description(row.case_key, row.benchmark, row.description)
        remaining = [p for p in case.points if (case.key, p) not in completed]
        if remaining:
            work.append((case, remaining))
        else:  # every point was stored just before the interruption
            store.set_case_status(run_id, case.key, "done")
    return work


def _prepare_resume(store: Store) -> tuple[int, Prepared]:
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=_is_alive)
    # Imports are not campaigns: there is nothing to re-run for them. A completed run with
    # skipped cases (a tool was missing) is resumable too: installing the tool and resuming
    # measures what was skipped.
    row = next(
        (
            r
            for r in sorted(store.runs(), key=lambda r: r.id, reverse=True)
            if r.launcher != "import"
            and (
                r.status is Status.INTERRUPTED
                or (
                    r.status is Status.COMPLETED
                    and any(c.status == "skipped" for c in store.cases(r.id))
                )
            )
        ),
        None,
    )
    if row is None:
        raise UserError(f"{store.url}: no interrupted run to resume (nor one with skipped cases)")
    _, platform_raw = store.platform_config(row.platform_id)
    work = _remaining_work(store, row.id)
    prepared = _prepare(PlatformConfig.model_validate(platform_raw), [c for c, _ in work])
    prepared.work = work
    if (
        work
        and fingerprint(store.environment(row.environment_id)) != prepared.environment.fingerprint
    ):
        raise UserError(
            f"run {row.id} was measured in another environment (hardware, MPI, compiler or "
            "hpceval changed); start a new run instead of resuming"
        )
    return row.id, prepared


@app.command()
@user_errors
def run(
    platform: Annotated[
        str, typer.Option("--platform", "-p", help="Shipped platform name or a TOML file.")
    ] = "local",
    suite: Annotated[
        str, typer.Option("--suite", "-s", help="Shipped suite name or a TOML file.")
    ] = "quick",
    db: DbOption = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue the latest interrupted run: only the missing points."
        ),
    ] = False,
) -> None:
    """Run a suite on a platform and store every measurement as it completes."""
    if resume:
        store = open_store(db, create=False)
        run_id, prepared = _prepare_resume(store)
    else:
        platform_loaded = load_platform(platform)
        suite_loaded = load_suite(suite)
        cases = plan_cases(suite_loaded, platform_loaded.config)
        prepared = _prepare(platform_loaded.config, cases)
        store = open_store(db)
    launcher = prepared.launcher
    campaign = Campaign(store, launcher, prepared.programs, RichReporter(err))
    try:
        # The launcher's session (an emulated cluster) exists before the run is recorded,
        # so a session that cannot start leaves no run behind.
        with launcher.session():
            if resume:
                store.claim_run(run_id, host=socket.gethostname(), pid=os.getpid())
                left = sum(len(p) for _, p in prepared.work)
                err.print(
                    f"resuming run {run_id}: {left} points in {len(prepared.work)} cases left"
                )
            else:
                store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=_is_alive)
                run_id = _start_new_run(prepared, store, suite_loaded, platform_loaded, cases)
            result = campaign.execute(run_id, prepared.work)
    except Interrupted as e:
        store.set_run_status(run_id, Status.INTERRUPTED, ended=time.time())
        err.print(
            f"[yellow]run {run_id} {e}; completed points are stored. "
            "Continue with: hpceval run --resume[/]"
        )
        raise typer.Exit(128 + e.signum) from None
    except StoreUnavailable as e:
        # Best effort: the database is most likely still gone; then the next command finds
        # this process dead and marks the run interrupted.
        with contextlib.suppress(StoreUnavailable):
            store.set_run_status(run_id, Status.INTERRUPTED, ended=time.time())
        raise UserError(
            f"{e}; when it is back, continue with: hpceval run --resume --db {store.url}"
        ) from None
    store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    out.print(_summary(store, run_id, result))
    ok = len(result.outcomes) - len(result.failed) - len(result.skipped)
    skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
    out.print(
        f"{ok} of {len(result.outcomes)} cases ok{skipped}; "
        f"see the tables with: hpceval show --run {run_id}",
        highlight=False,
    )
    for outcome in result.skipped:
        # Skipped is not a failure (exit status 0), but never a silent gap either.
        err.print(
            f"[yellow]skipped: {case_label(outcome.case)}: {outcome.error}[/]", highlight=False
        )
    if result.skipped:
        err.print("[yellow]after installing what is missing: hpceval run --resume[/]")
    if result.failed:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- show


@app.command()
@user_errors
def show(
    run_id: Annotated[
        int | None, typer.Option("--run", "-r", help="Run id \\[default: the latest].")
    ] = None,
    db: DbOption = None,
) -> None:
    """Show a run's results: latency/bandwidth by size, collectives by size and ranks."""
    from hpceval.show import (
        application_tables,
        collective_tables,
        fio_tables,
        hpcc_tables,
        npb_tables,
        point_to_point_tables,
    )

    store = open_store(db, create=False)
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=_is_alive)
    row = store.run(run_id) if run_id is not None else store.latest_run()
    if row is None:
        raise UserError(f"{store.url}: no runs yet (start one with: hpceval run)")
    facts = store.environment(row.environment_id)
    head = Table.grid(padding=(0, 2))
    head.add_row("run", f"{row.id} ({row.status})")
    head.add_row("suite / platform", f"{row.suite_name} / {row.platform_name}")
    for key, value in summarize(facts):
        head.add_row(key, value)
    out.print(head)
    ms = [sm.measurement for sm in store.measurements(row.id)]
    if not ms:
        out.print("no measurements in this run")
    tables = point_to_point_tables(ms) + collective_tables(ms) + npb_tables(ms)
    for table in tables + fio_tables(ms) + hpcc_tables(ms) + application_tables(ms):
        out.print(table)
    failed = [e for e in store.executions(row.id) if e.status not in ("ok", "running")]
    for e in failed:
        colour = "yellow" if e.status == "skipped" else "red"
        out.print(f"[{colour}]{e.status}: {e.case_key}: {e.error}[/]", highlight=False)


@app.command()
@user_errors
def runs(db: DbOption = None) -> None:
    """List the runs in the results database."""
    from hpceval.show import runs_table

    store = open_store(db, create=False)
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=_is_alive)
    out.print(
        runs_table(
            ((r, store.cases(r.id)) for r in store.runs()),
            skip_reasons=lambda run_id: [
                e.error for e in store.executions(run_id) if e.status == "skipped"
            ],
        )
    )


# --------------------------------------------------------------------------- catalogue


@app.command()
@user_errors
def suites() -> None:
    """List the shipped suites."""
    t = Table(title="shipped suites (use --suite NAME, or a TOML file)", title_justify="left")
    t.add_column("name")
    t.add_column("description")
    for name in shipped_names("suites"):
        t.add_row(name, load_suite(name).config.description)
    out.print(t)


@app.command()
@user_errors
def platforms() -> None:
    """List the shipped platforms."""
    t = Table(title="shipped platforms (use --platform NAME, or a TOML file)", title_justify="left")
    for col in ("name", "launcher", "nodes", "description"):
        t.add_column(col)
    for name in shipped_names("platforms"):
        p = load_platform(name).config
        t.add_row(name, p.launcher.kind, str(p.nodes), p.description)
    out.print(t)


@app.command()
@user_errors
def doctor() -> None:
    """What is installed (MPI, compilers, hwloc, optional tools), what is missing, how to get it."""
    from hpceval.doctor import exit_code, render, run_checks

    checks = run_checks()
    out.print(render(checks))
    code = exit_code(checks)
    if code:
        raise typer.Exit(code)


@app.command()
@user_errors
def build(
    platform: Annotated[
        str, typer.Option("--platform", "-p", help="Platform whose compiler to use.")
    ] = "local",
) -> None:
    """Compile the benchmark programs for a platform (cached by source, compiler, MPI, flags)."""
    from hpceval.benchmarks import benchmark_names

    loaded = load_platform(platform)
    toolchain, _ = _toolchain_and_launcher(loaded.config)
    for name in benchmark_names():
        program = get_benchmark(name).build(
            compiler=toolchain.mpicc,
            compiler_identity=toolchain.identity(),
            cflags=loaded.config.cflags,
        )
        out.print(f"{name}: {program.path}", highlight=False)


import_app = typer.Typer(
    help="Bring results of other tools (official NPB binaries...) into the database.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")


@import_app.command("npb")
@user_errors
def import_npb_command(
    files: Annotated[list[Path], typer.Argument(help="Standard outputs of NPB runs (cg.C.x ...).")],
    platform: Annotated[
        str, typer.Option("--platform", "-p", help="Name of the platform the runs were made on.")
    ],
    db: DbOption = None,
    note: Annotated[str | None, typer.Option(help="A note stored with the run.")] = None,
) -> None:
    """Import outputs of official NPB binaries (MPI or OpenMP) as measurements.

    Every file is parsed first: one that is not an NPB output, or was cut off before its
    summary, stops the import before anything is written. A run that did not verify is
    recorded as a failed execution, never as a number.
    """
    from hpceval.importers import import_npb

    for f in files:
        if not f.is_file():
            raise UserError(f"{f}: no such file")
    store = open_store(db)
    run_id = import_npb(store, files, platform_name=platform, note=note)
    executions = store.executions(run_id)
    failed = [e for e in executions if e.status != ExecutionStatus.OK]
    out.print(
        f"run {run_id}: imported {len(executions) - len(failed)} verified NPB results"
        + (f", {len(failed)} failed verification" if failed else "")
        + f" into {store.url}",
        highlight=False,
    )
    for e in failed:
        out.print(f"[red]{e.argv[-1]}: {e.error}[/]", highlight=False)
    if failed:
        raise typer.Exit(1)


app.add_typer(db_app, name="db")
register_analysis_commands(app, out)
register_simulate_commands(app, out)
register_report_command(app, out)

netns_app = typer.Typer(
    help="The emulated clusters of the netns launcher (network namespaces).",
    no_args_is_help=True,
)
app.add_typer(netns_app, name="netns")


@netns_app.command("cleanup")
@user_errors
def netns_cleanup() -> None:
    """Remove emulated clusters left over by a dead hpceval (namespaces, veths, bridges)."""
    from hpceval.launch.netns import cleanup_netns

    removed = cleanup_netns()
    out.print(f"removed: {', '.join(removed)}" if removed else "nothing to remove", highlight=False)


def version_callback(value: bool) -> None:
    if value:
        out.print(f"hpceval {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """hpceval: measured characterizations of HPC platforms."""


def main() -> None:
    # A closed stdout (hpceval show | head) should end quietly, not with a traceback.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        app(prog_name="hpceval")
    except SystemExit as done:
        end_process(done.code)


def end_process(code: object) -> NoReturn:
    """Exit with `code` (as sys.exit takes it) once the command is over, skipping the
    interpreter's own clean-up: tearing down pandas, SciPy, matplotlib and the memory of a
    million-row analysis takes 0.3-0.6 s after every analysis command, for nothing. What
    that clean-up would do for us is done first: open stores closed (SQLite's log folded
    in), logging and the standard streams flushed. Used only by the console entry point."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        status = 1
    else:
        status = 0 if code is None else int(cast(int, code))
    close_open_stores()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
