"""Terminal tables of a run's measurements (rich)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from rich.table import Table

from hpceval.model import Measurement, Origin
from hpceval.patterns import COLLECTIVES, PATTERNS, RINGS
from hpceval.statistics import quality_warnings
from hpceval.store import CaseRow, RunRow, StoredMeasurement


def format_size(n: int) -> str:
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def format_value(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if v >= 0.01 else f"{v:.2e}"


def format_ci(m: Measurement) -> str:
    st = m.statistics
    if st is None or st.count < 2:
        return "n/a"
    return f"±{st.relative_ci:.1%}"


def _placement(m: Measurement) -> str:
    p = m.parameters
    label = f"{p.get('nodes')}×{p.get('ranks_per_node')} ranks"
    if p.get("threads_per_rank", 1) != 1:
        label += f" ×{p.get('threads_per_rank')} threads"
    if p.get("oversubscribed"):
        label += ", oversubscribed"
    return label


def _flags(m: Measurement, target_rci: float | None) -> str:
    if m.statistics is None:
        return ""
    return "⚠" if quality_warnings(m.statistics, target_rci=target_rci) else ""


def npb_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """NPB kernels: one row per kernel, class and placement; repetitions summarized."""
    rows: dict[tuple[str, str, int, int, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    # SMPI sampled/folded builds are accepted unverified: their details say "not checked (...)".
    unchecked: dict[tuple[str, str, int, int, int], str] = {}
    simulated = False
    for m in measurements:
        if m.benchmark != "npb":
            continue
        simulated = simulated or m.origin is Origin.SIMULATED
        p = m.parameters
        key = (
            str(p["kernel"]),
            str(p["class"]),
            int(p.get("ranks", 1)),
            int(p.get("threads_per_rank", 1)),
            int(p.get("nodes", 1)),
        )
        rows[key][m.metric].append(m.value)
        if isinstance(m.details.get("verification"), str):
            unchecked[key] = str(m.details["verification"])
    if not rows:
        return []
    title = "NPB kernels (verified runs; best of the repetitions)"
    if simulated:
        title = "NPB kernels, SIMULATED (SimGrid SMPI; best of the repetitions)"
    t = Table(title=title, title_justify="left")
    for col in ("kernel", "class", "ranks", "threads", "nodes", "runs", "time s", "Mop/s",
                "Mop/s/process"):  # fmt: skip
        t.add_column(col, justify="left" if col in ("kernel", "class") else "right")
    if unchecked:
        t.add_column("verified")
        reasons = sorted(set(unchecked.values()))
        t.caption = f"verified no: {'; '.join(reasons)} (SMPI build)"
    order = {k: i for i, k in enumerate(("ep", "is", "cg", "mg", "ft"))}
    for key in sorted(rows, key=lambda k: (order.get(k[0], 99), k[0], k[1], k[2], k[3])):
        values = rows[key]
        times = values.get("time", [])
        t.add_row(
            key[0].upper(),
            key[1],
            str(key[2]),
            str(key[3]),
            str(key[4]),
            str(len(times)),
            format_value(min(times)) if times else "",
            format_value(max(values.get("mops_total", [0.0]))),
            format_value(max(values.get("mops_per_process", [0.0]))),
            *(["no" if key in unchecked else "yes"] if unchecked else []),
        )
    return [t]


def point_to_point_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """One table per pattern, pair and placement: latency and bandwidth by message size."""
    groups: dict[tuple[str, str, str], dict[int, dict[str, Measurement]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for m in measurements:
        pattern = str(m.parameters.get("pattern"))
        if m.benchmark != "mpibench" or pattern in COLLECTIVES:
            continue
        key = (pattern, str(m.parameters.get("pair", "")), _placement(m))
        groups[key][int(m.parameters["size"])][m.metric] = m
    tables = []

    def order(key: tuple[str, str, str]) -> tuple[int, str, str]:
        return (PATTERNS.index(key[0]) if key[0] in PATTERNS else len(PATTERNS), key[1], key[2])

    for (pattern, pair, placement), by_size in sorted(groups.items(), key=lambda kv: order(kv[0])):
        kind = "HPCC ring" if pattern in RINGS else "point-to-point"
        title = f"{pattern} ({kind}{', ' + pair if pair else ''}, {placement})"
        t = Table(title=title, title_justify="left", min_width=70)
        t.add_column("size", justify="right")
        t.add_column("latency µs", justify="right")
        t.add_column("95% CI", justify="right")
        t.add_column("min µs", justify="right")
        t.add_column("bandwidth MB/s", justify="right")
        t.add_column("samples", justify="right")
        t.add_column("", justify="left")
        for size in sorted(by_size):
            lat = by_size[size].get("latency")
            bw = by_size[size].get("bandwidth")
            if lat is None:
                continue
            assert lat.statistics is not None
            t.add_row(
                format_size(size),
                format_value(lat.value),
                format_ci(lat),
                format_value(lat.statistics.minimum),
                format_value(bw.value) if bw else "",
                str(lat.statistics.count),
                _flags(lat, None),
            )
        tables.append(t)
    return tables


def collective_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """One table per collective: t_max (µs) by message size (rows) and rank count (columns)."""
    groups: dict[str, dict[int, dict[str, Measurement]]] = defaultdict(lambda: defaultdict(dict))
    for m in measurements:
        pattern = str(m.parameters.get("pattern"))
        if m.benchmark != "mpibench" or pattern not in COLLECTIVES or m.metric != "time":
            continue
        column = f"{m.parameters['ranks']} ranks"
        if m.parameters.get("oversubscribed"):
            column += "*"
        groups[pattern][int(m.parameters["size"])][column] = m
    tables = []
    for pattern in sorted(groups, key=PATTERNS.index):
        by_size = groups[pattern]
        columns = sorted(
            {c for row in by_size.values() for c in row}, key=lambda c: int(c.split()[0])
        )
        t = Table(
            title=f"{pattern} (collective, t_max µs; * = oversubscribed)",
            title_justify="left",
            min_width=70,
        )
        t.add_column("size", justify="right")
        for c in columns:
            t.add_column(c, justify="right")
        for size in sorted(by_size):
            row = [format_size(size)]
            for c in columns:
                cell = by_size[size].get(c)
                row.append(f"{format_value(cell.value)} {format_ci(cell)}" if cell else "")
            t.add_row(*row)
        tables.append(t)
    return tables


def runs_table(
    runs: Iterable[tuple[RunRow, Sequence[CaseRow]]],
    skip_reasons: Callable[[int], Sequence[str]] | None = None,
) -> Table:
    """One row per run: what ran where, how it ended, how many cases are done, failed or
    skipped (with the distinct reasons, from `skip_reasons(run id)`)."""
    t = Table(title="runs", title_justify="left")
    for col in ("id", "suite", "platform", "launcher", "status", "started", "wall", "cases"):
        t.add_column(col, justify="right" if col in ("id", "wall") else "left")
    for r, cases in runs:
        started = dt.datetime.fromtimestamp(r.started).strftime("%Y-%m-%d %H:%M:%S")
        wall = f"{r.ended - r.started:.0f} s" if r.ended is not None else ""
        done = sum(1 for c in cases if c.status == "done")
        failed = sum(1 for c in cases if c.status == "failed")
        summary = f"{done}/{len(cases)} done" + (f", {failed} failed" if failed else "")
        skipped = sum(1 for c in cases if c.status == "skipped")
        if skipped:
            summary += f", {skipped} skipped"
            reasons = sorted(set(skip_reasons(r.id))) if skip_reasons is not None else []
            if reasons:
                summary += f" ({'; '.join(reasons)})"
        t.add_row(
            str(r.id), r.suite_name, r.platform_name, r.launcher, r.status, started, wall, summary
        )
    return t


def measurements_of(rows: Iterable[StoredMeasurement]) -> list[Measurement]:
    return [r.measurement for r in rows]


# --------------------------------------------------------------------------- fio, hpcc

FIO_WORKLOADS: tuple[str, ...] = ("seqwrite", "seqread", "randwrite", "randread")
FIO_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bandwidth", "MiB/s"),
    ("iops", "IOPS"),
    ("clat_mean", "clat mean µs"),
    ("clat_p50", "p50 µs"),
    ("clat_p95", "p95 µs"),
    ("clat_p99", "p99 µs"),
)


def fio_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """Storage: one table per fio configuration, one row per workload (best repetition)."""
    groups: dict[tuple[str, ...], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    fallback: dict[tuple[str, ...], str] = {}
    directory: dict[tuple[str, ...], str] = {}
    for m in measurements:
        if m.benchmark != "fio":
            continue
        p = m.parameters
        key = tuple(
            str(p.get(k)) for k in ("preset", "size", "numjobs", "iodepth", "ioengine", "direct")
        )
        groups[key][str(p.get("workload"))][m.metric].append(m.value)
        fallback[key] = str(p.get("io_fallback", ""))
        directory[key] = str(m.details.get("directory", ""))
    tables = []
    for key, by_workload in groups.items():
        preset, size, jobs, depth, engine, direct = key
        title = (
            f"fio on {directory[key] or '?'} ({preset}: {format_size(int(size))} × {jobs} jobs, "
            f"{engine}, iodepth {depth}, {'direct' if direct == 'True' else 'buffered'}"
            + (f"; fallback: {fallback[key]}" if fallback[key] else "")
            + ")"
        )
        t = Table(title=title, title_justify="left", min_width=70)
        t.add_column("workload")
        for _, label in FIO_COLUMNS:
            t.add_column(label, justify="right")
        for workload in sorted(
            by_workload, key=lambda w: FIO_WORKLOADS.index(w) if w in FIO_WORKLOADS else 99
        ):
            metrics = by_workload[workload]
            cells = []
            for metric, _ in FIO_COLUMNS:
                values = metrics.get(metric, [])
                best = (min if metric.startswith("clat") else max)(values) if values else None
                cells.append(format_value(best) if best is not None else "")
            t.add_row(workload, *cells)
        tables.append(t)
    return tables


def fio_headline(measurements: Sequence[Measurement]) -> str:
    """Sequential bandwidths (MiB/s) and random IOPS of a fio case's measurements."""
    parts = []
    for workload in FIO_WORKLOADS:
        metric, unit = ("bandwidth", "MiB/s") if workload.startswith("seq") else ("iops", "IOPS")
        values = [
            m.value
            for m in measurements
            if m.benchmark == "fio" and m.metric == metric and m.parameters["workload"] == workload
        ]
        if values:
            parts.append(f"{workload} {format_value(max(values))} {unit}")
    return ", ".join(parts)


