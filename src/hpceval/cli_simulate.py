"""`hpceval simulate`, `hpceval profiles`, `hpceval calibrations` (SimGrid SMPI projections).

`register_simulate_commands(app, out)` adds them to the main app.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hpceval.cli_common import DbOption, console, err, status_text, user_errors
from hpceval.errors import UserError


class _Consoles:
    """The main app hands its output console over in register_simulate_commands."""

    out: Console = console()


def register_simulate_commands(app: typer.Typer, out: Console) -> None:
    _Consoles.out = out
    app.command("simulate")(user_errors(simulate_command))
    app.command("profiles")(user_errors(profiles_command))
    app.command("calibrations")(user_errors(calibrations_command))


_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*$")


def parse_ranks(text: str) -> tuple[int, ...]:
    """`16,32,64` or `16..512` (the powers of two from 16 to 512)."""
    if m := _RANGE.match(text):
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo < 1 or hi < lo:
            raise UserError(f"--ranks: {text!r} is an empty range")
        out, p = [], 1
        while p <= hi:
            if p >= lo:
                out.append(p)
            p *= 2
        if not out:
            raise UserError(f"--ranks: no power of two in {text!r}")
        return tuple(out)
    try:
        ranks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UserError(
            f"--ranks: {text!r} is not a list of rank counts (16,32 or 16..512)"
        ) from None
    if not ranks or any(r < 1 for r in ranks):
        raise UserError(f"--ranks: {text!r} is not a list of positive rank counts")
    return ranks


def _parse_sizes(text: str | None) -> str | list[int | str] | None:
    if text is None:
        return None
    return text if ".." in text else [s.strip() for s in text.split(",") if s.strip()]


def _pct(value: float) -> str:
    return f"{value:+.1%}"


def calibration_table(row: Any) -> Table:
    """Residuals per size: measured and simulated PingPong on each path."""
    t = Table(
        title=f"calibration {row.id} of {row.platform_name} (SimGrid {row.simgrid_version}): "
        f"worst {row.max_residual:.1%} (tolerance {row.tolerance:.0%}), "
        f"{'converged' if row.converged else 'NOT converged'} in {row.iterations} iterations",
        title_justify="left",
    )
    pingpong = [r for r in row.residuals if "measured_us" in r]
    paths = sorted({str(r["path"]) for r in pingpong})
    t.add_column("size B", justify="right")
    for p in paths:
        calibrated = any(r["path"] == p and r.get("calibrated") for r in row.residuals)
        label = p + ("" if calibrated else " (not calibrated)")
        t.add_column(f"{label}: measured µs", justify="right")
        t.add_column("simulated µs", justify="right")
        t.add_column("residual", justify="right")
    sizes = sorted({int(r["size"]) for r in pingpong})
    by = {(str(r["path"]), int(r["size"])): r for r in pingpong}
    footnote = False
    for size in sizes:
        cells = [str(size)]
        for p in paths:
            r = by.get((p, size))
            if r is None:
                cells += ["", "", ""]
            else:
                residual = float(r["residual"])
                # Outside the tolerance but between the runs: counted as fitted (judged 0).
                spared = abs(residual) > row.tolerance and r.get("judged") == 0.0
                cells += [
                    f"{r['measured_us']:.4g}",
                    f"{r['simulated_us']:.4g}",
                    _pct(residual) + (" *" if spared else ""),
                ]
                footnote = footnote or spared
        t.add_row(*cells)
    if footnote:
        t.caption = "* outside the tolerance, inside the lowest-highest of the runs pooled: fitted"
    return t


def contention_lines(row: Any) -> list[str]:
    """The contention fit, the rings against their targets, the collective selector and the
    flags of the input and of the fit: one line each."""
    params = row.parameters
    lines: list[str] = []
    selector = params.get("collective_selector") or {}
    lines.append(
        f"collectives: {selector.get('mpi') or 'SMPI defaults'} selector "
        f"({selector.get('source') or 'no MPI library known'})"
    )
    from hpceval.simulate.platform import PlatformSpec

    try:
        spec = PlatformSpec.from_dict(params["platform"])
    except (KeyError, TypeError, ValueError):
        spec = None  # an imported or older calibration may hold less
    if spec is not None:
        lines.append(f"network: {spec.describe_topology()}")
    c = params.get("contention") or {}
    if c.get("fitted_on"):
        lines.append(
            f"contention: Isend overhead {c.get('isend_overhead_s', 0) * 1e6:.3g} µs per "
            f"message (send/receive overheads {c['overhead_s'] * 1e6:.3g} µs); NIC "
            f"{c.get('nic_scale', 1):.3g}x the PingPong's bandwidth at {c.get('nic_ppn', 1)} "
            f"ranks per node (1x at 1, log-linear between); fitted on {c['fitted_on']}"
        )
    else:
        lines.append("contention: no rings measured, no per-message overhead (assumed); "
                     "measure natural_ring and random_ring across nodes to fit it")  # fmt: skip
    if c.get("host_gap"):
        lines.append(f"host: every message costs {c['gap_s'] * 1e6:.3g} µs of the host's "
                     "shared cores, a gap paid on the shared backbone (concurrent messages of "
                     "all nodes share it)")  # fmt: skip
    elif c.get("gap_s") or c.get("flow_scales"):
        from hpceval.simulate.flows import FlowModel

        lines.append("flows: " + FlowModel(c.get("gap_s", 0.0), tuple(
            (int(p), float(k)) for p, k in c.get("flow_scales", [])), c["fitted_on"]).describe())
    if c.get("memory_copy_Bps"):
        lines.append(f"intra-node: a node's messages share {c['memory_copy_Bps'] / 1e9:.3g} GB/s "
                     "of memory copies (fitted on the natural ring's bandwidth)")  # fmt: skip
    if c.get("backbone_Bps"):
        lines.append(f"backbone: shared, {c['backbone_Bps'] / 1e6:.4g} MB/s (fitted on the "
                     "random ring's bandwidth at one rank per node)")  # fmt: skip
    for block, fit in sorted((c.get("fit") or {}).items()):
        if fit.get("pins"):
            condition = fit.get("condition")
            lines.append(
                f"joint fit ({block}): " + "; ".join(f"{p} pinned by {f}" for p, f in fit["pins"])
                + f"; Jacobian condition {condition:.3g}" if condition is not None else
                f"joint fit ({block}): not identifiable (singular Jacobian)")  # fmt: skip
    for r in [r for r in row.residuals
              if str(r.get("path", "")).endswith("_ring") or r.get("pairs")]:  # fmt: skip
        unit = "µs" if r["metric"] == "latency" else "MB/s"
        lines.append(
            f"  {r['path']} {r['metric']} at {r['size']} B, {r['ranks']} ranks"
            + (f" ({r['pairs']} pairs)" if r.get("pairs") else "") + ": measured "
            f"{r['measured']:.4g} {unit}, simulated {r['simulated']:.4g} {unit} "
            f"({_pct(float(r['residual']))}{', fitted' if r.get('fitted') else ', check'})"
        )
    # What the target's data left to assumption or set aside (stored with the calibration).
    lines += [f"assumed: {a}" for a in params.get("assumed", [])]
    lines += [f"flag: {f}" for f in [*c.get("flags", []), *params.get("input_flags", [])]]
    return lines


def parse_pool_runs(text: str) -> int | None:
    """`all` (None) or a positive count of the latest runs."""
    if text.strip().lower() == "all":
        return None
    if re.fullmatch(r"\s*[0-9]+\s*", text) and int(text) > 0:
        return int(text)
    raise UserError(f"--pool-runs: {text!r} is not all or a positive count of runs")


def _spread(c: Any) -> str:
    if c.runs == 0:
        return "published"
    if c.runs == 1:
        return "1 run"
    where = "inside" if c.inside_spread else "outside"
    return f"{c.low:.4g}-{c.high:.4g} {c.unit} over {c.runs} runs: {where}"


def validation_table(
    store: Any, run_id: int, rings: Any, host_share: bool = False,
    pool_runs: int | None = None,
) -> Table:
    """Projected vs measured (or published) per figure, the error, and whether the
    projection lies inside the measured runs' spread."""
    from hpceval.simulate.validate import published_rings, validate_run

    checks, missing = validate_run(store, run_id, published_rings(rings) if rings else {},
                                   host_share, pool_runs)  # fmt: skip
    errors = [abs(c.error) for c in checks]
    spread = [c for c in checks if c.inside_spread is not None]
    t = Table(
        title=f"validation of run {run_id}: {len(checks)} figures held against measurements"
        + (f", median |error| {statistics.median(errors):.1%}, worst {max(errors):.1%}"
           if errors else "")
        + (f"; {sum(bool(c.inside_spread) for c in spread)} of {len(spread)} inside the "
           "run-to-run spread" if spread else "")
        + (f"; {missing} without a measured counterpart" if missing else ""),
        title_justify="left",
    )  # fmt: skip
    for name, justify in (("figure", "left"), ("measured", "right"), ("projected", "right"),
                          ("error", "right"), ("run-to-run spread", "left"),
                          ("measured in", "left")):  # fmt: skip
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in checks:
        # Text: names read from the store are shown as they are, never as markup.
        projected = f"{c.projected:.4g} {c.unit}"
        if c.replays:
            projected += (f" (median of {len(c.replays)} replays, "
                          f"{min(c.replays):.4g}-{max(c.replays):.4g}")
            if (replay_errors := c.replay_errors) is not None:
                projected += f", {replay_errors[0]:+.1%} to {replay_errors[1]:+.1%}"
            projected += ")"
        t.add_row(Text(c.figure), Text(f"{c.measured:.4g} {c.unit}"), Text(projected),
                  _pct(c.error), Text(_spread(c)), Text(c.source))  # fmt: skip
    return t


