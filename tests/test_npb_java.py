"""npb-java: the NPB kernels EP, IS, CG, MG and FT in Java on MPJ Express.

Parser tests read real outputs captured on this machine (tests/data/npb_java); real runs go
through `hpceval run` on platform local-mpj: every class-S kernel verifies at 1 and 2 ranks,
and a run whose verification fails (references scaled by the program's test variable) is a
failed case with nothing stored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case, Program
from hpceval.benchmarks.npb_java import JAVA_KERNELS, java_rank_rule_error
from hpceval.campaign import load_platform, load_suite
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Placement
from hpceval.store import open_store

from .conftest import write
from .test_cli import hpceval
from .test_mpibench_java import requires_mpj

DATA = Path(__file__).parent / "data" / "npb_java"

def case_for(kernel: str, ranks: int, class_name: str = "S") -> Case:
    return Case(
        key=f"npb-java:{kernel}:{class_name}",
        benchmark="npb-java",
        placement=Placement(1, ranks, 1, "none"),
        parameters={"kernel": kernel, "class": class_name},
        points=("rep=1",),
        time_limit_s=60,
    )


# ------------------------------------------------------------------ parsing --


@pytest.mark.parametrize(
    ("capture", "kernel", "ranks"),
    [("cg-S-np2.out", "cg", 2), ("ft-S-np1.out", "ft", 1), ("is-S-np2.out", "is", 2)],
)
def test_capture_parses_into_verified_npb_measurements(
    capture: str, kernel: str, ranks: int
) -> None:
    bench = get_benchmark("npb-java")
    case = case_for(kernel, ranks)
    stdout = (DATA / capture).read_text()
    bench.verify(stdout, case, case.points)
    (point,) = bench.parse(stdout, case)
    by_metric = {m.metric: m for m in point.measurements}
    assert set(by_metric) == {"time", "mops_total", "mops_per_process"}
    for m in point.measurements:
        # Stored as npb's (compare pairs them with the C kernels'), Java recorded.
        assert m.benchmark == "npb"
        assert m.implementation == "java/mpj-express 0.44"
        assert m.details["mpj_device"] == "smpdev"
        assert str(m.details["jvm"]).startswith("OpenJDK")
        assert m.parameters["kernel"] == kernel and m.parameters["ranks"] == ranks
    assert by_metric["mops_per_process"].value == pytest.approx(
        by_metric["mops_total"].value / ranks
    )


def test_failed_verification_capture_is_a_failure() -> None:
    bench = get_benchmark("npb-java")
    case = case_for("mg", 1)
    stdout = (DATA / "mg-S-np1-reference-scaled.out").read_text()
    with pytest.raises(BenchmarkFailure, match="failed verification: rnm2"):
        bench.parse(stdout, case)
    with pytest.raises(BenchmarkFailure, match="failed verification"):
        bench.verify(stdout, case, case.points)


def test_tampered_result_is_refused() -> None:
    bench = get_benchmark("npb-java")
    case = case_for("cg", 2)
    lines = (DATA / "cg-S-np2.out").read_text().splitlines()
    result = next(ln for ln in lines if '"record":"result"' in ln)
    # A reference that is not the official one, and a Mop/s off the official count.
    with pytest.raises(BenchmarkFailure, match="not the official"):
        bench.parse_line(result.replace('"reference":8.5971775078648', '"reference":8.5'), case)
    with pytest.raises(BenchmarkFailure, match="official operation count"):
        bench.parse_line(result.replace('"mops_total":', '"mops_total":1'), case)


def test_header_checks_program_ranks_and_kernel() -> None:
    bench = get_benchmark("npb-java")
    header = next(
        ln for ln in (DATA / "cg-S-np2.out").read_text().splitlines() if '"header"' in ln
    )
    assert bench.parse_line(header, case_for("cg", 2)) is None
    with pytest.raises(BenchmarkFailure, match="unexpected program"):
        bench.parse_line(header.replace('"npb-java"', '"npb"'), case_for("cg", 2))
    with pytest.raises(BenchmarkFailure, match="ran on 2 ranks, expected 4"):
        bench.parse_line(header, case_for("cg", 4))
    with pytest.raises(BenchmarkFailure, match="header says kernel 'cg'"):
        bench.parse_line(header, case_for("mg", 2))


def test_error_record_fails_with_its_cause() -> None:
    bench = get_benchmark("npb-java")
    stdout = (DATA / "bad-kernel-np2.out").read_text()
    with pytest.raises(BenchmarkFailure, match="invalid kernel 'bogus'"):
        bench.verify(stdout, case_for("cg", 2), ("rep=1",))


def test_out_of_heap_is_a_failure_naming_it() -> None:
    # FT class C does not fit the default heap (perf/results/java-npb-class-c-*.txt); MPJRun
    # still exits 0: the error record makes the case fail, never a number.
    bench = get_benchmark("npb-java")
    stdout = (DATA / "ft-C-np1-out-of-heap.out").read_text()
    case = case_for("ft", 1, "C")
    with pytest.raises(BenchmarkFailure, match="npb-ft: OutOfMemoryError: Java heap space"):
        bench.verify(stdout, case, case.points)
    with pytest.raises(BenchmarkFailure, match="OutOfMemoryError"):
        bench.parse(stdout, case)


def test_output_without_end_record_fails_verification() -> None:
    # MPJRun exits 0 even when the ranks threw: only the end record proves the run whole.
    bench = get_benchmark("npb-java")
    lines = (DATA / "cg-S-np2.out").read_text().splitlines()
    cut = "\n".join(ln for ln in lines if '"record":"end"' not in ln)
    with pytest.raises(BenchmarkFailure, match="no successful end record"):
        bench.verify(cut, case_for("cg", 2), ("rep=1",))


# ------------------------------------------------------------ options, cases --


def test_rank_rules_of_the_java_kernels() -> None:
    assert java_rank_rule_error("mg", "S", 8) is None
    assert java_rank_rule_error("mg", "S", 64) is None  # coarse levels gathered, as mg.c
    assert "at most 4096 ranks" in str(java_rank_rule_error("mg", "S", 8192))  # NPB's rule
    assert "at most 32 ranks" in str(java_rank_rule_error("ft", "W", 64))
    assert "power-of-two" in str(java_rank_rule_error("cg", "S", 3))
    bench = get_benchmark("npb-java")
    with pytest.raises(ValueError, match="one thread per rank"):
        bench.parse_options({"kernels": ["cg"], "threads_per_rank": [2]})
    with pytest.raises(ValueError, match="kernels"):
        bench.parse_options({"kernels": ["bt"]})


def test_cases_need_a_platform_that_runs_java() -> None:
    bench = get_benchmark("npb-java")
    options = bench.parse_options({"kernels": list(JAVA_KERNELS), "ranks": [1, 2]})
    cases = bench.cases(options, load_platform("local-mpj").config, 0)
    assert len(cases) == 10
    assert all(c.placement.binding == "none" and c.key.startswith("npb-java:") for c in cases)
    argv = bench.command(cases[0], bench_program(), cases[0].points)
    assert argv[1:] == ["--kernel=ep", "--class=S"]
    # On `local` they run beside the C programs on MPJ's multicore device (mpj.java_platform);
    # a cluster without MPJ daemons runs no Java: one line naming the platform.
    assert len(bench.cases(options, load_platform("local").config, 0)) == 10
    with pytest.raises(UserError, match=r"launcher is mpj .* platform 'netns-2x2' uses netns"):
        bench.cases(options, load_platform("netns-2x2").config, 0)


def bench_program() -> Program:
    return Program(Path("/cache/npb-java.jar"), "javac", ())


def test_java_quick_suite_plans_npb_s_on_local_mpj() -> None:
    suite = load_suite("java-quick").config
    bench = get_benchmark("npb-java")
    target = load_platform("local-mpj").config
    cases = [
        c
        for i, entry in enumerate(suite.benchmark)
        if entry.name == "npb-java"
        for c in bench.cases(bench.parse_options(entry.options()), target, i)
    ]
    assert {(c.parameters["kernel"], c.parameters["class"], c.placement.ranks) for c in cases} == {
        (k, "S", r) for k in JAVA_KERNELS for r in (1, 2)
    }


# ---------------------------------------------------------------- real runs --

SUITE = (
    'name = "npb-java-test"\n[[benchmark]]\nname = "npb-java"\n'
    f"kernels = {list(JAVA_KERNELS)}\nclasses = [\"S\"]\nranks = [1, 2]\n"
)


@requires_mpj
def test_class_s_verifies_at_1_and_2_ranks(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.toml", SUITE)
    db = tmp_path / "r.db"
    hpceval("run", "-p", "local-mpj", "-s", str(suite), "--db", str(db), cwd=tmp_path, check=True)
    rows = open_store(str(db)).measurements()
    got = {
        (str(r.measurement.parameters["kernel"]), int(r.measurement.parameters["ranks"]))
        for r in rows
        if r.measurement.metric == "mops_total"
    }
    assert got == {(k, r) for k in JAVA_KERNELS for r in (1, 2)}
    for r in rows:
        m = r.measurement
        assert m.benchmark == "npb" and m.value > 0
        assert m.implementation == "java/mpj-express 0.44"
        assert m.details["mpj_device"] == "smpdev"
        # Every stored result passed the official verification.
        assert all(q["passed"] for q in m.details["verification"])


@requires_mpj
def test_mg_beyond_8_ranks_gathers_the_coarse_levels_and_verifies(tmp_path: Path) -> None:
    """16 ranks (a 2 x 2 x 4 grid): the levels below l0 = 2 run on the whole grid on every
    rank, as mg.c; 64 ranks (1 point per rank on level l0) verified by hand too."""
    suite = write(
        tmp_path / "suite.toml",
        'name = "mg16"\n[[benchmark]]\nname = "npb-java"\nkernels = ["mg"]\nclasses = ["S"]\n'
        "ranks = [16]\n",
    )
    db = tmp_path / "r.db"
    hpceval("run", "-p", "local-mpj", "-s", str(suite), "--db", str(db), cwd=tmp_path, check=True)
    (mops,) = [r.measurement for r in open_store(str(db)).measurements()
               if r.measurement.metric == "mops_total"]  # fmt: skip
    assert mops.parameters["ranks"] == 16 and mops.value > 0
    assert all(q["passed"] for q in mops.details["verification"])


@requires_mpj
def test_failing_verification_is_a_failed_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write(
        tmp_path / "suite.toml",
        SUITE.replace(f"kernels = {list(JAVA_KERNELS)}", 'kernels = ["cg"]').replace(
            "ranks = [1, 2]", "ranks = [2]"
        ),
    )
    db = tmp_path / "r.db"
    monkeypatch.setenv("HPCEVAL_NPB_JAVA_REFERENCE_SCALE", "1.000001")
    proc = hpceval("run", "-p", "local-mpj", "-s", str(suite), "--db", str(db), cwd=tmp_path)
    assert proc.returncode != 0
    assert "verification" in proc.stdout + proc.stderr
    assert [r for r in open_store(str(db)).measurements()] == []
