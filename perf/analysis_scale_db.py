"""The database perf/analysis_scale.py times: runs written through the Store's own API, their
cases, executions and measurements bulk-inserted into its tables (SQLAlchemy Core, one
transaction per run), samples drawn log-normal around perf/analysis_scale_model.py's models."""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

import hpceval
from hpceval.benchmarks.npb import mops_formula
from hpceval.campaign import case_description
from hpceval.model import Environment, Origin, Status
from hpceval.store import Store, database_url, encode_samples, open_store

# (This generator writes a million rows straight into the store's tables, past the Store.)
from hpceval.store.schema import executions as executions_table
from hpceval.store.schema import measurements as measurements_table
from hpceval.store.schema import run_cases as run_cases_table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the model beside it
from analysis_scale_model import (
    CORES_PER_NODE,
    DEFAULT_MEASUREMENTS,
    NPB_ITERATIONS,
    NPB_QUANTITY,
    PROFILES,
    START,
    WEEK_S,
    Campaign,
    Generated,
    Profile,
    Row,
    describe_rows,
    json_floats,
    mpibench_campaign,
    npb_campaign,
    platform_config,
    statistics_text,
)

# --------------------------------------------------------------------------- generation


def _draw_counts(rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
    """Samples per mpibench point: min_samples 10, a few more until the CI target, a tail up
    to the time budget (the captured outputs hold 9 to 20)."""
    counts = 10 + rng.poisson(2.5, n) + (rng.random(n) < 0.08) * rng.integers(5, 30, n)
    counts[rng.random(n) < 0.03] = 9  # the budget ran out before min_samples
    return counts.astype(np.int64)


def _mpibench_rows(
    campaign: Campaign,
    take: int,
    profile: Profile,
    rng: np.random.Generator,
    stamp: Callable[[int], float],
) -> tuple[list[dict[str, Any]], int]:
    """The first `take` measurements of one mpibench run (dicts of column values) and the
    number of samples they hold."""
    rows = campaign.rows[:take]
    time_rows = [i for i, row in enumerate(rows) if row.kind == "time"]
    model = np.asarray([rows[i].model for i in time_rows])
    counts = _draw_counts(rng, len(time_rows))
    run_factor = math.exp(rng.normal(0.0, 0.01))
    noise = profile.noise * (1 + 0.5 * (model < 5))
    scale = np.repeat(model * run_factor, counts)
    t_max = scale * np.exp(rng.normal(0.0, np.repeat(noise, counts)))
    t_min = t_max * rng.uniform(0.86, 0.99, len(t_max))
    t_avg = (t_min + t_max) / 2
    stats = describe_rows(t_max, counts)
    means_min = np.add.reduceat(t_min, np.cumsum(counts) - counts) / counts
    means_avg = np.add.reduceat(t_avg, np.cumsum(counts) - counts) / counts
    t_min_text, t_avg_text = json_floats(t_min), json_floats(t_avg)
    mean_text, stdev_text = json_floats(stats.mean), json_floats(stats.stdev)
    min_text, max_text, median_text = (
        json_floats(stats.minimum),
        json_floats(stats.maximum),
        json_floats(stats.median),
    )
    low_text, high_text = json_floats(stats.mean - stats.half), json_floats(stats.mean + stats.half)
    extra_min, extra_avg = json_floats(means_min), json_floats(means_avg)
    ends = np.cumsum(counts).tolist()
    out: list[dict[str, Any]] = []
    samples = 0
    position = -1
    for index, row in enumerate(rows):
        if row.kind == "time":
            position += 1
            k, end = int(counts[position]), ends[position]
            start = end - k
            samples += k
            samples_data = encode_samples(t_max[start:end])
            warmup = int(rng.integers(2, 50_000))
            loops = max(1, int(1000.0 / max(row.model, 0.05)))
            details = (
                f'{{"warmup_iterations": {warmup}, "loops": {loops}, '
                f'"stop": "{"ci" if k <= 12 else "budget"}", '
                f'"elapsed_s": {k * 0.001 * max(1.0, row.model / 1000)!r}, '
                f'"time_divisor": {row.divisor}, '
                f'"t_min_us": [{", ".join(t_min_text[start:end])}], '
                f'"t_avg_us": [{", ".join(t_avg_text[start:end])}]}}'
            )
            statistics = statistics_text(
                k, min_text[position], max_text[position], median_text[position],
                mean_text[position], stdev_text[position], low_text[position],
                high_text[position],
                f'{{"t_min": {extra_min[position]}, "t_avg": {extra_avg[position]}}}',
            )  # fmt: skip
            value = float(stats.mean[position])
        else:
            # Bandwidth: n / t per sample; its statistics as mpibench's bandwidth_measurement.
            k, end = int(counts[position]), ends[position]
            start = end - k
            samples += k
            bandwidth = row.nbytes / t_max[start:end]
            value = row.nbytes / float(stats.mean[position])
            ordered = np.sort(bandwidth)
            stdev = float(np.sqrt(np.sum((bandwidth - value) ** 2) / (k - 1)))
            low = row.nbytes / float(stats.mean[position] + stats.half[position])
            high = row.nbytes / float(stats.mean[position] - stats.half[position])
            samples_data = encode_samples(bandwidth)
            details = "{}"
            statistics = statistics_text(
                k, repr(float(ordered[0])), repr(float(ordered[-1])),
                repr(float(np.median(ordered))), repr(value), repr(stdev), repr(low),
                repr(high), "{}",
            )  # fmt: skip
        out.append(
            _measurement(campaign, row, value, samples_data, statistics, details, stamp(index))
        )
    return out, samples


def _npb_rows(
    campaign: Campaign,
    take: int,
    profile: Profile,
    rng: np.random.Generator,
    stamp: Callable[[int], float],
) -> tuple[list[dict[str, Any]], int]:
    rows = campaign.rows[:take]
    run_factor = math.exp(rng.normal(0.0, 0.01))
    out: list[dict[str, Any]] = []
    seconds = 0.0
    for index, row in enumerate(rows):
        if row.metric == "time":
            # Repetitions of a kernel vary by a percent or two (more on a noisy platform).
            seconds = row.model * run_factor * math.exp(rng.normal(0.0, profile.noise / 3))
        mops = mops_formula(row.kernel, row.class_name, seconds)
        value = {"time": seconds, "mops_total": mops, "mops_per_process": mops / row.ranks}[
            row.metric
        ]
        v = repr(value)
        statistics = statistics_text(1, v, v, v, v, "0.0", "null", "null", "{}")
        verification = (
            f'[{{"quantity": "{NPB_QUANTITY[row.kernel]}", "computed": {v}, '
            f'"reference": {v}, "rel_error": 1e-14, "tolerance": 1e-10, "passed": true}}]'
        )
        details = f'{{"iterations": {NPB_ITERATIONS[row.kernel]}, "verification": {verification}}}'
        out.append(
            _measurement(campaign, row, value, encode_samples([value]), statistics, details,
                         stamp(index))
        )  # fmt: skip
    return out, len(rows)


def _measurement(
    campaign: Campaign,
    row: Row,
    value: float,
    samples: bytes,
    statistics: str,
    details: str,
    created: float,
) -> dict[str, Any]:
    return {
        "case_key": campaign.cases[row.case].key,
        "point_key": row.point_key,
        "benchmark": campaign.cases[row.case].benchmark,
        "metric": row.metric,
        "unit": row.unit,
        "value": value,
        "statistic": row.statistic,
        "parameters": row.parameters,
        "statistics": statistics,
        "samples": samples,
        "details": details,
        "origin": Origin.MEASURED.value,
        "created": created,
    }


def _text_table(table: sa.Table) -> sa.Table:
    """`table` with its JSON columns as plain text: the JSON is written here, already encoded
    exactly as the Store's JSON type would encode it (json.dumps)."""
    return sa.Table(
        table.name,
        sa.MetaData(),
        *(
            sa.Column(c.name, sa.Text if isinstance(c.type, sa.JSON) else c.type)
            for c in table.columns
        ),
    )


class Clock:
    """The Store's clock: campaign times, one week apart per run."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def generate(path: Path, measurements: int = DEFAULT_MEASUREMENTS, seed: int = 1) -> Generated:
    """Write the synthetic database to `path` (a new SQLite file)."""
    began = time.perf_counter()
    if path.exists():
        raise FileExistsError(f"{path}: already exists; the generator writes a new database")
    rng = np.random.default_rng(seed)
    clock = Clock()
    quotas = [measurements // len(PROFILES)] * len(PROFILES)
    quotas[0] += measurements - sum(quotas)
    text_measurements = _text_table(measurements_table)
    text_executions = _text_table(executions_table)
    total_samples = 0
    run_count = 0
    with open_store(str(path), clock=clock) as store:
        engine = sa.create_engine(database_url(str(path)))
        try:
            for profile, quota in zip(PROFILES, quotas, strict=True):
                platform = platform_config(profile)
                platform_id = store.add_platform(profile.name, platform.model_dump(mode="json"))
                environment_id = store.add_environment(_environment(profile))
                campaigns = (mpibench_campaign(profile, platform), npb_campaign(profile, platform))
                left = quota
                turn = 0
                with engine.connect() as conn:
                    while left > 0:
                        campaign = campaigns[turn % 2]
                        turn += 1
                        take = min(left, len(campaign.rows))
                        clock.now = START + run_count * WEEK_S / 10
                        samples = _write_run(
                            store, conn, campaign, take, profile, platform_id, environment_id,
                            rng, clock, text_measurements, text_executions,
                        )  # fmt: skip
                        total_samples += samples
                        left -= take
                        run_count += 1
        finally:
            engine.dispose()
    return Generated(path, measurements, total_samples, run_count, time.perf_counter() - began)


def _environment(profile: Profile) -> Environment:
    facts = {
        "cpu": {"model": "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "cores": CORES_PER_NODE},
        "virtualization": {"kind": profile.hypervisor},
        "network": {"interconnect": profile.interconnect, "io_path": profile.io_path},
        "mpi": {"implementation": "Open MPI", "version": "4.1.4"},
        "compiler": {"name": "gcc", "version": "12.2.0"},
        "hpceval": {"version": hpceval.__version__},
    }
    fingerprint = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
    return Environment(facts=facts, fingerprint=fingerprint)


def _write_run(
    store: Store,
    conn: sa.Connection,
    campaign: Campaign,
    take: int,
    profile: Profile,
    platform_id: int,
    environment_id: int,
    rng: np.random.Generator,
    clock: Clock,
    text_measurements: sa.Table,
    text_executions: sa.Table,
) -> int:
    """One run of `campaign` holding its first `take` measurements; returns its samples."""
    run_id = store.create_run(
        suite_name=campaign.suite,
        suite_config={"name": campaign.suite},
        platform_id=platform_id,
        environment_id=environment_id,
        launcher="slurm",
        cases=[(c.key, c.benchmark, case_description(c)) for c in campaign.cases],
        hpceval_version=hpceval.__version__,
        git_revision=None,
        origin=Origin.MEASURED,
        host="login1",
        pid=4242,
    )
    started = clock.now
    rows = campaign.rows[:take]
    # (Before this connection writes: the store's own write would wait for its lock.)
    series = store.series_ids(
        [(Origin.MEASURED.value, campaign.cases[row.case].benchmark, row.metric, row.unit,
          row.statistic, json.loads(row.parameters)) for row in rows]
    )  # fmt: skip
    # Executions: one per case (mpibench measures all its points in one execution), one per
    # point for NPB (a run of the kernel per repetition).
    execution_of: dict[tuple[int, str], int] = {}
    next_id = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(text_executions.c.id), 0)))
                  .scalar_one()) + 1  # fmt: skip
    execution_rows: list[dict[str, Any]] = []
    for row in rows:
        point = row.point_key if campaign.cases[row.case].benchmark == "npb" else ""
        if (row.case, point) in execution_of:
            continue
        execution_of[(row.case, point)] = next_id
        case = campaign.cases[row.case]
        moment = started + len(execution_rows) * 2.0
        execution_rows.append(
            {"id": next_id, "run_id": run_id, "case_key": case.key, "benchmark": case.benchmark,
             "argv": json.dumps(["srun", "--mpi=pmix", "-n", str(case.placement.ranks),
                                 case.benchmark]),
             "env": "{}", "status": "ok", "exit_code": 0, "started": moment,
             "ended": moment + 1.5, "stdout_tail": "", "stderr_tail": "", "error": ""}
        )  # fmt: skip
        next_id += 1
    conn.execute(text_executions.insert(), execution_rows)

    def stamp(index: int) -> float:
        return started + index * 0.5

    writer = _mpibench_rows if campaign.cases[0].benchmark == "mpibench" else _npb_rows
    values, samples = writer(campaign, take, profile, rng, stamp)
    for value, row, series_id in zip(values, rows, series, strict=True):
        point = row.point_key if campaign.cases[row.case].benchmark == "npb" else ""
        value["run_id"] = run_id
        value["execution_id"] = execution_of[(row.case, point)]
        value["series_id"] = series_id
    conn.execute(text_measurements.insert(), values)
    measured = {row.case for row in rows}
    complete = take == len(campaign.rows)
    done = [campaign.cases[i].key for i in sorted(measured)]
    if not complete and done:
        done.pop()  # the case that was running when the run stopped stays pending
    if done:
        conn.execute(
            sa.update(run_cases_table)
            .where(run_cases_table.c.run_id == run_id, run_cases_table.c.case_key.in_(done))
            .values(status="done")
        )
    conn.commit()
    status = Status.COMPLETED if complete else Status.INTERRUPTED
    store.set_run_status(run_id, status, ended=started + len(rows) * 0.5)
    return samples
