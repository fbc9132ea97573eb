"""Importing a RunBundle: a new run added, or a copy of a run already here reconciled with it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hpceval.errors import UserError
from hpceval.model import (
    Origin,
)
from hpceval.store.bundles import (
    CALIBRATION_SOURCE_RUNS,
    EXECUTION_INDEX,
    FINALITY,
    MUTABLE_RUN_COLUMNS,
    ImportAction,
    ImportOutcome,
    RunBundle,
    calibration_reference,
    portable_columns,
    read_bundle,
)
from hpceval.store.dialect import dialect_of
from hpceval.store.engine import (
    StoreBase,
    first_line,
    outage_is_a_user_error,
)
from hpceval.store.samples import (
    canonical_json,
    from_json,
    samples_from_portable,
    series_ids_of,
    series_key,
    series_of,
)
from hpceval.store.schema import (
    EXECUTION_RUNNING,
    INDEXED_FACTS,
    CaseStatus,
    calibrations,
    environments,
    executions,
    fact_at,
    inserted_id,
    measurements,
    platforms,
    run_cases,
    runs,
)


def _with_local_calibration(conn: Connection, bundle: RunBundle) -> tuple[RunBundle, str]:
    """`bundle` with the calibration it names brought here and named by its id here.

    The calibration is matched by uid, inserted when it is not here and the bundle carries
    it. The run's suite_config then names it by this database's id, or by None where it is not
    here (an id from elsewhere would name another calibration); runs here that name it are
    brought in line (one imported before its calibration gets the new id). Returns the bundle
    and what was done, for the import's detail.
    """
    uid = calibration_reference(bundle.run)
    if uid is None:
        return bundle, ""
    done = ""
    local_id = conn.execute(
        sa.select(calibrations.c.id).where(calibrations.c.uid == uid)
    ).scalar_one_or_none()
    carried = bundle.calibration
    if local_id is None and carried is not None and carried.get("uid") == uid:
        source_uids = list(carried[CALIBRATION_SOURCE_RUNS])
        local_runs: dict[str, int] = {}
        if source_uids:
            local_runs = {
                str(found.uid): int(found.id)
                for found in conn.execute(
                    sa.select(runs.c.id, runs.c.uid).where(runs.c.uid.in_(source_uids))
                )
            }
        local_id = inserted_id(
            conn.execute(
                calibrations.insert().values(
                    **{k: v for k, v in carried.items() if k != CALIBRATION_SOURCE_RUNS},
                    # Only the source runs that are here can be named (by their id here).
                    source_run_ids=[local_runs[u] for u in source_uids if u in local_runs],
                )
            )
        )
        done = f", calibration {uid[:8]} added as {local_id}"
    simulated = conn.execute(
        sa.select(runs.c.id, runs.c.suite_config).where(runs.c.origin == Origin.SIMULATED.value)
    ).all()
    for found in simulated:
        config = found.suite_config
        named = config.get("calibration") if isinstance(config, Mapping) else None
        if isinstance(named, Mapping) and named.get("uid") == uid and named.get("id") != local_id:
            conn.execute(
                runs.update()
                .where(runs.c.id == found.id)
                .values(suite_config={**config, "calibration": {**named, "id": local_id}})
            )
    config = bundle.run["suite_config"]
    local = {**config, "calibration": {**config["calibration"], "id": local_id}}
    return dataclasses.replace(bundle, run={**bundle.run, "suite_config": local}), done


def _id_of(
    conn: Connection, table: sa.Table, values: Mapping[str, Any], identity: sa.ColumnElement[bool]
) -> int:
    existing = conn.execute(sa.select(table.c.id).where(identity)).scalar_one_or_none()
    if existing is not None:
        return int(existing)
    return inserted_id(conn.execute(table.insert().values(**values)))


def _import_bundle(conn: Connection, bundle: RunBundle) -> ImportOutcome:
    bundle, calibration_done = _with_local_calibration(conn, bundle)
    existing = conn.execute(
        sa.select(runs.c.id).where(runs.c.uid == bundle.uid)
    ).scalar_one_or_none()
    if existing is not None:
        here = read_bundle(conn, existing)
        assert here is not None
        outcome = _reconcile(conn, int(existing), here, bundle)
        return dataclasses.replace(outcome, detail=outcome.detail + calibration_done)
    platform = bundle.platform
    platform_id = _id_of(
        conn,
        platforms,
        platform,
        (platforms.c.name == platform["name"])
        & (platforms.c.config_hash == platform["config_hash"]),
    )
    facts = from_json(bundle.environment["facts"])
    environment = {
        **bundle.environment,
        **{column: fact_at(facts, path) for column, path in INDEXED_FACTS.items()},
    }
    environment_id = _id_of(
        conn,
        environments,
        environment,
        environments.c.fingerprint == bundle.environment["fingerprint"],
    )
    run_id = inserted_id(
        conn.execute(
            runs.insert().values(
                **bundle.run, platform_id=platform_id, environment_id=environment_id
            )
        )
    )
    if bundle.cases:
        conn.execute(run_cases.insert(), [{**case, "run_id": run_id} for case in bundle.cases])
    execution_ids = _insert_executions(conn, run_id, bundle.executions)
    _insert_measurements(conn, run_id, bundle.measurements, lambda index: execution_ids[index])
    return ImportOutcome(
        uid=bundle.uid,
        action=ImportAction.IMPORTED,
        run_id=run_id,
        detail=(
            f"{len(bundle.cases)} cases, {len(bundle.executions)} executions, "
            f"{len(bundle.measurements)} measurements{calibration_done}"
        ),
        executions_added=len(bundle.executions),
        measurements_added=len(bundle.measurements),
    )


def _insert_executions(
    conn: Connection, run_id: int, rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Insert executions in order; their new ids, in the same order."""
    if not rows:
        return []
    result = conn.execute(
        executions.insert().returning(executions.c.id, sort_by_parameter_order=True),
        [{**row, "run_id": run_id} for row in rows],
    )
    return [int(execution_id) for execution_id in result.scalars().all()]


