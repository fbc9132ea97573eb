"""Study recipes: a published evaluation as a declarative TOML file (src/hpceval/data/studies/):
the benchmarks it ran (suite entries, grouped in parts), the questions its conclusions become,
and the tables of its report. Loading validates every field; an error names the file and the
field. A part whose benchmark hpceval does not (yet) have is not an error: the study runs
without it and says so (`unavailable`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from hpceval.benchmarks import find_benchmark
from hpceval.config import (
    BenchmarkEntry,
    Loaded,
    StrictModel,
    read_toml,
    resolve,
    shipped_names,
    validation_message,
)
from hpceval.errors import ConfigError

ParamFilter = dict[str, str | int | float | bool]


class Part(StrictModel):
    """One experiment of the study: suite entries run together on every platform."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    # The piece of hpceval this part waits for ("NPB-MZ kernels in npb"): until it lands, an
    # entry its benchmark rejects is left out with this note instead of failing the recipe.
    pending: str | None = None
    benchmark: list[dict[str, Any]] = Field(min_length=1)


class Selection(StrictModel):
    """Measurements of one quantity: a benchmark's metric at the parameters named."""

    benchmark: str
    metric: str
    where: ParamFilter = Field(default_factory=dict)


class Question(StrictModel):
    """A conclusion of the study restated as a question answered from the user's data.

    `of` is the numerator. Without `versus`, the denominator is the same selection on the
    baseline platform (answered once per other platform); with `versus`, another selection on
    the same platform (answered on every platform). The answer is yes when the ratio's
    confidence interval lies above `yes_above` (or below `yes_below`), no when it lies on
    the other side, and "inconclusive" when it straddles the threshold."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    text: str
    quantity: str  # what the ratio is, in words: "inter-node latency"
    of: Selection
    versus: Selection | None = None
    yes_above: float | None = Field(None, gt=0)
    yes_below: float | None = Field(None, gt=0)
    published: str | None = None  # key of a published ratio (data/published/figures.toml)

    @field_validator("yes_below")
    @classmethod
    def _one_threshold(cls, v: float | None, info: Any) -> float | None:
        if v is not None and info.data.get("yes_above") is not None:
            raise ValueError("give yes_above or yes_below, not both")
        return v

    def threshold(self) -> tuple[Literal["above", "below"], float]:
        if self.yes_below is not None:
            return "below", self.yes_below
        return "above", self.yes_above if self.yes_above is not None else 1.0


class Table(StrictModel):
    """A table of the study's report: one row per point (the `by` parameters), one column
    per platform, and the published figures of the same quantity beside them."""

    title: str
    select: Selection
    by: list[str] = Field(min_length=1)
    published: str | None = None  # key of a published figure (data/published/figures.toml)
    # A scaling parameter ("ranks"): each value is also shown relative to the baseline's at
    # the lowest value of that parameter measured there (Magellan's applications).
    relative_to_lowest: str | None = None


class Projection(StrictModel):
    """Options of a projection that `smallest` may replace (a time-boxed run)."""

    bench: list[str] = Field(min_length=1)  # npb.KERNEL or mpibench
    npb_class: str | None = Field(None, alias="class", pattern=r"^[SWABCDE]$")
    pattern: str | None = None  # mpibench
    sizes: list[int] | None = None  # mpibench, bytes
    ranks: list[int] = Field(min_length=1)
    ppn: int | None = Field(None, ge=1)


class Extension(Projection):
    """A curve extended beyond the machines at hand: `hpceval simulate` on each platform of
    the study calibrated from the study's own measurements (origin "simulated")."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    smallest: Projection | None = None

    def sized(self, smallest: bool) -> Projection:
        return self.smallest if smallest and self.smallest is not None else self


class Cost(StrictModel):
    """The study's cost figures, with the catalog it priced (`--catalog` picks another).

    `instance`: the catalog entry each node of the user's platforms is priced as (EC2-CC
    priced its runs as CC1 nodes); `benchmark`: whose runs are priced (run cost, price per
    GOPS-hour). Without `instance`, the catalog's price per normalized node-hour and per
    GB-hour are shown (CSC), and the platforms with a `price` in their file beside them."""

    catalog: str
    instance: str | None = None
    pricing: str = "on-demand"
    benchmark: str | None = None


