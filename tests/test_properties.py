"""Property-based tests of every parser and importer (issue 22): arbitrary text and mutated
real outputs (tests/data) either raise the project's clear error type or give finite,
physically plausible figures. Never another exception, never inf, nan or a negative time.

The example counts are bounded so that the whole module runs in the regular suite in well
under a minute; HPCEVAL_HYPOTHESIS_EXAMPLES=N runs N examples per property instead.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case
from hpceval.benchmarks.fio import WORKLOADS
from hpceval.benchmarks.fio import measurements as fio_measurements
from hpceval.benchmarks.fio.parse import parse_fio_json
from hpceval.benchmarks.gromacs import check_log
from hpceval.benchmarks.gromacs.log import parse_md_log
from hpceval.benchmarks.hpcc import measurements as hpcc_measurements
from hpceval.benchmarks.lammps import check_output
from hpceval.benchmarks.lammps.log import parse_output
from hpceval.benchmarks.npb.official_output import NpbOutputError, parse_npb_output
from hpceval.campaign.configs import load_platform, load_suite
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.importers.npb import _measurements
from hpceval.model import Measurement, Placement
from hpceval.provenance import (
    parse_cgroup_hints,
    parse_cpuinfo,
    parse_default_route,
    parse_lstopo_xml,
    parse_meminfo,
    parse_os_release,
    parse_size,
)
from hpceval.units import COUNT, RATIO

from .conftest import DATA
from .test_gromacs import case_for as gromacs_case
from .test_lammps import case_for as lammps_case
from .test_mpibench_parse import case_for as mpibench_case
from .test_npb_parse import case_for as npb_case
from .test_npb_parse import records as npb_records

EXAMPLES = int(os.environ.get("HPCEVAL_HYPOTHESIS_EXAMPLES", "60"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # nothing written into the work tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
REPO = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- strategies

FIELD = re.compile(r"^[^\S\n]*[A-Za-z][\w /.()-]*?[^\S\n]*[=:][^\S\n]*(\S+)[^\S\n]*$", re.M)
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eEdD][-+]?\d+)?")
HOSTILE_NUMBERS = st.one_of(
    st.sampled_from(
        [
            "-1",
            "0",
            "0.0",
            "-0.0",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "Infinity",
            "1e999",
            "-1e999",
            "9.9e307",
            "1e-320",
            "99999999999999999999999",
            "1e400000000",
            "***",
            "garbage",
            "",
            "0x10",
            "1_000",
            "١٢",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers().map(str),
)


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """`text` with one to three hostile edits: a number replaced, lines cut or shuffled in,
    arbitrary text inserted, the end cut off."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["number", "number", "field", "cut", "drop", "insert"]))
        if kind == "field" and (fields := list(FIELD.finditer(text))):
            # The value of a `key = value` / `key: value` line: the figures parsers read.
            m = fields[draw(st.integers(0, len(fields) - 1))]
            text = text[: m.start(1)] + draw(HOSTILE_NUMBERS) + text[m.end(1) :]
        elif kind == "number" and (found := list(NUMBER.finditer(text))):
            m = found[draw(st.integers(0, len(found) - 1))]
            text = text[: m.start()] + draw(HOSTILE_NUMBERS) + text[m.end() :]
        elif kind == "cut" and text:
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "drop":
            lines = text.splitlines(keepends=True)
            if lines:
                del lines[draw(st.integers(0, len(lines) - 1))]
            text = "".join(lines)
        else:
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.text(max_size=40)) + text[at:]
    return text


def outputs(paths: Iterable[Path]) -> st.SearchStrategy[str]:
    """Arbitrary text, or one of the real outputs mutated."""
    texts = [p.read_text(errors="replace") for p in paths]
    assert texts
    return st.one_of(st.text(max_size=300), st.sampled_from(texts).flatmap(mutated))


def plausible(measurements: Iterable[Measurement]) -> None:
    """Finite values and samples; times, rates and sizes positive (counts and ratios >= 0)."""
    for m in measurements:
        assert math.isfinite(m.value), m
        assert all(math.isfinite(s) for s in m.samples), m
        if m.statistics is not None:
            st_ = m.statistics
            assert all(math.isfinite(v) for v in (st_.mean, st_.stdev, st_.minimum, st_.maximum))
        if m.unit in (COUNT, RATIO):
            assert m.value >= 0, m
        else:
            assert m.value > 0, m


