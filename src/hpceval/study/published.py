"""The published figures study reports overlay (data/published/figures.toml), each with the
paper and table it comes from, and the published ratios the questions compare with (computed
from two of those figures, never written down)."""

from __future__ import annotations

import importlib.resources
from functools import cache
from pathlib import Path

from pydantic import Field, ValidationError, model_validator

from hpceval.config import StrictModel, read_toml, validation_message
from hpceval.errors import ConfigError


class PublishedRow(StrictModel):
    platform: str
    values: list[float]


class PublishedFigure(StrictModel):
    key: str
    source: str
    cite: str
    unit: str
    points: list[str] = Field(min_length=1)
    rows: list[PublishedRow] = Field(min_length=1)
    # The parameters a row of the user's table must have for the published values to sit
    # beside it (a start-up latency beside the smallest message only).
    # A list allows any of its values ("" stands for a parameter the row lacks).
    match: dict[str, str | int | float | list[str | int | float]] = Field(default_factory=dict)

    # False: the figures are shown apart, never beside a row (their size is not stated).
    beside: bool = True

    def matches(self, by: list[str], row: tuple[str, ...] | list[str]) -> bool:
        if not self.beside:
            return False
        for key, allowed in self.match.items():
            if key not in by:
                return False
            values = allowed if isinstance(allowed, list) else [allowed]
            if row[by.index(key)] not in {str(v) for v in values}:
                return False
        return True

    @model_validator(mode="after")
    def _one_value_per_point(self) -> PublishedFigure:
        for row in self.rows:
            if len(row.values) != len(self.points):
                raise ValueError(
                    f"rows: {row.platform!r} has {len(row.values)} values for "
                    f"{len(self.points)} points"
                )
        return self

    def value(self, platform: str, point: str) -> float:
        row = next(r for r in self.rows if r.platform == platform)
        return row.values[self.points.index(point)]


class PublishedRatio(StrictModel):
    key: str
    figure: str
    point: str
    of: str
    versus: str
    versus_point: str | None = None


class Published(StrictModel):
    figure: list[PublishedFigure]
    ratio: list[PublishedRatio] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ratios_name_figures(self) -> Published:
        figures = {f.key: f for f in self.figure}
        for r in self.ratio:
            fig = figures.get(r.figure)
            if fig is None:
                raise ValueError(f"ratio: {r.key!r} names no figure {r.figure!r}")
            try:
                fig.value(r.of, r.point)
                fig.value(r.versus, r.versus_point or r.point)
            except (StopIteration, ValueError):
                raise ValueError(
                    f"ratio: {r.key!r} names a platform or point that figure {r.figure!r} lacks"
                ) from None
        return self

    def find_figure(self, key: str) -> PublishedFigure | None:
        return next((f for f in self.figure if f.key == key), None)

    def ratio_value(self, key: str) -> tuple[float, str] | None:
        """The published ratio and its citation, or None when there is none of that key."""
        r = next((r for r in self.ratio if r.key == key), None)
        if r is None:
            return None
        fig = self.find_figure(r.figure)
        assert fig is not None  # checked when loaded
        value = fig.value(r.of, r.point) / fig.value(r.versus, r.versus_point or r.point)
        return value, f"{fig.source}: {r.of} / {r.versus}, {fig.cite}"


@cache
def published() -> Published:
    source = "published/figures.toml"
    with importlib.resources.as_file(importlib.resources.files("hpceval") / "data" / source) as p:
        raw = read_toml(Path(p), source)
    try:
        return Published.model_validate(raw)
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=field) from e
