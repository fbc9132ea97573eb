"""Campaigns: suite x platform -> cases -> executions -> measurements in the store.

Each point's measurements are committed the moment the benchmark prints the point, so a
campaign killed in any way (Ctrl-C, SIGTERM, kill -9) loses nothing it completed, and
`--resume` measures only the points still missing.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any, Protocol

from hpceval.benchmarks import Benchmark, Case, ParsedPoint, Program, get_benchmark
from hpceval.config import Loaded, PlatformConfig, SuiteConfig
from hpceval.errors import BenchmarkFailure, ConfigError, StartupFailure, UserError
from hpceval.execute import KILL_GRACE_S, StartFailed
from hpceval.launch import Command, Launcher
from hpceval.model import ExecutionRecord, ExecutionStatus, Placement
from hpceval.mpj import java_platform
from hpceval.store import Store

TAIL_BYTES = 8192
POLL_S = 0.1
# Tries again of an execution whose runtime failed to start its ranks (StartupFailure).
STARTUP_RETRIES = 1


# --------------------------------------------------------------------------- planning


def plan_cases(
    suite: Loaded[SuiteConfig], platform: PlatformConfig, skipped: list[str] | None = None
) -> list[Case]:
    """Expand every suite entry on the platform. A placement of a sweep that this platform
    cannot hold (too few nodes or cores), or a ranks_per_node that does not divide a rank
    count, is left out with a note appended to `skipped` (one suite serves platforms of
    different shapes); an entry that leaves nothing to run, and any other impossible case,
    fails here, before any run."""
    cases: list[Case] = []
    seen: dict[str, int] = {}
    notes = skipped if skipped is not None else []
    java_left_out: list[str] = []
    for i, entry in enumerate(suite.config.benchmark):
        bench = get_benchmark(entry.name)
        if bench.runs_on_mpj and java_platform(platform) is None:
            # A suite with Java entries (standard) serves the platforms without Java too.
            java_left_out.append(
                f"benchmark[{i}] {entry.name}: left out, platform {platform.name!r} runs no "
                "Java (Java runs on local, or on a platform of MPJ's, e.g. netns-2x2-mpj)"
            )
            continue
        try:
            entry_cases = bench.cases(entry.settings(), platform, i)
        except UserError as e:
            raise ConfigError(str(e), source=suite.source, field=f"benchmark[{i}]") from e
        entry_notes = _indivisible_sweep(entry.options(), i)
        kept = 0
        for case in entry_cases:
            if problem := platform.placement_problem(case.placement):
                entry_notes.append(f"benchmark[{i}] {case.key}: skipped, {problem}")
                continue
            case = replace(case, entry_options=entry.options())
            if case.key in seen:
                raise ConfigError(
                    f"case {case.key} repeats one of benchmark[{seen[case.key]}]",
                    source=suite.source,
                    field=f"benchmark[{i}]",
                )
            seen[case.key] = i
            cases.append(case)
            kept += 1
        if entry_cases and not kept:
            raise ConfigError(
                entry_notes[-1].split(", ", 1)[1], source=suite.source, field=f"benchmark[{i}]"
            )
        notes.extend(entry_notes)
    if java_left_out and not cases:
        raise ConfigError(java_left_out[0].split(", ", 1)[1], source=suite.source)
    notes.extend(java_left_out)
    return cases


def _indivisible_sweep(options: Mapping[str, Any], index: int) -> list[str]:
    """Notes for the (ranks, ranks_per_node) pairs of a sweep that no platform can hold."""
    ranks, per_node = options.get("ranks"), options.get("ranks_per_node")
    if not isinstance(ranks, list) or not isinstance(per_node, list):
        return []
    return [
        f"benchmark[{index}]: ranks {r} at {ppn} per node skipped, {r} is not a multiple of {ppn}"
        for r in ranks
        for ppn in per_node
        if isinstance(r, int) and isinstance(ppn, int) and ppn > 0 and r % ppn
    ]


def case_from_description(key: str, benchmark: str, desc: Mapping[str, Any]) -> Case:
    """Rebuild a stored case exactly as planned (resume must not re-plan with new defaults)."""
    p = desc["placement"]
    return Case(
        key=key,
        benchmark=benchmark,
        placement=Placement(p["nodes"], p["ranks_per_node"], p["threads_per_rank"], p["binding"]),
        parameters=dict(desc["parameters"]),
        points=tuple(desc["points"]),
        time_limit_s=float(desc["time_limit_s"]),
        options=dict(desc["options"]),
        estimate_s=float(desc.get("estimate_s", 1.0)),
        entry_options=dict(desc.get("entry_options", {})),
    )


def case_description(case: Case) -> dict[str, Any]:
    return {
        **case.description(),
        "estimate_s": case.estimate_s,
        "entry_options": dict(case.entry_options),
    }


class SkipReasons:
    """`Benchmark.unavailable` per suite entry, asked once per entry and platform (with the
    entry's options as the case stored them, typed again for a resumed run)."""

    def __init__(self, platform: PlatformConfig) -> None:
        self.platform = platform
        self._known: dict[tuple[str, str], str | None] = {}

    def __call__(self, case: Case) -> str | None:
        key = (case.benchmark, json.dumps(case.entry_options, sort_keys=True, default=str))
        if key not in self._known:
            bench = get_benchmark(case.benchmark)
            try:
                options = bench.parse_options(case.entry_options)
            except ValueError:  # pydantic's ValidationError included
                if case.entry_options:
                    raise
                # No entry options that the model refuses: a case planned outside a suite
                # (simulate's cases, calibrations), as no suite entry could be. Nothing to ask.
                self._known[key] = None
            else:
                self._known[key] = bench.unavailable(options, self.platform)
        return self._known[key]


def skipped_benchmarks(cases: Sequence[Case], platform: PlatformConfig) -> set[str]:
    """The benchmarks every case of which will be skipped (their program is not built)."""
    reasons = SkipReasons(platform)
    names = {c.benchmark for c in cases}
    return {n for n in names if all(reasons(c) for c in cases if c.benchmark == n)}


# --------------------------------------------------------------------------- progress


class Reporter(Protocol):
    def begin(self, work: Sequence[tuple[Case, Sequence[str]]]) -> None: ...
    def case_started(self, case: Case, index: int, total: int) -> None: ...
    def point_done(self, case: Case, point: str) -> None: ...
    def case_finished(self, case: Case, status: ExecutionStatus, error: str) -> None: ...
    def end(self) -> None: ...


class SilentReporter:
    def begin(self, work: Sequence[tuple[Case, Sequence[str]]]) -> None:
        pass

    def case_started(self, case: Case, index: int, total: int) -> None:
        pass

    def point_done(self, case: Case, point: str) -> None:
        pass

    def case_finished(self, case: Case, status: ExecutionStatus, error: str) -> None:
        pass

    def end(self) -> None:
        pass


# --------------------------------------------------------------------------- execution


def unreadable_output(error: Exception) -> str:
    """The reason of an execution whose output a parser could not turn into numbers (a
    parser should raise BenchmarkFailure; this keeps one that does not from ending the run)."""
    return f"unreadable output: {type(error).__name__}: {error}"


class Interrupted(Exception):
    """The campaign was stopped by a signal; the run is resumable."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


@dataclass
class CaseOutcome:
    case: Case
    status: ExecutionStatus
    error: str
    points_done: int
    wall_s: float


# How an executor's explain_failure() starts: the failure is the exit, not a reported error.
EXIT_EXPLANATIONS = ("exited with status", "killed by")


@dataclass
class CampaignResult:
    outcomes: list[CaseOutcome] = field(default_factory=list)
    benchmark_seconds: float = 0.0  # wall time spent inside benchmark executions

    @property
    def failed(self) -> list[CaseOutcome]:
        """Cases that ran and did not succeed (skipped cases are not failures)."""
        return [
            o
            for o in self.outcomes
            if o.status not in (ExecutionStatus.OK, ExecutionStatus.SKIPPED)
        ]

    @property
    def skipped(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if o.status is ExecutionStatus.SKIPPED]


def _tail(text: str) -> str:
    return text[-TAIL_BYTES:]


class Campaign:
    """Runs cases through a launcher and commits every completed point."""

    def __init__(
        self,
        store: Store,
        launcher: Launcher,
        programs: Mapping[str, Program],
        reporter: Reporter | None = None,
        *,
        clock: Callable[[], float] = time.time,
        launchers: Mapping[str, Launcher] | None = None,
    ) -> None:
        self.store = store
        self.launcher = launcher
        # Benchmarks run by another launcher than the platform's (a suite's Java cases on
        # `local`: hpceval.mpj.java_platform), by benchmark name.
        self.launchers = dict(launchers or {})
        self.programs = programs
        self.reporter: Reporter = reporter or SilentReporter()
        self.clock = clock
        self._signal: int | None = None
        # Set by _supervise when the execution ended in a StartupFailure.
        self._startup_failed = False
        self._skip_reason = SkipReasons(launcher.platform)

    def launcher_for(self, benchmark: str) -> Launcher:
        return self.launchers.get(benchmark, self.launcher)

    @contextlib.contextmanager
    def _signals_trapped(self) -> Iterator[None]:
        """SIGINT/SIGTERM only set a flag: the loop then stops the child and records it."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self._signal = signum

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    def execute(self, run_id: int, work: Sequence[tuple[Case, Sequence[str]]]) -> CampaignResult:
        """Run each (case, points still to measure); raises Interrupted on a signal."""
        result = CampaignResult()
        self.reporter.begin(work)
        try:
            with self._signals_trapped():
                for index, (case, points) in enumerate(work):
                    if self._signal is not None:
                        raise Interrupted(self._signal)
                    self.reporter.case_started(case, index, len(work))
                    outcome = self._run_case(run_id, case, points)
                    result.outcomes.append(outcome)
                    result.benchmark_seconds += outcome.wall_s
                    if outcome.status is ExecutionStatus.INTERRUPTED:
                        raise Interrupted(self._signal or signal.SIGINT)
                    self.reporter.case_finished(case, outcome.status, outcome.error)
        finally:
            self.reporter.end()
        return result

    def _run_case(self, run_id: int, case: Case, points: Sequence[str]) -> CaseOutcome:
        """All executions of a case: one for every point, or one for all of them."""
        bench = get_benchmark(case.benchmark)
        reason = self._skip_reason(case)
        if reason is not None:
            return self._skip(run_id, case, reason)
        if bench.points_per_execution is None:
            chunks = [list(points)]
        else:
            n = bench.points_per_execution
            chunks = [list(points[i : i + n]) for i in range(0, len(points), n)]
        status, error, done, wall = ExecutionStatus.OK, "", 0, 0.0
        for chunk in chunks:
            if self._signal is not None:
                status, error = ExecutionStatus.INTERRUPTED, "interrupted"
                break
            status, error, chunk_done, chunk_wall = self._execute(run_id, case, chunk)
            done += chunk_done
            wall += chunk_wall
            if status is not ExecutionStatus.OK:
                # A failed repetition would fail again: the case is over; an interrupted
                # one stays pending for --resume.
                break
        if status is ExecutionStatus.OK:
            self.store.set_case_status(run_id, case.key, "done")
        elif status is not ExecutionStatus.INTERRUPTED:
            self.store.set_case_status(run_id, case.key, "failed")
        return CaseOutcome(case, status, error, done, wall)

    def _skip(self, run_id: int, case: Case, reason: str) -> CaseOutcome:
        """Record a case whose tool is missing: one execution, nothing measured."""
        now = self.clock()
        self._record_unstarted(run_id, case, ExecutionStatus.SKIPPED, reason, now, now)
        self.store.set_case_status(run_id, case.key, "skipped")
        return CaseOutcome(case, ExecutionStatus.SKIPPED, reason, 0, 0.0)

    def _execute(
        self, run_id: int, case: Case, points: Sequence[str]
    ) -> tuple[ExecutionStatus, str, int, float]:
        """One execution measuring `points` of `case`: (status, error, points done, wall s).
        An execution whose runtime failed to start its ranks (StartupFailure, nothing
        measured) stays recorded as failed and is tried once more."""
        wall = 0.0
        for _ in range(1 + STARTUP_RETRIES):
            self._startup_failed = False
            status, error, done, seconds = self._execute_once(run_id, case, points)
            wall += seconds
            if not (self._startup_failed and done == 0) or self._signal is not None:
                break
        return status, error, done, wall

    def _execute_once(
        self, run_id: int, case: Case, points: Sequence[str]
    ) -> tuple[ExecutionStatus, str, int, float]:
        bench = get_benchmark(case.benchmark)
        started = self.clock()
        try:
            with bench.staged(case, points) as staged:
                return self._execute_staged(run_id, bench, staged, points, started)
        except BenchmarkFailure as e:
            # The execution could not be set up (or cleaned up): a failure with its reason.
            error = str(e)
        ended = self.clock()
        self._record_unstarted(run_id, case, ExecutionStatus.FAILED, error, started, ended)
        return ExecutionStatus.FAILED, error, 0, ended - started

    def _record_unstarted(
        self,
        run_id: int,
        case: Case,
        status: ExecutionStatus,
        error: str,
        started: float,
        ended: float,
    ) -> None:
        """An execution whose program never started (skipped, or its set-up failed)."""
        execution_id = self.store.start_execution(run_id, case.key, case.benchmark, (), {}, started)
        self.store.finish_execution(
            execution_id,
            ExecutionRecord(
                case_key=case.key,
                benchmark=case.benchmark,
                argv=(),
                env={},
                status=status,
                exit_code=None,
                started=started,
                ended=ended,
                error=error,
            ),
        )

    def _execute_staged(
        self, run_id: int, bench: Benchmark[Any], case: Case, points: Sequence[str], started: float
    ) -> tuple[ExecutionStatus, str, int, float]:
        program = self.programs[case.benchmark]
        command: Command = self.launcher_for(case.benchmark).command(
            case.placement, bench.command(case, program, points)
        )
        # Measurements record the placement as it really ran (binding off when oversubscribed).
        effective = replace(
            case,
            placement=command.placement,
            parameters={**case.parameters, "oversubscribed": command.oversubscribed},
            points=tuple(points),
        )
        execution_id = self.store.start_execution(
            run_id, case.key, case.benchmark, command.argv, dict(command.env), started
        )
        status, error, exit_code, stdout_lines, stderr_tail, done = self._supervise(
            run_id, execution_id, effective, bench, command
        )
        if status is ExecutionStatus.OK:
            stdout = "".join(stdout_lines)
            try:
                collected = bench.collect(stdout, effective, points)
                bench.verify(stdout, effective, points)
            except BenchmarkFailure as e:
                status, error = ExecutionStatus.FAILED, str(e)
            except (ValueError, ArithmeticError) as e:
                status, error = ExecutionStatus.FAILED, unreadable_output(e)
            else:
                # Stored only once the whole output passed its checks.
                for parsed in collected:
                    self._store_point(run_id, execution_id, effective, parsed)
                    done += 1
        elif status is ExecutionStatus.FAILED and error.startswith(EXIT_EXPLANATIONS):
            # A program that dies without an error line (a crash, an application that
            # writes its reason to its own log) is explained by what its output check finds:
            # for the applications that includes the tail of their log.
            try:
                bench.verify("".join(stdout_lines), effective, points)
            except BenchmarkFailure as e:
                error = f"{error}; {e}"
        ended = self.clock()
        self.store.finish_execution(
            execution_id,
            ExecutionRecord(
                case_key=case.key,
                benchmark=case.benchmark,
                argv=command.argv,
                env=dict(command.env),
                status=status,
                exit_code=exit_code,
                started=started,
                ended=ended,
                stdout_tail=_tail("".join(stdout_lines)),
                stderr_tail=_tail(stderr_tail),
                error=error,
            ),
        )
        return status, error, done, ended - started

    def _store_point(self, run_id: int, execution_id: int, case: Case, parsed: ParsedPoint) -> None:
        origin = self.launcher_for(case.benchmark).origin
        for m in parsed.measurements:
            if origin is not m.origin:
                # Numbers of an emulated cluster are labelled so wherever they go.
                m = replace(m, origin=origin)
            self.store.add_measurement(run_id, execution_id, case.key, parsed.point_key, m)
        self.reporter.point_done(case, parsed.point_key)

    def _supervise(
        self,
        run_id: int,
        execution_id: int,
        case: Case,
        bench: Benchmark[Any],
        command: Command,
    ) -> tuple[ExecutionStatus, str, int | None, list[str], str, int]:
        """Start the command, commit points as they stream in, enforce the time limit."""
        try:
            running = self.launcher_for(case.benchmark).submit(command, case.time_limit_s)
        except StartFailed as e:
            return ExecutionStatus.FAILED, str(e), None, [], "", 0
        stdout_lines: list[str] = []
        deadline = time.monotonic() + case.time_limit_s
        status, error, done = ExecutionStatus.OK, "", 0
        try:
            while True:
                if self._signal is not None:
                    status = ExecutionStatus.INTERRUPTED
                    error = f"interrupted by {signal.Signals(self._signal).name}"
                    break
                if running.queued():
                    # Waiting in a scheduler's queue is not running: the limit starts later.
                    deadline = time.monotonic() + case.time_limit_s
                elif time.monotonic() > deadline:
                    status = ExecutionStatus.TIMEOUT
                    error = f"exceeded its time limit of {case.time_limit_s:g} s"
                    break
                try:
                    line = running.next_line(timeout=POLL_S)
                except TimeoutError:
                    continue
                if line is None:
                    break
                stdout_lines.append(line)
                parsed = bench.parse_line(line, case)
                if parsed is None:
                    continue
                self._store_point(run_id, execution_id, case, parsed)
                done += 1
        except BenchmarkFailure as e:
            status, error = ExecutionStatus.FAILED, str(e)
            self._startup_failed = isinstance(e, StartupFailure)
        except (ValueError, ArithmeticError) as e:
            status, error = ExecutionStatus.FAILED, unreadable_output(e)
        finally:
            # Output ended: give the program the grace period to exit by itself.
            exit_code = running.wait(timeout=KILL_GRACE_S) if status is ExecutionStatus.OK else None
            if exit_code is None:
                running.stop()
                exit_code = running.wait()
        if status is ExecutionStatus.OK and exit_code != 0:
            status = ExecutionStatus.FAILED
            error = running.explain_failure(exit_code if exit_code is not None else -9)
        return status, error, exit_code, stdout_lines, running.stderr_tail(), done