def _insert_measurements(
    conn: Connection,
    run_id: int,
    rows: Sequence[Mapping[str, Any]],
    execution_id: Callable[[int], int],
) -> None:
    """Insert bundle measurements in order; `execution_id` maps an execution index to an id."""
    if not rows:
        return
    fields = [series_of(row) for row in rows]
    keys = [series_key(f) for f in fields]
    series_ids = series_ids_of(conn, dict(zip(keys, fields, strict=True)))
    conn.execute(
        measurements.insert(),
        [
            {
                **{key: value for key, value in row.items() if key != EXECUTION_INDEX},
                "run_id": run_id,
                "execution_id": (
                    None if row[EXECUTION_INDEX] is None else execution_id(row[EXECUTION_INDEX])
                ),
                "samples": samples_from_portable(row["samples"]),
                "series_id": series_ids[key],
            }
            for row, key in zip(rows, keys, strict=True)
        ],
    )


def _execution_key(execution: Mapping[str, Any]) -> tuple[str, float]:
    """What identifies an execution across copies of a run: its case and start time."""
    return execution["case_key"], execution["started"]


def _measurement_keys(bundle: RunBundle) -> list[str]:
    """Each measurement's whole content, its execution named by _execution_key."""
    keys = []
    for measurement in bundle.measurements:
        index = measurement[EXECUTION_INDEX]
        execution = None if index is None else list(_execution_key(bundle.executions[index]))
        keys.append(canonical_json({**measurement, EXECUTION_INDEX: execution}))
    return keys


def _covers(
    executions_a: Mapping[tuple[str, float], Mapping[str, Any]],
    measurements_a: Counter[str],
    executions_b: Mapping[tuple[str, float], Mapping[str, Any]],
    measurements_b: Counter[str],
) -> bool:
    """Whether copy A holds everything copy B holds (an execution still running in B may
    have ended in A)."""
    for key, execution in executions_b.items():
        if key not in executions_a:
            return False
        if executions_a[key] != execution and execution["status"] != EXECUTION_RUNNING:
            return False
    return not measurements_b - measurements_a


