"""LAMMPS benchmark: the generated in.melt (golden file), the output parser on real captured
runs, checks that refuse unsound runs, cases and commands, and runs through `hpceval run`
(a real one and fake failing ones)."""

from __future__ import annotations

import math
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case, Program
from hpceval.benchmarks.lammps import (
    LammpsOptions,
    atom_count,
    check_output,
    installed_packages,
    melt_input_text,
    write_input,
)
from hpceval.benchmarks.lammps.log import parse_output
from hpceval.campaign import load_platform
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Placement
from tests.conftest import requires_mpi, run_with_fake_tool, write
from tests.test_cli import hpceval

from .conftest import entry_cases

DATA = Path(__file__).parent / "data" / "lammps"
VERSION = "29 Sep 2021 - Update 2"
have_lammps = shutil.which("lmp") is not None
requires_lammps = pytest.mark.skipif(
    not have_lammps, reason="lmp not installed (./setup.sh installs Debian lammps)"
)


def output(name: str) -> str:
    return (DATA / f"{name}.log").read_text()


def case_for(*, ranks: int = 1, threads: int = 1, n: int = 5, steps: int = 100) -> Case:
    return Case(
        key=f"lammps:test:{ranks}:{threads}",
        benchmark="lammps",
        placement=Placement(1, ranks, threads),
        parameters={"system": "lj-melt", "n": n, "atoms": atom_count(n), "steps": steps},
        points=("rep=1",),
        time_limit_s=60,
        options={"lmp": "lmp"},
    )


def test_generated_input_matches_golden_file() -> None:
    assert melt_input_text(5, 100) == (DATA / "in.melt-n5-100steps").read_text()
    assert atom_count(20) == 32_000  # the size of LAMMPS' own bench/in.lj


def test_input_is_cached_by_content(tmp_path: Path) -> None:
    path = write_input(5, 100, cache=tmp_path)
    assert path.read_text() == melt_input_text(5, 100)
    assert write_input(5, 100, cache=tmp_path) == path
    assert write_input(6, 100, cache=tmp_path) != path


@pytest.mark.parametrize(
    ("name", "ranks", "loop_s", "printed_rate", "thermo_rows"),
    [
        ("lj-1rank", 1, 0.0499697, 2001.212, 6),
        ("lj-2ranks", 2, 0.0642575, 1556.237, 6),
    ],
)
def test_parse_real_outputs(
    name: str, ranks: int, loop_s: float, printed_rate: float, thermo_rows: int
) -> None:
    out = parse_output(output(name))
    assert out.version == VERSION
    assert out.created_atoms == 500
    assert (out.loop_time_s, out.procs, out.steps, out.atoms) == (loop_s, ranks, 100, 500)
    assert out.timesteps_per_s == printed_rate
    assert out.atom_steps_per_s is None  # this LAMMPS version does not print it
    assert (out.mpi_tasks, out.omp_threads) == (ranks, 1)
    assert out.total_wall_s == 0 and out.error is None
    (table,) = out.thermo
    assert table.columns == ("Step", "Temp", "E_pair", "E_mol", "TotEng", "Press")
    assert len(table.rows) == thermo_rows
    assert table.rows[0] == (0, 3, -6.7733681, 0, -2.2823681, -3.7077825)
    assert table.rows[-1][0] == 100


def test_newer_performance_line_with_atom_steps() -> None:
    # The Performance line as LAMMPS 2022 and later print it (LAMMPS manual, "Run output"):
    # the Debian 12 build here predates the atom-step/s figure.
    text = output("lj-1rank").replace(
        "Performance: 864523.607 tau/day, 2001.212 timesteps/s",
        "Performance: 864523.607 tau/day, 2001.212 timesteps/s, 1.001 Matom-step/s",
    )
    assert parse_output(text).atom_steps_per_s == pytest.approx(1.001e6)
    check_output(parse_output(text), case_for())
    wrong = text.replace("1.001 Matom-step/s", "1.001 katom-step/s")
    with pytest.raises(BenchmarkFailure, match="atom-step/s"):
        check_output(parse_output(wrong), case_for())


