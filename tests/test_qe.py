"""Quantum ESPRESSO benchmark: the pw.x and ld1.x output parsers on real captured outputs,
the checks that refuse unsound runs (not converged, errors, wrong layout, energies that
disagree), the generated inputs, and real runs through `hpceval run` (ld1.x generating and
testing the pseudopotential, pw.x at 1 and 2 ranks)."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case, Program
from hpceval.benchmarks.qe import (
    QeOptions,
    check_energy_agreement,
    check_output,
    point_measurements,
    pw_build,
)
from hpceval.benchmarks.qe.inputs import (
    SiliconSystem,
    check_transferability,
    silicon_pseudopotential,
)
from hpceval.benchmarks.qe.output import clock_seconds, parse_ld1_tests, parse_pw_output
from hpceval.campaign import load_platform
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.model import Placement
from tests.conftest import requires_mpi, write
from tests.test_cli import hpceval

from .conftest import entry_cases

DATA = Path(__file__).parent / "data" / "qe"
have_qe = shutil.which("pw.x") is not None and shutil.which("ld1.x") is not None
requires_qe = pytest.mark.skipif(
    not have_qe, reason="pw.x/ld1.x not installed (./setup.sh installs Debian quantum-espresso)"
)


def output(name: str) -> str:
    return (DATA / f"{name}.out").read_text()


def case_for(*, ranks: int = 1, threads: int = 1, system: str = "si-primitive") -> Case:
    atoms = SiliconSystem.parse(system).atoms
    return Case(
        key=f"qe:test:{system}:{ranks}:{threads}",
        benchmark="qe",
        placement=Placement(1, ranks, threads),
        parameters={"system": system, "atoms": atoms, "ecutwfc_ry": 24.0},
        points=("rep=1",),
        time_limit_s=60,
        options={"pw": "pw.x", "ld1": "ld1.x"},
    )


def test_clock_formats() -> None:
    assert clock_seconds("1.51s") == pytest.approx(1.51)
    assert clock_seconds("1m34.39s") == pytest.approx(94.39)
    assert clock_seconds("2h13m") == 2 * 3600 + 13 * 60
    assert clock_seconds("1h 2m") == 3720
    assert clock_seconds("1d 3h") == 86400 + 3 * 3600
    assert clock_seconds("") is None
    assert clock_seconds("fast") is None


@pytest.mark.parametrize(
    ("name", "processes", "atoms", "iterations", "energy", "wall"),
    [
        ("si-primitive-np1", 1, 2, 6, -15.86322038, 3.11),
        ("si-primitive-np2", 2, 2, 6, -15.86322038, 94.39),  # printed "1m34.39s"
        ("si-cubic-1-np1", 1, 8, 6, -63.40531562, 2.48),
    ],
)
def test_parse_real_outputs(
    name: str, processes: int, atoms: int, iterations: int, energy: float, wall: float
) -> None:
    out = parse_pw_output(output(name))
    assert out.version == "6.7MaX"
    assert out.parallel == "MPI" and not out.openmp
    assert (out.processes, out.atoms, out.converged_iterations) == (processes, atoms, iterations)
    assert out.total_energy_ry == pytest.approx(energy, abs=1e-9)
    assert out.wall("PWSCF") == pytest.approx(wall)
    assert out.job_done and out.error is None and out.not_converged_after is None
    assert out.timings["h_psi:calbec"].calls is not None  # a routine name with a colon


def test_exchange_timings_of_a_two_rank_run() -> None:
    out = parse_pw_output(output("si-primitive-np2"))
    assert out.wall("fft_scatt_yz") == pytest.approx(47.14)
    assert out.timings["fft_scatt_xy"].calls == 2020
    point = point_measurements(out, case_for(ranks=2))
    wall_time, per_iteration = point.measurements
    assert (wall_time.metric, wall_time.value, wall_time.unit) == ("wall_time", 94.39, "s")
    assert per_iteration.value == pytest.approx(75.61 / 6)
    details = wall_time.details
    assert details["fft_exchange_share"] == pytest.approx((0.10 + 47.14) / 94.39, abs=1e-4)
    assert details["fft_share"] == pytest.approx((0.66 + 0.15 + 46.61) / 94.39, abs=1e-4)
    assert details["energy_per_atom_ry"] == pytest.approx(-15.86322038 / 2)
    assert wall_time.parameters["qe_version"] == "6.7MaX"


def test_sound_outputs_pass_the_checks() -> None:
    check_output(parse_pw_output(output("si-primitive-np1")), case_for())
    check_output(parse_pw_output(output("si-primitive-np2")), case_for(ranks=2))
    check_output(parse_pw_output(output("si-cubic-1-np1")), case_for(system="si-cubic-1"))


def test_unsound_outputs_fail() -> None:
    good = parse_pw_output(output("si-primitive-np1"))
    with pytest.raises(BenchmarkFailure, match="did not converge in 2 iterations"):
        check_output(parse_pw_output(output("si-primitive-not-converged")), case_for())
    with pytest.raises(BenchmarkFailure, match="ran on 1 processes, the case asks for 2"):
        check_output(good, case_for(ranks=2))
    with pytest.raises(BenchmarkFailure, match="no OpenMP: it cannot run 2 threads"):
        check_output(good, case_for(threads=2))
    with pytest.raises(BenchmarkFailure, match="computed 2 atoms, the input has 8"):
        check_output(good, case_for(system="si-cubic-1"))
    with pytest.raises(BenchmarkFailure, match=r"ends before 'JOB DONE\.'"):
        check_output(replace(good, job_done=False), case_for())
    with pytest.raises(BenchmarkFailure, match=r"outside -9..-7 Ry"):
        check_output(replace(good, total_energy_ry=-2.0), case_for())
    with pytest.raises(BenchmarkFailure, match="no valid electrons wall time"):
        timings = {k: v for k, v in good.timings.items() if k != "electrons"}
        check_output(replace(good, timings=timings), case_for())


def test_an_error_block_fails_the_execution_as_it_streams() -> None:
    bench = get_benchmark("qe")
    case = case_for()
    with pytest.raises(BenchmarkFailure, match=r"pw.x: readpp \(1\): file .*Missing.UPF not found"):
        bench.parse(output("si-primitive-missing-pseudo"), case)


def test_parse_produces_one_point_per_output() -> None:
    bench = get_benchmark("qe")
    (point,) = bench.parse(output("si-primitive-np1"), case_for())
    assert [m.metric for m in point.measurements] == ["wall_time", "scf_iteration_time"]
    assert point.measurements[1].value == pytest.approx(2.41 / 6)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parsers_never_raise_on_garbage(text: str) -> None:
    out = parse_pw_output(text)
    assert out.total_energy_ry is None or isinstance(out.total_energy_ry, float)
    parse_ld1_tests(text)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, len(output("si-primitive-np1").splitlines())))
def test_truncated_outputs_are_never_a_point(cut: int) -> None:
    lines = output("si-primitive-np1").splitlines()
    done = next(i for i, line in enumerate(lines) if "JOB DONE." in line)
    truncated = "\n".join(lines[:cut])
    points = get_benchmark("qe").parse(truncated, case_for())
    if cut <= done:  # "JOB DONE." not read yet: no point, and the whole output is refused
        assert points == []
        with pytest.raises(BenchmarkFailure):
            check_output(parse_pw_output(truncated), case_for())
    else:
        assert len(points) == 1


def test_ld1_transferability_tests() -> None:
    tests, error = parse_ld1_tests(output("ld1-test"))
    assert error is None
    assert [t.delta_ry for t in tests] == [0.000280, 0.000401]
    assert tests[0].ae_ry == pytest.approx(0.496095)
    assert check_transferability(output("ld1-test")) == (0.000280, 0.000401)
    worse = output("ld1-test").replace("Delta E=       0.000401", "Delta E=       0.012000")
    with pytest.raises(BenchmarkFailure, match=r"not transferable: excitation energy off by 12.00"):
        check_transferability(worse)
    with pytest.raises(BenchmarkFailure, match=r"mismatched all-electron/pseudo occupations"):
        check_transferability(output("ld1-generation-error"))


def test_systems_and_inputs(tmp_path: Path) -> None:
    assert SiliconSystem.parse("si-primitive").atoms == 2
    assert SiliconSystem.parse("si-cubic-2").atoms == 64
    assert SiliconSystem.parse("si-cubic-2").k_mesh == 1
    for bad in ("si", "si-cubic-0", "si-cubic-5", "ge-primitive", "--si-cubic-1"):
        with pytest.raises(ValueError, match="system:"):
            SiliconSystem.parse(bad)
    text = SiliconSystem.parse("si-cubic-1").input_text(24.0, tmp_path / "p", tmp_path / "o")
    assert "nat = 8" in text and "ibrav = 1" in text and "2 2 2 1 1 1" in text
    assert text.count("\n  Si 0.") + text.count("\n  Si 0.25") >= 8
    assert f"pseudo_dir = '{tmp_path / 'p'}'" in text
    assert "conv_thr = 4.000e-09" in text  # the same accuracy per atom: 5e-10 x 8


def test_options_cases_and_commands() -> None:
    with pytest.raises(ValidationError, match="system: 'si-cubic-9'"):
        QeOptions.model_validate({"system": ["si-cubic-9"]})
    with pytest.raises(ValidationError, match="Extra inputs"):
        QeOptions.model_validate({"atoms": [2]})
    with pytest.raises(ValidationError):
        QeOptions.model_validate({"pw": "-pw.x"})  # never an option for a parser
    bench = get_benchmark("qe")
    platform = load_platform("local").config
    cases = entry_cases(bench, {"system": ["si-primitive", "si-cubic-1"], "ranks": [1, 2]},
                        platform)  # fmt: skip
    assert [c.key for c in cases] == [
        "qe:si-primitive:ecut=24:np=1:1x1x1:bind=core",
        "qe:si-primitive:ecut=24:np=2:1x2x1:bind=core",
        "qe:si-cubic-1:ecut=24:np=1:1x1x1:bind=core",
        "qe:si-cubic-1:ecut=24:np=2:1x2x1:bind=core",
    ]
    assert cases[2].parameters == {"system": "si-cubic-1", "atoms": 8, "ecutwfc_ry": 24.0}
    staged = replace(cases[0], options={**cases[0].options, "run_dir": "/c/run-1"})
    program = Program(Path("/usr/bin/pw.x"), "QE", ())
    assert bench.command(staged, program, ["rep=1"]) == [
        "env", "-C", "/c/run-1", "pw.x", "-in", "/c/run-1/scf.in",
    ]  # fmt: skip
    with pytest.raises(BenchmarkFailure, match="not staged"):
        bench.command(cases[0], program, ["rep=1"])


def test_unavailable_names_the_missing_program() -> None:
    platform = load_platform("local").config
    bench = get_benchmark("qe")
    assert bench.unavailable(bench.parse_options({"pw": "no-such-pw"}), platform) == (
        "no-such-pw not found on PATH; install Debian package quantum-espresso (./setup.sh deps)"
    )
    assert bench.unavailable(bench.parse_options({"ld1": "no-such-ld1"}), platform) == (
        "no-such-ld1 not found on PATH; install Debian package quantum-espresso (./setup.sh deps)"
    )


def test_energies_must_agree_across_rank_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPCEVAL_CACHE", str(tmp_path))
    one = replace(case_for(), options={"input_digest": "abc"})
    two = replace(case_for(ranks=2), options={"input_digest": "abc"})
    check_energy_agreement(-15.86322038, one)  # the first verified run records it
    recorded = json.loads((tmp_path / "qe" / "energies" / "abc.json").read_text())
    assert recorded == {"total_energy_ry": -15.86322038, "ranks": 1, "threads_per_rank": 1}
    check_energy_agreement(-15.86322039, two)  # 1e-8 Ry: summation order
    with pytest.raises(BenchmarkFailure, match=r"differs from -15.86322038 Ry .* at 1 rank"):
        check_energy_agreement(-15.8631, two)
    other = replace(case_for(ranks=2), options={"input_digest": "def"})
    check_energy_agreement(-15.8631, other)  # another calculation: its own reference


@requires_qe
def test_threads_need_an_openmp_build() -> None:
    version, openmp = pw_build("pw.x")
    assert version != "unknown"
    platform = load_platform("local").config
    bench = get_benchmark("qe")
    if openmp:
        assert len(entry_cases(bench, {"threads_per_rank": [2]}, platform)) == 1
    else:
        with pytest.raises(UserError, match="built without OpenMP"):
            entry_cases(bench, {"threads_per_rank": [2]}, platform)


@requires_qe
def test_ld1_generates_a_transferable_pseudopotential(tmp_path: Path) -> None:
    pseudo = silicon_pseudopotential("ld1.x", tmp_path)
    assert (pseudo.directory / "Si.pz-tm-hpceval.UPF").is_file()
    assert all(0 <= e < 2e-3 for e in pseudo.transferability_errors_ry)
    assert pseudo.ld1_version.startswith("6.")
    again = silicon_pseudopotential("ld1.x", tmp_path)  # from the cache
    assert again == pseudo
    assert not list((tmp_path / "qe" / "pseudo").glob(".*"))  # no work directory left


def rows(db: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as c:
        return list(c.execute(query))


@requires_mpi
@requires_qe
def test_hpceval_run_qe_at_one_and_two_ranks(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.toml",
        "name='qe'\n[[benchmark]]\nname='qe'\nsystem=['si-primitive']\nranks=[1, 2]\n",
    )
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = rows(
        tmp_path / "hpceval.db",
        "select case_key, metric, value, unit, details from measurements order by id",
    )
    assert {(m, u) for _, m, _, u, _ in found} == {("wall_time", "s"), ("scf_iteration_time", "s")}
    energies = set()
    for _key, metric, value, _unit, details in found:
        assert isinstance(value, float) and value > 0 and math.isfinite(value)
        if metric == "wall_time":
            assert isinstance(details, str)
            data = json.loads(details)
            energies.add(round(data["total_energy_ry"], 6))
            assert 0 < data["fft_share"] <= 1
            assert data["blas_library"] != "unknown"
    assert len(energies) == 1  # the same energy at 1 and 2 ranks
    assert not list(tmp_path.glob("CRASH"))  # pw.x ran in its own directory
    shown = hpceval("show", "--run", "1", cwd=tmp_path)
    assert "Quantum ESPRESSO pw.x" in shown.stdout and "FFT share" in shown.stdout


@requires_mpi
def test_failing_pw_is_a_recorded_failure(tmp_path: Path) -> None:
    fake = write(
        tmp_path / "fake-pw.x",
        f"#!/bin/sh\ncat '{DATA / 'si-primitive-not-converged.out'}'\nexit 2\n",
    )
    fake.chmod(0o755)
    suite = write(
        tmp_path / "s.toml",
        f"name='s'\n[[benchmark]]\nname='qe'\npw='{fake}'\n",
    )
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path, timeout=300)
    if not have_qe:  # ld1.x missing: the suite entry is skipped with its remedy
        assert "quantum-espresso" in proc.stdout + proc.stderr
        return
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ((status, error),) = rows(tmp_path / "hpceval.db", "select status, error from executions")
    assert status == "failed"
    assert isinstance(error, str) and "did not converge in 2 iterations" in error, error
    assert rows(tmp_path / "hpceval.db", "select id from measurements") == []


def test_bad_system_in_a_suite_is_a_one_line_error(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.toml", "name='s'\n[[benchmark]]\nname='qe'\nsystem=['si-x']\n")
    proc = hpceval("run", "--suite", str(suite), cwd=tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "system" in err and "si-x" in err, err