def _reconcile(conn: Connection, run_id: int, here: RunBundle, there: RunBundle) -> ImportOutcome:
    """A run that is already here meets another copy of itself (`there`).

    The copies must be the same run (every fixed column, platform, environment and planned
    cases equal), or it is a conflict. Executions are matched by case and start time,
    measurements by their whole content. If this database holds everything the other copy
    holds, nothing changes (skipped). If the other copy holds everything this one does and
    more, or the same but further on (a run resumed or marked interrupted since), the run is
    brought up to it (updated): new executions and measurements are added, executions that
    were still running take their recorded end, and the run and case statuses follow. Copies
    that each hold something the other lacks are a conflict: nothing is changed.
    """

    def outcome(
        action: ImportAction, detail: str, added: tuple[int, int] = (0, 0)
    ) -> ImportOutcome:
        return ImportOutcome(there.uid, action, run_id, detail, *added)

    fixed = [column.name for column in portable_columns(runs)]
    differing = [
        name
        for name in fixed
        if name not in MUTABLE_RUN_COLUMNS and here.run[name] != there.run[name]
    ]
    if (here.platform["name"], here.platform["config_hash"]) != (
        there.platform["name"],
        there.platform["config_hash"],
    ):
        differing.append("platform")
    if here.environment["fingerprint"] != there.environment["fingerprint"]:
        differing.append("environment")

    def planned(bundle: RunBundle) -> list[dict[str, Any]]:
        return [{k: v for k, v in case.items() if k != "status"} for case in bundle.cases]

    if planned(here) != planned(there):
        differing.append("cases")
    if differing:
        return outcome(
            ImportAction.CONFLICT,
            f"a run with this uid is here but differs in {', '.join(differing)}; left unchanged",
        )
    here_executions = {_execution_key(e): e for e in here.executions}
    there_executions = {_execution_key(e): e for e in there.executions}
    if len(here_executions) != len(here.executions) or len(there_executions) != len(
        there.executions
    ):
        return outcome(
            ImportAction.CONFLICT,
            "two executions of one case started at the same time; left unchanged",
        )
    there_keys = _measurement_keys(there)
    here_measurements, there_measurements = Counter(_measurement_keys(here)), Counter(there_keys)
    here_has_all = _covers(here_executions, here_measurements, there_executions, there_measurements)
    there_has_all = _covers(
        there_executions, there_measurements, here_executions, here_measurements
    )

    def content(bundle: RunBundle) -> tuple[Any, ...]:
        # (The environment's facts may differ in volatile notes under the same fingerprint.)
        return bundle.run, bundle.cases, bundle.executions, bundle.measurements

    if content(here) == content(there):
        return outcome(ImportAction.SKIPPED, "already here")
    if not there_has_all:
        if here_has_all:
            return outcome(ImportAction.SKIPPED, "already here, with more than this copy")
        return outcome(
            ImportAction.CONFLICT,
            "this copy and the one here each hold executions or measurements the other lacks;"
            " left unchanged",
        )
    ended = [
        key
        for key, execution in here_executions.items()
        if execution["status"] == EXECUTION_RUNNING and there_executions[key] != execution
    ]
    if here_has_all and not ended and not _further_on(here, there):
        return outcome(ImportAction.SKIPPED, "already here (this copy is an earlier state)")

    # `there` is a later state of the run: bring this copy up to it.
    conn.execute(
        runs.update()
        .where(runs.c.id == run_id)
        .values(**{name: there.run[name] for name in MUTABLE_RUN_COLUMNS})
    )
    for case in there.cases:
        conn.execute(
            run_cases.update()
            .where(run_cases.c.run_id == run_id, run_cases.c.case_key == case["case_key"])
            .values(status=case["status"])
        )
    ids = {
        (row.case_key, row.started): row.id
        for row in conn.execute(
            sa.select(executions.c.id, executions.c.case_key, executions.c.started).where(
                executions.c.run_id == run_id
            )
        )
    }
    for execution_key in ended:
        conn.execute(
            executions.update()
            .where(executions.c.id == ids[execution_key])
            .values(**there_executions[execution_key])
        )
    new_executions = [e for e in there.executions if _execution_key(e) not in here_executions]
    ids.update(
        zip(
            map(_execution_key, new_executions),
            _insert_executions(conn, run_id, new_executions),
            strict=True,
        )
    )
    unmatched = here_measurements.copy()
    new_measurements = []
    for measurement, key in zip(there.measurements, there_keys, strict=True):
        if unmatched[key] > 0:
            unmatched[key] -= 1
        else:
            new_measurements.append(measurement)
    _insert_measurements(
        conn,
        run_id,
        new_measurements,
        lambda index: ids[_execution_key(there.executions[index])],
    )
    return outcome(
        ImportAction.UPDATED,
        f"+{len(new_executions)} executions, +{len(new_measurements)} measurements "
        f"(status {here.run['status']} → {there.run['status']})",
        (len(new_executions), len(new_measurements)),
    )


