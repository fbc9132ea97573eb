"""The study's tables: one row per point, one column per platform (and per platform's
projections, labelled), the published figures of the same quantity beside them.

A row never pools measurements that differ in a parameter the table does not list: every
parameter whose values differ inside one row and column becomes a column of its own, and the
table says which were added."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hpceval.analysis.frame import NON_POINT_PARAMETERS
from hpceval.analysis.policy import StatisticPolicy, values_of_groups
from hpceval.model import Measurement
from hpceval.store import Store
from hpceval.study.answers import REPETITION_KEYS, _same
from hpceval.study.published import PublishedFigure, published
from hpceval.study.recipe import Selection, Table

PROJECTED = "[projected]"
IGNORED = REPETITION_KEYS | NON_POINT_PARAMETERS


@dataclass(frozen=True)
class Column:
    """A platform's measured run, or its projections (runs of origin simulated)."""

    platform: str
    run_ids: tuple[int, ...]
    simulated: bool = False

    @property
    def label(self) -> str:
        return f"{self.platform} {PROJECTED}" if self.simulated else self.platform


def study_columns(
    measured: Mapping[str, int], projected: Mapping[str, Sequence[int]]
) -> list[Column]:
    return [Column(p, (r,)) for p, r in measured.items()] + [
        Column(p, tuple(r), simulated=True) for p, r in projected.items()
    ]


@dataclass
class TableData:
    keys: list[str]  # the table's `by`, then the parameters added so that nothing is pooled
    added: list[str]
    # row -> column label -> (the policy's value of the cell's measurements, unit)
    values: dict[tuple[str, ...], dict[str, tuple[float, str]]] = field(default_factory=dict)


def selected(store: Store, column: Column, select: Selection) -> list[Measurement]:
    out = []
    for run_id in column.run_ids:
        for stored in store.measurements(run_id, benchmark=select.benchmark, metric=select.metric):
            m = stored.measurement
            if all(_same(m.parameters.get(k), v) for k, v in select.where.items()):
                out.append(m)
    return out


def point_of(m: Measurement) -> dict[str, str]:
    return {k: str(v) for k, v in m.parameters.items() if k not in IGNORED}


def differing_parameters(
    groups: Mapping[Any, Sequence[Mapping[str, str]]],
    listed: Sequence[str],
    line_of: Callable[[Any], Any] = lambda key: key,
) -> list[str]:
    """The fewest parameters beyond `listed` that tell apart the different points inside
    each group ("" stands for a parameter a point lacks): added one at a time, each time the
    one that leaves the fewest groups with different points, then the one that splits the
    fewest lines (`line_of` a group's key: a figure's line spans its x values), then by name."""
    added: list[str] = []

    def lines(keys: Sequence[str]) -> int:
        return len(
            {
                (line_of(key), *(p.get(k, "") for k in keys))
                for key, points in groups.items()
                for p in points
            }
        )

    def conflicts(keys: Sequence[str]) -> int:
        count = 0
        for points in groups.values():
            split: dict[tuple[str, ...], set[tuple[tuple[str, str], ...]]] = {}
            for p in points:
                split.setdefault(tuple(p.get(k, "") for k in keys), set()).add(
                    tuple(sorted((k, v) for k, v in p.items() if k not in listed))
                )
            count += sum(1 for variants in split.values() if len(variants) > 1)
        return count

    candidates = sorted({k for points in groups.values() for p in points for k in p} - set(listed))
    while conflicts(added) and candidates:
        best = min(candidates, key=lambda k: (conflicts([*added, k]), lines([*added, k]), k))
        added.append(best)
        candidates.remove(best)
    return added


def table_data(
    store: Store,
    select: Selection,
    by: Sequence[str],
    columns: Sequence[Column],
    policy: StatisticPolicy,
) -> TableData:
    found = [(c, m, point_of(m)) for c in columns for m in selected(store, c, select)]
    groups: dict[tuple[Any, ...], list[dict[str, str]]] = {}
    for c, _, point in found:
        groups.setdefault((c.label, *(point.get(b, "") for b in by)), []).append(point)
    added = differing_parameters(groups, by)
    keys = [*by, *added]
    cells = [(tuple(point.get(k, "") for k in keys), c.label) for c, _, point in found]
    units = {cell: m.unit for cell, (_, m, _) in zip(cells, found, strict=True)}
    values = values_of_groups([m for _, m, _ in found], cells, policy)
    data = TableData(keys, added)
    for (row, label), value in values.items():
        data.values.setdefault(row, {})[label] = (value, units[row, label])
    return data


