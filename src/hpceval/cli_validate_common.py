"""What `hpceval validate` does the same way for every official code: the cases of a suite
entry, the run's record, and the interleaved execution (own, official, own, ...)."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Sequence
from typing import Any

from hpceval.cli_common import err


def entry_cases(name: str, entry: dict[str, Any], platform: Any) -> list[Any]:
    """The cases of benchmark `name` for a suite entry's options (a bad option: one line)."""
    from pydantic import ValidationError

    from hpceval.benchmarks import get_benchmark
    from hpceval.config import validation_message
    from hpceval.errors import UserError

    bench = get_benchmark(name)
    try:
        parsed = bench.parse_options(entry)
    except ValidationError as e:
        field, message = validation_message(e)
        raise UserError(f"validate: {field}: {message}") from None
    return list(bench.cases(parsed, platform, 0))


def start_run(
    store: Any,
    prepared: Any,
    loaded: Any,
    cases: Sequence[Any],
    suite: Any,
    *,
    note: str,
    plan: str,
) -> int:
    """The validate run recorded in the store (after marking dead runs interrupted), and
    announced with its `plan`."""
    from hpceval.campaign.prepare import record_run
    from hpceval.execute import is_alive

    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
    run_id = record_run(
        store, prepared.launcher, prepared.environment, list(cases),
        suite_name="validate", suite_config=suite, platform_name=loaded.config.name,
        platform_raw=loaded.raw, note=note,
    )  # fmt: skip
    err.print(f"run {run_id}: validate {plan} → {store.url}", highlight=False)
    return int(run_id)


def run_interleaved(
    store: Any,
    campaign: Any,
    run_id: int,
    steps: Sequence[tuple[Any, list[str]]],
    figure_cases: Sequence[Any],
) -> set[str]:
    """Runs the (case, points) steps in their order (own, official, own, ...); a case that
    failed once is not run again. Returns the failed case keys. Interrupted: the figures'
    cases are marked failed and the run interrupted, then the interruption goes on."""
    from hpceval.model import ExecutionStatus, Status

    failed: set[str] = set()
    try:
        for case, points in steps:
            if case.key in failed:
                continue
            result = campaign.execute(run_id, [(case, points)])
            if any(o.status is not ExecutionStatus.OK for o in result.outcomes):
                failed.add(case.key)
    except BaseException:
        with contextlib.suppress(Exception):
            for c in figure_cases:
                store.set_case_status(run_id, c.key, "failed")
            store.set_run_status(run_id, Status.INTERRUPTED, ended=time.time())
        raise
    return failed
