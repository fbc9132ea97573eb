"""GROMACS benchmark: generated inputs (golden files), md.log parser on real captured logs,
checks that refuse unsound runs, cases and commands, input preparation with the real tools,
and runs through `hpceval run` (a real one and fake crashing ones)."""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case, Program
from hpceval.benchmarks.gromacs import GromacsOptions, check_log
from hpceval.benchmarks.gromacs.inputs import (
    SystemSpec,
    energy_interval,
    md_mdp_text,
    minimisation_mdp_text,
    prepare_system,
    stage_run_directory,
    tool_error,
    topology_text,
)
from hpceval.benchmarks.gromacs.log import parse_md_log
from hpceval.campaign import load_platform
from hpceval.errors import BenchmarkFailure
from hpceval.model import ParamValue, Placement
from tests.conftest import requires_mpi, run_with_fake_tool, write
from tests.test_cli import hpceval

from .conftest import entry_cases

DATA = Path(__file__).parent / "data" / "gromacs"
VERSION = "2022.5-Debian_2022.5_2"
have_gromacs = shutil.which("gmx") is not None and shutil.which("gmx_mpi") is not None
requires_gromacs = pytest.mark.skipif(
    not have_gromacs, reason="gmx/gmx_mpi not installed (./setup.sh installs Debian gromacs)"
)


def log(name: str) -> str:
    return (DATA / f"{name}.log").read_text()


def case_for(
    *, ranks: int = 1, threads: int = 1, mpi: str = "library", steps: int = 200, atoms: int = 1530
) -> Case:
    if mpi == "thread":
        placement = Placement(1, 1, ranks * threads, "core")
    else:
        placement = Placement(1, ranks, threads)
    params: dict[str, ParamValue] = {
        "system": "water", "water": "spce", "box_nm": 2.5, "steps": steps,
        "mpi": "thread-MPI" if mpi == "thread" else "MPI",
    }  # fmt: skip
    return Case(
        key=f"gromacs:test:{ranks}:{threads}:{mpi}",
        benchmark="gromacs",
        placement=placement,
        parameters=params,
        points=("rep=1",),
        time_limit_s=60,
        options={"mpi": mpi, "ranks": ranks, "threads": threads, "atoms": atoms},
    )


# --------------------------------------------------------------------------- inputs


def test_generated_inputs_match_golden_files() -> None:
    assert md_mdp_text(200) == (DATA / "md-200steps.mdp").read_text()
    assert minimisation_mdp_text() == (DATA / "minimisation.mdp").read_text()
    assert topology_text("spce", 510, 2.5) == (DATA / "topol-spce-510.top").read_text()
    assert '#include "oplsaa.ff/tip3p.itp"' in topology_text("tip3p", 10, 3.0)


def test_energy_interval_divides_the_logged_interval() -> None:
    assert energy_interval(200) == 100
    assert energy_interval(1000) == 100
    assert energy_interval(250) == 50
    assert energy_interval(30) == 30


def test_tool_error_reads_gromacs_error_blocks() -> None:
    stderr = (DATA / "md-7ranks-no-dd.log").read_text()
    assert tool_error(stderr).startswith(
        "Fatal error: There is no domain decomposition for 7 ranks"
    )
    assert tool_error("one\ntwo\n") == "two"


@requires_gromacs
def test_prepare_system_with_the_real_tools(tmp_path: Path) -> None:
    spec = SystemSpec("spce", 2.5, 40)
    first = prepare_system(spec, cache=tmp_path)
    # gmx solvate fills a 2.5 nm box with 510 of spc216.gro's waters (deterministic).
    assert (first.atoms, first.molecules, first.gromacs_version) == (1530, 510, VERSION)
    assert first.tpr.is_file()
    assert (first.directory / "topol.top").read_text() == topology_text("spce", 510, 2.5)
    assert "converged" in (first.directory / "minimisation.log").read_text()
    again = prepare_system(spec, cache=tmp_path)  # cached: the same directory, not redone
    assert again == first
    assert [p.name for p in (tmp_path / "gromacs").iterdir()] == [first.directory.name]


def test_prepare_system_without_gmx_is_a_failure(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkFailure, match="no-such-gmx not found on PATH"):
        prepare_system(SystemSpec("spce", 2.5, 40), gmx="no-such-gmx", cache=tmp_path)


def test_run_directory_links_the_log_to_stdout(tmp_path: Path) -> None:
    run_dir = stage_run_directory(tmp_path)
    assert os.readlink(run_dir / "md.log") == "/dev/stdout"
    assert os.readlink(run_dir / "md.edr") == "/dev/null"