def _further_on(here: RunBundle, there: RunBundle) -> bool:
    """With the same executions and measurements: whether `there` is a later state of the run
    (its status more final, or as final and ended later, or cases settled that are pending here)."""
    here_cases = {case["case_key"]: case["status"] for case in here.cases}
    if any(
        here_cases.get(case["case_key"]) == CaseStatus.PENDING.value
        and case["status"] != CaseStatus.PENDING.value
        for case in there.cases
    ):
        return True

    def position(bundle: RunBundle) -> tuple[int, float]:
        return FINALITY.get(bundle.run["status"], 0), bundle.run["ended"] or 0.0

    return position(there) > position(here)


class Transfers(StoreBase):
    # --- portable runs (see RunBundle; hpceval.transfer writes them to files) -------------

    @outage_is_a_user_error
    def select_runs(self, selection: Sequence[str] | None = None) -> list[int]:
        """Ids of the runs named by id, uid or a unique uid prefix (8+ characters); all runs,
        oldest first, when `selection` is None. An unknown name is a UserError."""
        with self._engine.connect() as conn:
            rows = conn.execute(sa.select(runs.c.id, runs.c.uid).order_by(runs.c.id)).all()
        if selection is None:
            return [row.id for row in rows]
        ids = {row.id for row in rows}
        chosen: list[int] = []
        for name in selection:
            name = name.strip()
            if name.isdigit() and int(name) in ids:
                matches = [int(name)]
            else:
                prefix = len(name) >= 8
                matches = [
                    row.id
                    for row in rows
                    if row.uid == name or (prefix and row.uid.startswith(name))
                ]
            if len(matches) != 1:
                cause = "no run" if not matches else f"{len(matches)} runs"
                raise UserError(f"{cause} with id or uid {name!r}", source=self.url)
            if matches[0] not in chosen:
                chosen.append(matches[0])
        return chosen

    @outage_is_a_user_error
    def export_run(self, run_id: int) -> RunBundle:
        """A run with everything attached, read from one consistent state of the database
        (a campaign may be writing it meanwhile)."""
        with self._snapshot() as conn:
            bundle = read_bundle(conn, run_id)
        if bundle is None:
            raise self._no_run(run_id)
        return bundle

    @outage_is_a_user_error
    def import_run(self, bundle: RunBundle) -> ImportOutcome:
        """Add a run from another database or an export file, all of it or nothing.

        Its platform and environment are reused when one with the same identity is here; new
        ids are given to the run, its executions and measurements. A run already here (same
        uid) is never duplicated: see ImportAction for what happens to it.
        """
        for attempt in range(2):
            try:
                with self._writer.begin() as conn:
                    return _import_bundle(conn, bundle)
            except sa.exc.IntegrityError as exc:
                # PostgreSQL: another process added this run, platform or environment between
                # our look and our insert; the second attempt finds it.
                if attempt:
                    raise UserError(
                        f"run {bundle.uid} cannot be imported ({first_line(exc.orig or exc)})",
                        source=self.url,
                    ) from None
        raise AssertionError("unreachable")

    def compact(self) -> None:
        """SQLite: fold the write-ahead log into the file and leave WAL mode, so that the file
        alone holds everything (to be copied elsewhere). open_store turns WAL on again."""
        dialect_of(self._engine).compact(self._engine)

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[Connection]:
        """A read transaction that sees one state of the database throughout."""
        with self._engine.connect() as conn:
            dialect_of(conn).begin_snapshot(conn)
            with conn.begin():
                yield conn
