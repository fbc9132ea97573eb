"""lqcd: the 4-D decomposition and the communication it implies, parsing a real captured
output, verification failures detected (a wrong solution, lost halo bytes, no convergence),
impossible decompositions refused with a one-line error, and real `hpceval run`s at 1, 2
and 4 ranks that verify and agree on the solution."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.lqcd.decomposition import (
    FLOPS_PER_EVEN_SITE,
    Decomposition,
    decompose,
    parse_lattice,
)
from hpceval.benchmarks.lqcd.output import parse_output
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.store import open_store

from .cli_helpers import invoke, one_line_error
from .conftest import DATA, entry_cases, requires_mpi, write
from .test_cli import hpceval
from .test_netns import requires_netns

CAPTURED = (DATA / "lqcd" / "lqcd-4x4x8x8-4ranks.txt").read_text()
PLATFORM = PlatformConfig(name="l", cores_per_node=4)


def captured_case():
    (case,) = entry_cases(get_benchmark("lqcd"), {"lattice": ["4x4x8x8"], "ranks": [4]}, PLATFORM)
    return case


def with_result(**changes: object) -> str:
    lines = []
    for line in CAPTURED.splitlines():
        record = json.loads(line)
        if record["record"] == "result":
            record.update(changes)
        lines.append(json.dumps(record))
    return "\n".join(lines)


def test_flop_count_is_milcs_606_per_site() -> None:
    # 2 dslash x (8 x 66 + 7 x 6) + 6 vector operations x 12, per even site.
    assert FLOPS_PER_EVEN_SITE == 1212 == 2 * 606


def test_decomposition_grids_and_halo_counts() -> None:
    lattice = parse_lattice("8")
    assert decompose(lattice, 1).grid == (1, 1, 1, 1)
    assert decompose(lattice, 1).halo_bytes_per_iteration() == 0
    two = decompose(lattice, 2)
    assert two.grid == (1, 1, 1, 2) and two.local == (8, 8, 8, 4)
    # one split direction: 2 dslash x 2 neighbours x (2048 / (2 x 4)) vectors x 48 bytes
    assert two.halo_bytes_per_rank() == 2 * 2 * 256 * 48
    four = decompose(lattice, 4)
    assert four.grid == (1, 1, 2, 2) and four.neighbours() == 4
    sixteen = decompose(lattice, 16)
    assert sixteen.grid == (2, 2, 2, 2) and sixteen.neighbours() == 8
    assert sixteen.halo_bytes_per_rank() == 4 * (2 * 2 * (256 // 8) * 48)
    assert Decomposition((8, 8, 8, 16), (1, 1, 1, 4)).local == (8, 8, 8, 4)


@pytest.mark.parametrize(
    ("lattice", "ranks", "cause"),
    [("8", 3, "cannot be split over 3 ranks"), ("4", 32, "cannot be split over 32"),
     ("6", 2, "cannot be split over 2")],
)  # fmt: skip
def test_impossible_decompositions_are_user_errors(lattice: str, ranks: int, cause: str) -> None:
    with pytest.raises(UserError, match=cause):
        entry_cases(get_benchmark("lqcd"), {"lattice": [lattice], "ranks": [ranks]}, PLATFORM)


def test_bad_lattice_options_are_refused() -> None:
    bench = get_benchmark("lqcd")
    for bad in ("7", "8x8x8", "8x8x8x9", "0", "a"):
        with pytest.raises(ValueError, match="lattice"):
            bench.parse_options({"lattice": [bad]})
    with pytest.raises(ValueError, match="threads_per_rank"):
        bench.parse_options({"threads_per_rank": [2]})


def test_parse_captured_output() -> None:
    case = captured_case()
    assert case.options["grid"] == [1, 1, 2, 2]
    point = parse_output(CAPTURED, case, "rep=1")
    by = {m.metric: m for m in point.measurements}
    iterations, seconds = 247, 7.122631170e-01
    assert by["cg_rate"].value == pytest.approx(iterations / seconds)
    assert by["gflops"].value == pytest.approx(1212 * 512 * iterations / seconds / 1e9)
    assert by["cg_time"].value == pytest.approx(seconds)
    # 4 ranks, 2 split directions: 2 dslash x 2 x (256 / 8) vectors x 48 bytes each
    assert by["halo_bytes"].value == 4 * 2 * (2 * 2 * 32 * 48)
    assert by["allreduces"].value == 2
    assert by["comm_share"].value == pytest.approx(0.994750)
    assert by["gflops"].details["gflops_per_cpu_s"] == pytest.approx(
        1212 * 512 * iterations / 1.027866210e-01 / 1e9
    )
    assert by["gflops"].details["solution_norm2"] == pytest.approx(20044.008389325754)
    assert "CG iterations/s (verified)" in get_benchmark("lqcd").headline(point.measurements)


@pytest.mark.parametrize(
    ("changes", "cause"),
    [({"true_residual": 3e-4}, "does not solve the system"),
     ({"converged": False}, "did not converge"),
     ({"recursive_residual": 2e-8}, "above tolerance"),
     ({"halo_bytes": 12140544 - 48}, "halo bytes"),
     ({"allreduces": 495}, "allreduces"),
     ({"solution_norm2": float("nan")}, "solution_norm2")],
)  # fmt: skip
def test_verification_failures_are_failures(changes: dict[str, object], cause: str) -> None:
    with pytest.raises(BenchmarkFailure, match=cause):
        parse_output(with_result(**changes), captured_case(), "rep=1")


def test_output_of_another_grid_or_an_error_is_refused() -> None:
    (other,) = entry_cases(get_benchmark("lqcd"), {"lattice": ["4x4x8x8"], "ranks": [2]},
                           PLATFORM)  # fmt: skip
    with pytest.raises(BenchmarkFailure, match="ran on 4 ranks, expected 2"):
        parse_output(CAPTURED, other, "rep=1")
    error = '{"record":"error","message":"out of memory"}'
    with pytest.raises(BenchmarkFailure, match="out of memory"):
        parse_output(error, captured_case(), "rep=1")
    truncated = "\n".join(CAPTURED.splitlines()[:1])
    with pytest.raises(BenchmarkFailure, match="one result record"):
        parse_output(truncated, captured_case(), "rep=1")


def test_impossible_decomposition_on_the_command_line(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.toml", 'name = "s"\ndescription = "d"\n'
                  '[[benchmark]]\nname = "lqcd"\nlattice = ["8"]\nranks = [3]\n')  # fmt: skip
    one_line_error(invoke("run", "--suite", str(suite), "--db", str(tmp_path / "r.db")),
                   "cannot be split over 3 ranks")  # fmt: skip


@requires_mpi
def test_real_runs_at_1_2_4_ranks_verify_and_agree(tmp_path: Path) -> None:
    # 4 ranks oversubscribe a 2-core machine (the local launcher then lets ranks yield).
    entry = '[[benchmark]]\nname = "lqcd"\nlattice = ["4x4x4x8"]\nranks = [1, 2, 4]\n'
    suite = write(tmp_path / "s.toml", f'name = "s"\ndescription = "d"\n{entry}')
    db = str(tmp_path / "r.db")
    result = invoke("run", "--suite", str(suite), "--db", db)
    assert result.exit_code == 0, result.output
    store = open_store(db)
    ms = [s.measurement for s in store.measurements(metric="cg_rate")]
    assert sorted(int(m.parameters["ranks"]) for m in ms) == [1, 2, 4]
    norms = [float(m.details["solution_norm2"]) for m in ms]
    checksums = [float(m.details["solution_checksum"]) for m in ms]
    for values in (norms, checksums):
        assert max(values) - min(values) <= 1e-9 * max(abs(v) for v in values), values
    iterations = {int(m.details["iterations"]) for m in ms}
    assert max(iterations) - min(iterations) <= 1, iterations
    by_ranks = {
        int(s.measurement.parameters["ranks"]): s.measurement.value
        for s in store.measurements(metric="halo_bytes")
    }
    # 4x4x4x8 over 2 ranks splits t (1 direction), over 4 ranks z and t: V/l_mu vectors x 96 B
    assert by_ranks == {1: 0, 2: 2 * 96 * 256 // 4, 4: 4 * 2 * 96 * 128 // 4}
    shown = invoke("show", "--db", db)
    assert shown.exit_code == 0 and "Lattice QCD" in shown.output
    # Cost per run: the CG time of each run, billed per started second, at 3.6 USD per
    # node-hour (0.001 USD per s).
    catalog = write(tmp_path / "prices.toml", 'format = 1\nname = "p"\nsource = "test"\n'
                    'date = "2024-01"\ncurrency = "USD"\nbilling = "per-second"\n'
                    '[[entry]]\nname = "n"\n'
                    "[entry.hourly]\non-demand = 3.6\n")  # fmt: skip
    out = tmp_path / "cost.json"
    cost = invoke("cost", "--benchmark", "lqcd", "--db", db, "--catalog", str(catalog),
                  "--instance", "local=n", "--json", str(out))  # fmt: skip
    assert cost.exit_code == 0 and "cost of the lqcd runs (USD;" in cost.output, cost.output
    times = {int(m.parameters["ranks"]): m.value for m in (
        s.measurement for s in store.measurements(metric="cg_time"))}  # fmt: skip
    rows = json.loads(out.read_text())
    assert {int(r["ranks"]): r["run_cost"] for r in rows} == pytest.approx(
        {r: 0.001 * math.ceil(t) for r, t in times.items()}, rel=1e-4
    )  # the JSON export keeps 6 significant digits


@requires_mpi
@requires_netns
def test_on_the_emulated_cluster_one_rank_per_node(tmp_path: Path) -> None:
    """The netns launcher: 2 ranks on 2 emulated nodes (the halo over TCP through veths),
    and 4 ranks as 2 per node; both verify and their solutions agree."""
    entry = ('[[benchmark]]\nname = "lqcd"\nlattice = ["4x4x4x8"]\nranks = [2]\n'
             "ranks_per_node = [1]\n"
             '[[benchmark]]\nname = "lqcd"\nlattice = ["4x4x4x8"]\nranks = [4]\n'
             "ranks_per_node = [2]\n")  # fmt: skip
    suite = write(tmp_path / "s.toml", f'name = "s"\ndescription = "d"\n{entry}')
    proc = hpceval("run", "--platform", "netns-2x2", "--suite", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = open_store(str(tmp_path / "hpceval.db"))
    (run,) = store.runs()
    assert run.launcher == "netns"
    ms = [s.measurement for s in store.measurements(run.id, metric="cg_rate")]
    assert sorted((int(m.parameters["nodes"]), int(m.parameters["ranks"])) for m in ms) == [
        (2, 2), (2, 4),
    ]  # fmt: skip
    for e in store.executions(run.id):
        hosts = json.loads(e.stdout_tail.splitlines()[0])["hosts"]
        assert len(set(hosts)) == 2, hosts
    norms = [float(m.details["solution_norm2"]) for m in ms]
    assert max(norms) - min(norms) <= 1e-9 * max(norms)
