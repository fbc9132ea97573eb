"""Study runs in the store: a `hpceval study run` groups the runs it makes (one per platform)
under one study row, with what it scaled down on each platform (schema version 5)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hpceval.errors import UserError
from hpceval.store.engine import StoreBase, outage_is_a_user_error
from hpceval.store.schema import inserted_id, studies, study_runs


@dataclass(frozen=True)
class StudyRow:
    id: int
    uid: str
    name: str
    recipe: Mapping[str, Any]
    baseline: str
    options: Mapping[str, Any]
    status: str
    started: float
    ended: float | None


@dataclass(frozen=True)
class StudyRunRow:
    study_id: int
    run_id: int
    platform: str
    notes: Sequence[str]


class Studies(StoreBase):
    @outage_is_a_user_error
    def create_study(
        self, name: str, recipe: Mapping[str, Any], baseline: str, options: Mapping[str, Any]
    ) -> int:
        with self._writer.begin() as conn:
            return inserted_id(
                conn.execute(
                    studies.insert().values(
                        uid=str(uuid.uuid4()),
                        name=name,
                        recipe=dict(recipe),
                        baseline=baseline,
                        options=dict(options),
                        status="running",
                        started=self._clock(),
                    )
                )
            )

    @outage_is_a_user_error
    def add_study_run(
        self, study_id: int, run_id: int, platform: str, notes: Sequence[str]
    ) -> None:
        with self._writer.begin() as conn:
            conn.execute(
                study_runs.insert().values(
                    study_id=study_id, run_id=run_id, platform=platform, notes=list(notes)
                )
            )

    @outage_is_a_user_error
    def note_study(self, study_id: int, platform: str, note: str) -> None:
        """Add a note to the platform's first run of the study (a projection that failed
        has no run of its own); nothing when the platform has no run in the study."""
        with self._writer.begin() as conn:
            row = conn.execute(
                sa.select(study_runs.c.run_id, study_runs.c.notes)
                .where(study_runs.c.study_id == study_id, study_runs.c.platform == platform)
                .order_by(study_runs.c.run_id)
                .limit(1)
            ).one_or_none()
            if row is None:
                return
            conn.execute(
                study_runs.update()
                .where(study_runs.c.study_id == study_id, study_runs.c.run_id == row.run_id)
                .values(notes=[*row.notes, note])
            )

    @outage_is_a_user_error
    def set_study_status(self, study_id: int, status: str) -> None:
        ended = None if status == "running" else self._clock()
        with self._writer.begin() as conn:
            conn.execute(
                studies.update().where(studies.c.id == study_id).values(status=status, ended=ended)
            )

    @outage_is_a_user_error
    def studies(self, name: str | None = None) -> list[StudyRow]:
        """Study runs, newest first (of one recipe when `name` is given)."""
        query = sa.select(studies).order_by(studies.c.id.desc())
        if name is not None:
            query = query.where(studies.c.name == name)
        with self._engine.connect() as conn:
            return [StudyRow(**row._mapping) for row in conn.execute(query)]

    @outage_is_a_user_error
    def study(self, study_id: int) -> StudyRow:
        with self._engine.connect() as conn:
            row = conn.execute(sa.select(studies).where(studies.c.id == study_id)).one_or_none()
        if row is None:
            raise UserError(f"no study run {study_id}", source=self.url)
        return StudyRow(**row._mapping)

    @outage_is_a_user_error
    def study_runs(self, study_id: int) -> list[StudyRunRow]:
        query = (
            sa.select(study_runs)
            .where(study_runs.c.study_id == study_id)
            .order_by(study_runs.c.run_id)
        )
        with self._engine.connect() as conn:
            return [StudyRunRow(**row._mapping) for row in conn.execute(query)]
