"""What `hpceval run` (and `hpceval simulate`'s campaigns) use: progress reporting, the
toolchain and programs of a platform, new and resumed runs, the run summary. Imported by the
commands that run things, not by every command (the analysis commands start faster)."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from hpceval.benchmarks import Case, Program, find_benchmark, get_benchmark
from hpceval.benchmarks.display import generic_headline
from hpceval.campaign import (
    CampaignResult,
    case_description,
    case_from_description,
    skipped_benchmarks,
)
from hpceval.cli_common import err
from hpceval.config import (
    Loaded,
    PlatformConfig,
    SuiteConfig,
)
from hpceval.errors import UserError
from hpceval.launch import Launcher, MpiRuntime, get_launcher_class
from hpceval.launch.base import PLACEMENT_PROBE
from hpceval.model import Environment, ExecutionStatus, Measurement, Status
from hpceval.provenance import collect_environment, fingerprint
from hpceval.store import Store
from hpceval.toolchain import MpiToolchain, detect_mpi

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


def toolchain_and_launcher(platform: PlatformConfig) -> tuple[MpiToolchain, Launcher]:
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
        launcher.command(case.placement, PLACEMENT_PROBE)


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_summary(store: Store, run_id: int, result: CampaignResult) -> Table:
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
            headline(ms) if o.status is ExecutionStatus.OK else o.error[:80],
            f"{o.wall_s:.1f}",
        )
    return t


def case_label(case: Case) -> str:
    """`pingpong np=2 1x2x1 intra-node`: the case key without benchmark and planned binding."""
    parts = [p for p in case.key.split(":")[1:] if not p.startswith("bind=")]
    return " ".join(p.removeprefix("pair=") for p in parts)


def headline(ms: Sequence[Measurement]) -> str:
    """The figure a user looks for first in a case's measurements (its benchmark says which)."""
    if not ms:
        return ""
    bench = find_benchmark(ms[0].benchmark)
    return bench.headline(ms) if bench is not None else generic_headline(ms)


@dataclass
class Prepared:
    """A campaign ready to go: validated, built, with the work still to do."""

    platform: PlatformConfig
    toolchain: MpiToolchain
    launcher: Launcher
    programs: dict[str, Program]
    environment: Environment
    work: list[tuple[Case, list[str]]]


def prepare_run(platform: PlatformConfig, cases: Sequence[Case]) -> Prepared:
    """Toolchain, launcher, placements, builds and provenance: all before anything is written."""
    toolchain, launcher = toolchain_and_launcher(platform)
    _check_commands(launcher, cases)
    launcher.preflight()
    programs = _build_programs(cases, platform, toolchain)
    environment = _environment(toolchain, programs)
    return Prepared(platform, toolchain, launcher, programs, environment, [])


def start_new_run(
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


def prepare_resume(store: Store) -> tuple[int, Prepared]:
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
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
    prepared = prepare_run(PlatformConfig.model_validate(platform_raw), [c for c, _ in work])
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
