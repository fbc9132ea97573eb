"""What `hpceval run` (and `hpceval simulate`'s campaigns) use: progress reporting, the
toolchain and programs of a platform, new and resumed runs, the run summary. Imported by the
commands that run things, not by every command (the analysis commands start faster)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

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
from rich.text import Text

from hpceval.benchmarks import Case, find_benchmark
from hpceval.benchmarks.display import generic_headline
from hpceval.campaign import (
    CampaignResult,
)
from hpceval.cli_common import status_text
from hpceval.labels import placement_label
from hpceval.model import ExecutionStatus, Measurement
from hpceval.store import Store

if TYPE_CHECKING:
    from hpceval.campaign import Prepared

# --------------------------------------------------------------------------- progress


class RichReporter:
    """A progress bar with the current case and an ETA weighted by each case's estimate."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.fields[case]}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.fields[points]}", markup=False),
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
            self.console.print(Text.assemble(("✓", "green"), f" {label}"), highlight=False)
        elif status is ExecutionStatus.SKIPPED:
            self.console.print(f"○ {label}: skipped: {error}", style="yellow", highlight=False)
        else:
            self.console.print(f"✗ {label}: {status.value}: {error}", style="red", highlight=False)

    def end(self) -> None:
        self.progress.stop()


# --------------------------------------------------------------------------- summary


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
            t.add_row(case_label(o.case), Text("skipped", "yellow"), "", o.error, "")
            continue
        t.add_row(
            case_label(o.case),
            status_text(o.status.value),
            f"{len(points.get(o.case.key, ()))}/{len(o.case.points)}",
            headline(ms) if o.status is ExecutionStatus.OK else o.error[:80],
            f"{o.wall_s:.1f}",
        )
    return t


def case_label(case: Case) -> str:
    """`pingpong np=2, 1 node × 2 ranks × 1 thread, intra-node`: the case key without the
    benchmark, its placement in the one notation (hpceval.labels)."""
    placement = case.placement
    pair = next((p.removeprefix("pair=") for p in case.key.split(":") if p.startswith("pair=")),
                None)  # fmt: skip
    skip = {placement.label(), f"pair={pair}", f"bind={placement.binding}"}
    parts = [p for p in case.key.split(":")[1:] if p not in skip]
    where = placement_label({**placement.as_parameters(), "pair": pair})
    return f"{' '.join(parts)}, {where}"


def headline(ms: Sequence[Measurement]) -> str:
    """The figure a user looks for first in a case's measurements (its benchmark says which)."""
    if not ms:
        return ""
    bench = find_benchmark(ms[0].benchmark)
    return bench.headline(ms) if bench is not None else generic_headline(ms)


# --------------------------------------------------------------------------- transport


def record_transport(prepared: Prepared, console: Console) -> None:
    """Probe the transport the MPI library takes (inside the launcher's session) into the
    run's provenance with what the launcher records of itself (a container runtime), and say
    at once when the transport contradicts the platform."""
    from hpceval.transport import (
        describe_transport,
        expected_fabric_warning,
        latency_warnings,
        probe_transports,
        with_facts,
    )

    platform = prepared.platform
    if (runtime := prepared.launcher.provenance()) is not None:
        prepared.environment = with_facts(prepared.environment, "container_runtime", runtime)
    if not platform.transport_probe:
        return
    transport = probe_transports(prepared.launcher, prepared.toolchain, platform)
    prepared.environment = with_facts(prepared.environment, "transport", transport)
    console.print(f"transport: {describe_transport(transport)}", highlight=False)
    warnings = latency_warnings(transport)
    expected = platform.interconnect.expected_transport
    if warning := expected_fabric_warning(transport, expected, platform.nodes):
        warnings.append(warning)
    for warning in warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False)