def hpcc_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """HPC Challenge: one row per figure, one column per problem size and placement."""
    from hpceval.benchmarks.hpcc.parse import FIGURES

    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, str] = {}
    for m in measurements:
        if m.benchmark != "hpcc":
            continue
        p = m.parameters
        column = f"N={p.get('n')} {_placement(m)}"
        cells[m.metric][column].append(m.value)
        units[m.metric] = m.unit
    if not cells:
        return []
    columns = sorted({c for by in cells.values() for c in by})
    t = Table(
        title="HPC Challenge (best of the repetitions; MB/s = 10^6 B/s)", title_justify="left"
    )
    t.add_column("figure")
    t.add_column("unit")
    for c in columns:
        t.add_column(c, justify="right")
    for fig in FIGURES:
        if fig.metric not in cells:
            continue
        lower_better = units[fig.metric] == "us"
        row = [fig.metric, units[fig.metric].replace("us", "µs")]
        for c in columns:
            values = cells[fig.metric].get(c, [])
            best = (min if lower_better else max)(values) if values else None
            row.append(format_value(best) if best is not None else "")
        t.add_row(*row)
    return [t]


def hpcc_headline(measurements: Sequence[Measurement]) -> str:
    """HPL, STREAM triad and (on 2+ ranks) the ping-pong latency of an hpcc case."""
    by = {m.metric: m.value for m in measurements if m.benchmark == "hpcc"}
    parts = []
    if "hpl" in by:
        parts.append(f"HPL {format_value(by['hpl'])} GFLOP/s")
    if "stream_triad_star" in by:
        parts.append(f"triad {format_value(by['stream_triad_star'])} MB/s")
    if "pingpong_latency_avg" in by:
        parts.append(f"ping-pong {format_value(by['pingpong_latency_avg'])} µs")
    return ", ".join(parts) + (" (verified)" if parts else "")


