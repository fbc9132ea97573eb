"""`hpceval report`: files, CSV contents, escaping, parallel building, PNG figures.

The page in real headless Chromium is tested in test_report_browser.py, on this module's
`report` fixture.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import Result

import hpceval
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import open_store
from tests.cli_helpers import invoke, one_line_error, read_csv

EVIL = "vm<script>alert(1)</script>"
SIZES = [2**k for k in range(17)]  # 1 B .. 64 KiB
HOCKNEY = {"bare": (1.0, 1000.0), EVIL: (2.0, 500.0)}  # α µs, β MB/s; vm twice as slow
SIMULATED_FACTOR = 1.1  # the SimGrid projection of bare: 10 % slower than measured
NPB = {  # nodes -> (time s, Mop/s), 16 ranks per node
    "bare": {1: (100.0, 2000.0), 2: (60.0, 4000.0)},
    EVIL: {1: (150.0, 1000.0), 2: (90.0, 2000.0)},
}
CATALOG = """
format = 1
name = "test-cloud"
source = "made up for the tests"
date = "2024-01"
currency = "USD"
billing = "per-second"
[[entry]]
name = "cloud"
[entry.hourly]
on-demand = 3.0
spot = 1.0
"""
FACTS = {
    "bare": {"cpu": {"model": "Xeon Bare", "sockets": 2, "cores": 16, "threads": 32},
             "virtualization": {"kind": "none", "vm": False},
             "network": {"path": "native (eth0, ixgbe)"},
             "mpi": {"implementation": "Open MPI", "version": "4.1.4"},
             "compiler": {"version": "gcc 12.2.0", "cflags": ["-O2"]}},
    EVIL: {"cpu": {"model": "Xeon <b>Cloud</b>"}, "virtualization": {"kind": "kvm", "vm": True},
           "network": {"path": "paravirtual (eth0, virtio_net)"}},
    "netns": {"cpu": {"model": "Xeon Emu"}},
}
EXPECTED_FIGURES = {
    "p2p_pingpong",
    "collectives_vs_size",
    "collectives_vs_ranks",
    "npb_mops",
    "npb_speedup",
    "placement_gain",
    "overhead_heatmap",
    "cost_per_gops",
    "cost_pareto",
    "benchmark_fio",
}
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def spread(value: float) -> tuple[float, ...]:
    return (value * 0.99, value, value * 1.01)


def per_sample_bandwidth(size: int, time_us: float) -> tuple[float, ...]:
    return tuple(size / t for t in spread(time_us))


def add_run(
    store: Any,
    platform: str,
    origin: Origin,
    measurements: list[tuple[str, Measurement]],
    *,
    config: Mapping[str, Any] | None = None,
    note: str | None = None,
    facts: Mapping[str, Any] | None = None,
) -> None:
    env = store.add_environment(
        Environment(facts=dict(facts or FACTS.get(platform, {})), fingerprint=f"env-{platform}")
    )
    cases = sorted({case for case, _ in measurements})
    run_id = store.create_run(
        suite_name="s",
        suite_config={},
        platform_id=store.add_platform(platform, {"name": platform, **(config or {})}),
        environment_id=env,
        launcher="local",
        cases=[(c, c.split("-")[0], {}) for c in cases],
        hpceval_version=hpceval.__version__,
        git_revision=None,
        origin=origin,
        host="h",
        pid=1,
        note=note,
    )
    for i, (case, m) in enumerate(measurements):
        store.add_measurement(run_id, None, case, f"p{i}", m)


def mpibench_points(alpha: float, beta: float, origin: Origin) -> list[tuple[str, Measurement]]:
    out = []
    for size in SIZES:
        params = {"pattern": "pingpong", "pair": "intra-node", "size": size, "ranks": 2,
                  "nodes": 1, "ranks_per_node": 2}
        t = alpha + size / beta
        out.append(("mpibench-p2p", Measurement("mpibench", "latency", t, "us", params,
                                                spread(t), origin=origin)))
        if size:
            bw = size / t
            # as mpibench stores it: per-sample bandwidths n / t_i, value n / mean(t_i)
            out.append(("mpibench-p2p", Measurement("mpibench", "bandwidth", bw, "MB/s", params,
                                                    per_sample_bandwidth(size, t),
                                                    origin=origin)))
    for ranks in (2, 4):
        for size in (4, 64, 1024, 4096):
            t = alpha * ranks + size / beta
            params = {"pattern": "allreduce", "size": size, "ranks": ranks, "nodes": 1,
                      "ranks_per_node": ranks}
            out.append(("mpibench-coll", Measurement("mpibench", "time", t, "us", params,
                                                     spread(t), origin=origin)))
    for pattern, factor in (("natural_ring", 1.5), ("random_ring", 2.0)):
        for size in (8, 2_000_000):
            params = {"pattern": pattern, "size": size, "ranks": 4, "nodes": 1,
                      "ranks_per_node": 4}
            t = factor * (alpha + size / beta)
            out.append(("mpibench-ring", Measurement("mpibench", "latency", t, "us", params,
                                                     spread(t), origin=origin)))
            out.append(("mpibench-ring", Measurement("mpibench", "bandwidth", size / t, "MB/s",
                                                     params, per_sample_bandwidth(size, t),
                                                     origin=origin)))
    return out


def npb_points(platform: str) -> list[tuple[str, Measurement]]:
    out = []
    placements = [(nodes, 16, *values) for nodes, values in NPB[platform].items()]
    if platform == "bare":
        placements.append((2, 8, 80.0, 2500.0))  # 16 ranks as 2 x 8: a placement sweep
    for nodes, rpn, seconds, mops in placements:
        params = {"kernel": "cg", "class": "C", "ranks": nodes * rpn, "nodes": nodes,
                  "ranks_per_node": rpn, "threads_per_rank": 1}
        out.append(("npb-cg", Measurement("npb", "time", seconds, "s", params, spread(seconds))))
        out.append(("npb-cg", Measurement("npb", "mops_total", mops, "Mop/s", params,
                                          spread(mops))))
    return out


def fio_points(mib_s: float) -> list[tuple[str, Measurement]]:
    params = {"rw": "read", "block_size": 4_194_304}
    return [("fio-seq", Measurement("fio", "bandwidth", mib_s, "MiB/s", params, spread(mib_s)))]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Result]]:
    """The database of the tests and the report written from it (once for the module)."""
    base = tmp_path_factory.mktemp("report")
    db = base / "results.db"
    catalog = base / "prices.toml"
    catalog.write_text(CATALOG)
    with open_store(str(db)) as store:
        price = {"price": {"per_node_hour": 1.0, "currency": "USD"}}
        add_run(store, "bare", Origin.MEASURED,
                mpibench_points(*HOCKNEY["bare"], Origin.MEASURED) + npb_points("bare")
                + fio_points(1000.0), config=price)
        alpha, beta = HOCKNEY["bare"]
        add_run(store, "bare", Origin.SIMULATED,
                mpibench_points(alpha * SIMULATED_FACTOR, beta / SIMULATED_FACTOR,
                                Origin.SIMULATED), config=price)
        add_run(store, EVIL, Origin.MEASURED,
                mpibench_points(*HOCKNEY[EVIL], Origin.MEASURED) + npb_points(EVIL)
                + fio_points(500.0), note="<i>a note</i> & more")
        emulated = [
            ("mpibench-p2p", Measurement(
                "mpibench", "latency", 50.0 + s / 100.0, "us",
                {"pattern": "pingpong", "pair": "inter-node", "size": s, "ranks": 2,
                 "nodes": 2, "ranks_per_node": 1},
                spread(50.0 + s / 100.0), origin=Origin.EMULATED))
            for s in SIZES
        ]
        add_run(store, "netns", Origin.EMULATED, emulated)
    out = base / "out"
    # One run per platform: verdicts from that run's samples (--min-repetitions 1).
    result = invoke(
        "report", "--out", str(out), "--db", str(db), "--baseline", "bare",
        "--catalog", str(catalog), "--instance", f"{EVIL}=cloud", "--min-repetitions", "1",
    )
    yield db, out, result


# --------------------------------------------------------------------------- files and CSVs


def test_report_writes_page_figures_and_tables(report: tuple[Path, Path, Result]) -> None:
    _, out, result = report
    assert result.exit_code == 0, result.output
    assert f"wrote {out / 'index.html'}" in result.output
    svgs = {p.stem for p in (out / "figures").glob("*.svg")}
    pngs = {p.stem for p in (out / "figures").glob("*.png")}
    assert svgs == pngs == EXPECTED_FIGURES
    for name in svgs:
        ET.parse(out / "figures" / f"{name}.svg")  # well-formed, whatever the names hold
        assert (out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tables = {p.stem for p in (out / "tables").glob("*.csv")}
    assert {"platforms", "runs", "hockney_fits", "point_to_point", "collectives", "hpcc_beff",
            "npb_scaling", "placement", "overhead_heatmap", "overhead_by_category",
            "comparison", "cost", "prices", "benchmark_fio", "provenance"} <= tables
    page = (out / "index.html").read_text()
    assert page.count('<img class="report-figure"') == len(EXPECTED_FIGURES)
    # self-contained: figures inline, nothing fetched from anywhere
    assert "<script" not in page.lower()
    assert "http://" not in page and "https://" not in page
    assert page.count('src="data:image/svg+xml;base64,') == len(EXPECTED_FIGURES)


def test_user_strings_are_escaped(report: tuple[Path, Path, Result]) -> None:
    _, out, _ = report
    page = (out / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;i&gt;a note&lt;/i&gt; &amp; more" in page  # a run note
    assert "Xeon &lt;b&gt;Cloud&lt;/b&gt;" in page  # a provenance fact
    assert "<b>Cloud" not in page and "<i>a note" not in page


def test_hockney_fits_and_point_tables(report: tuple[Path, Path, Result]) -> None:
    _, out, _ = report
    fits = {(r["platform"], r["origin"]): r for r in read_csv(out / "tables/hockney_fits.csv")}
    expected = {
        ("bare", "measured"): HOCKNEY["bare"],
        ("bare", "simulated"): (1.0 * SIMULATED_FACTOR, 1000.0 / SIMULATED_FACTOR),
        (EVIL, "measured"): HOCKNEY[EVIL],
        ("netns", "emulated"): (50.0, 100.0),
    }
    assert fits.keys() == expected.keys()
    for key, (alpha, beta) in expected.items():
        assert float(fits[key]["alpha_us"]) == pytest.approx(alpha, rel=1e-6), key
        assert float(fits[key]["beta_mb_s"]) == pytest.approx(beta, rel=1e-6), key
    # the p2p figure keeps the simulated projection of bare apart and labels it
    svg = (out / "figures/p2p_pingpong.svg").read_text()
    assert "bare, 1 node × 2 ranks × 1 thread, intra-node [simulated]" in svg
    assert "netns, 2 nodes × 1 rank × 1 thread, inter-node [emulated]" in svg
    assert "simulated data" in svg and "emulated data" in svg
    rows = read_csv(out / "tables/point_to_point.csv")
    origins = {(r["platform"], r["origin"]) for r in rows}
    assert origins == set(expected)


def test_hpcc_table(report: tuple[Path, Path, Result]) -> None:
    _, out, _ = report
    rows = {(r["platform"], r["origin"], r["ranks"]): r
            for r in read_csv(out / "tables/hpcc_beff.csv")}
    ring = rows[("bare", "measured", "4")]
    alpha, beta = HOCKNEY["bare"]
    assert float(ring["natural ring latency us"]) == pytest.approx(1.5 * (alpha + 8 / beta))
    assert float(ring["random ring latency us"]) == pytest.approx(2.0 * (alpha + 8 / beta))
    t = 2.0 * (alpha + 2_000_000 / beta)
    assert float(ring["random ring bandwidth MB/s"]) == pytest.approx(2_000_000 / t)
    assert float(ring["random ring bandwidth_size B"]) == 2_000_000
    pingpong = rows[("bare", "measured", "2")]
    assert float(pingpong["pingpong (intra-node) latency us"]) == pytest.approx(alpha + 8 / beta)
    # 2,000,000 B was not measured for ping-pong (sizes up to 64 KiB): no bandwidth column
    assert pingpong.get("pingpong (intra-node) bandwidth MB/s", "") == ""


def test_overhead_heatmap_npb_placement_and_cost(report: tuple[Path, Path, Result]) -> None:
    _, out, _ = report
    cells = read_csv(out / "tables/overhead_heatmap.csv")
    latency = {(c["platform"], c["origin"]): c for c in cells
               if c["row"] == "mpibench pingpong intra-node"}
    assert float(latency[(EVIL, "measured")]["performance"]) == pytest.approx(0.5)
    assert latency[(EVIL, "measured")]["significant"] == "True"
    sim = latency[("bare", "simulated")]  # compared with measured bare, labelled as such
    assert float(sim["performance"]) == pytest.approx(1 / SIMULATED_FACTOR)
    fio = next(c for c in cells if c["row"] == "fio read bandwidth")
    assert fio["category"] == "storage" and float(fio["performance"]) == pytest.approx(0.5)
    npb = {(r["platform"], r["cores"]): r for r in read_csv(out / "tables/npb_scaling.csv")}
    # the reference is the best placement at 16 cores (2 x 8, 80 s), not the full node
    assert float(npb[("bare", "16")]["time_s"]) == pytest.approx(80.0)
    assert float(npb[("bare", "32")]["speedup"]) == pytest.approx(80 / 60)
    sweep = {r["placement"]: r for r in read_csv(out / "tables/placement.csv")}
    best = sweep["2 nodes × 8 ranks × 1 thread, inter-node"]
    assert float(best["gain_vs_full_node"]) == pytest.approx(100 / 80)
    cost = read_csv(out / "tables/cost.csv")
    got = {(r["platform"], r["pricing"], r["nodes"]): r for r in cost}
    # bare: 1 USD per node-hour (platform file); vm: the catalog's 3 (on-demand), 1 (spot)
    assert float(got[("bare", "on-demand", "1.0")]["run_cost"]) == pytest.approx(100 / 3600)
    assert float(got[(EVIL, "spot", "2.0")]["run_cost"]) == pytest.approx(2 * 90 / 3600)
    assert float(got[(EVIL, "on-demand", "1.0")]["price_per_gops_hour"]) == pytest.approx(3.0)
    front = {(r["platform"], r["pricing"], r["nodes"]) for r in cost if r["pareto"] == "True"}
    assert front == {("bare", "on-demand", "1.0"), ("bare", "on-demand", "2.0")}


def test_report_errors(report: tuple[Path, Path, Result], tmp_path: Path) -> None:
    db, _, _ = report
    one_line_error(invoke("report", "--out", str(tmp_path / "r"), "--db", str(db),
                          "--baseline", "cloud"), "no platform 'cloud'")
    one_line_error(invoke("report", "--out", str(tmp_path / "r"), "--db", str(db),
                          "--platform", "nope"), "no platform 'nope'")
    one_line_error(invoke("report", "--out", str(tmp_path / "r"),
                          "--db", str(tmp_path / "missing.db")), "missing.db")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "thesis.tex").write_text("keep me")
    one_line_error(invoke("report", "--out", str(tmp_path / "busy"), "--db", str(db)),
                   "not an hpceval report")
    assert (tmp_path / "busy" / "thesis.tex").read_text() == "keep me"
    assert not (tmp_path / "r").exists() and not (tmp_path / "missing.db").exists()


def test_container_overhead_is_paired_run_by_run(tmp_path: Path) -> None:
    """Host and container runs alternated under a load that changes from round to round:
    the paired ratio is the container's own 1.1, the load divides out of every pair."""
    db = str(tmp_path / "r.db")
    podman = {"container": {"kind": "podman"}}
    load = [1.0, 3.0, 1.5, 2.5]

    def latency(value: float) -> list[tuple[str, Measurement]]:
        params = {"pattern": "pingpong", "pair": "intra-node", "size": 8, "ranks": 2}
        return [("mpibench-p2p", Measurement("mpibench", "latency", value, "us", params,
                                             spread(value)))]  # fmt: skip

    with open_store(db) as store:
        for factor in load:  # host, container, host, container, ...
            add_run(store, "local", Origin.MEASURED, latency(10.0 * factor))
            add_run(store, "podman-local", Origin.MEASURED, latency(11.0 * factor), facts=podman)
        for factor in load:  # all after: not alternated with the host's runs
            add_run(store, "podman-late", Origin.MEASURED, latency(12.0 * factor), facts=podman)
    out = tmp_path / "out"
    result = invoke("report", "--out", str(out), "--db", db, "--baseline", "local")
    assert result.exit_code == 0, result.output
    rows = {r["container"]: r for r in read_csv(out / "tables" / "container_overhead.csv")}
    paired = rows["podman-local"]
    assert int(paired["pairs"]) == 4
    assert float(paired["ratio"]) == pytest.approx(1.1)
    assert float(paired["ci_low"]) == pytest.approx(1.1)
    assert float(paired["ci_high"]) == pytest.approx(1.1)
    assert float(paired["overhead"]) == pytest.approx(0.1)  # latency: 10 % worse
    assert float(rows["podman-late"]["ratio"]) == pytest.approx(1.2)
    page = (out / "index.html").read_text()
    assert "Container overhead (paired runs)" in page
    assert "The runs of podman-late and local were not alternated" in page
    assert "The runs of podman-local" not in page


