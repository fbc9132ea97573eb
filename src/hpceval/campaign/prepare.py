"""Run preparation: the toolchain and launcher of a platform, every placement checked,
programs built and provenance collected before anything is written; new and resumed runs.

Used by `hpceval run` and by `hpceval simulate`'s campaigns (hpceval.simulate).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpceval import __version__
from hpceval.benchmarks import Case, Program, get_benchmark
from hpceval.campaign.run import case_description, case_from_description, skipped_benchmarks
from hpceval.config import Loaded, PlatformConfig, SuiteConfig
from hpceval.errors import UserError
from hpceval.execute import is_alive
from hpceval.launch import Launcher, MpiRuntime, get_launcher_class
from hpceval.launch.command import PLACEMENT_PROBE
from hpceval.model import Environment, Status
from hpceval.mpj import MPJ_STARTER, java_platform, mpj_mpi_facts
from hpceval.provenance import collect_environment, fingerprint
from hpceval.store import Store
from hpceval.toolchain import MpiToolchain, detect_mpi


def toolchain_and_launcher(platform: PlatformConfig) -> tuple[MpiToolchain, Launcher]:
    toolchain = detect_mpi(platform.launcher.mpicc, platform.launcher.mpirun)
    if not toolchain.consistent:
        raise UserError(
            f"{toolchain.mpicc} is {toolchain.wrapper_implementation} but {toolchain.mpirun} is "
            f"{toolchain.implementation}: programs built by one do not start under the other "
            "(Debian: update-alternatives --config mpi / mpirun)"
        )
    launcher_cls = get_launcher_class(platform.launcher.kind)
    runtime = MpiRuntime(toolchain.implementation, toolchain.mpirun)
    try:
        return toolchain, launcher_cls(platform, runtime)
    except UserError as e:
        raise UserError(f"platform {platform.name!r}: {e}") from None


def _build_programs(
    cases: Sequence[Case], platform: PlatformConfig, toolchain: MpiToolchain
) -> dict[str, Program]:
    programs = {}
    # A benchmark whose tool is missing is not built: its cases are recorded as skipped.
    # Its placeholder has no flags, like an installed external tool's, so the environment
    # (and its fingerprint) stays the same once the tool is installed and the run resumed.
    skipped = skipped_benchmarks(cases, platform)
    for name in sorted({c.benchmark for c in cases}):
        if name in skipped:
            programs[name] = Program(path=Path(), compiler="", cflags=())
            continue
        programs[name] = get_benchmark(name).build_for_cases(
            [c for c in cases if c.benchmark == name],
            compiler=toolchain.mpicc,
            compiler_identity=toolchain.identity(),
            cflags=platform.cflags,
        )
    return programs


def _environment(
    toolchain: MpiToolchain, programs: dict[str, Program], launcher: Launcher
) -> Environment:
    # Each program has its own flags (communication: -O2; NPB kernels: -O3 -march=native).
    # External tools (fio, hpcc) compile nothing and have no flags to record.
    flags = [f"{name}: {' '.join(p.cflags)}" for name, p in sorted(programs.items()) if p.cflags]
    environment = collect_environment(toolchain, cflags=flags)
    if launcher.starter.name != MPJ_STARTER:
        return environment
    # Java ranks on MPJ Express: the run's message passing is MPJ's, not the machine's C MPI.
    mpi = mpj_mpi_facts(launcher.starter_options().device, environment.facts.get("mpi"))
    facts = {**environment.facts, "mpi": mpi}
    return Environment(facts=facts, fingerprint=fingerprint(facts))


def check_commands(launcher: Launcher, cases: Sequence[Case]) -> None:
    """Every placement must be launchable before the first case runs."""
    for case in cases:
        launcher.command(case.placement, PLACEMENT_PROBE)


@dataclass
class Prepared:
    """A campaign ready to go: validated, built, with the work still to do."""

    platform: PlatformConfig
    toolchain: MpiToolchain
    launcher: Launcher
    programs: dict[str, Program]
    environment: Environment
    work: list[tuple[Case, list[str]]]
    # The benchmarks another launcher runs (Java cases on `local`), by name (Campaign's).
    launchers: dict[str, Launcher] = field(default_factory=dict)

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """The platform launcher's session and those of the other launchers, for the run."""
        with contextlib.ExitStack() as stack:
            stack.enter_context(self.launcher.session())
            for launcher in {id(x): x for x in self.launchers.values()}.values():
                stack.enter_context(launcher.session())
            yield


def _java_launchers(
    platform: PlatformConfig, cases: Sequence[Case], runtime: MpiRuntime
) -> dict[str, Launcher]:
    """A launcher for the Java cases of a platform whose own launcher runs C programs (its
    Java platform: hpceval.mpj.java_platform), checked like the platform's; none when every
    Java case will be skipped (no JVM or MPJ here: the C cases still run)."""
    java = java_platform(platform)
    if java is None or java is platform:
        return {}
    skipped = skipped_benchmarks(cases, platform)
    java_cases = [
        c for c in cases if get_benchmark(c.benchmark).runs_on_mpj and c.benchmark not in skipped
    ]
    if not java_cases:
        return {}
    launcher = get_launcher_class(java.launcher.kind)(java, runtime)
    check_commands(launcher, java_cases)
    launcher.preflight()
    return {c.benchmark: launcher for c in java_cases}