# --------------------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("name", "ranks", "kind", "threads", "ns_per_day", "wall_s"),
    [
        ("md-1rank", 1, "MPI", 1, 35.597, 0.490),
        ("md-2ranks", 2, "MPI", 1, 6.489, 2.690),
        ("md-1rank-2threads", 1, "MPI", 2, 13.297, 1.313),
        ("md-tmpi-2ranks", 2, "thread-MPI", 1, 9.822, 1.777),
    ],
)
def test_parse_real_logs(
    name: str, ranks: int, kind: str, threads: int, ns_per_day: float, wall_s: float
) -> None:
    parsed = parse_md_log(log(name))
    assert parsed.version == VERSION
    assert (parsed.atoms, parsed.nsteps, parsed.dt_ps) == (1530, 200, 0.002)
    assert (parsed.ranks, parsed.rank_kind, parsed.omp_threads) == (ranks, kind, threads)
    assert (parsed.reset_step, parsed.last_step, parsed.timed_steps) == (100, 200, 101)
    assert (parsed.ns_per_day, parsed.wall_s) == (ns_per_day, wall_s)
    assert parsed.pme_ranks == 0
    assert parsed.finished and parsed.error is None
    # Step 0, step 200 and the averages, each with the 11 energy terms mdrun logs.
    assert [f.step for f in parsed.energies] == [0, 200, None]
    assert all(len(f.values) == 11 for f in parsed.energies)
    assert all(math.isfinite(v) for f in parsed.energies for v in f.values.values())


def test_parse_energy_values_of_the_first_step() -> None:
    first = parse_md_log(log("md-1rank")).energies[0].values
    assert first["Temperature"] == 298.455
    assert first["Coul. recip."] == 339.117
    assert first["Pressure (bar)"] == 1345.23


def test_measurements_from_a_real_log() -> None:
    bench = get_benchmark("gromacs")
    (point,) = bench.parse(log("md-2ranks"), case_for(ranks=2))
    assert point.point_key == "rep=1"
    by_metric = {m.metric: m for m in point.measurements}
    assert set(by_metric) == {"ns_per_day", "time_per_step"}
    assert (by_metric["ns_per_day"].value, by_metric["ns_per_day"].unit) == (6.489, "ns/day")
    step = by_metric["time_per_step"]
    # Steps 100..200 (101 steps) took 2.690 s: 26.63 ms per step, as 0.002 * 86400 / 6.489.
    assert step.unit == "ms"
    assert step.value == pytest.approx(0.002 * 86400 / 6.489)
    assert step.value == pytest.approx(2690 / 101, rel=1e-3)
    params = step.parameters
    assert params["atoms"] == 1530 and params["gromacs_version"] == VERSION
    assert (params["ranks"], params["threads_per_rank"], params["box_nm"]) == (2, 1, 2.5)
    assert params["steps"] == 200 and params["mpi"] == "MPI"
    assert step.details["timed_steps"] == 101 and step.details["wall_s"] == 2.690


def test_thread_mpi_measurements_name_the_thread_ranks() -> None:
    case = case_for(ranks=2, mpi="thread")
    case = replace(case, parameters={
        **case.parameters, "ranks": 2, "ranks_per_node": 2, "threads_per_rank": 1})  # fmt: skip
    (point,) = get_benchmark("gromacs").parse(log("md-tmpi-2ranks"), case)
    params = point.measurements[0].parameters
    assert (params["ranks"], params["threads_per_rank"], params["mpi"]) == (2, 1, "thread-MPI")


# --------------------------------------------------------------------------- checks


def test_domain_decomposition_refusal_is_a_clear_failure() -> None:
    bench = get_benchmark("gromacs")
    with pytest.raises(BenchmarkFailure) as e:
        bench.parse(log("md-7ranks-no-dd"), case_for(ranks=7))
    message = str(e.value)
    assert message.startswith("gmx mdrun: Fatal error: There is no domain decomposition for 7")
    assert "minimum cell size of 0.4725 nm" in message
    assert "\n" not in message


def test_truncated_log_fails_with_its_tail() -> None:
    text = log("md-1rank")
    cut = text[: text.index("Performance:")]
    with pytest.raises(BenchmarkFailure, match=r"ends before 'Finished mdrun'; log tail: .*Time:"):
        get_benchmark("gromacs").verify(cut, case_for(), ["rep=1"])
    assert get_benchmark("gromacs").parse(cut, case_for()) == []


