"""The applications' tables and headlines of `hpceval show` / the run summary."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console

from hpceval.benchmarks import get_benchmark
from hpceval.model import Measurement, Placement


def app(
    bench: str, metric: str, value: float, unit: str, ranks: int, **params: object
) -> Measurement:
    return Measurement(
        benchmark=bench,
        metric=metric,
        value=value,
        unit=unit,
        parameters={**Placement(1, ranks).as_parameters(), **params},  # type: ignore[dict-item]
        samples=(value,),
    )


def render(tables: Sequence[object]) -> str:
    console = Console(file=io.StringIO(), width=200)
    for t in tables:
        console.print(t)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def test_best_repetition_per_input_and_placement() -> None:
    g = {"box_nm": 3.0, "atoms": 2652, "steps": 1000, "gromacs_version": "2022.5"}
    ms = [
        app("gromacs", "ns_per_day", 20.0, "ns/day", 1, **g),
        app("gromacs", "ns_per_day", 25.5, "ns/day", 1, **g),
        app("gromacs", "time_per_step", 8.6, "ms", 1, **g),
        app("gromacs", "time_per_step", 6.7, "ms", 1, **g),
        app("lammps", "timesteps_per_second", 33.7, "timesteps/s", 2, n=20, atoms=32000),
        app("mpibench", "latency", 0.4, "us", 2, size=8),
    ]
    text = render(get_benchmark("gromacs").tables(ms) + get_benchmark("lammps").tables(ms))
    assert "GROMACS 2022.5" in text and "LAMMPS" in text
    gromacs_row = next(ln for ln in text.splitlines() if "box_nm=3.0" in ln)
    assert "25.5" in gromacs_row and "6.7" in gromacs_row and "│    2 │" in gromacs_row
    assert "33.7" in text
    gromacs = [m for m in ms if m.benchmark == "gromacs"]
    lammps = [m for m in ms if m.benchmark == "lammps"]
    assert get_benchmark("gromacs").headline(gromacs) == "25.5 ns/day (verified)"
    assert get_benchmark("lammps").headline(lammps) == "33.7 timesteps/s (verified)"


def test_no_application_no_table() -> None:
    for name in ("gromacs", "lammps"):
        assert get_benchmark(name).tables([app("mpibench", "latency", 0.4, "us", 2, size=8)]) == []
        assert get_benchmark(name).headline([]) == ""