def prepare_run(platform: PlatformConfig, cases: Sequence[Case]) -> Prepared:
    """Toolchain, launcher, placements, builds and provenance: all before anything is written."""
    toolchain, launcher = toolchain_and_launcher(platform)
    launchers = _java_launchers(platform, cases, launcher.runtime)
    check_commands(launcher, [c for c in cases if c.benchmark not in launchers])
    launcher.preflight()
    programs = _build_programs(cases, platform, toolchain)
    environment = _environment(toolchain, programs, launcher)
    if (emulation := launcher.emulation()) is not None:
        # The emulated platform's limits are part of every run's provenance (and caveats).
        facts = {**environment.facts, "emulation": emulation}
        environment = Environment(facts=facts, fingerprint=fingerprint(facts))
    return Prepared(platform, toolchain, launcher, programs, environment, [], launchers)


def record_run(
    store: Store,
    launcher: Launcher,
    environment: Environment,
    cases: Sequence[Case],
    *,
    suite_name: str,
    suite_config: Mapping[str, Any],
    platform_name: str,
    platform_raw: Mapping[str, Any],
    note: str | None = None,
) -> int:
    """A new run in the store, its cases pending, owned by this process (`hpceval run` and
    `hpceval simulate` both start theirs here)."""
    return store.create_run(
        suite_name=suite_name,
        suite_config=suite_config,
        platform_id=store.add_platform(platform_name, platform_raw),
        environment_id=store.add_environment(environment),
        launcher=launcher.kind,
        cases=[(c.key, c.benchmark, case_description(c)) for c in cases],
        hpceval_version=__version__,
        git_revision=(environment.facts.get("hpceval") or {}).get("revision"),
        origin=launcher.origin,
        host=socket.gethostname(),
        pid=os.getpid(),
        note=note,
    )


def start_new_run(
    prepared: Prepared,
    store: Store,
    suite: Loaded[SuiteConfig],
    platform: Loaded[PlatformConfig],
    cases: Sequence[Case],
    note: str | None = None,
) -> int:
    """Record the run (with `note`: e.g. the placements the plan skipped) and its work."""
    run_id = record_run(
        store,
        prepared.launcher,
        prepared.environment,
        cases,
        suite_name=suite.config.name,
        suite_config=suite.raw,
        platform_name=platform.config.name,
        platform_raw=platform.raw,
        note=note or None,
    )
    prepared.work = [(c, list(c.points)) for c in cases]
    return run_id


def _remaining_work(store: Store, run_id: int) -> list[tuple[Case, list[str]]]:
    """The planned cases of a run that are still pending or were skipped (their tool was
    missing: it may be there now), with the points they still lack."""
    completed = store.completed_points(run_id)
    work: list[tuple[Case, list[str]]] = []
    for row in store.cases(run_id):
        if row.status not in ("pending", "skipped"):
            continue
        case = case_from_description(row.case_key, row.benchmark, row.description)
        remaining = [p for p in case.points if (case.key, p) not in completed]
        if remaining:
            work.append((case, remaining))
        else:  # every point was stored just before the interruption
            store.set_case_status(run_id, case.key, "done")
    return work


def prepare_resume(store: Store, run_id: int | None = None) -> tuple[int, Prepared]:
    """The latest resumable run (or run `run_id`: a study resumes each of its runs), ready to
    measure what it still lacks."""
    store.mark_dead_runs_interrupted(host=socket.gethostname(), is_alive=is_alive)
    # Imports are not campaigns: there is nothing to re-run for them. A completed run with
    # skipped cases (a tool was missing) is resumable too: installing the tool and resuming
    # measures what was skipped.
    row = next(
        (
            r
            for r in sorted(store.runs(), key=lambda r: r.id, reverse=True)
            if r.launcher != "import"
            and (run_id is None or r.id == run_id)
            and (
                r.status is Status.INTERRUPTED
                or (
                    r.status is Status.COMPLETED
                    and any(c.status == "skipped" for c in store.cases(r.id))
                )
            )
        ),
        None,
    )
    if row is None:
        which = "run" if run_id is None else f"run {run_id}"
        raise UserError(
            f"{store.url}: no interrupted {which} to resume (nor one with skipped cases)"
        )
    _, platform_raw = store.platform_config(row.platform_id)
    work = _remaining_work(store, row.id)
    prepared = prepare_run(PlatformConfig.model_validate(platform_raw), [c for c, _ in work])
    prepared.work = work
    if (
        work
        # The stored record holds the transport probed at the first start; the platform
        # itself must be the same.
        and fingerprint(store.environment(row.environment_id), measured=False)
        != prepared.environment.fingerprint
    ):
        raise UserError(
            f"run {row.id} was measured in another environment (hardware, MPI, compiler or "
            "hpceval changed); start a new run instead of resuming"
        )
    return row.id, prepared