def test_non_finite_energy_fails() -> None:
    # The captured log with the last step's Coulomb energy made NaN, as mdrun prints it.
    text = log("md-1rank").replace("-2.69298e+04", "-nan", 1)
    assert "-nan" in text
    with pytest.raises(BenchmarkFailure, match="non-finite energies at step 200: Coulomb"):
        check_log(parse_md_log(text), case_for())


def test_incomplete_run_fails() -> None:
    last = "            200        0.40000"
    text = log("md-1rank").replace(last, "            180        0.36000")
    with pytest.raises(BenchmarkFailure, match="stopped at step 180 of 200"):
        check_log(parse_md_log(text), case_for())


def test_layout_other_than_asked_fails() -> None:
    with pytest.raises(BenchmarkFailure, match="used 1 MPI ranks x 1 OpenMP threads"):
        check_log(parse_md_log(log("md-1rank")), case_for(ranks=2))
    with pytest.raises(BenchmarkFailure, match="the case asks for 2 thread-MPI"):
        check_log(parse_md_log(log("md-2ranks")), case_for(ranks=2, mpi="thread"))
    with pytest.raises(BenchmarkFailure, match="simulated 1530 atoms, the input has 1533"):
        check_log(parse_md_log(log("md-1rank")), case_for(atoms=1533))
    with pytest.raises(BenchmarkFailure, match="nsteps 200, the case asks for 400"):
        check_log(parse_md_log(log("md-1rank")), case_for(steps=400))


# --------------------------------------------------------------------------- cases, commands


def test_options_are_checked() -> None:
    with pytest.raises(ValidationError, match=r"box_nm: 2 nm is outside 2\.5\.\.100"):
        GromacsOptions.model_validate({"box_nm": [2.0]})
    with pytest.raises(ValidationError, match="steps: 201 must be even"):
        GromacsOptions.model_validate({"steps": 201})
    with pytest.raises(ValidationError, match="ranks_per_node: thread-MPI"):
        GromacsOptions.model_validate({"mpi": "thread", "ranks_per_node": [1]})
    with pytest.raises(ValidationError, match="water"):
        GromacsOptions.model_validate({"water": "tip4p"})
    with pytest.raises(ValidationError, match="Extra inputs"):
        GromacsOptions.model_validate({"box": [3.0]})


def test_cases_and_commands() -> None:
    bench = get_benchmark("gromacs")
    platform = load_platform("local").config
    cases = entry_cases(
        bench, {"box_nm": [3.0], "ranks": [1, 2], "threads_per_rank": [2]}, platform
    )
    assert [c.key for c in cases] == [
        "gromacs:water=spce:box=3nm:steps=1000:np=1:omp=2:mpi:1x1x2:bind=core",
        "gromacs:water=spce:box=3nm:steps=1000:np=2:omp=2:mpi:1x2x2:bind=core",
    ]
    staged = replace(
        cases[1], options={**cases[1].options, "tpr": "/c/topol.tpr", "run_dir": "/c/run-1"}
    )
    program = Program(Path("/usr/bin/gmx_mpi"), "GROMACS", ())
    assert bench.command(staged, program, ["rep=1"]) == [
        "gmx_mpi", "-nobackup", "mdrun", "-s", "/c/topol.tpr", "-deffnm", "/c/run-1/md",
        "-resethway", "-noconfout", "-cpt", "-1", "-ntomp", "2",
    ]  # fmt: skip
    thread_mpi = {"mpi": "thread", "ranks": [2], "threads_per_rank": [1]}
    (thread,) = entry_cases(bench, thread_mpi, platform)
    # One process holding both thread-MPI ranks' threads.
    assert thread.placement == Placement(1, 1, 2, "core")
    assert (thread.parameters["ranks"], thread.parameters["threads_per_rank"]) == (2, 1)
    staged = replace(thread, options={**thread.options, "tpr": "/c/t.tpr", "run_dir": "/c/r"})
    argv = bench.command(staged, program, ["rep=1"])
    assert argv[:6] == ["env", "-u", "OMP_PROC_BIND", "-u", "OMP_PLACES", "OMP_NUM_THREADS=1"]
    assert argv[6:9] == ["gmx", "-nobackup", "mdrun"]
    assert argv[-4:] == ["-ntmpi", "2", "-ntomp", "1"]
    with pytest.raises(BenchmarkFailure, match="not staged"):
        bench.command(cases[0], program, ["rep=1"])