def _speed_line(row: Any) -> str:
    speed = row.parameters.get("host_speed", {})
    line = (
        f"core speed {speed.get('speed_flops', 0) / 1e9:.4g} × this machine's core "
        f"({speed.get('how', '')})"
    )
    for r in row.residuals:
        if r.get("path") == "compute":
            line += (
                f"; npb {r['kernel']} class {r['class']}: measured {r['measured_s']:.4g} s, "
                f"simulated {r['simulated_s']:.4g} s ({_pct(float(r['residual']))})"
            )
    return line


def _memory_line(row: Any) -> str:
    from hpceval.simulate.memory import NOT_MODELLED, NodeMemory

    node = row.parameters.get("memory")
    if not node:
        return NOT_MODELLED
    return (
        f"memory: {NodeMemory.from_dict(node).describe()}; each NPB projection stretches its "
        "computation by max(1, ranks per node x the kernel's bytes/s per rank / this figure)"
    )


def simulate_command(
    bench: Annotated[
        str, typer.Option("--bench", help="npb.KERNEL (npb.cg, npb.ft, ...) or mpibench.")
    ],
    ranks: Annotated[
        str, typer.Option("--ranks", help="Rank counts: 16,32,64 or 16..512 (powers of two).")
    ],
    platform: Annotated[
        str | None,
        typer.Option("--platform", "-p", help="A platform measured in the store."),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option("--profile", help="A published profile (hpceval profiles) or a TOML file."),
    ] = None,
    class_name: Annotated[str | None, typer.Option("--class", help="NPB class.")] = None,
    pattern: Annotated[
        str | None, typer.Option("--pattern", help="mpibench pattern (pingpong, allreduce, ...).")
    ] = None,
    sizes: Annotated[
        str | None, typer.Option("--sizes", help="mpibench sizes: 0..4MiB or 8,1KiB,...")
    ] = None,
    ppn: Annotated[
        int | None, typer.Option("--ppn", help="Ranks per node \\[default: cores per node].")
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option("--nodes", help="Simulated nodes \\[default: as many as the ranks need]."),
    ] = None,
    oversubscribe: Annotated[
        bool, typer.Option("--oversubscribe", help="Allow more ranks per node than cores.")
    ] = False,
    backbone: Annotated[
        str | None,
        typer.Option("--backbone", help="fatpipe (full bisection) or shared (contention)."),
    ] = None,
    backbone_gbps: Annotated[
        float | None, typer.Option("--backbone-gbps", help="Shared backbone bandwidth, Gbit/s.")
    ] = None,
    topology: Annotated[
        str | None,
        typer.Option(
            "--topology",
            help="flat (one switch), fat_tree:LEAF_NODES:RATIO (two levels, RATIO:1 "
            "oversubscribed) or torus:XxYxZ \\[default: the profile's, else flat].",
        ),
    ] = None,
    accept_curve: Annotated[
        bool,
        typer.Option(
            "--accept-curve",
            help="Calibrate on a PingPong curve the input checks refuse (its points flagged).",
        ),
    ] = False,
    host_share: Annotated[
        bool,
        typer.Option(
            "--host-share",
            help="An emulated cluster whose nodes share this host's cores: calibrate at the "
            "share the ranks get (concurrent pairs at the same rank count, core speed / "
            "share); --validate then holds it against the runs measured on shared cores.",
        ),
    ] = False,
    token_bucket: Annotated[
        bool,
        typer.Option(
            "--token-bucket/--no-token-bucket",
            help="An emulated cluster whose links tc tbf shapes (stored with its runs): model "
            "each node link's bucket (a SimGrid plugin) rather than fit factors on the "
            "PingPong's steady state.",
        ),
    ] = True,
    bucket_peak_gbps: Annotated[
        float | None,
        typer.Option(
            "--bucket-peak-gbps",
            help="Speed of a shaped link while its bucket holds tokens, Gbit/s \\[default: "
            "16, assumed: a veth's speed].",
            show_default=False,
        ),
    ] = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Calibration: largest residual per size.")
    ] = 0.10,
    recalibrate: Annotated[
        bool, typer.Option("--recalibrate", help="Calibrate again even if a calibration fits.")
    ] = False,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="Seconds per simulated execution.")
    ] = 3600.0,
    validate: Annotated[
        bool,
        typer.Option(
            "--validate",
            help="Hold the projection against the platform's stored measured runs (the "
            "median over them, and their spread) or the profile's published figures: error "
            "per figure. Measures nothing itself (measure under chrt -f 10 first on a shared "
            "machine: docs/simulation.md).",
        ),
    ] = False,
    pool_runs: Annotated[
        str,
        typer.Option(
            "--pool-runs",
            help="--platform: each stored figure (calibration input, --validate's "
            "reference) is the median over all the runs that measured it (per run the median "
            "of its samples), or over the latest N of them.",
        ),
    ] = "all",
    sampling: Annotated[
        bool | None,
        typer.Option(
            "--sampling/--no-sampling",
            help="NPB: SMPI computation sampling (faster, not verified) \\[default: auto: "
            "classes C and D].",
            show_default=False,
        ),
    ] = None,
    folding: Annotated[
        bool | None,
        typer.Option(
            "--folding/--no-folding",
            help="NPB: SMPI memory folding (little memory, not verified) \\[default: auto: "
            "when the ranks' arrays exceed 1/4 of this machine's available memory, or at 64+ "
            "ranks with sampling].",
            show_default=False,
        ),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option(
            "--iterations",
            help="NPB CG: time this many of the class's identical outer iterations and "
            "extrapolate (iteration sampling, not verified); 0: all \\[default: auto: 10 "
            "from 256 ranks with sampling].",
            show_default=False,
        ),
    ] = None,
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat",
            help="NPB: replay each case this many times (each replay times the computation "
            "on this machine anew); its figure is their median, --validate shows the range.",
        ),
    ] = 1,
    collective: Annotated[
        list[str] | None,
        typer.Option(
            "--collective",
            help="Force SMPI's algorithm for a collective instead of the MPI library's "
            "choice, e.g. alltoall=pair (repeatable; the run says so). For "
            "algorithms SimGrid cannot solve at scale (Open MPI's linear all-to-all at "
            "512 ranks).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Project a benchmark at scale on a calibrated SimGrid SMPI model of a platform.

    Results are stored as origin "simulated", tied to their calibration; they are never
    mixed with measured ones.
    """
    from hpceval.launch.starters.smpi_collectives import forced_note, parse_forced
    from hpceval.simulate.plan import Request
    from hpceval.simulate.runner import calibrate_simulation, execute, prepare
    from hpceval.store import open_store

    if backbone not in (None, "fatpipe", "shared"):
        raise UserError(f"--backbone: {backbone!r} is not fatpipe or shared")
    if not 0 < tolerance < 1:
        raise UserError(f"--tolerance: {tolerance} is not between 0 and 1")
    pooled_runs = parse_pool_runs(pool_runs)
    if pooled_runs is not None and platform is None:
        raise UserError("--pool-runs: a profile has no stored runs; it applies to --platform")
    bb: Literal["fatpipe", "shared"] | None = backbone  # type: ignore[assignment]
    forced = parse_forced(collective or ())
    request = Request(
        bench=bench,
        ranks=parse_ranks(ranks),
        class_name=class_name.upper() if class_name else None,
        pattern=pattern,
        sizes=_parse_sizes(sizes),
        ppn=ppn,
        nodes=nodes,
        oversubscribe=oversubscribe,
        backbone=bb,
        backbone_gbps=backbone_gbps,
        topology=topology,
        accept_curve=accept_curve,
        host_share=host_share,
        pool_runs=pooled_runs,
        token_bucket=token_bucket,
        bucket_peak_Bps=bucket_peak_gbps * 1e9 / 8 if bucket_peak_gbps is not None else None,
        time_limit_s=time_limit,
        tolerance=tolerance,
        recalibrate=recalibrate,
        sampling=sampling,
        folding=folding,
        iterations=iterations,
        repeat=repeat,
        collectives=tuple(sorted(forced.items())),
    )
    # A profile needs no database to be checked; a platform is read from it.
    store = open_store(db, create=platform is None)
    with store:
        sim = prepare(store, platform, profile, request)
        err.print(
            f"calibrating {sim.target.name} ({sim.target.source_kind}) ...", highlight=False
        )
        calibration, reused = calibrate_simulation(store, sim)
        out = _Consoles.out
        out.print(calibration_table(calibration))
        for line in contention_lines(calibration):
            out.print(line, markup=False, highlight=False)
        out.print(
            ("reused " if reused else "stored ") + f"calibration {calibration.id}; "
            + _speed_line(calibration),
            highlight=False,
        )
        out.print(_memory_line(calibration), highlight=False)
        if forced:
            out.print(forced_note(forced), markup=False, highlight=False)
        if sim.build is not None:
            out.print(f"NPB build: {sim.build.describe()}; {sim.build.reason}", highlight=False)
        from hpceval.cli_run import RichReporter

        run_id, result = execute(store, sim, calibration, RichReporter(err))
        out.print(_results_table(store, run_id, result))
        for line in sim.memory_lines:
            out.print(line, highlight=False)
        ok = len(result.outcomes) - len(result.failed)
        out.print(
            f"run {run_id} (simulated): {ok} of {len(result.outcomes)} cases ok; "
            f"hpceval show --run {run_id}",
            highlight=False,
        )
        if validate:
            published = sim.target.rings if sim.target.source_kind == "profile" else None
            out.print(validation_table(store, run_id, published, host_share, pooled_runs))
        if result.failed:
            raise typer.Exit(1)


def _results_table(store: Any, run_id: int, result: Any) -> Table:
    from hpceval.cli_run import case_label, headline

    by_case: dict[str, list[Any]] = {}
    for sm in store.measurements(run_id):
        by_case.setdefault(sm.case_key, []).append(sm.measurement)
    t = Table(title=f"run {run_id}: simulated", title_justify="left")
    for col in ("case", "status", "projected", "simulation wall s"):
        t.add_column(col, justify="right" if col.endswith(" s") else "left")
    for o in result.outcomes:
        ok = o.status.value == "ok"
        t.add_row(
            case_label(o.case),
            status_text(o.status.value),
            headline(by_case.get(o.case.key, [])).replace(" (verified)", "")
            if ok
            else o.error[:100],
            f"{o.wall_s:.1f}",
        )
    return t


def profiles_command() -> None:
    """The shipped published platform profiles, with their sources."""
    from hpceval.simulate.profiles import load_profile, profile_names

    t = Table(title="published profiles (hpceval simulate --profile NAME)", title_justify="left")
    for col in ("name", "cores/node", "inter-node", "intra-node", "source", "assumed"):
        t.add_column(col, overflow="fold")
    for name in profile_names():
        p, _ = load_profile(name)

        def fig(f: Any) -> str:
            if f is None:
                return "-"
            mark = " (assumed)" if f.assumed else ""
            return f"{f.latency:g} µs, {f.bandwidth_mb_s:g} MB/s{mark}"

        t.add_row(
            name,
            str(p.cores_per_node or "-"),
            fig(p.inter_node),
            fig(p.intra_node),
            p.source.split(":")[0],
            str(len(p.assumed)),
        )
    _Consoles.out.print(t)


def calibrations_command(
    calibration_id: Annotated[
        int | None, typer.Option("--id", help="Show this calibration's residuals.")
    ] = None,
    db: DbOption = None,
) -> None:
    """The stored SMPI calibrations, or one with its residuals per size."""
    from hpceval.store import open_store

    with open_store(db, create=False, read_only=True) as store:
        if calibration_id is not None:
            row = store.calibration(calibration_id)
            _Consoles.out.print(calibration_table(row))
            for line in contention_lines(row):
                _Consoles.out.print(line, markup=False, highlight=False)
            _Consoles.out.print(_speed_line(row), highlight=False)
            _Consoles.out.print(_memory_line(row), highlight=False)
            _Consoles.out.print(
                f"source: {row.source}; runs {list(row.source_run_ids)}; "
                f"lat-factor {row.parameters['smpi_config']['smpi/lat-factor']}; "
                f"bw-factor {row.parameters['smpi_config']['smpi/bw-factor']}",
                highlight=False,
            )
            return
        rows: Sequence[Any] = store.calibrations()
    t = Table(title="SMPI calibrations", title_justify="left")
    for col in ("id", "platform", "source", "SimGrid", "worst residual", "converged"):
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(
            str(row.id),
            row.platform_name,
            row.source,
            row.simgrid_version,
            f"{row.max_residual:.1%}",
            "yes" if row.converged else "no",
        )
    _Consoles.out.print(t)