def either_clear_error_or(
    parse: Callable[[str], Iterable[Measurement]], text: str, errors: tuple[type, ...]
) -> None:
    try:
        measurements = list(parse(text))
    except errors:
        return
    plausible(measurements)


# --------------------------------------------------------------------------- benchmarks

MPIBENCH_CAPTURES = sorted((DATA / "mpibench").glob("*.jsonl"))
NPB_CAPTURES = sorted((DATA / "npb").glob("*.jsonl"))


def run_parser(bench_name: str, case: Case) -> Callable[[str], list[Measurement]]:
    """The campaign's path for streamed output: every line parsed, then the whole checked."""
    bench = get_benchmark(bench_name)

    def parse(text: str) -> list[Measurement]:
        points = bench.parse(text, case)
        bench.verify(text, case, case.points)
        return [m for p in points for m in p.measurements]

    return parse


@PROPERTY
@given(data=st.data())
def test_mpibench_output(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(MPIBENCH_CAPTURES))
    text = data.draw(st.one_of(st.text(max_size=300), mutated(path.read_text())))
    either_clear_error_or(run_parser("mpibench", mpibench_case(path)), text, (BenchmarkFailure,))


@PROPERTY
@given(data=st.data())
def test_npb_kernel_output(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(NPB_CAPTURES))
    case = npb_case(npb_records(path)[0])
    text = data.draw(st.one_of(st.text(max_size=300), mutated(path.read_text())))
    either_clear_error_or(run_parser("npb", case), text, (BenchmarkFailure,))


HPCC_CAPTURES = sorted((DATA / "hpcc").glob("hpccoutf-*.txt"))


def hpcc_case(text: str) -> Case:
    ranks = int(m.group(1)) if (m := re.search(r"^CommWorldProcs=(\d+)$", text, re.M)) else 1
    n = int(m.group(1)) if (m := re.search(r"^HPL_N=(\d+)$", text, re.M)) else 1000
    return Case("hpcc", "hpcc", Placement(1, ranks), {"n": n, "nb": 80}, ("rep=1",), 60)


@PROPERTY
@given(data=st.data())
def test_hpcc_report(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(HPCC_CAPTURES))
    original = path.read_text()
    text = data.draw(st.one_of(st.text(max_size=300), mutated(original)))
    case = hpcc_case(original)
    either_clear_error_or(lambda t: hpcc_measurements(t, case), text, (BenchmarkFailure,))


FIO_CAPTURES = sorted((DATA / "fio").glob("*.json"))
FIO_CASE = Case("fio", "fio", Placement(1, 1), {"size": 4 << 20}, ("seqread:rep=1",), 60)


@PROPERTY
@given(data=st.data())
def test_fio_json(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(FIO_CAPTURES))
    workload = path.name.split("-")[0]
    text = data.draw(st.one_of(st.text(max_size=300), mutated(path.read_text())))

    def parse(t: str) -> Iterable[Measurement]:
        figures = parse_fio_json(t, WORKLOADS[workload][2])
        return fio_measurements(figures, FIO_CASE, workload)

    either_clear_error_or(parse, text, (BenchmarkFailure,))


# Application logs: (benchmark, capture -> the case it was captured for, whole-log check).
APPLICATION_CAPTURES: dict[str, tuple[Callable[[], Case], Callable[[str, Case], None]]] = {
    "gromacs/md-1rank": (lambda: gromacs_case(ranks=1), lambda t, c: check_log(parse_md_log(t), c)),
    "gromacs/md-2ranks": (
        lambda: gromacs_case(ranks=2),
        lambda t, c: check_log(parse_md_log(t), c),
    ),
    "gromacs/md-1rank-2threads": (
        lambda: gromacs_case(ranks=1, threads=2),
        lambda t, c: check_log(parse_md_log(t), c),
    ),
    "gromacs/md-tmpi-2ranks": (
        lambda: gromacs_case(ranks=2, mpi="thread"),
        lambda t, c: check_log(parse_md_log(t), c),
    ),
    "lammps/lj-1rank": (
        lambda: lammps_case(ranks=1),
        lambda t, c: check_output(parse_output(t), c),
    ),
    "lammps/lj-2ranks": (
        lambda: lammps_case(ranks=2),
        lambda t, c: check_output(parse_output(t), c),
    ),
}