# --------------------------------------------------------------------------- applications

# (benchmark, metric shown first, its label, the input-size parameters that name a row)
APPLICATION_FIGURES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("gromacs", "ns_per_day", "ns/day", ("box_nm", "atoms", "steps", "mpi")),
    ("lammps", "timesteps_per_second", "timesteps/s", ("n", "atoms", "steps")),
)
APPLICATION_SECOND: dict[str, tuple[str, str]] = {
    "gromacs": ("time_per_step", "ms/step"),
    "lammps": ("atom_steps_per_second", "atom-steps/s"),
}


def application_tables(measurements: Sequence[Measurement]) -> list[Table]:
    """GROMACS and LAMMPS: one row per input and placement, best repetition."""
    tables = []
    for bench, metric, label, size_keys in APPLICATION_FIGURES:
        rows: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        version = ""
        for m in measurements:
            if m.benchmark != bench:
                continue
            p = m.parameters
            size = " ".join(f"{k}={p[k]}" for k in size_keys if k in p)
            rows[(size, _placement(m))][m.metric].append(m.value)
            version = str(p.get(f"{bench}_version", version))
        if not rows:
            continue
        second, second_label = APPLICATION_SECOND[bench]
        t = Table(
            title=f"{bench.upper() if bench == 'lammps' else 'GROMACS'} {version} "
            "(best of the repetitions)",
            title_justify="left",
        )
        for column in ("input", "placement", "runs", label, second_label):
            t.add_column(column, justify="left" if column in ("input", "placement") else "right")
        lower_better = second == "time_per_step"
        for (size, placement), metrics in sorted(rows.items()):
            firsts, seconds = metrics.get(metric, []), metrics.get(second, [])
            t.add_row(
                size,
                placement,
                str(len(firsts)),
                format_value(max(firsts)) if firsts else "",
                format_value((min if lower_better else max)(seconds)) if seconds else "",
            )
        tables.append(t)
    return tables


def application_headline(measurements: Sequence[Measurement]) -> str:
    """ns/day (GROMACS) or timesteps/s (LAMMPS) of an application case."""
    parts = []
    for bench, metric, label, _ in APPLICATION_FIGURES:
        values = [m.value for m in measurements if m.benchmark == bench and m.metric == metric]
        if values:
            parts.append(f"{format_value(max(values))} {label}")
    return ", ".join(parts) + (" (verified)" if parts else "")
