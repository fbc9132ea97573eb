"""Running a study: on each platform the user names (the baseline first), the recipe's parts
scaled to the platform, as one stored run per platform grouped under one study row. A part
whose benchmark hpceval lacks, or that nothing of fits, is left out with a note (stored and
printed), never failing the study; an interrupted study resumes run by run."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hpceval.benchmarks import Case, find_benchmark
from hpceval.campaign import (
    Campaign,
    CampaignResult,
    Interrupted,
    Reporter,
    load_platform,
    plan_cases,
    prepare_resume,
    prepare_run,
    start_new_run,
    suite_from_raw,
    toolchain_and_launcher,
    with_sources,
)
from hpceval.campaign.prepare import check_commands
from hpceval.config import Loaded, PlatformConfig
from hpceval.errors import UserError
from hpceval.execute import is_alive
from hpceval.launch import Launcher
from hpceval.model import Origin, Status
from hpceval.store import Store, StoreUnavailable
from hpceval.study.extend import extend_study
from hpceval.study.recipe import Recipe, waits_for_pending
from hpceval.study.scale import Capacity, scale_entry

Say = Callable[[str], None]


@dataclass
class PlatformPlan:
    """What a study runs on one platform, and the notes on what it scaled down or left out."""

    platform: Loaded[PlatformConfig]
    suite_raw: dict[str, Any]
    cases: list[Case]
    notes: list[str] = field(default_factory=list)


@dataclass
class StudyOutcome:
    study_id: int
    runs: dict[str, int]  # platform -> run id
    results: dict[str, CampaignResult]
    wall_s: float


def plan_platform(
    recipe: Recipe,
    platform: Loaded[PlatformConfig],
    *,
    smallest: bool,
    max_ranks: int | None,
    sources: Mapping[str, str] | None = None,
) -> PlatformPlan:
    """The recipe's entries scaled to the platform, each planned on its own first so that one
    that cannot run here is a note, not a failed study. `sources` (`--source KIND=PATH`, the
    official codes' sources such as milc's) are added to the platform's `[sources]`, as
    `hpceval run --source` does: the plan's platform, stored with its run, holds them."""
    platform = with_sources(platform, sources or {})
    config = platform.config
    capacity = Capacity.of(config, max_ranks)
    launcher = _launcher_or_none(config)
    unlaunchable: set[str] = set()
    notes: list[str] = []
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for part in recipe.part:
        for options in part.benchmark:
            name = str(options["name"])
            if find_benchmark(name) is None:
                notes.append(
                    f"part {part.name}: benchmark {name!r} is not in this hpceval; left out"
                )
                continue
            if _java_platform(config) != _java_benchmark(name):
                notes.append(
                    f"part {part.name}: {name}: left out: "
                    + (
                        "a native program, and this platform's launcher starts Java programs"
                        if _java_platform(config)
                        else "a Java program (MPJ Express): it needs a platform such as "
                        "local-mpj or netns-2x2-mpj"
                    )
                )
                continue
            if part.pending and waits_for_pending(options):
                notes.append(f"part {part.name}: {name}: waits for {part.pending}; left out")
                continue
            scaled = scale_entry(options, capacity, config, smallest=smallest)
            notes.extend(f"part {part.name}: {n}" for n in scaled.notes)
            if scaled.options is None:
                notes.append(f"part {part.name}: {name}: nothing fits this platform; left out")
                continue
            try:
                trial = suite_from_raw(_suite_raw(recipe, [scaled.options]), recipe.name)
                left_out: list[str] = []
                cases = plan_cases(trial, config, left_out)
            except UserError as e:
                notes.append(f"part {part.name}: {name}: left out: {e}")
                continue
            notes.extend(f"part {part.name}: {n}" for n in left_out)
            for case in cases:
                why = _cannot_launch(launcher, case)
                if why is not None and case.key not in unlaunchable:
                    unlaunchable.add(case.key)
                    notes.append(f"part {part.name}: {name}: {case.key}: left out: {why}")
            cases = [c for c in cases if c.key not in unlaunchable]
            if not cases:
                continue
            keys = {c.key for c in cases}
            if keys & seen:
                notes.append(
                    f"part {part.name}: {name}: its cases repeat an earlier part's; measured once"
                )
                if keys <= seen:
                    continue
            seen |= keys
            kept.append(scaled.options)
    # Each entry planned on its own (as tried above); a case two parts share is measured once.
    by_key: dict[str, Case] = {}
    for entry in kept:
        one = suite_from_raw(_suite_raw(recipe, [entry]), recipe.name)
        for case in plan_cases(one, config, []):
            if case.key not in unlaunchable:
                by_key.setdefault(case.key, case)
    cases = list(by_key.values())
    return PlatformPlan(platform, _suite_raw(recipe, kept), cases, notes)