@pytest.mark.parametrize("application", ["gromacs", "lammps"])
@PROPERTY
@given(data=st.data())
def test_application_log(application: str, data: st.DataObject) -> None:
    names = sorted(n for n in APPLICATION_CAPTURES if n.startswith(application + "/"))
    name = data.draw(st.sampled_from(names))
    make_case, check = APPLICATION_CAPTURES[name]
    case = make_case()
    text = data.draw(st.one_of(st.text(max_size=300), mutated((DATA / f"{name}.log").read_text())))
    bench = get_benchmark(application)

    def parse(t: str) -> list[Measurement]:
        check(t, case)
        return [m for p in bench.parse(t, case) for m in p.measurements]

    either_clear_error_or(parse, text, (BenchmarkFailure,))


# --------------------------------------------------------------------------- NPB import

NPB_OFFICIAL = sorted((DATA / "npb-official").glob("*.txt"))


@PROPERTY
@given(text=outputs(NPB_OFFICIAL))
def test_npb_import(text: str) -> None:
    try:
        report = parse_npb_output(text, "out.txt")
    except NpbOutputError as e:
        assert str(e).startswith("out.txt: ") and "\n" not in str(e)
        return
    assert report.time_s > 0 and report.mops_total > 0
    assert report.iterations >= 0
    plausible(_measurements(Path("out.txt"), report))


# --------------------------------------------------------------------------- provenance

PROVENANCE_FILES = sorted(p for p in (DATA / "provenance").rglob("*") if p.is_file())


def provenance_sources(pattern: str) -> list[Path]:
    return [p for p in PROVENANCE_FILES if re.search(pattern, str(p))] or PROVENANCE_FILES[:1]


def non_negative_numbers(value: Any) -> None:
    """Every number in a parsed provenance value is finite and not negative."""
    if isinstance(value, dict):
        for v in value.values():
            non_negative_numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            non_negative_numbers(v)
    elif isinstance(value, float | int) and not isinstance(value, bool):
        assert math.isfinite(value) and value >= 0, value


# (parser, files it reads, the errors its caller turns into a note). Provenance is best
# effort: a source it cannot read is a gap or a note, never a crash of the run.
PROVENANCE_PARSERS: list[tuple[Callable[[str], Any], str, tuple[type[Exception], ...]]] = [
    (parse_cpuinfo, r"cpuinfo", ()),
    (parse_meminfo, r"meminfo", ()),
    (parse_os_release, r"os-release", ()),
    (parse_lstopo_xml, r"lstopo|\.xml", (ValueError,)),
    (parse_size, r"cache", ()),
    (parse_default_route, r"route", ()),
    (parse_cgroup_hints, r"cgroup", ()),
]


@pytest.mark.parametrize(
    ("parse", "source", "errors"),
    PROVENANCE_PARSERS,
    ids=[p.__name__ for p, _, _ in PROVENANCE_PARSERS],
)
@PROPERTY
@given(data=st.data())
def test_provenance_sources(
    parse: Callable[[str], Any],
    source: str,
    errors: tuple[type[Exception], ...],
    data: st.DataObject,
) -> None:
    text = data.draw(outputs(provenance_sources(source)))
    try:
        parsed = parse(text)
    except errors:
        return
    non_negative_numbers(parsed)


# --------------------------------------------------------------------------- TOML configs

SHIPPED = sorted((REPO / "src" / "hpceval" / "data").glob("*/*.toml"))


@PROPERTY
@given(data=st.data())
def test_suite_and_platform_files(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    kind = data.draw(st.sampled_from(["suites", "platforms"]))
    originals = [p for p in SHIPPED if p.parent.name == kind]
    text = data.draw(st.one_of(st.text(max_size=200), st.sampled_from(originals).map(
        lambda p: p.read_text()).flatmap(mutated)))  # fmt: skip
    path = tmp_path_factory.mktemp("toml") / "config.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    load = load_suite if kind == "suites" else load_platform
    try:
        load(str(path))
    except UserError as e:
        assert "\n" not in str(e).strip(), str(e)
