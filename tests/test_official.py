"""The official codes through hpceval (npb-official, validate, implementations kept apart),
end to end through the CLI on the mimic NPB 3.4-MPI tree of tests/data/official: a small
tree with NPB's layout, make targets and output format around a tiny C + MPI program."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tarfile
from pathlib import Path

import pytest

from hpceval.analysis.implementations import MIX_FLAG, mixed_implementations
from hpceval.analysis.validation import paired_figures
from hpceval.model import Measurement
from hpceval.store import open_store

from .conftest import DATA, requires_mpi, requires_tool, write
from .test_cli import hpceval

MIMIC = DATA / "official" / "npb-mpi" / "NPB3.4-MPI"
SUITE = """
name = "official"
[[benchmark]]
name = "npb-official"
kernels = ["cg", "ep"]
classes = ["S"]
ranks = [1, 2]
repeat = 2
"""


def _mimic_copy(tmp_path: Path, name: str = "NPB3.4-MPI") -> Path:
    tree = tmp_path / "src" / name
    shutil.copytree(MIMIC, tree)
    return tree


def _implementations(db: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return set(conn.execute("SELECT DISTINCT benchmark, implementation FROM measurements"))


@requires_mpi
@requires_tool("gfortran")
def test_npb_official_builds_runs_parses_and_verifies_the_sources_given(tmp_path: Path) -> None:
    tree = _mimic_copy(tmp_path)
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    write(tmp_path / "suite.toml", SUITE)
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"npb-mpi={tree}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "4 of 4 cases ok" in proc.stdout
    # Built in hpceval's cache, never in the user's tree.
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before
    assert _implementations(tmp_path / "h.db") == {("npb-official", "official/NPB 3.4.2")}
    with open_store(str(tmp_path / "h.db"), create=False) as store:
        ms = [s.measurement for s in store.measurements(1, metric="mops_total")]
    assert len(ms) == 8 and {m.parameters["ranks"] for m in ms} == {1, 2}
    assert all(m.details["verification"] for m in ms)  # NPB's verification lines, as printed
    shown = hpceval("show", "--run", "1", "--db", "h.db", cwd=tmp_path, check=True).stdout
    assert "NPB kernels, official/NPB 3.4.2" in shown
    # A second run finds the programs built (cached by the sources' hash).
    again = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"npb-mpi={tree}",
                    cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr


@requires_mpi
@requires_tool("gfortran")
def test_npb_official_from_a_tar_gz_set_in_the_platform_file(tmp_path: Path) -> None:
    archive = tmp_path / "NPB3.4.2.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(MIMIC, arcname="NPB3.4.2/NPB3.4-MPI")
    platform = (Path(__file__).parents[1] / "src/hpceval/data/platforms/local.toml").read_text()
    write(tmp_path / "plat.toml", platform + f'\n[sources]\nnpb-mpi = "{archive}"\n')
    write(tmp_path / "suite.toml", SUITE.replace('["cg", "ep"]', '["mg"]').replace("[1, 2]", "[2]"))
    proc = hpceval("run", "-p", "plat.toml", "-s", "suite.toml", "--db", "h.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _implementations(tmp_path / "h.db") == {("npb-official", "official/NPB 3.4.2")}


@requires_mpi
@requires_tool("gfortran")
def test_a_failed_verification_is_a_failure_never_a_number(tmp_path: Path) -> None:
    tree = _mimic_copy(tmp_path)
    reference = tree / "common" / "reference.h"
    reference.write_text(reference.read_text().replace("1.6449290668607415", "1.6449"))
    write(tmp_path / "suite.toml", SUITE.replace('["cg", "ep"]', '["cg"]').replace("[1, 2]", "[1]"))
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"npb-mpi={tree}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    assert "official CG class S failed verification: Verification = UNSUCCESSFUL" in proc.stdout
    assert _implementations(tmp_path / "h.db") == set()


def test_missing_sources_are_a_one_line_error_naming_what_to_give(tmp_path: Path) -> None:
    write(tmp_path / "suite.toml", SUITE)
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "hpceval: error: suite.toml: benchmark[0]: NPB 3.4-MPI sources not given: set "
        "[sources] npb-mpi in the platform file or pass --source npb-mpi=PATH, to a directory "
        "or .tar.gz of NPB3.4-MPI"
    )
    assert not (tmp_path / "h.db").exists()  # nothing recorded


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{tmp}/nowhere", "does not exist"),
        ("{tmp}/empty", "is not a NPB3.4-MPI tree (no Makefile)"),
        ("{tmp}/notes.txt", "is neither a directory nor a .tar.gz"),
        ("{tmp}/bad.tar.gz", "cannot unpack"),
    ],
)
def test_a_malformed_source_is_refused_before_anything_runs(
    tmp_path: Path, source: str, message: str
) -> None:
    (tmp_path / "empty").mkdir()
    write(tmp_path / "notes.txt", "not sources")
    write(tmp_path / "bad.tar.gz", "not gzip")
    write(tmp_path / "suite.toml", SUITE)
    given = source.format(tmp=tmp_path)
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"npb-mpi={given}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_an_archive_without_the_tree_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "other.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(MIMIC / "README", arcname="README")
    write(tmp_path / "suite.toml", SUITE)
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"npb-mpi={archive}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "holds no NPB3.4-MPI tree" in proc.stderr


def test_an_unknown_source_kind_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "suite.toml", SUITE)
    proc = hpceval("run", "-s", "suite.toml", "--source", "npb-xyz=/tmp", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown source 'npb-xyz'" in proc.stderr


@requires_mpi
@requires_tool("gfortran")
def test_compare_refuses_a_benchmark_measured_by_two_implementations(tmp_path: Path) -> None:
    """Two platforms, the official NPB of two versions: compare names the flag that allows
    it, and labels the comparison when it is given."""
    tree = _mimic_copy(tmp_path)
    newer = _mimic_copy(tmp_path / "newer")
    mimic = newer / "common" / "mimic.c"
    mimic.write_text(mimic.read_text().replace('"3.4.2"', '"3.4.3"'))
    platform = (Path(__file__).parents[1] / "src/hpceval/data/platforms/local.toml").read_text()
    write(tmp_path / "other.toml", platform.replace('name = "local"', 'name = "other"'))
    suite = SUITE.replace('["cg", "ep"]', '["ep"]').replace("[1, 2]", "[1]")
    write(tmp_path / "suite.toml", suite.replace("repeat = 2", "repeat = 3"))
    for plat, src in (("local", tree), ("other.toml", newer)):
        proc = hpceval("run", "-p", plat, "-s", "suite.toml", "--db", "h.db",
                       "--source", f"npb-mpi={src}", cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    refused = hpceval("compare", "-b", "local", "--db", "h.db", cwd=tmp_path)
    assert refused.returncode == 2
    assert MIX_FLAG in refused.stderr and "official/NPB 3.4.3 on other" in refused.stderr
    labelled = hpceval("compare", "-b", "local", "--db", "h.db", MIX_FLAG, cwd=tmp_path)
    assert labelled.returncode == 0, labelled.stderr
    assert "implementations mixed: npb-official: official/NPB 3.4.2 on local" in labelled.stdout


@requires_mpi
@requires_tool("gfortran")
def test_validate_interleaves_both_programs_and_stores_the_ratio(tmp_path: Path) -> None:
    tree = _mimic_copy(tmp_path)
    proc = hpceval("validate", "--db", "v.db", "--kernels", "cg", "--classes", "S",
                   "--ranks", "1", "--rounds", "3", "--source", f"npb-mpi={tree}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "hpceval CG class S on 1 ranks = " in proc.stdout
    with open_store(str(tmp_path / "v.db"), create=False) as store:
        stored = store.measurements(1)
        executions = store.executions(1)
    ratio = [s.measurement for s in stored if s.measurement.metric == "ratio_to_official"]
    assert len(ratio) == 1 and len(ratio[0].samples) == 3
    assert ratio[0].details["reference"] == "official/NPB 3.4.2"
    stats = ratio[0].statistics
    assert stats is not None and stats.ci_low is not None and stats.ci_low <= ratio[0].value
    # Interleaved: own, official, own, official, ...
    order = [e.benchmark for e in sorted(executions, key=lambda e: e.started)]
    assert order == ["npb", "npb-official"] * 3
    shown = hpceval("show", "--run", "1", "--db", "v.db", cwd=tmp_path, check=True).stdout
    assert "vs official" in shown and "NPB 3.4.2 [" in shown
    hpceval("report", "--out", "rep", "--db", "v.db", cwd=tmp_path, check=True)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "hpceval CG class S on 1 ranks = " in page and "3 interleaved pairs" in page
    official_table = (tmp_path / "rep" / "tables" / "npb_official.csv").read_text()
    # The official code's table names the implementation and the version it printed.
    assert "implementation" in official_table.splitlines()[0]
    assert "official/NPB 3.4.2" in official_table


def test_validate_without_sources_is_a_one_line_error(tmp_path: Path) -> None:
    proc = hpceval("validate", "--db", "v.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert "NPB 3.4-MPI sources not given" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_mixed_implementations_are_found_per_benchmark() -> None:
    rows = [
        ("a", "npb", "hpceval"),
        ("b", "npb", "hpceval"),
        ("a", "npb-official", "official/NPB 3.4.2"),
        ("b", "npb-official", "official/NPB 3.4.3"),
        ("c", "npb-official", "official/NPB 3.4.3"),
    ]
    assert mixed_implementations(rows, {"a", "b"}) == [
        "npb-official: official/NPB 3.4.2 on a; official/NPB 3.4.3 on b"
    ]
    assert mixed_implementations(rows, {"b", "c"}) == []


def _mops(
    benchmark: str, value: float, ranks: int = 1, implementation: str = "hpceval"
) -> Measurement:
    return Measurement(
        benchmark=benchmark, metric="mops_total", value=value, unit="Mop/s",
        parameters={"kernel": "cg", "class": "A", "ranks": ranks},
        samples=(value,), implementation=implementation,
    )  # fmt: skip


def test_paired_figures_pair_the_same_round_and_placement() -> None:
    own = [("rep=1", _mops("npb", 110.0)), ("rep=2", _mops("npb", 90.0)),
           ("rep=1", _mops("npb", 50.0, ranks=2))]  # fmt: skip
    npb34 = "official/NPB 3.4"
    official = [("rep=1", _mops("npb-official", 100.0, implementation=npb34)),
                ("rep=2", _mops("npb-official", 100.0, implementation=npb34))]  # fmt: skip
    (figure,) = paired_figures(own, official)
    assert figure.ratios == (1.1, 0.9)
    assert figure.official_implementation == "official/NPB 3.4"
    assert figure.geometric_mean == pytest.approx((1.1 * 0.9) ** 0.5)
    low, high = figure.interval() or (0.0, 0.0)
    assert low < figure.geometric_mean < high


def test_a_schema_3_database_gets_the_implementation_column(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with open_store(str(db)):
        pass
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE measurements DROP COLUMN implementation")
        conn.execute("UPDATE schema_info SET version = 3")
    with open_store(str(db)) as store:
        assert store.upgraded_from == 3
    with sqlite3.connect(db) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(measurements)")]
    assert "implementation" in columns


MZ_MIMIC = DATA / "official" / "npb-mz-mpi" / "NPB3.4-MZ-MPI"


@requires_mpi
@requires_tool("gfortran")
def test_npb_mz_official_builds_runs_and_verifies(tmp_path: Path) -> None:
    tree = tmp_path / "NPB3.4-MZ-MPI"
    shutil.copytree(MZ_MIMIC, tree)
    write(tmp_path / "suite.toml", """