def _java_platform(config: PlatformConfig) -> bool:
    """Whether the platform starts Java programs (MPJ Express: launcher mpj or starter
    mpjrun), which run nothing native."""
    return config.launcher.kind == "mpj" or config.launcher.starter == "mpjrun"


def _java_benchmark(name: str) -> bool:
    bench = find_benchmark(name)
    return bench is not None and any(t.program == "javac" for t in bench.tools)


def _launcher_or_none(config: PlatformConfig) -> Launcher | None:
    """The platform's launcher, to check each case's placement before the run; None when it
    cannot be made (the run then says why, as any run does)."""
    try:
        return toolchain_and_launcher(config)[1]
    except UserError:
        return None


def _cannot_launch(launcher: Launcher | None, case: Case) -> str | None:
    """Why the launcher refuses the case's placement (one thread per rank under MPJ), or
    None."""
    if launcher is None:
        return None
    try:
        check_commands(launcher, [case])
    except UserError as e:
        return str(e)
    return None


def _suite_raw(recipe: Recipe, entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": f"study-{recipe.name}",
        "description": recipe.title,
        "benchmark": [dict(e) for e in entries],
    }


def run_study(
    store: Store,
    recipe: Loaded[Recipe],
    platforms: Sequence[str],
    baseline: str,
    *,
    smallest: bool,
    max_ranks: int | None,
    reporter: Callable[[], Reporter],
    say: Say,
    extend: bool = True,
    sources: Mapping[str, str] | None = None,
    accept_curve: bool = False,
) -> StudyOutcome:
    """A new study run: every platform in turn, the baseline first, then the recipe's
    projections (`extend`) on each."""
    names = _ordered(platforms, baseline)
    loaded = [load_platform(n) for n in names]  # every name checked before anything runs
    options = {
        "platforms": names,
        "smallest": smallest,
        "max_ranks": max_ranks,
        "extend": extend,
        "sources": dict(sources or {}),
        "accept_curve": accept_curve,
    }
    study_id = store.create_study(recipe.config.name, recipe.raw, baseline, options)
    say(f"study {study_id}: {recipe.config.name} on {', '.join(names)} (baseline {baseline})")
    return _run_platforms(store, recipe.config, study_id, loaded, {}, options, reporter, say)


def resume_study(
    store: Store,
    recipe: Loaded[Recipe],
    *,
    reporter: Callable[[], Reporter],
    say: Say,
) -> StudyOutcome:
    """The latest unfinished study run of this recipe: its interrupted runs resumed, its
    platforms not yet started run."""
    row = next((s for s in store.studies(recipe.config.name) if s.status != "completed"), None)
    if row is None:
        raise UserError(f"{store.url}: no unfinished study run of {recipe.config.name!r}")
    options = dict(row.options)
    done = measured_runs(store, row.id)
    loaded = [load_platform(n) for n in options["platforms"]]
    store.set_study_status(row.id, "running")
    say(f"resuming study {row.id}: {recipe.config.name}")
    return _run_platforms(store, recipe.config, row.id, loaded, done, options, reporter, say)


def measured_runs(store: Store, study_id: int) -> dict[str, int]:
    """Platform -> the study's measured run there (projections are runs of their own)."""
    runs: dict[str, int] = {}
    for r in store.study_runs(study_id):
        if store.run(r.run_id).origin is not Origin.SIMULATED:
            runs.setdefault(r.platform, r.run_id)
    return runs


