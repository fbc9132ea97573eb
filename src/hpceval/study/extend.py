"""Curves extended beyond the machines at hand: each `[[extend]]` of a recipe projected with
`hpceval simulate`'s library (calibration on the platform's own stored PingPong curve and
single-rank NPB time, then SimGrid SMPI runs) on every platform of the study. A projection is
a run of origin "simulated" grouped with the study; a platform that cannot be projected
(no inter-node curve, a calibration that misses its tolerance, no SimGrid) gets a note."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hpceval.campaign import Reporter
from hpceval.errors import UserError
from hpceval.model import Origin
from hpceval.store import Store
from hpceval.study.recipe import Extension, Projection, Recipe

Say = Callable[[str], None]

# A simulated execution of a study is a small projection: one that runs longer is stopped.
TIME_LIMIT_S = 900.0
NOTE_PREFIX = "projection"


@dataclass(frozen=True)
class Projected:
    platform: str
    extension: str
    bench: str
    run_id: int | None  # None: not projected (see note)
    note: str


def projection_label(extension: Extension, bench: str) -> str:
    """The first note of a projection's study run: what resume looks for."""
    return f"{NOTE_PREFIX} {extension.name}: {bench}"


def describe(size: Projection, bench: str | None = None) -> str:
    """`npb.cg class S ranks 8,16` (one bench, or all of the projection's)."""
    what = [bench or ",".join(size.bench)]
    if size.npb_class:
        what.append(f"class {size.npb_class}")
    if size.pattern:
        what.append(size.pattern)
    if size.sizes:
        what.append("sizes " + ",".join(str(s) for s in size.sizes))
    what.append("ranks " + ",".join(str(r) for r in size.ranks))
    return " ".join(what)


def projected_already(store: Store, study_id: int) -> set[tuple[str, str]]:
    """(platform, projection label) of the projections this study has stored."""
    done = set()
    for row in store.study_runs(study_id):
        label = str(row.notes[0]) if row.notes else ""
        if label.startswith(NOTE_PREFIX + " ") and store.run(row.run_id).origin is Origin.SIMULATED:
            done.add((row.platform, label))
    return done


def extend_study(
    store: Store,
    recipe: Recipe,
    study_id: int,
    platforms: Sequence[str],
    *,
    smallest: bool,
    reporter: Callable[[], Reporter],
    say: Say,
    accept_curve: bool = False,
) -> list[Projected]:
    """Every projection of the recipe on every platform, each stored as it completes."""
    done = projected_already(store, study_id)
    outcomes: list[Projected] = []
    for extension in recipe.extend:
        size = extension.sized(smallest)
        for platform in platforms:
            for bench in size.bench:
                label = projection_label(extension, bench)
                if (platform, label) in done:
                    continue
                outcome = _project(
                    store, study_id, platform, extension, size, bench, reporter, accept_curve
                )
                say(f"{platform}: {outcome.note}")
                outcomes.append(outcome)
    return outcomes


def _project(
    store: Store,
    study_id: int,
    platform: str,
    extension: Extension,
    size: Projection,
    bench: str,
    reporter: Callable[[], Reporter],
    accept_curve: bool,
) -> Projected:
    from hpceval.simulate.plan import Request
    from hpceval.simulate.runner import calibrate_simulation, execute, prepare

    label = projection_label(extension, bench)
    what = describe(size, bench)
    request = Request(
        bench=bench,
        ranks=tuple(size.ranks),
        class_name=size.npb_class,
        pattern=size.pattern,
        sizes=list(size.sizes) if size.sizes else None,
        ppn=size.ppn,
        time_limit_s=TIME_LIMIT_S,
        accept_curve=accept_curve,
    )
    try:
        sim = prepare(store, platform, None, request)
        calibration, _ = calibrate_simulation(store, sim)
        run_id, result = execute(store, sim, calibration, reporter())
    except UserError as e:
        note = f"{label}: {what} not projected: {e}"
        store.note_study(study_id, platform, note)
        return Projected(platform, extension.name, bench, None, note)
    failed = len(result.failed)
    flags = list(calibration.parameters.get("input_flags") or [])
    note = (
        f"{what}: run {run_id} (simulated, calibration {calibration.id})"
        + (f", {failed} of {len(result.outcomes)} cases failed" if failed else "")
        + (f"; calibrated on a curve with flagged points: {'; '.join(flags)}" if flags else "")
    )
    store.add_study_run(study_id, run_id, platform, [label, note])
    return Projected(platform, extension.name, bench, run_id, f"{label}: {note}")