def test_measurements_from_a_real_output() -> None:
    (point,) = get_benchmark("lammps").parse(output("lj-2ranks"), case_for(ranks=2))
    by_metric = {m.metric: m for m in point.measurements}
    rate = by_metric["timesteps_per_second"]
    # From the loop time (6 digits), not the printed 3-decimal rate it is checked against.
    assert rate.unit == "timesteps/s"
    assert rate.value == pytest.approx(100 / 0.0642575)
    assert rate.value == pytest.approx(1556.237, rel=1e-5)
    atom_steps = by_metric["atom_steps_per_second"]
    assert atom_steps.unit == "atom-steps/s"
    assert atom_steps.value == pytest.approx(500 * 100 / 0.0642575)
    assert (by_metric["loop_time"].value, by_metric["loop_time"].unit) == (0.0642575, "s")
    params = rate.parameters
    assert params["lammps_version"] == VERSION
    assert (params["atoms"], params["n"], params["steps"], params["ranks"]) == (500, 5, 100, 2)


def test_error_in_the_output_is_a_failure_with_its_tail() -> None:
    with pytest.raises(BenchmarkFailure) as e:
        get_benchmark("lammps").parse(output("lj-error-fix-style"), case_for(ranks=2))
    message = str(e.value)
    assert message.startswith(
        "lmp: ERROR: Unrecognized fix style 'nvee' (src/modify.cpp:908); log tail: "
    )
    assert message.endswith("Created 500 atoms | using lattice units in orthogonal box = "
                            "(0.0000000 0.0000000 0.0000000) to (8.3979810 8.3979810 8.3979810)"
                            " | create_atoms CPU = 0.000 seconds")  # fmt: skip
    # verify (whole output) says the same, with LAMMPS' "Last command".
    with pytest.raises(BenchmarkFailure, match=r"Last command: fix +1 all nvee"):
        get_benchmark("lammps").verify(output("lj-error-fix-style"), case_for(ranks=2), [])


def test_unsound_outputs_fail() -> None:
    text = output("lj-1rank")
    checks = [
        (text[: text.index("Total wall time")], "ends before 'Total wall time'"),
        (text[: text.index("Loop time")], "no 'Loop time' line"),
        (text.replace("2001.212 timesteps/s", "2101.212 timesteps/s"), "its loop time gives"),
    ]
    for broken, why in checks:
        with pytest.raises(BenchmarkFailure, match=why):
            check_output(parse_output(broken), case_for())
    last_row = next(ln for ln in text.splitlines() if ln.startswith("     100 "))
    nan_row = last_row.replace(last_row.split()[2], "-nan")
    with pytest.raises(BenchmarkFailure, match="non-finite thermo output at step 100: E_pair"):
        check_output(parse_output(text.replace(last_row, nan_row)), case_for())
    with pytest.raises(BenchmarkFailure, match="on 1 procs, the case asks for 100 steps of 500"):
        check_output(parse_output(text), case_for(ranks=2))
    with pytest.raises(BenchmarkFailure, match="of 500 atoms on 1 procs, the case asks for 100 st"):
        check_output(parse_output(text), case_for(n=6))


def test_options_cases_and_commands() -> None:
    with pytest.raises(ValidationError, match="n: 0 lattice cells"):
        LammpsOptions.model_validate({"n": [0]})
    with pytest.raises(ValidationError, match="Extra inputs"):
        LammpsOptions.model_validate({"size": [5]})
    bench = get_benchmark("lammps")
    platform = load_platform("local").config
    cases = entry_cases(bench, {"n": [5, 10], "ranks": [1, 2], "steps": 50}, platform)
    assert [c.key for c in cases] == [
        "lammps:n=5:steps=50:np=1:1x1x1:bind=core",
        "lammps:n=5:steps=50:np=2:1x2x1:bind=core",
        "lammps:n=10:steps=50:np=1:1x1x1:bind=core",
        "lammps:n=10:steps=50:np=2:1x2x1:bind=core",
    ]
    assert cases[2].parameters["atoms"] == 4000
    program = Program(Path("/usr/bin/lmp"), "LAMMPS", ())
    staged = replace(cases[0], options={"lmp": "lmp", "input": "/c/in.melt"})
    assert bench.command(staged, program, ["rep=1"]) == [
        "lmp", "-in", "/c/in.melt", "-log", "none", "-nocite",
    ]  # fmt: skip
    threaded = replace(staged, placement=Placement(1, 1, 2))
    assert bench.command(threaded, program, ["rep=1"])[-5:] == ["-sf", "omp", "-pk", "omp", "2"]