def projected_runs(store: Store, study_id: int) -> dict[str, list[int]]:
    """Platform -> the study's projections there (runs of origin simulated)."""
    runs: dict[str, list[int]] = {}
    for r in store.study_runs(study_id):
        if store.run(r.run_id).origin is Origin.SIMULATED:
            runs.setdefault(r.platform, []).append(r.run_id)
    return runs


def _ordered(platforms: Sequence[str], baseline: str) -> list[str]:
    names = list(dict.fromkeys([baseline, *platforms]))
    return names


def _run_platforms(
    store: Store,
    recipe: Recipe,
    study_id: int,
    platforms: Sequence[Loaded[PlatformConfig]],
    done: dict[str, int],
    options: dict[str, Any],
    reporter: Callable[[], Reporter],
    say: Say,
) -> StudyOutcome:
    started = time.monotonic()
    runs: dict[str, int] = {}
    results: dict[str, CampaignResult] = {}
    try:
        for platform in platforms:
            name = platform.config.name
            if name in done:
                runs[name] = done[name]
                try:
                    results[name] = _resume_run(store, done[name], reporter(), say)
                except UserError as e:  # complete (nothing left), or why it cannot resume
                    say(f"{name}: run {done[name]} not resumed: {e}")
                continue
            plan = plan_platform(
                recipe,
                platform,
                smallest=options["smallest"],
                max_ranks=options["max_ranks"],
                sources=options.get("sources") or {},
            )
            for note in plan.notes:
                say(f"{name}: {note}")
            if not plan.cases:
                say(f"{name}: nothing of the study runs here")
                continue
            run_id, result = _new_run(store, study_id, plan, reporter(), say)
            runs[name], results[name] = run_id, result
        if options.get("extend", True) and recipe.extend:
            extend_study(
                store,
                recipe,
                study_id,
                list(runs),
                smallest=options["smallest"],
                reporter=reporter,
                say=say,
                accept_curve=bool(options.get("accept_curve")),
            )
    except (Interrupted, UserError):
        # Stopped, or a platform that fails before its run starts: `--resume` continues.
        with contextlib.suppress(StoreUnavailable):
            store.set_study_status(study_id, "interrupted")
        raise
    store.set_study_status(study_id, "completed")
    return StudyOutcome(study_id, runs, results, time.monotonic() - started)


def _new_run(
    store: Store, study_id: int, plan: PlatformPlan, reporter: Reporter, say: Say
) -> tuple[int, CampaignResult]:
    platform = plan.platform
    suite = suite_from_raw(plan.suite_raw, f"study {plan.suite_raw['name']}")
    prepared = prepare_run(platform.config, plan.cases)
    campaign = Campaign(
        store, prepared.launcher, prepared.programs, reporter, launchers=prepared.launchers
    )
    run_id: int | None = None
    try:
        with prepared.session():
            store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
            run_id = start_new_run(
                prepared, store, suite, platform, plan.cases, note="; ".join(plan.notes)
            )
            store.add_study_run(study_id, run_id, platform.config.name, plan.notes)
            say(f"{platform.config.name}: run {run_id}, {len(plan.cases)} cases")
            result = campaign.execute(run_id, prepared.work)
    except Interrupted:
        if run_id is not None:
            with contextlib.suppress(StoreUnavailable):
                store.set_run_status(run_id, Status.INTERRUPTED, ended=time.time())
        raise
    store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    return run_id, result


def _resume_run(store: Store, run_id: int, reporter: Reporter, say: Say) -> CampaignResult:
    run_id, prepared = prepare_resume(store, run_id)
    campaign = Campaign(
        store, prepared.launcher, prepared.programs, reporter, launchers=prepared.launchers
    )
    try:
        with prepared.session():
            store.claim_run(run_id, host=socket.gethostname(), pid=os.getpid())
            say(f"resuming run {run_id}: {sum(len(p) for _, p in prepared.work)} points left")
            result = campaign.execute(run_id, prepared.work)
    except Interrupted:
        with contextlib.suppress(StoreUnavailable):
            store.set_run_status(run_id, Status.INTERRUPTED, ended=time.time())
        raise
    store.set_run_status(run_id, Status.COMPLETED, ended=time.time())
    return result
