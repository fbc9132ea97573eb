"""The `hpceval` command line (Typer + rich)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Annotated, NoReturn, cast

import typer
from rich.table import Table

from hpceval import __version__
from hpceval.cli_analysis import register_analysis_commands
from hpceval.cli_cluster import cluster_app
from hpceval.cli_common import DbOption, SourceOption, console, err, user_errors
from hpceval.cli_cost import register_cost_commands
from hpceval.cli_db import db_app
from hpceval.cli_history import register_history_commands
from hpceval.cli_policy import StatisticOption, policy_option
from hpceval.cli_report import register_report_command
from hpceval.cli_simulate import register_simulate_commands
from hpceval.cli_study import study_app
from hpceval.cli_validate import register_validate_command
from hpceval.errors import UserError

# What the commands that run, build or list things need (campaigns, launchers, benchmarks,
# pydantic configurations) is imported in those commands: the analysis commands start
# without it.

app = typer.Typer(
    name="hpceval",
    help="Measure how well a platform serves parallel scientific codes (MPI), and store it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

out = console()


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
    source: SourceOption = None,
) -> None:
    """Run a suite on a platform and store every measurement as it completes."""
    from hpceval.campaign import (
        Campaign,
        Interrupted,
        load_platform,
        load_suite,
        plan_cases,
        prepare_resume,
        prepare_run,
        start_new_run,
        with_sources,
    )
    from hpceval.cli_run import RichReporter, case_label, record_transport, run_summary
    from hpceval.execute import is_alive
    from hpceval.model import Status
    from hpceval.sources import parse_source_options
    from hpceval.store import StoreUnavailable, open_store

    # The run once it is in the database: an error before that has no run to mark.
    recorded: int | None = None
    if resume:
        store = open_store(db, create=False)
        run_id, prepared = prepare_resume(store)
        recorded = run_id
    else:
        given = parse_source_options(source or [])
        platform_loaded = with_sources(load_platform(platform), given)
        suite_loaded = load_suite(suite)
        left_out: list[str] = []
        cases = plan_cases(suite_loaded, platform_loaded.config, left_out)
        for line in left_out:
            err.print(line, style="yellow", highlight=False, markup=False)
        prepared = prepare_run(platform_loaded.config, cases)
        store = open_store(db)
    campaign = Campaign(
        store,
        prepared.launcher,
        prepared.programs,
        RichReporter(err),
        launchers=prepared.launchers,
    )
    try:
        # The launcher's session (an emulated cluster) exists before the run is recorded,
        # so a session that cannot start leaves no run behind.
        with prepared.session():
            if resume:
                store.claim_run(run_id, host=socket.gethostname(), pid=os.getpid())
                left = sum(len(p) for _, p in prepared.work)
                err.print(
                    f"resuming run {run_id}: {left} points in {len(prepared.work)} cases left"
                )
            else:
                store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
                record_transport(prepared, err)
                run_id = start_new_run(
                    prepared, store, suite_loaded, platform_loaded, cases, note="; ".join(left_out)
                )
                err.print(
                    f"run {run_id}: suite {suite_loaded.config.name!r} on platform "
                    f"{platform_loaded.config.name!r}: {len(cases)} cases, "
                    f"{sum(len(c.points) for c in cases)} points → {store.url}",
                    highlight=False,
                )
                recorded = run_id
            result = campaign.execute(run_id, prepared.work)
    except Interrupted as e:
        if recorded is None:
            err.print(f"{e} before the run was recorded; nothing was measured", style="yellow")
            raise typer.Exit(128 + e.signum) from None
        with contextlib.suppress(StoreUnavailable):
            store.set_run_status(recorded, Status.INTERRUPTED, ended=time.time())
        err.print(
            f"run {recorded} {e}; completed points are stored. Continue with: hpceval run --resume",
            style="yellow",
        )
        raise typer.Exit(128 + e.signum) from None
    except StoreUnavailable as e:
        if recorded is None:  # the run could not even be recorded: nothing to resume
            raise
        # Best effort: the database is most likely still gone; then the next command finds
        # this process dead and marks the run interrupted.
        with contextlib.suppress(StoreUnavailable):
            store.set_run_status(recorded, Status.INTERRUPTED, ended=time.time())
        raise UserError(
            f"{e}; when it is back, continue with: hpceval run --resume --db {store.url}"
        ) from None
    store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    out.print(run_summary(store, run_id, result))
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
            f"skipped: {case_label(outcome.case)}: {outcome.error}", style="yellow", highlight=False
        )
    if result.skipped:
        err.print("after installing what is missing: hpceval run --resume", style="yellow")
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
    statistic: StatisticOption = None,
) -> None:
    """Show a run's results: its machine, then each benchmark's tables (values by the named
    statistic, with their spread)."""
    from hpceval.execute import is_alive
    from hpceval.provenance import summarize
    from hpceval.show import measurement_tables
    from hpceval.statistics import DISPLAY_STATISTIC
    from hpceval.store import open_store
    from hpceval.transport import describe_transport, transport_checks

    policy = policy_option(statistic)
    DISPLAY_STATISTIC.set(policy.statistic)
    store = open_store(db, create=False, read_only=True)
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
    row = store.run(run_id) if run_id is not None else store.latest_run()
    if row is None:
        raise UserError(f"{store.url}: no runs yet (start one with: hpceval run)")
    facts = store.environment(row.environment_id)
    head = Table.grid(padding=(0, 2))
    head.add_row("run", f"{row.id} ({row.status})")
    head.add_row("suite / platform", f"{row.suite_name} / {row.platform_name}")
    if row.note:
        head.add_row("note", row.note)
    head.add_row("statistic", policy.describe().split(";")[0].removeprefix("statistic: "))
    for key, value in summarize(facts):
        head.add_row(key, value)
    if transport := describe_transport(facts.get("transport")):
        head.add_row("Transport", transport)
    out.print(head)
    ms = [sm.measurement for sm in store.measurements(row.id)]
    if not ms:
        out.print("no measurements in this run")
    for table in measurement_tables(ms):
        out.print(table)
    for warning in transport_checks(facts, store.platform_config(row.platform_id)[1], ms):
        out.print(f"warning: {warning}", style="yellow", highlight=False)
    failed = [e for e in store.executions(row.id) if e.status not in ("ok", "running")]
    for e in failed:
        colour = "yellow" if e.status == "skipped" else "red"
        out.print(f"{e.status}: {e.case_key}: {e.error}", style=colour, highlight=False)


@app.command()
@user_errors
def runs(db: DbOption = None) -> None:
    """List the runs in the results database."""
    from hpceval.execute import is_alive
    from hpceval.show import runs_table
    from hpceval.store import open_store

    store = open_store(db, create=False, read_only=True)
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
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
    from hpceval.campaign import load_suite
    from hpceval.config import shipped_names

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
    from hpceval.campaign import load_platform
    from hpceval.config import shipped_names

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
    from hpceval.benchmarks import benchmark_names, get_benchmark
    from hpceval.campaign import load_platform, toolchain_and_launcher

    loaded = load_platform(platform)
    toolchain, _ = toolchain_and_launcher(loaded.config)
    for name in benchmark_names():
        bench = get_benchmark(name)
        if bench.built_from_user_sources:
            out.print(f"{name}: built by hpceval run from the sources given (--source)")
            continue
        program = bench.build(
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
    from hpceval.model import ExecutionStatus
    from hpceval.store import open_store

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
        out.print(f"{e.argv[-1]}: {e.error}", style="red", highlight=False)
    if failed:
        raise typer.Exit(1)


app.add_typer(db_app, name="db")
app.add_typer(cluster_app, name="cluster")
app.add_typer(study_app, name="study")
register_analysis_commands(app, out)
register_history_commands(app, out)
register_cost_commands(app)
register_simulate_commands(app, out)
register_report_command(app, out)
register_validate_command(app, out)

netns_app = typer.Typer(
    help="The emulated clusters of the netns launcher (network namespaces).",
    no_args_is_help=True,
)
app.add_typer(netns_app, name="netns")


@netns_app.command("cleanup")
@user_errors
def netns_cleanup() -> None:
    """Remove emulated clusters left over by a dead hpceval (namespaces, veths, bridges)."""
    from hpceval.clusters.netns import cleanup_netns

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
    if (store_module := sys.modules.get("hpceval.store")) is not None:
        store_module.close_open_stores()  # (a command that opened none did not import it)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