def test_report_of_one_platform_says_what_is_missing(
    report: tuple[Path, Path, Result], tmp_path: Path
) -> None:
    db, _, _ = report
    out = tmp_path / "netns-only"
    result = invoke("report", "--out", str(out), "--db", str(db), "--platform", "netns")
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    for line in ("No baseline: give --baseline PLATFORM", "No NPB measurements to cost.",
                 "No collective measurements", "No other benchmark"):
        assert f'<p class="empty">{line}' in page, line
    assert "origin-emulated" in page
    # a second report into the same directory replaces the first
    again = invoke("report", "--out", str(out), "--db", str(db), "--platform", "netns")
    assert again.exit_code == 0, again.output


# --------------------------------------------------------------------------- parallel build


def test_parallel_and_serial_reports_are_the_same(
    report: tuple[Path, Path, Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sections built in forked workers (the report fixture, on a machine of 2+ CPUs) write
    byte for byte what one process writes."""
    db, out, result = report
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("HPCEVAL_REPORT_WORKERS", "1")
    serial = tmp_path / "serial"
    again = invoke("report", "--out", str(serial), "--db", str(db), "--baseline", "bare",
                   "--catalog", str(db.parent / "prices.toml"), "--instance", f"{EVIL}=cloud",
                   "--min-repetitions", "1")  # fmt: skip
    assert again.exit_code == 0, again.output
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(serial) for p in serial.rglob("*") if p.is_file())
    for name in files:
        ours, theirs = (out / name).read_bytes(), (serial / name).read_bytes()
        if name.name == "index.html":  # generated at another minute, perhaps
            ours, theirs = (b"\n".join(line for line in text.splitlines() if b" UTC" not in line)
                            for text in (ours, theirs))  # fmt: skip
        assert ours == theirs, name


def test_build_sections_in_workers_keeps_order_and_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hpceval.errors import UserError
    from hpceval.report.builder import build_sections, report_workers
    from hpceval.report.sections import Section

    monkeypatch.setenv("HPCEVAL_REPORT_WORKERS", "2")
    parent = os.getpid()

    def made(i: int) -> Section:
        # Built in a worker: its pid is not the parent's (on a system with fork).
        return Section(id=f"s{i}", title=f"{i} {os.getpid() != parent}", intro="")

    sections = build_sections([lambda i=i: made(i) for i in range(4)], order=[3, 1, 0, 2])
    assert [s.id for s in sections] == ["s0", "s1", "s2", "s3"]
    assert all(s.title.endswith("True") for s in sections)

    def bad() -> Section:
        raise UserError("no such platform 'x'")

    with pytest.raises(UserError, match="no such platform 'x'"):  # the parent's own error
        build_sections([lambda: made(0), bad])
    monkeypatch.setenv("HPCEVAL_REPORT_WORKERS", "many")
    with pytest.raises(UserError, match="HPCEVAL_REPORT_WORKERS"):
        report_workers()


# --------------------------------------------------------------------------- PNG rasterizer


def _pixels(png: bytes) -> np.ndarray[Any, Any]:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float64)


@pytest.mark.skipif(shutil.which("rsvg-convert") is None,
                    reason="rsvg-convert (librsvg2-bin) is not installed")  # fmt: skip
def test_the_png_is_the_svg_rasterized_by_librsvg_or_drawn_by_matplotlib(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hpceval.report import figures

    def heatmap() -> Any:
        values = np.array([[0.5, 2.0], [1.0, 8.0]])
        return figures.heatmap_figure(["a", "b"], ["x", "y"], values, values > 1, title="t")

    calls: list[list[str]] = []
    real_run = subprocess.run

    def recording_run(argv: list[str], **kwargs: Any) -> Any:
        calls.append(argv)
        return real_run(argv, **kwargs)

    monkeypatch.setattr(figures.subprocess, "run", recording_run)
    by_rsvg = figures.render(heatmap(), "h", "t", "c")
    assert calls and Path(calls[0][0]).name == "rsvg-convert"
    monkeypatch.setenv(figures.RASTERIZER_ENV, "matplotlib")
    by_agg = figures.render(heatmap(), "h", "t", "c")
    assert len(calls) == 1  # matplotlib drew the second one
    assert by_rsvg.svg == by_agg.svg and by_rsvg.png != by_agg.png
    rsvg_pixels, agg_pixels = _pixels(by_rsvg.png), _pixels(by_agg.png)
    # The same figure at the same resolution (to a pixel of rounding), not blank, and the
    # same picture: the mean brightness of the two rasterizations agrees closely.
    assert abs(rsvg_pixels.shape[0] - agg_pixels.shape[0]) <= 1
    assert abs(rsvg_pixels.shape[1] - agg_pixels.shape[1]) <= 1
    assert rsvg_pixels.std() > 20 and agg_pixels.std() > 20
    assert abs(rsvg_pixels.mean() - agg_pixels.mean()) < 3


def test_a_failing_rasterizer_falls_back_to_matplotlib(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hpceval.report import figures

    broken = tmp_path / "rsvg-convert"
    broken.write_text("#!/bin/sh\necho 'no display' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert figures.rasterizer() == str(broken)
    values = np.array([[0.5, 2.0]])
    rendered = figures.render(
        figures.heatmap_figure(["a"], ["x", "y"], values, values > 1, title="t"), "h", "t", "c"
    )
    assert rendered.png.startswith(b"\x89PNG\r\n\x1a\n") and _pixels(rendered.png).std() > 20


def test_point_to_point_built_in_two_parts_is_the_whole_section() -> None:
    """The report builds ping-pong (with the fits and the table) and the other patterns in
    two workers: joined, the parts are the section built at once."""
    from hpceval.analysis.frame import build_frame
    from hpceval.report.sections import Context, joined_sections
    from hpceval.report.sections.point_to_point import point_to_point_section
    from hpceval.report.styles import Palette

    entries = []
    for platform, (alpha, beta) in HOCKNEY.items():
        for pattern, factor in (("pingpong", 1.0), ("pingping", 1.2), ("sendrecv", 1.5)):
            for size in SIZES:
                t = factor * (alpha + size / beta)
                params = {"pattern": pattern, "pair": "intra-node", "size": size, "ranks": 2}
                entries.append((platform, 1, Measurement("mpibench", "latency", t, "us", params,
                                                         spread(t))))  # fmt: skip
    frame = build_frame(entries)
    ctx = Context(frame=frame, palette=Palette(HOCKNEY), baseline=None)
    whole = point_to_point_section(ctx)
    parts = joined_sections(
        point_to_point_section(ctx, {"pingpong"}),
        point_to_point_section(ctx, {"pingping", "sendrecv", "exchange"}, tables=False),
    )
    assert [f.name for f in parts.figures] == [f.name for f in whole.figures] == [
        "p2p_pingpong", "p2p_pingping", "p2p_sendrecv"]
    assert [f.svg for f in parts.figures] == [f.svg for f in whole.figures]
    assert [(t.name, t.csv()) for t in parts.tables] == [(t.name, t.csv()) for t in whole.tables]
    assert [t.name for t in whole.tables] == ["hockney_fits", "point_to_point"]
    assert parts.notes == whole.notes and parts.empty == whole.empty == ""
