"""Parsing real captured outputs of hpceval's NPB kernels (tests/data/npb, see the READMEs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpceval.benchmarks.base import Case
from hpceval.benchmarks.npb import Npb
from hpceval.errors import BenchmarkFailure
from hpceval.model import Measurement, Placement

from .conftest import DATA

BENCH = Npb()
CAPTURES = sorted((DATA / "npb").glob("*.jsonl"))


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.startswith("{")]


def case_for(header: dict[str, object]) -> Case:
    nranks, threads = header["nranks"], header["threads"]
    assert isinstance(nranks, int) and isinstance(threads, int)
    return Case(
        "k", "npb", Placement(1, nranks, threads, "none"),
        {"kernel": str(header["kernel"]), "class": str(header["class"])}, ("rep=1",), 60,
    )  # fmt: skip


def test_every_kernel_is_captured() -> None:
    assert {records(p)[0]["kernel"] for p in CAPTURES} == {"ep", "is", "cg", "mg", "ft"}


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_parse_capture(path: Path) -> None:
    text = path.read_text()
    header = records(path)[0]
    case = case_for(header)
    BENCH.verify(text, case, case.points)
    (point,) = BENCH.parse(text, case)
    result = next(r for r in records(path) if r["record"] == "result")
    by_metric = {m.metric: m for m in point.measurements}
    assert by_metric["time"].value == result["time_s"]
    assert by_metric["mops_total"].value == result["mops_total"]
    assert by_metric["time"].unit == "s" and by_metric["mops_total"].unit == "Mop/s"
    assert by_metric["mops_total"].parameters["ranks"] == header["nranks"]


@pytest.mark.parametrize(
    "path", sorted((DATA / "npb").glob("*_error_ranks.out")), ids=lambda p: p.stem
)
def test_error_capture_fails_with_its_message(path: Path) -> None:
    kernel = path.name.split("_")[0]
    case = Case("k", "npb", Placement(1, 3), {"kernel": kernel, "class": "S"}, ("rep=1",), 60)
    with pytest.raises(BenchmarkFailure, match="ranks"):
        BENCH.verify(path.read_text(), case, case.points)


def test_tampered_result_is_refused() -> None:
    path = DATA / "npb" / "cg_S_np1.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    tampered = []
    for line in lines:
        r = json.loads(line)
        if r["record"] == "result":
            r["verification"][0]["computed"] *= 1.001
        tampered.append(json.dumps(r))
    with pytest.raises(BenchmarkFailure, match="failed verification"):
        BENCH.verify("\n".join(tampered), case_for(header), ("rep=1",))


def test_the_headline_of_repetitions_gives_their_median_and_range() -> None:
    # A case run (or replayed under SMPI) 3 times: the display statistic, and the lowest and
    # highest time beside it, so that a spread of the repetitions shows where it is read.
    params = {"kernel": "cg", "class": "S", "ranks": 4}
    ms = [m for seconds, mops in ((0.0121, 5500.0), (0.0112, 5940.0), (0.0117, 5715.0))
          for m in (Measurement("npb", "time", seconds, "s", params, (seconds,)),
                    Measurement("npb", "mops_total", mops, "Mop/s", params, (mops,)))]  # fmt: skip
    assert Npb().headline(ms) == "5,715 Mop/s, 0.0117 s (median of 3, 0.0112-0.0121 s, verified)"
    assert Npb().headline(ms[:2]) == "5,500 Mop/s, 0.0121 s (median of 1, verified)"
    assert Npb().headline([]) == ""
