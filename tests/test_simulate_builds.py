"""hpceval.simulate's SMPI builds of NPB: sampling and folding chosen by class and scale,
refused where they do nothing; replays as repetitions; fast mpibench cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks import Program, get_benchmark
from hpceval.benchmarks.npb import SMPI_BUILD_OPTION
from hpceval.config import PlatformConfig
from hpceval.errors import UserError
from hpceval.model import Placement
from hpceval.simulate.plan import (
    MPIBENCH_SIM_CONFIG,
    Request,
    SmpiTools,
    check_request,
    choose_smpi_build,
    plan,
    simulated_platform,
)
from tests.test_simulate import spec

GB = 1_000_000_000


def npb_request(kernel: str, class_name: str, ranks: tuple[int, ...], **kw: object) -> Request:
    return Request(bench=f"npb.{kernel}", class_name=class_name, ranks=ranks, **kw)  # type: ignore[arg-type]


def test_auto_build_samples_and_folds_class_c_at_scale_only() -> None:
    for kernel in ("cg", "mg", "ft"):
        build = choose_smpi_build(npb_request(kernel, "C", (64, 128)), 24 * GB)
        assert (build.sampling, build.folding) == (True, True), kernel
        assert build.cflags == ["-O2", "-DHPCEVAL_SMPI_SAMPLE", "-DHPCEVAL_SMPI_FOLD"]
        assert build.option == {"sampling": True, "memory_folding": True, "iterations": None}
        assert build.describe() == (
            "computation sampling and memory folding (verification not checked)"
        )
    # Class C on few ranks: sampled (the plain run takes minutes), folded only if too big.
    assert choose_smpi_build(npb_request("cg", "C", (4,)), 24 * GB).option == {
        "sampling": True, "memory_folding": False, "iterations": None}  # fmt: skip
    plain = choose_smpi_build(npb_request("cg", "A", (1, 2, 4)), 24 * GB)
    assert (plain.sampling, plain.folding, plain.cflags) == (False, False, ["-O2"])
    assert plain.describe() == "plain SMPI build (verified)"
    # Memory: CG class B on 64 ranks needs ~0.5 GB in all: folded on a 1 GB machine.
    small = choose_smpi_build(npb_request("cg", "B", (64,)), 1 * GB)
    assert (small.sampling, small.folding) == (False, True)
    assert small.reason == "folding: 64 ranks need ~0.5 GB, this machine has 1.0 GB available"
    assert not choose_smpi_build(npb_request("cg", "B", (64,)), 4 * GB).folding
    # Kernels without sampled blocks / foldable arrays never get the option from auto.
    assert choose_smpi_build(npb_request("is", "C", (512,)), 1 * GB).option == {
        "sampling": False, "memory_folding": False, "iterations": None}  # fmt: skip
    assert choose_smpi_build(npb_request("ep", "C", (512,)), 1 * GB).option == {
        "sampling": True, "memory_folding": False, "iterations": None}  # fmt: skip
    # The user's choice wins.
    asked = choose_smpi_build(
        npb_request("cg", "C", (512,), sampling=False, folding=True), 24 * GB
    )
    assert asked.cflags == ["-O2", "-DHPCEVAL_SMPI_FOLD"]
    assert asked.reason == "sampling off (asked); folding on (asked)"


def test_auto_iteration_sampling_for_cg_from_256_sampled_ranks() -> None:
    build = choose_smpi_build(npb_request("cg", "C", (64, 512)), 24 * GB)
    assert (build.sampling, build.folding, build.iterations) == (True, True, 10)
    assert build.option == {"sampling": True, "memory_folding": True, "iterations": 10}
    assert build.reason.endswith("iteration sampling: 10 of 75 iterations at 512 ranks")
    assert build.describe() == (
        "computation sampling, memory folding and iteration sampling (10 timed "
        "iterations) (verification not checked)"
    )
    # Not below 256 ranks, not unsampled, not for kernels without it; the user's count wins.
    assert choose_smpi_build(npb_request("cg", "C", (128,)), 24 * GB).iterations is None
    unsampled = npb_request("cg", "C", (512,), sampling=False)
    assert choose_smpi_build(unsampled, 24 * GB).iterations is None
    assert choose_smpi_build(npb_request("mg", "C", (512,)), 24 * GB).iterations is None
    asked = choose_smpi_build(npb_request("cg", "A", (4,), iterations=3), 24 * GB)
    assert (asked.sampling, asked.iterations) == (False, 3)
    assert asked.reason == "3 of 15 iterations timed (asked)"
    # 0, or a count not below the class's, is every iteration: a full simulation.
    for every in (0, 15, 40):
        full = choose_smpi_build(npb_request("cg", "A", (512,), iterations=every), 24 * GB)
        assert full.iterations is None and full.option["iterations"] is None

@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (npb_request("is", "A", (4,), sampling=True), "npb.is has no sampled computation"),
        (npb_request("ep", "A", (4,), folding=True), "npb.ep has no foldable array"),
        (npb_request("mg", "A", (4,), iterations=3), "npb.mg has no iteration sampling"),
        (npb_request("cg", "A", (4,), iterations=-1), "-1 is not a count"),
        (Request(bench="mpibench", pattern="pingpong", ranks=(2,), iterations=2),
         "only NPB CG simulations sample iterations"),
        (Request(bench="mpibench", pattern="pingpong", ranks=(2,), folding=False),
         "only NPB builds sample or fold"),
    ],
)  # fmt: skip
def test_sampling_and_folding_refused_where_they_do_nothing(
    request_: Request, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        check_request(request_)


def sim_platform(tmp_path: Path) -> PlatformConfig:
    tools = SmpiTools("smpicc", "smpirun", "3.32")
    return simulated_platform(
        "sim", "test", spec(nodes=64, cores_per_node=8), memory_gb_per_node=None,
        platform_file=tmp_path / "p.xml", workdir=tmp_path, cfg={}, tools=tools,
        oversubscribe=False,
    )  # fmt: skip


def test_npb_cases_declare_their_smpi_build(tmp_path: Path) -> None:
    request = npb_request("cg", "C", (512,))
    build = choose_smpi_build(request, 24 * GB)
    (case,) = plan(request, sim_platform(tmp_path), [Placement(64, 8, 1, "core")], build)
    assert case.options[SMPI_BUILD_OPTION] == {
        "sampling": True, "memory_folding": True, "iterations": 10}  # fmt: skip
    assert case.parameters == {"kernel": "cg", "class": "C", "smpi_sampling": True,
                               "smpi_memory_folding": True,
                               "smpi_timed_iterations": 10}  # fmt: skip
    program = Program(Path("/bin/npb"), "smpicc", (), executables={"cg": Path("/bin/npb-cg")})
    assert get_benchmark("npb").command(case, program, case.points) == [
        "/bin/npb-cg", "--class", "C", "--iterations", "10"]  # fmt: skip
    # A full simulation has no such parameter (its points stay those of earlier runs).
    request = npb_request("cg", "C", (128,))
    (case,) = plan(request, sim_platform(tmp_path), [Placement(16, 8, 1, "core")],
                   choose_smpi_build(request, 24 * GB))  # fmt: skip
    assert "smpi_timed_iterations" not in case.parameters
    assert get_benchmark("npb").command(case, program, case.points)[-2:] == ["--class", "C"]


def test_npb_replays_are_repetitions_and_mpibench_refuses_them(tmp_path: Path) -> None:
    request = npb_request("mg", "A", (4,), repeat=3)
    (case,) = plan(request, sim_platform(tmp_path), [Placement(4, 1, 1, "core")])
    assert case.points == ("rep=1", "rep=2", "rep=3")
    with pytest.raises(UserError, match="--repeat: mpibench repeats its points as samples"):
        plan(Request(bench="mpibench", pattern="alltoall", ranks=(4,), sizes=[8], repeat=2),
             sim_platform(tmp_path), [Placement(4, 1, 1, "core")])  # fmt: skip
    for bad in (0, 101):
        with pytest.raises(UserError, match=f"--repeat: {bad} is not between 1 and 100"):
            plan(npb_request("mg", "A", (4,), repeat=bad), sim_platform(tmp_path),
                 [Placement(4, 1, 1, "core")])  # fmt: skip


def test_mpibench_cases_are_fast_in_simulation(tmp_path: Path) -> None:
    request = Request(bench="mpibench", pattern="alltoall", ranks=(16,), sizes=[0, 1024])
    (case,) = plan(request, sim_platform(tmp_path), [Placement(2, 8, 1, "core")])
    program = Program(Path("/bin/mpibench"), "smpicc", ())
    argv = get_benchmark("mpibench").command(case, program, case.points)
    assert argv[argv.index("--budget") :] == [
        "--budget", "0.05", "--min-samples", "3", "--max-samples", "10", "--warmup-s", "0.0",
        "--sample-s", "0.01", "--seed", str(case.options["seed"]),
    ]  # fmt: skip
    assert MPIBENCH_SIM_CONFIG == {"smpi/simulate-computation": "no"}
