"""A benchmark is one folder: the test-only `echo` benchmark (tests/plugin), installed only
as an entry point of group `hpceval.benchmarks` on PYTHONPATH, goes through the registry,
`doctor`, `run`, `show`, `compare` and `report` with no line of hpceval naming it. Real CLI
processes, real MPI launcher (`mpirun -np 1 python3 program.py`)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import requires_mpi, write

PLUGIN = Path(__file__).parent / "plugin"
SUITE = 'name = "echo-tiny"\n[[benchmark]]\nname = "echo"\nrate = {rate}\n'
PLATFORM = 'name = "{name}"\n[launcher]\nkind = "local"\n'


def hpceval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return python(tmp_path, "-m", "hpceval", *args)


def python(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(PLUGIN), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "250"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_registry_and_doctor_know_the_plugin(tmp_path: Path) -> None:
    probe = (
        "from hpceval.benchmarks import get_benchmark\n"
        "from hpceval.units import HIGHER_IS_BETTER\n"
        "b = get_benchmark('echo')\n"
        "print(b.category.value, [t.program for t in b.tools], HIGHER_IS_BETTER['widgets/s'])\n"
        "print(type(b.parse_options({'rate': 7})).__name__)\n"
    )
    out = python(tmp_path, "-c", probe).stdout.splitlines()
    assert out == ["compute ['python3'] True", "EchoOptions"]
    doctor = hpceval(tmp_path, "doctor").stdout
    assert "the echo test benchmark (tests/plugin)" in doctor
    # Without the plug-in on the path, nothing of it is known.
    bare = subprocess.run(
        [sys.executable, "-c", "from hpceval.benchmarks import benchmark_names as n; print(n())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "echo" not in bare.stdout


@requires_mpi
def test_run_show_compare_report(tmp_path: Path) -> None:
    for platform, rate in (("alpha", 100), ("beta", 50)):
        suite = write(tmp_path / f"{platform}-suite.toml", SUITE.format(rate=rate))
        plat = write(tmp_path / f"{platform}.toml", PLATFORM.format(name=platform))
        ran = hpceval(tmp_path, "run", "--suite", str(suite), "--platform", str(plat))
        # The summary's headline: the generic one, each metric's best value.
        expected = "rate 103.0 widgets/s, time 9.71 s" if rate == 100 else "rate 51.5 widgets/s"
        assert expected in ran.stdout, ran.stdout

    shown = hpceval(tmp_path, "show", "--run", "1").stdout
    assert "echo (median of the repetitions)" in shown
    rate_row = next(line for line in shown.splitlines() if "widgets/s" in line)
    # median, best and worst of the 3 repetitions
    assert "input=tiny" in rate_row and "│    3 │  102.0 │ 103.0 │ 101.0 │" in rate_row

    # compare: the category comes from the plug-in's benchmark.toml, and its unit's direction
    # (widgets/s: higher is better) from the same file; no benchmark module is imported.
    probe = (
        "import sys\n"
        "from hpceval.cli import app\n"
        "try:\n"
        "    app(['compare', '--baseline', 'alpha', '--csv', 'rows.csv'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "print([m for m in sys.modules if m.startswith(('hpceval.benchmarks', 'hpceval_echo'))])\n"
    )
    compared = python(tmp_path, "-c", probe).stdout
    assert compared.rstrip().endswith("[]"), compared
    summary = next(line for line in compared.splitlines() if "compute kernels" in line)
    assert "beta" in summary and "0.5000" in summary
    with (tmp_path / "rows.csv").open(newline="") as f:
        rows = {r["metric"]: r for r in csv.DictReader(f)}
    assert {r["category"] for r in rows.values()} == {"compute kernels"}
    for metric in ("rate", "time"):
        assert float(rows[metric]["performance"]) == pytest.approx(0.5)
    assert rows["rate"]["verdict"] == rows["time"]["verdict"] == "slower"

    reported = hpceval(tmp_path, "report", "--out", "report", "--baseline", "alpha")
    assert "wrote report/index.html" in reported.stdout
    assert (tmp_path / "report" / "tables" / "benchmark_echo.csv").is_file()
    html = (tmp_path / "report" / "index.html").read_text()
    assert "echo" in html and "widgets/s" in html
