"""hpceval's NPB kernels really built and run: official verification at every class/rank tested.

Classes S and W at 1, 2 and 4 ranks (4 oversubscribe a 2-core machine) and with 2 threads
per rank; class A at 2 ranks. A run that does not verify fails the campaign's check, so
every measurement here is a verified one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hpceval.benchmarks.npb import KERNELS
from hpceval.store import Store, open_store

from .conftest import requires_mpi, run_suite

pytestmark = [requires_mpi, pytest.mark.mpi]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(str(tmp_path / "npb.db"))
    yield s
    s.close()


def suite(classes: list[str], ranks: list[int], threads: list[int]) -> str:
    return (
        'name = "npb-test"\n[[benchmark]]\nname = "npb"\n'
        f"kernels = {list(KERNELS)}\nclasses = {classes}\nranks = {ranks}\n"
        f"threads_per_rank = {threads}\n"
    )


def verified_points(ms: list, metric: str = "mops_total") -> set[tuple[str, str, int, int]]:
    return {
        (
            str(m.parameters["kernel"]),
            str(m.parameters["class"]),
            int(m.parameters["ranks"]),
            int(m.parameters["threads_per_rank"]),
        )
        for m in ms
        if m.metric == metric
    }


@pytest.mark.parametrize("class_name", ["S", "W"])
def test_small_classes_verify_at_1_2_4_ranks(tmp_path: Path, store: Store, class_name: str) -> None:
    _, ms = run_suite(tmp_path, store, suite([class_name], [1, 2, 4], [1]))
    assert verified_points(ms) == {(k, class_name, r, 1) for k in KERNELS for r in (1, 2, 4)}
    assert all(m.value > 0 for m in ms)
    # Mop/s per process is the total over the ranks.
    by_key = {
        (str(m.parameters["kernel"]), int(m.parameters["ranks"]), m.metric): m.value for m in ms
    }
    for k in KERNELS:
        assert by_key[(k, 4, "mops_per_process")] == pytest.approx(by_key[(k, 4, "mops_total")] / 4)


@pytest.mark.parametrize("class_name", ["S", "W"])
def test_hybrid_two_threads_per_rank_verifies(
    tmp_path: Path, store: Store, class_name: str
) -> None:
    _, ms = run_suite(tmp_path, store, suite([class_name], [2], [2]))
    assert verified_points(ms) == {(k, class_name, 2, 2) for k in KERNELS}


def test_class_a_verifies_at_2_ranks(tmp_path: Path, store: Store) -> None:
    _, ms = run_suite(tmp_path, store, suite(["A"], [2], [1]))
    assert verified_points(ms) == {(k, "A", 2, 1) for k in KERNELS}
    times = {str(m.parameters["kernel"]): m.value for m in ms if m.metric == "time"}
    assert all(0 < t < 300 for t in times.values())


def test_invalid_rank_count_is_refused_by_the_program(tmp_path: Path, store: Store) -> None:
    # The planner refuses it first; the program's own check is the second line of defence.
    import subprocess

    from hpceval.benchmarks import get_benchmark
    from hpceval.toolchain import detect_mpi

    toolchain = detect_mpi()
    program = get_benchmark("npb").build(
        compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=[]
    )
    proc = subprocess.run(
        [
            toolchain.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3",
            str(program.executables["cg"]), "--class", "S",
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "power-of-two" in proc.stdout + proc.stderr


def test_native_programs_refuse_iteration_sampling() -> None:
    # Timing fewer iterations and extrapolating is for simulations only (SMPI builds).
    import subprocess

    from hpceval.benchmarks import get_benchmark
    from hpceval.toolchain import detect_mpi

    toolchain = detect_mpi()
    program = get_benchmark("npb").build(
        compiler=toolchain.mpicc, compiler_identity=toolchain.identity(), cflags=[]
    )
    proc = subprocess.run(
        [
            toolchain.mpirun, "--allow-run-as-root", "-np", "1",
            str(program.executables["cg"]), "--class", "S", "--iterations", "3",
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "only SMPI builds (simulations) may time fewer iterations" in proc.stdout + proc.stderr
