"""`hpceval validate --code osu|imb`: mpibench's ping-pong held against osu_latency or IMB
PingPong built from the user's sources, on one platform, interleaved and repeated
(hpceval.analysis.validation says how the figures are made)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.table import Table

from hpceval.cli_common import err

OWN = "mpibench"
# The official program and suite entry per code; the metrics each one's table defines as
# mpibench does (osu_bw streams a window of 64 messages before one reply: not a ping-pong
# bandwidth, so OSU is held against the latency only).
OFFICIAL_METRICS = {"osu": ("latency",), "imb": ("latency", "bandwidth")}
DEFAULT_SIZES = "0,8,1KiB,64KiB,1MiB,4MiB"
TOLERANCE = 0.05  # the target for a point-to-point figure
ROUND_SUFFIX = ":round="


def _official_entry(code: str, sizes: Sequence[int], rounds: int) -> dict[str, Any]:
    largest = max(1, *sizes)
    if code == "osu":
        return {"tests": ["latency"], "ranks": [2], "repeat": rounds, "max_size": largest}
    return {"benchmarks": ["PingPong"], "ranks": [2], "repeat": rounds, "max_size": largest}


def _round_of(case_key: str) -> int:
    return int(case_key.rsplit(ROUND_SUFFIX, 1)[1])


def validate_point_to_point(
    *,
    code: str,
    loaded: Any,
    sizes: str,
    metrics: Sequence[str],
    rounds: int,
    statistic: str,
    db: str | None,
    out: Console,
) -> bool:
    """Runs both sides interleaved, stores and prints the figures; False when a run failed
    or no figure could be made. A size the official table does not print is named, not
    compared."""
    from hpceval.analysis.validation import (
        describe_figure,
        figure_measurement,
        paired_point_figures,
    )
    from hpceval.benchmarks import Case
    from hpceval.campaign import Campaign, prepare_run
    from hpceval.cli_run import RichReporter, case_label
    from hpceval.cli_validate_common import entry_cases, run_interleaved, start_run
    from hpceval.config import parse_sizes
    from hpceval.errors import UserError
    from hpceval.model import Status
    from hpceval.sources import SOURCE_KINDS, resolve_source
    from hpceval.store import open_store

    resolve_source(code, loaded.config.sources)  # one-line error when not given
    unknown = [m for m in metrics if m not in OFFICIAL_METRICS[code]]
    if unknown:
        raise UserError(
            f"--metrics {unknown[0]}: {code} is held against mpibench for "
            f"{', '.join(OFFICIAL_METRICS[code])} only (osu_bw streams a window of messages: "
            "another quantity than a ping-pong's bytes / half round trip)"
        )
    try:
        spec: str | list[int | str] = (
            sizes if ".." in sizes else [t.strip() for t in sizes.split(",") if t.strip()]
        )
        size_list = sorted(set(parse_sizes(spec)))
    except ValueError as e:
        raise UserError(f"--sizes {sizes!r}: {e}") from None
    own_entry: dict[str, Any] = {"patterns": ["pingpong"], "sizes": size_list, "ranks": [2]}
    official_entry = _official_entry(code, size_list, rounds)
    own_base = entry_cases(OWN, own_entry, loaded.config)
    official_cases = entry_cases(code, official_entry, loaded.config)
    official_of = {tuple(sorted(c.placement.as_parameters().items())): c for c in official_cases}
    pairs = [
        (c, official_of[key])
        for c in own_base
        if (key := tuple(sorted(c.placement.as_parameters().items()))) in official_of
    ]
    if not pairs:
        raise UserError(f"validate: no placement that both mpibench and {code} run here")
    # mpibench's points are the sizes: one case per round (the same point, repeated).
    own_rounds = [
        [replace(c, key=f"{c.key}{ROUND_SUFFIX}{i + 1}") for c, _ in pairs] for i in range(rounds)
    ]
    # A bandwidth has no 0-byte point (n / t of nothing).
    figure_points = tuple(
        f"{m}:size={s}" for m in metrics for s in size_list if s > 0 or m != "bandwidth"
    )
    figure_cases = [
        Case(
            key=f"{c.key}:validation-{code}",
            benchmark=OWN,
            placement=c.placement,
            parameters=c.parameters,
            points=figure_points,
            time_limit_s=c.time_limit_s,
        )
        for c, _ in pairs
    ]
    all_own = [c for cases in own_rounds for c in cases]
    officials = [o for _, o in pairs]
    prepared = prepare_run(loaded.config, [*all_own, *officials])
    store = open_store(db)
    campaign = Campaign(store, prepared.launcher, prepared.programs, RichReporter(err))
    label = SOURCE_KINDS[code].label
    suite = {"name": "validate", OWN: own_entry, code: official_entry}
    # Points asked for that the official table lacks (OSU 7.x's osu_latency starts at 1 B).
    uncompared: list[str] = []
    with prepared.launcher.session():
        run_id = start_run(
            store, prepared, loaded, [*all_own, *officials, *figure_cases], suite,
            note=f"hpceval validate mpibench against {label}",
            plan=f"mpibench pingpong in {len(pairs)} placement(s) x {rounds} rounds against "
            f"{label}",
        )  # fmt: skip
        steps = [
            step
            for index in range(rounds)
            for own, (_, official) in zip(own_rounds[index], pairs, strict=True)
            for step in ((own, list(own.points)), (official, [official.points[index]]))
        ]
        failed = run_interleaved(store, campaign, run_id, steps, figure_cases)
        stored = store.measurements(run_id)
        measured = []
        for fc, (own, official) in zip(figure_cases, pairs, strict=True):
            own_side = [
                (_round_of(s.case_key), s.measurement)
                for s in stored
                if s.case_key.startswith(own.key + ROUND_SUFFIX)
            ]
            official_side = [
                (int(s.point_key.removeprefix("rep=")), s.measurement)
                for s in stored
                if s.case_key == official.key and s.measurement.metric in metrics
            ]
            figures = paired_point_figures(
                own_side, official_side, statistic=statistic, metrics=metrics
            )
            for figure in figures:
                m = figure_measurement(
                    figure,
                    OWN,
                    compared_metric=str(figure.parameters["compared"]),
                    own_statistic=statistic,
                    extra_parameters={
                        **{k: v for k, v in own.parameters.items() if k != "size"},
                        "reference": figure.official_implementation,
                    },
                )
                point = f"{figure.parameters['compared']}:size={figure.parameters['size']}"
                store.add_measurement(run_id, None, fc.key, point, m)
                measured.append(m)
            store.set_case_status(run_id, fc.key, "done" if figures else "failed")
            made = {f"{f.parameters['compared']}:size={f.parameters['size']}" for f in figures}
            reference = official_side[0][1].implementation if official_side else label
            uncompared += [
                f"{point.replace(':size=', ' at ')} B: {reference} printed no such row"
                for point in fc.points
                if point not in made
            ]
        store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    out.print(point_table(run_id, measured, statistic, label))
    for m in measured:
        out.print(describe_figure(m), highlight=False)
    for failed_key in sorted(failed):
        lost = next(c for c in [*all_own, *officials] if c.key == failed_key)
        err.print(f"failed: {lost.benchmark} {case_label(lost)}", style="red", highlight=False)
    for line in uncompared:
        err.print(f"not compared: {line}", style="yellow", highlight=False)
    return not failed and bool(measured)


def point_table(run_id: int, measured: Sequence[Any], statistic: str, label: str) -> Table:
    from hpceval.units import format_bytes

    t = Table(
        title=f"run {run_id}: mpibench ({statistic} of its samples) / {label} (mean over "
        "its iterations), geometric mean of the pairs, 95 % t-interval on the log ratios",
        title_justify="left",
    )
    for col in ("metric", "size", "pair", "pairs", "mpibench", "official", "ratio",
                "95 % CI", "±5 %"):  # fmt: skip
        t.add_column(col, justify="left" if col in ("metric", "pair", "±5 %") else "right")
    for m in measured:
        p, s = m.parameters, m.statistics
        ci = "" if s is None or s.ci_low is None else f"{s.ci_low:.3f}–{s.ci_high:.3f}"
        own = sorted(m.details["own"])[len(m.details["own"]) // 2]
        official = sorted(m.details["official"])[len(m.details["official"]) // 2]
        t.add_row(
            str(p["compared"]), format_bytes(int(p["size"])), str(p.get("pair", "")),
            str(len(m.samples)), f"{own:.4g}", f"{official:.4g}", f"{m.value:.3f}", ci,
            "within" if abs(m.value - 1) <= TOLERANCE else "OUTSIDE",
        )  # fmt: skip
    return t