def test_unavailable_names_the_missing_program(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = get_benchmark("gromacs")
    platform = load_platform("local").config
    reason = bench.unavailable(bench.parse_options({"gmx_mpi": "no-such-gmx_mpi"}), platform)
    assert reason == (
        "no-such-gmx_mpi not found on PATH; install Debian package gromacs (./setup.sh deps)"
    )
    # thread-MPI runs need only gmx
    thread_only = bench.parse_options({"mpi": "thread", "gmx_mpi": "no-such-gmx_mpi"})
    assert bench.unavailable(thread_only, platform) == (
        None if shutil.which("gmx") else "gmx not found on PATH; install Debian package "
        "gromacs (./setup.sh deps)"
    )


# --------------------------------------------------------------------------- real runs


def measurements(db: Path) -> list[tuple[str, str, float, str]]:
    with sqlite3.connect(db) as c:
        return list(c.execute("select case_key, metric, value, unit from measurements"))


def executions(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as c:
        return list(c.execute("select status, error, stdout_tail from executions"))


@requires_mpi
@requires_gromacs
def test_hpceval_run_gromacs_tiny(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.toml",
        "name='gmx'\n[[benchmark]]\nname='gromacs'\nbox_nm=[2.5]\nsteps=40\nranks=[1, 2]\n"
        "[[benchmark]]\nname='gromacs'\nbox_nm=[2.5]\nsteps=40\nmpi='thread'\nranks=[2]\n",
    )
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = measurements(tmp_path / "hpceval.db")
    assert len(rows) == 6
    for _key, metric, value, unit in rows:
        assert value > 0 and math.isfinite(value)
        assert (metric, unit) in {("ns_per_day", "ns/day"), ("time_per_step", "ms")}
    assert {r[0].split(":")[4] for r in rows} == {"np=1", "np=2"}
    ours = ("s.toml", "hpceval.db")
    written = {p.name for p in tmp_path.iterdir() if not p.name.startswith(ours)}
    assert not written, f"mdrun wrote files in the working directory: {written}"
    runs = Path(os.environ["HPCEVAL_CACHE"]) / "gromacs" / "runs"
    assert not any(runs.iterdir()), "run directories are removed after each execution"


FAKE_GMX_MPI = """#!/bin/sh
# Stands in for gmx_mpi: writes a captured log through the -deffnm link like mdrun would.
while [ $# -gt 0 ]; do
  if [ "$1" = "-deffnm" ]; then log="$2.log"; fi
  shift
done
case "$FAKE_MODE" in
  fatal) cat "$FAKE_LOG" > "$log"; echo "Fatal error (see the log)" >&2; exit 1 ;;
  crash) head -n 300 "$FAKE_LOG" > "$log"; echo "Segmentation fault" >&2; exit 139 ;;
esac
"""


@requires_mpi
@requires_gromacs
@pytest.mark.parametrize(
    ("mode", "fixture", "cause"),
    [
        ("fatal", "md-7ranks-no-dd", "gmx mdrun: Fatal error: There is no domain decomposition"),
        ("crash", "md-1rank", "exited with status 139"),
    ],
)
def test_crashing_mdrun_is_a_recorded_failure(
    tmp_path: Path, mode: str, fixture: str, cause: str
) -> None:
    db = run_with_fake_tool(
        tmp_path,
        tool="gmx_mpi",
        script=FAKE_GMX_MPI,
        mode=mode,
        log=DATA / f"{fixture}.log",
        suite="name='s'\n[[benchmark]]\nname='gromacs'\nbox_nm=[2.5]\nsteps=40\ngmx_mpi='{fake}'\n",
    )
    ((status, error, stdout_tail),) = executions(db)
    assert status == "failed"
    assert cause in error, error
    # The log's tail is kept with the failed execution either way.
    assert stdout_tail.strip().splitlines()[-1] in log(fixture)
    assert measurements(db) == []


@requires_mpi
def test_missing_gmx_mpi_is_a_skipped_case(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.toml",
        "name='s'\n[[benchmark]]\nname='gromacs'\nbox_nm=[2.5]\nsteps=40\n"
        "gmx_mpi='no-such-gmx_mpi'\n",
    )
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ((status, error, _),) = executions(tmp_path / "hpceval.db")
    assert (status, error) == (
        "skipped",
        "no-such-gmx_mpi not found on PATH; install Debian package gromacs (./setup.sh deps)",
    )
