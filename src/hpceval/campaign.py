"""Campaigns: suite x platform -> cases -> executions -> measurements in the store.

Each point's measurements are committed the moment the benchmark prints the point, so a
campaign killed in any way (Ctrl-C, SIGTERM, kill -9) loses nothing it completed, and
`--resume` measures only the points still missing.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any, Protocol

from hpceval.benchmarks import Case, ParsedPoint, Program, get_benchmark
from hpceval.config import Loaded, PlatformConfig, SuiteConfig
from hpceval.errors import BenchmarkFailure, ConfigError, UserError
from hpceval.launch import Command, Launcher
from hpceval.model import ExecutionRecord, ExecutionStatus, Placement
from hpceval.store import Store

TAIL_BYTES = 8192
KILL_GRACE_S = 3.0
POLL_S = 0.1


# --------------------------------------------------------------------------- planning


def plan_cases(suite: Loaded[SuiteConfig], platform: PlatformConfig) -> list[Case]:
    """Expand every suite entry on the platform; impossible cases fail here, before any run."""
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(suite.config.benchmark):
        bench = get_benchmark(entry.name)
        try:
            entry_cases = bench.cases(entry.options(), platform, i)
        except UserError as e:
            raise ConfigError(str(e), source=suite.source, field=f"benchmark[{i}]") from e
        for case in entry_cases:
            if case.key in seen:
                raise ConfigError(
                    f"case {case.key} repeats one of benchmark[{seen[case.key]}]",
                    source=suite.source,
                    field=f"benchmark[{i}]",
                )
            seen[case.key] = i
            cases.append(case)
    return cases


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
    )


def case_description(case: Case) -> dict[str, Any]:
    return {**case.description(), "estimate_s": case.estimate_s}


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


@dataclass
class CampaignResult:
    outcomes: list[CaseOutcome] = field(default_factory=list)
    benchmark_seconds: float = 0.0  # wall time spent inside benchmark executions

    @property
    def failed(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if o.status is not ExecutionStatus.OK]


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child: get SIGTERM if hpceval dies (even by kill -9), so no orphan mpirun lingers."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the whole process group (mpirun and its ranks), SIGKILL after a grace period."""
    for sig, wait_s in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)


def _read_lines(stream: Any, sink: queue.Queue[str | None]) -> None:
    for line in stream:
        sink.put(line)
    sink.put(None)


def _keep_tail(stream: Any, tail: collections.deque[str]) -> None:
    for line in stream:
        tail.append(line)


def _tail(lines: Sequence[str] | collections.deque[str]) -> str:
    text = "".join(lines)
    return text[-TAIL_BYTES:]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


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
    ) -> None:
        self.store = store
        self.launcher = launcher
        self.programs = programs
        self.reporter: Reporter = reporter or SilentReporter()
        self.clock = clock
        self._signal: int | None = None

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
                    self.reporter.case_finished(case, outcome.status, outcome.error)
                    if outcome.status is ExecutionStatus.INTERRUPTED:
                        raise Interrupted(self._signal or signal.SIGINT)
        finally:
            self.reporter.end()
        return result

    def _run_case(self, run_id: int, case: Case, points: Sequence[str]) -> CaseOutcome:
        bench = get_benchmark(case.benchmark)
        program = self.programs[case.benchmark]
        command: Command = self.launcher.command(
            case.placement, bench.command(case, program, points)
        )
        # Measurements record the placement as it really ran (binding off when oversubscribed).
        effective = replace(
            case,
            placement=command.placement,
            parameters={**case.parameters, "oversubscribed": command.oversubscribed},
        )
        started = self.clock()
        execution_id = self.store.start_execution(
            run_id, case.key, case.benchmark, command.argv, dict(command.env), started
        )
        status, error, exit_code, stdout_lines, stderr_tail, done = self._supervise(
            run_id, execution_id, effective, bench, command, points
        )
        if status is ExecutionStatus.OK:
            try:
                bench.verify("".join(stdout_lines), effective, points)
            except BenchmarkFailure as e:
                status, error = ExecutionStatus.FAILED, str(e)
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
                stdout_tail=_tail(stdout_lines),
                stderr_tail=_tail(stderr_tail),
                error=error,
            ),
        )
        if status is ExecutionStatus.OK:
            self.store.set_case_status(run_id, case.key, "done")
        elif status is not ExecutionStatus.INTERRUPTED:
            self.store.set_case_status(run_id, case.key, "failed")
        return CaseOutcome(case, status, error, done, ended - started)

    def _supervise(
        self,
        run_id: int,
        execution_id: int,
        case: Case,
        bench: Any,
        command: Command,
        points: Sequence[str],
    ) -> tuple[ExecutionStatus, str, int | None, list[str], collections.deque[str], int]:
        """Start the command, commit points as they stream in, enforce the time limit."""
        env = {**os.environ, **command.env}
        try:
            proc = subprocess.Popen(
                list(command.argv),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                start_new_session=True,  # Ctrl-C reaches hpceval only; it stops the group
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            error = f"cannot start {command.argv[0]}: {e.strerror}"
            return ExecutionStatus.FAILED, error, None, [], collections.deque(), 0
        lines: queue.Queue[str | None] = queue.Queue()
        stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        readers = [
            threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True),
            threading.Thread(target=_keep_tail, args=(proc.stderr, stderr_tail), daemon=True),
        ]
        for t in readers:
            t.start()
        stdout_lines: list[str] = []
        deadline = time.monotonic() + case.time_limit_s
        status, error, done = ExecutionStatus.OK, "", 0
        try:
            while True:
                if self._signal is not None:
                    status = ExecutionStatus.INTERRUPTED
                    error = f"interrupted by {signal.Signals(self._signal).name}"
                    break
                if time.monotonic() > deadline:
                    status = ExecutionStatus.TIMEOUT
                    error = f"exceeded its time limit of {case.time_limit_s:g} s"
                    break
                try:
                    line = lines.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if line is None:
                    break
                stdout_lines.append(line)
                parsed: ParsedPoint | None = bench.parse_line(line, case)
                if parsed is None:
                    continue
                for m in parsed.measurements:
                    self.store.add_measurement(run_id, execution_id, case.key, parsed.point_key, m)
                done += 1
                self.reporter.point_done(case, parsed.point_key)
        except BenchmarkFailure as e:
            status, error = ExecutionStatus.FAILED, str(e)
        finally:
            if status is not ExecutionStatus.OK or proc.poll() is None:
                if status is ExecutionStatus.OK:
                    # Output ended but the process lingers: give it the grace period to exit.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=KILL_GRACE_S)
                _kill_group(proc)
            for t in readers:
                t.join(timeout=KILL_GRACE_S)
        exit_code = proc.wait()
        if status is ExecutionStatus.OK and exit_code != 0:
            status = ExecutionStatus.FAILED
            if exit_code < 0:
                error = f"killed by {signal.Signals(-exit_code).name}"
            else:
                error = f"exited with status {exit_code}"
            cause = _last_line("".join(stderr_tail))
            if cause:
                error += f": {cause}"
        return status, error, exit_code, stdout_lines, stderr_tail, done
