"""How mpibench suite entries expand into cases on single- and multi-node platforms."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Program
from hpceval.campaign import case_description, case_from_description, load_suite, plan_cases
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError, UserError

from .conftest import entry_cases, write

BENCH = get_benchmark("mpibench")


def platform(nodes: int = 1, cores: int = 2) -> PlatformConfig:
    return PlatformConfig.model_validate({"name": "t", "nodes": nodes, "cores_per_node": cores})


def test_default_sizes_and_reduction_sizes() -> None:
    cases = entry_cases(BENCH, {"patterns": ["pingpong", "allreduce", "barrier"]}, platform())
    by_pattern = {c.parameters["pattern"]: c for c in cases}
    assert by_pattern["pingpong"].points[:3] == ("size=0", "size=1", "size=2")
    assert len(by_pattern["pingpong"].points) == 24
    # MPI_FLOAT reductions skip 1- and 2-byte messages, as IMB does.
    assert by_pattern["allreduce"].points[:3] == ("size=0", "size=4", "size=8")
    assert by_pattern["barrier"].points == ("size=0",)


def test_single_node_pair_is_intra_node() -> None:
    (case,) = entry_cases(BENCH, {"patterns": ["pingpong"], "ranks": [2]}, platform())
    assert case.parameters["pair"] == "intra-node"
    assert case.options["pair"] == [0, 1]
    assert (case.placement.nodes, case.placement.ranks_per_node) == (1, 2)
    assert case.key == "mpibench:pingpong:np=2:1x2x1:pair=intra-node:bind=core"


def test_multi_node_pairs_measure_shared_memory_and_network() -> None:
    cases = entry_cases(BENCH, {"patterns": ["pingpong"], "ranks": [2]}, platform(nodes=2))
    labels = {(c.parameters["pair"], c.placement.nodes, c.placement.ranks_per_node) for c in cases}
    assert labels == {("intra-node", 1, 2), ("inter-node", 2, 1)}
    inter = next(c for c in cases if c.parameters["pair"] == "inter-node")
    assert inter.options["pair"] == [0, 1]


def test_larger_pair_runs_label_both_pairs() -> None:
    cases = entry_cases(
        BENCH,
        {"patterns": ["pingping"], "ranks": [8], "ranks_per_node": [4]},
        platform(nodes=2, cores=4),
    )
    assert {c.parameters["pair"]: c.options["pair"] for c in cases} == {
        "intra-node": [0, 1],
        "inter-node": [0, 4],
    }


def test_concurrent_pairs_span_two_nodes() -> None:
    """multi_pingpong on a cluster: ranks/2 pairs, each from node A to node B."""
    cases = entry_cases(
        BENCH, {"patterns": ["multi_pingpong"], "ranks": [2, 4, 8]}, platform(nodes=4, cores=4)
    )
    shapes = {c.parameters["pairs"]: (c.placement.nodes, c.placement.ranks_per_node)
              for c in cases}  # fmt: skip
    assert shapes == {1: (2, 1), 2: (2, 2), 4: (2, 4)}
    assert cases[1].key == "mpibench:multi_pingpong:np=4:2x2x1:pairs=2:bind=core"
    # On one node the pairs share memory (the placement says so).
    (single,) = entry_cases(BENCH, {"patterns": ["multi_pingpong"], "ranks": [4]},
                            platform(nodes=1, cores=4))  # fmt: skip
    assert (single.placement.nodes, single.parameters["pairs"]) == (1, 2)


def test_concurrent_pairs_need_an_even_rank_count() -> None:
    with pytest.raises(ValueError, match="ranks: 3 is odd"):
        BENCH.parse_options({"patterns": ["multi_pingpong"], "ranks": [3]})


def test_ranks_per_node_sweep() -> None:
    cases = entry_cases(
        BENCH,
        {"patterns": ["alltoall"], "ranks": [4], "ranks_per_node": [1, 2, 4]},
        platform(nodes=4, cores=4),
    )
    assert [(c.placement.nodes, c.placement.ranks_per_node) for c in cases] == [
        (4, 1),
        (2, 2),
        (1, 4),
    ]


def test_fill_nodes_when_no_sweep() -> None:
    (case,) = entry_cases(
        BENCH, {"patterns": ["alltoall"], "ranks": [8]}, platform(nodes=4, cores=2)
    )
    assert (case.placement.nodes, case.placement.ranks_per_node) == (4, 2)
    (case,) = entry_cases(
        BENCH, {"patterns": ["alltoall"], "ranks": [4]}, platform(nodes=1, cores=2)
    )
    assert (case.placement.nodes, case.placement.ranks_per_node) == (1, 4)


def test_impossible_placements_are_refused() -> None:
    with pytest.raises(UserError, match="not a multiple of ranks_per_node 3"):
        entry_cases(
            BENCH, {"patterns": ["alltoall"], "ranks": [4], "ranks_per_node": [3]}, platform(4)
        )
    # More nodes than the platform has: the planner skips it, or refuses an entry left
    # with nothing (test_one_sweep_serves_platforms_of_different_shapes).
    (case,) = entry_cases(
        BENCH, {"patterns": ["alltoall"], "ranks": [4], "ranks_per_node": [1]}, platform(2)
    )
    assert platform(2).placement_problem(case.placement) is not None


def test_plan_names_suite_entry_of_an_impossible_case(tmp_path: Path) -> None:
    f = write(
        tmp_path / "s.toml",
        "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['alltoall']\nranks=[4]\n"
        "ranks_per_node=[3]\n",
    )
    with pytest.raises(ConfigError, match=r"s\.toml: benchmark\[0\]: ranks 4 is not a multiple"):
        plan_cases(load_suite(str(f)), platform())


def test_one_sweep_serves_platforms_of_different_shapes(tmp_path: Path) -> None:
    """Placements a platform cannot hold are skipped with a note, not the whole suite."""
    from hpceval.campaign import load_platform

    f = write(
        tmp_path / "s.toml",
        "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['allreduce']\nsizes=[8]\n"
        "ranks=[2, 4]\nranks_per_node=[1, 2, 4]\n",
    )
    notes: list[str] = []
    local = plan_cases(load_suite(str(f)), load_platform("local").config, notes)
    assert [c.placement.label() for c in local] == ["1x2x1", "1x4x1"]
    assert "benchmark[0]: ranks 2 at 4 per node skipped, 2 is not a multiple of 4" in notes
    assert any("4x1x1:bind=core: skipped, placement 4x1x1 needs 4 nodes" in n for n in notes)
    notes.clear()
    cluster = plan_cases(load_suite(str(f)), load_platform("netns-4x1-1gbe").config, notes)
    assert [c.placement.label() for c in cluster] == [
        "2x1x1", "1x2x1", "4x1x1", "2x2x1", "1x4x1"
    ]  # fmt: skip
    assert notes == ["benchmark[0]: ranks 2 at 4 per node skipped, 2 is not a multiple of 4"]
    # Without a sweep, the cluster's default placement follows its name: one rank per node.
    g = write(tmp_path / "d.toml", "name='d'\n[[benchmark]]\nname='npb'\nkernels=['is']\n"
              "ranks=[2, 4]\n")  # fmt: skip
    npb = plan_cases(load_suite(str(g)), load_platform("netns-4x1-1gbe").config)
    assert [c.placement.label() for c in npb] == ["2x1x1", "4x1x1"]
    # A sweep that leaves nothing to run on the platform is still an error.
    h = write(tmp_path / "h.toml", "name='h'\n[[benchmark]]\nname='mpibench'\n"
              "patterns=['allreduce']\nranks=[4]\nranks_per_node=[1]\n")  # fmt: skip
    with pytest.raises(ConfigError, match=r"benchmark\[0\]: placement 4x1x1 needs 4 nodes"):
        plan_cases(load_suite(str(h)), load_platform("local").config)


def test_repeated_cases_are_refused(tmp_path: Path) -> None:
    entry = "[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nsizes=[8]\n"
    f = write(tmp_path / "s.toml", "name='x'\n" + entry + entry)
    with pytest.raises(ConfigError, match=r"benchmark\[1\]: case .* repeats one of benchmark\[0\]"):
        plan_cases(load_suite(str(f)), platform())


def test_quick_suite_plan() -> None:
    cases = plan_cases(load_suite("quick"), platform())
    mpibench = [c for c in cases if c.benchmark == "mpibench"]
    patterns = {c.parameters["pattern"] for c in mpibench}
    assert len(patterns) == 12
    assert sum(len(c.points) for c in mpibench) > 200
    # communication first, then a little of everything
    assert cases[0].benchmark == "mpibench"
    assert {c.benchmark for c in cases} == {
        "mpibench",
        "npb",
        "stream",
        "fio",
        "hpcc",
        "gromacs",
        "lammps",
    }
    # The quick suite must stay quick: the planned budget is a few minutes.
    assert sum(c.estimate_s for c in cases) < 240


def test_case_survives_storage_round_trip() -> None:
    for case in entry_cases(
        BENCH, {"patterns": ["pingpong", "alltoall"], "ranks": [2]}, platform()
    ):
        assert case_from_description(case.key, case.benchmark, case_description(case)) == case


def test_command_measures_only_the_given_points() -> None:
    (case,) = entry_cases(
        BENCH, {"patterns": ["pingpong"], "sizes": [0, 8, 1024], "budget_s": 0.5}, platform()
    )
    argv = BENCH.command(
        case, Program(Path("/x/mpibench"), "mpicc", ("-O2",)), ["size=8", "size=1024"]
    )
    assert argv == [
        "/x/mpibench", "--pattern", "pingpong", "--sizes", "8,1024", "--target-rci", "0.02",
        "--budget", "0.5", "--min-samples", "10", "--max-samples", "1000", "--warmup-s", "0.05",
        "--sample-s", "0.001", "--seed", "1", "--pair", "0,1",
    ]  # fmt: skip