name = "mz"
[[benchmark]]
name = "npb-mz-official"
benchmarks = ["bt-mz", "sp-mz"]
classes = ["S"]
ranks = [2]
""")  # fmt: skip
    proc = hpceval("run", "-s", "suite.toml", "--db", "h.db", "--source", f"npb-mz-mpi={tree}",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert _implementations(tmp_path / "h.db") == {("npb-mz-official", "official/NPB-MZ 3.4.2")}
    reference = tree / "common" / "reference.h"
    reference.write_text(reference.read_text().replace("1.6449290668607415", "1.6"))
    failed = hpceval("run", "-s", "suite.toml", "--db", "f.db", "--source", f"npb-mz-mpi={tree}",
                     cwd=tmp_path)  # fmt: skip
    assert failed.returncode == 1
    assert "official BT-MZ class S failed verification" in failed.stdout


def test_an_archive_member_outside_the_tree_is_refused(tmp_path: Path) -> None:
    import io

    from hpceval.errors import UserError
    from hpceval.sources import private_tree

    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(MIMIC, arcname="NPB3.4-MPI")
        data = b"owned"
        info = tarfile.TarInfo("../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(UserError, match="cannot unpack"):
        private_tree("npb-mpi", archive, "gcc", ["-O3"])
    assert not (tmp_path / "outside.txt").exists()


def test_the_private_tree_is_keyed_by_the_sources(tmp_path: Path) -> None:
    from hpceval.sources import private_tree

    tree = _mimic_copy(tmp_path)
    first, digest = private_tree("npb-mpi", tree, "gcc 12", ["-O3"])
    again, same = private_tree("npb-mpi", tree, "gcc 12", ["-O3"])
    assert (again, same) == (first, digest) and first.is_relative_to(
        Path(os.environ["HPCEVAL_CACHE"])
    )
    (tree / "common" / "reference.h").write_text("/* changed */\n")
    changed, other = private_tree("npb-mpi", tree, "gcc 12", ["-O3"])
    assert other != digest and changed != first


def test_openmp_fortran_builds_take_the_local_exec_tls_model() -> None:
    # NPB-MZ's threadprivate arrays do not link at -O3 -march=native on znver3 with gcc 12 and
    # binutils 2.40 unless their accesses are local-exec (seen building SP-MZ class B).
    from hpceval.benchmarks.npb_mz_official import make_def_mz
    from hpceval.benchmarks.npb_official import make_def

    flags = ["-O3", "-march=native", "-std=c11"]
    for text in (
        make_def_mz("mpi", mpicc="mpicc", flags=flags),
        make_def_mz("omp", mpicc="mpicc", flags=flags),
        make_def("omp", mpicc="mpicc", flags=flags),
    ):
        fflags = next(line for line in text.splitlines() if line.startswith("FFLAGS ="))
        assert fflags.endswith("-fopenmp -ftls-model=local-exec")
        assert "-std=c11" not in fflags
    mpi = make_def("mpi", mpicc="mpicc", flags=flags)  # no OpenMP, no thread-local data
    assert "-ftls-model" not in mpi
