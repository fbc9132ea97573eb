"""Benchmark declarations (benchmark.toml): what compare, the report and the unit vocabulary
read without importing benchmark code."""

from __future__ import annotations

import pytest

from hpceval.benchmarks import benchmark_names, get_benchmark
from hpceval.catalog import BenchmarkCategory, declarations, parse_declaration
from hpceval.errors import UserError
from hpceval.units import GENERAL_UNITS, HIGHER_IS_BETTER, check_unit


def test_every_benchmark_is_declared_and_every_declaration_has_a_benchmark() -> None:
    assert set(declarations()) == set(benchmark_names())
    expected = {
        "mpibench": "communication",
        "npb": "compute",
        "hpcc": "compute",
        "fio": "storage",
        "gromacs": "application",
        "lammps": "application",
    }
    assert {name: get_benchmark(name).category for name in expected} == expected


def test_declared_units_join_the_vocabulary() -> None:
    for unit in ("ns/day", "GUP/s", "IOPS", "timesteps/s", "atom-steps/s"):
        assert unit not in GENERAL_UNITS and HIGHER_IS_BETTER[unit] is True
        assert check_unit(unit) == unit
    with pytest.raises(ValueError, match="not in hpceval's vocabulary"):
        check_unit("GB")


def test_summary_metrics_and_metric_categories() -> None:
    assert declarations()["mpibench"].summary_metrics == {"latency", "time"}
    assert declarations()["fio"].summary_metrics is None
    hpcc = declarations()["hpcc"]
    assert hpcc.category_of("hpl") is BenchmarkCategory.COMPUTE
    assert hpcc.category_of("random_ring_latency") is BenchmarkCategory.COMMUNICATION
    assert hpcc.category_of("stream_triad_star") is BenchmarkCategory.MEMORY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "x.toml: category: missing"),
        ('category = "network"', "x.toml: category: 'network' is not a category"),
        ('category = "compute"\ncolour = 1', "x.toml: colour: unknown key"),
        ('category = "compute"\nsummary_metrics = "time"', "summary_metrics: not a list"),
        ('category = "compute"\n[units]\n"x/s" = "more"', "units.x/s: 'more' is not"),
        ('category = "compute"\n[metric_categories]\n"a_" = "cpu"', "metric_categories.a_"),
        ("category = ", "x.toml: Invalid value"),
    ],
)
def test_bad_declarations_name_file_and_key(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        parse_declaration("x", text, "x.toml")