class Figure(StrictModel):
    """A figure of the study's report (matplotlib, written beside the Markdown).

    kind `lines`: the metric against `x`, one line per platform and `series` values
    (projections dashed), the published figure's values as labelled markers at the `x` the
    figure's `match` (or `published_at`) names; `speedup`: time at the lowest `x` of the
    platform's measurements over time at each `x`; `bars`: the metric by `x` (categories),
    one bar per platform and `series` values."""

    kind: Literal["lines", "speedup", "bars"]
    title: str
    file: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    select: Selection
    x: str
    series: list[str] = Field(default_factory=list)
    # Parameter -> the values kept (the figure's kernels, its rank counts): `select` keeps one.
    only: dict[str, list[str | int | float]] = Field(default_factory=dict)
    log_x: bool = False
    log_y: bool = False
    published: str | None = None
    published_at: float | None = None


class Recipe(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    source: str  # the study's short name in methodology.md: EC2-CC, Magellan, CSC, AIST
    reference: str
    description: str
    part: list[Part] = Field(min_length=1)
    question: list[Question] = Field(default_factory=list)
    table: list[Table] = Field(default_factory=list)
    extend: list[Extension] = Field(default_factory=list)
    cost: Cost | None = None
    figure: list[Figure] = Field(default_factory=list)


def study_names() -> list[str]:
    return shipped_names("studies")


def load_recipe(name_or_file: str) -> Loaded[Recipe]:
    """The recipe, with each available benchmark's options validated by that benchmark."""
    path, source = resolve("studies", name_or_file)
    raw = read_toml(path, source)
    try:
        recipe = Recipe.model_validate(raw)
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=field) from e
    for i, part in enumerate(recipe.part):
        for j, options in enumerate(part.benchmark):
            where = f"part[{i}].benchmark[{j}]"
            entry = _entry(options, source, where)
            bench = find_benchmark(entry.name)
            if bench is None:
                continue  # not in this hpceval: the run skips it with a note
            try:
                bench.parse_options(_without_smallest(entry.options()))
                if "smallest" in entry.options():
                    smallest = {**_without_smallest(entry.options()), **entry.options()["smallest"]}
                    bench.parse_options(smallest)
            except ValidationError as e:
                if part.pending:
                    continue
                field, msg = validation_message(e)
                raise ConfigError(msg, source=source, field=f"{where}.{field}") from e
            except (ValueError, TypeError) as e:
                if part.pending:
                    continue
                raise ConfigError(str(e), source=source, field=where) from e
    names = [p.name for p in recipe.part]
    if len(set(names)) != len(names):
        raise ConfigError("two parts share a name", source=source, field="part")
    return Loaded(recipe, source, raw)


def _entry(options: dict[str, Any], source: str, where: str) -> BenchmarkEntry:
    try:
        entry = BenchmarkEntry.model_validate(options)
    except ValidationError as e:
        field, msg = validation_message(e)
        raise ConfigError(msg, source=source, field=f"{where}.{field}") from e
    smallest = entry.options().get("smallest")
    if smallest is not None and not isinstance(smallest, dict):
        raise ConfigError("must be a table of options", source=source, field=f"{where}.smallest")
    return entry


def _without_smallest(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "smallest"}


def waits_for_pending(options: dict[str, Any]) -> bool:
    """Whether an entry's benchmark (present) rejects its options: what a pending part's
    entries do until the piece they wait for lands."""
    bench = find_benchmark(str(options["name"]))
    if bench is None:
        return False
    try:
        bench.parse_options({k: v for k, v in options.items() if k not in ("name", "smallest")})
    except (ValidationError, ValueError, TypeError):
        return True
    return False


def unavailable(recipe: Recipe) -> dict[str, list[str]]:
    """Part name -> why some of its entries cannot run in this hpceval (a benchmark it lacks,
    options it does not take yet while the part is pending)."""
    missing: dict[str, list[str]] = {}
    for part in recipe.part:
        for options in part.benchmark:
            name = str(options["name"])
            if find_benchmark(name) is None:
                missing.setdefault(part.name, []).append(
                    f"benchmark {name!r} is not in this hpceval"
                )
            elif waits_for_pending(options):
                missing.setdefault(part.name, []).append(f"{name}: waits for {part.pending}")
    return missing
