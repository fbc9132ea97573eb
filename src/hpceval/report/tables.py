"""The report's tables: the full data goes to CSV, the first rows to the HTML page."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pandas as pd

MAX_HTML_ROWS: Final = 200


@dataclass(frozen=True)
class Cell:
    text: str
    kind: str = "text"  # text | number | origin (rendered as a badge) | flag


@dataclass
class ReportTable:
    """A table of the report: `data` is written whole to tables/NAME.csv; the page shows
    the `columns` (default: all) of its first MAX_HTML_ROWS rows, or only a link when
    `show` is False (tables too long to read on a page)."""

    name: str
    title: str
    data: pd.DataFrame
    columns: Sequence[str] | None = None
    show: bool = True
    note: str = ""
    _csv: bytes | None = field(default=None, repr=False, compare=False)

    def csv(self) -> bytes:
        """tables/NAME.csv: the whole data (rendered once; a report worker renders it, so
        that the parent only writes the bytes)."""
        if self._csv is None:
            self._csv = self.data.to_csv(index=False).encode("utf-8")
        return self._csv

    def html_columns(self) -> list[str]:
        return [str(c) for c in (self.columns or self.data.columns)]

    def html_rows(self) -> list[list[Cell]]:
        if not self.show:
            return []
        columns = self.html_columns()
        head = self.data.head(MAX_HTML_ROWS)
        out: list[list[Cell]] = []
        for record in head[columns].to_dict("records"):
            out.append([cell(str(name), value) for name, value in record.items()])
        return out

    @property
    def hidden_rows(self) -> int:
        return max(0, len(self.data) - MAX_HTML_ROWS) if self.show else len(self.data)


def cell(column: str, value: Any) -> Cell:
    """A value as shown in a table cell ('—' where missing, 4 significant digits)."""
    if missing(value):
        return Cell("—")
    if column == "origin" or column.endswith("_origin"):
        return Cell(str(value), "origin")
    if isinstance(value, bool):
        return Cell("yes" if value else "", "flag")
    if isinstance(value, int):
        return Cell(str(value), "number")
    if isinstance(value, float):
        return Cell(number(value), "number")
    return Cell(str(value))


def number(value: float, digits: int = 4) -> str:
    if missing(value):
        return "—"
    if math.isinf(value):
        return "∞"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.{digits}g}"


def missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)