@requires_lammps
def test_threads_need_the_openmp_package() -> None:
    platform = load_platform("local").config
    bench = get_benchmark("lammps")
    if "OPENMP" in installed_packages("lmp"):
        assert len(entry_cases(bench, {"threads_per_rank": [2]}, platform)) == 1
    else:
        with pytest.raises(UserError, match="lmp has no OPENMP package"):
            entry_cases(bench, {"threads_per_rank": [2]}, platform)


def test_unavailable_names_the_missing_program() -> None:
    platform = load_platform("local").config
    bench = get_benchmark("lammps")
    assert bench.unavailable(bench.parse_options({"lmp": "no-such-lmp"}), platform) == (
        "no-such-lmp not found on PATH; install Debian package lammps (./setup.sh deps)"
    )


def rows(db: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as c:
        return list(c.execute(query))


@requires_mpi
@requires_lammps
def test_hpceval_run_lammps_tiny(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.toml",
        "name='lj'\n[[benchmark]]\nname='lammps'\nn=[5]\nsteps=100\nranks=[1, 2]\n",
    )
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = rows(tmp_path / "hpceval.db", "select case_key, metric, value, unit from measurements")
    assert len(found) == 6
    for _key, _metric, value, _unit in found:
        assert isinstance(value, float) and value > 0 and math.isfinite(value)
    assert {(m, u) for _, m, _, u in found} == {
        ("timesteps_per_second", "timesteps/s"),
        ("atom_steps_per_second", "atom-steps/s"),
        ("loop_time", "s"),
    }
    assert not (tmp_path / "log.lammps").exists()


FAKE_LMP = """#!/bin/sh
# Stands in for lmp: prints a captured output, then fails like LAMMPS would.
case "$FAKE_MODE" in
  error) cat "$FAKE_LOG"; exit 1 ;;
  crash) head -n 30 "$FAKE_LOG"; echo "Segmentation fault" >&2; exit 139 ;;
esac
"""


@requires_mpi
@pytest.mark.parametrize(
    ("mode", "fixture", "cause"),
    [
        ("error", "lj-error-fix-style", "lmp: ERROR: Unrecognized fix style 'nvee'"),
        ("crash", "lj-1rank", "exited with status 139"),
    ],
)
def test_failing_lmp_is_a_recorded_failure(
    tmp_path: Path, mode: str, fixture: str, cause: str
) -> None:
    db = run_with_fake_tool(
        tmp_path,
        tool="lmp",
        script=FAKE_LMP,
        mode=mode,
        log=DATA / f"{fixture}.log",
        suite="name='s'\n[[benchmark]]\nname='lammps'\nn=[5]\nlmp='{fake}'\n",
    )
    ((status, error, stdout_tail),) = rows(db, "select status, error, stdout_tail from executions")
    assert status == "failed"
    assert isinstance(error, str) and cause in error, error
    assert isinstance(stdout_tail, str)
    assert stdout_tail.strip().splitlines()[-1] in output(fixture)
    if mode == "crash":
        # the one-line reason carries the crash and what the log check found after it
        assert "no 'Loop time' line; log tail: " in error, error
    assert rows(db, "select id from measurements") == []


def test_warnings_inside_the_thermo_table_do_not_end_it() -> None:
    text = output("lj-1rank")
    row_60 = next(ln for ln in text.splitlines() if ln.startswith("      60 "))
    warned = text.replace(row_60, row_60 + "\nWARNING: Pair style restartinfo set (src/x.cpp:1)")
    (table,) = parse_output(warned).thermo
    assert len(table.rows) == 6 and table.rows[-1][0] == 100