def relative_to_lowest(
    data: TableData, parameter: str, baseline: str
) -> dict[tuple[str, ...], float]:
    """Row -> the baseline's value at the lowest `parameter` of the rows that share the row's
    other keys (Magellan: time relative to the baseline at the lowest core count)."""
    if parameter not in data.keys:
        return {}
    at = data.keys.index(parameter)
    lowest: dict[tuple[str, ...], tuple[float, float]] = {}
    for row, cells in data.values.items():
        if baseline not in cells or not _is_number(row[at]):
            continue
        rest = row[:at] + row[at + 1 :]
        x = float(row[at])
        if rest not in lowest or x < lowest[rest][0]:
            lowest[rest] = (x, cells[baseline][0])
    return {
        row: lowest[row[:at] + row[at + 1 :]][1]
        for row in data.values
        if row[:at] + row[at + 1 :] in lowest
    }


def table_lines(
    store: Store,
    table: Table,
    columns: Sequence[Column],
    baseline: str,
    policy: StatisticPolicy | None = None,
) -> list[str]:
    """The table as Markdown; each cell is the policy's statistic (default: median) of its
    measurements' samples, never a mean of their stored values."""
    data = table_data(store, table.select, table.by, columns, policy or StatisticPolicy())
    figure = published().find_figure(table.published) if table.published else None
    # A platform's projections show where they have a point of this table.
    filled = {label for cells in data.values.values() for label in cells}
    columns = [c for c in columns if not c.simulated or c.label in filled]
    labels = [c.label for c in columns]
    pub_rows = figure.rows if figure is not None else []
    header = [*data.keys, *labels, *(f"published: {r.platform}" for r in pub_rows)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    reference = (
        relative_to_lowest(data, table.relative_to_lowest, baseline)
        if table.relative_to_lowest
        else {}
    )
    for row in sorted(data.values, key=sort_key):
        cells = [*row]
        for label in labels:
            v = data.values[row].get(label)
            cell = f"{v[0]:.4g} {v[1]}" if v else "—"
            if v and row in reference:
                cell += f" ({v[0] / reference[row]:.3g}×)"
            cells.append(cell)
        cells += _published_cells(figure, data.keys, row)
        lines.append("| " + " | ".join(cells) + " |")
    if not data.values:
        lines.append("| " + " | ".join(["no data"] + [""] * (len(header) - 1)) + " |")
    notes = []
    if data.added:
        notes.append(
            f"Columns {', '.join(data.added)} added: the points differ in them, and a row "
            "never pools different points."
        )
    if any(c.simulated for c in columns):
        notes.append(
            f"Columns marked {PROJECTED} are SimGrid SMPI projections on the platform's "
            "calibration (origin simulated), not measurements."
        )
    if reference:
        notes.append(
            f"(×): relative to {baseline} at the lowest {table.relative_to_lowest} it "
            "measured for the same point."
        )
    if notes:
        lines += ["", *notes]
    if figure is not None:
        lines += ["", f"Published ({figure.source}, {figure.unit}): {figure.cite}."]
        lines += _published_table(figure)
    return lines


def _published_cells(
    figure: PublishedFigure | None, by: Sequence[str], row: Sequence[str]
) -> list[str]:
    """The published values of the row's point (the row's cell that names one), where the
    row has the parameters the figure was published at."""
    if figure is None:
        return []
    label = next((c for c in row if c in figure.points), None)
    if label is None or not figure.matches(list(by), list(row)):
        return ["—"] * len(figure.rows)
    return [f"{figure.value(r.platform, label):.4g} {figure.unit}" for r in figure.rows]


def _published_table(figure: PublishedFigure) -> list[str]:
    lines = [
        "",
        "| platform (published) | " + " | ".join(figure.points) + " |",
        "|" + "---|" * (len(figure.points) + 1),
    ]
    for r in figure.rows:
        lines.append(f"| {r.platform} | " + " | ".join(f"{v:.4g}" for v in r.values) + " |")
    return lines


def sort_key(row: Sequence[str]) -> tuple[Any, ...]:
    return tuple((0, float(c), "") if _is_number(c) else (1, 0.0, c) for c in row)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
