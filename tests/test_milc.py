"""milc: MILC's su3_rmd output parsed and checked (real captured outputs of MILC 7.8.1 built
from its sources by the recipe, 8^4 on 1 and 2 ranks), corrupted outputs refused, bad
sources refused with a one-line error, the build in a private copy of a tree or an archive
(`[sources] milc`, `--source milc=PATH`), and (long) the recipe itself: su3_rmd built from a
MILC tree and run through `hpceval run` at 1 and 2 ranks, the plaquettes equal."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.milc import build_su3_rmd, input_file, milc_layout, milc_point
from hpceval.benchmarks.milc.output import check_milc_output, parse_milc_output
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.store import open_store

from .cli_helpers import invoke, one_line_error
from .conftest import DATA, entry_cases, requires_mpi, write

MILC = DATA / "milc"
ONE = (MILC / "su3_rmd-8x8x8x8-1rank.txt").read_text()
TWO = (MILC / "su3_rmd-8x8x8x8-2ranks.txt").read_text()
PLATFORM = PlatformConfig(name="l", cores_per_node=2)
# The recipe's long test builds from this tree (a milc_qcd 7.x checkout), when present.
MILC_SOURCE = Path(os.environ.get("HPCEVAL_MILC_SOURCE", "/work/ref/milc"))


def fake_tree(root: Path) -> Path:
    for d in ("ks_imp_dyn", "generic_ks", "libraries"):
        (root / d).mkdir(parents=True)
    (root / "Makefile").write_text("")
    (root / "ks_imp_dyn" / "Make_template").write_text("")
    return root


def platform_with(tree: Path) -> PlatformConfig:
    return PlatformConfig(name="l", cores_per_node=2, sources={"milc": str(tree)})


def case_of(tmp_path: Path, ranks: int):
    platform = platform_with(fake_tree(tmp_path / "milc"))
    (case,) = entry_cases(get_benchmark("milc"), {"lattice": ["8"], "ranks": [ranks]}, platform)
    return case


def test_captured_outputs_parse_and_agree_across_ranks(tmp_path: Path) -> None:
    one, two = parse_milc_output(ONE), parse_milc_output(TWO)
    assert one.version == "7.8.1" and (one.nodes, two.nodes) == (1, 2)
    assert one.local == (8, 8, 8, 8) and two.local == (4, 8, 8, 8)
    assert one.total_iters == two.total_iters == 563
    assert len(one.plaquettes) == 2
    for (a, b), (c, d) in zip(one.plaquettes, two.plaquettes, strict=True):
        assert a == pytest.approx(c, rel=1e-12) and b == pytest.approx(d, rel=1e-12)
    point = milc_point(ONE, case_of(tmp_path, 1), "rep=1")
    by = {m.metric: m for m in point.measurements}
    assert by["time"].value == pytest.approx(24.08077)
    assert by["cg_rate"].value == pytest.approx(563 / 24.08077)
    assert by["time_per_trajectory"].value == pytest.approx(24.08077 / 2)
    assert by["cg_rate"].parameters["milc_version"] == "7.8.1"


@pytest.mark.parametrize(
    ("edit", "cause"),
    [(lambda t: t.replace("RUNNING COMPLETED", ""), "RUNNING COMPLETED"),
     (lambda t: t.replace(" OK converged", " NOT converged", 1), "did not converge"),
     (lambda t: t.replace("PLAQ:\t2.8183", "XPLAQ:\t2.8183"), "1 plaquette lines"),
     (lambda t: t.replace("PLAQ:\t2.9032504522420290", "PLAQ:\t4.5"), "outside"),
     (lambda t: t.replace("Time = 2.408077e+01", "Time = nan"), "Time"),
     (lambda t: t.replace("with 1 nodes", "with 2 nodes"), "ran on 2 ranks")],
)  # fmt: skip
def test_corrupted_outputs_are_failures(edit, cause: str) -> None:
    with pytest.raises(BenchmarkFailure, match=cause):
        check_milc_output(parse_milc_output(edit(ONE)), ranks=1, trajectories=2)


def test_input_file_is_the_cases(tmp_path: Path) -> None:
    """The generated input says what the captured run's input said (the default options on
    8^4), parameter by parameter, numerically."""

    def values(text: str) -> dict[str, str]:
        return {ln.split()[0]: " ".join(ln.split()[1:]) for ln in text.splitlines() if ln.strip()}

    mine, captured = (
        values(input_file(case_of(tmp_path, 2))),
        values((MILC / "su3_rmd-8x8x8x8.in").read_text()),
    )
    assert mine.keys() == captured.keys()
    for key, value in captured.items():
        if value:
            assert float(mine[key]) == pytest.approx(float(value)), key
        else:
            assert mine[key] == "", key


def test_layout_is_milcs_and_impossible_ones_are_refused(tmp_path: Path) -> None:
    # The captured runs' "ON EACH NODE (RANK)" lines.
    assert milc_layout((8, 8, 8, 8), 1) == parse_milc_output(ONE).local
    assert milc_layout((8, 8, 8, 8), 2) == parse_milc_output(TWO).local
    assert milc_layout((8, 8, 8, 8), 4) == (4, 4, 8, 8)
    platform = platform_with(fake_tree(tmp_path / "milc"))
    with pytest.raises(UserError, match="Naik hop needs every local extent >= 4"):
        entry_cases(get_benchmark("milc"), {"lattice": ["4"], "ranks": [2]}, platform)
    with pytest.raises(UserError, match="not enough factors of 3"):
        milc_layout((8, 8, 8, 8), 3)


def test_bad_sources_are_one_line_errors(tmp_path: Path) -> None:
    bench = get_benchmark("milc")
    with pytest.raises(UserError, match=r"MILC sources not given: set \[sources\] milc"):
        entry_cases(bench, {"lattice": ["8"], "ranks": [1]}, PLATFORM)
    with pytest.raises(UserError, match="does not exist"):
        entry_cases(bench, {"ranks": [1]}, platform_with(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"is not a milc_qcd \(version 7\) tree \(no Makefile\)"):
        entry_cases(bench, {"ranks": [1]}, platform_with(tmp_path / "empty"))
    db = str(tmp_path / "r.db")
    suite = write(tmp_path / "s.toml", 'name = "s"\ndescription = "d"\n[[benchmark]]\n'
                  'name = "milc"\nranks = [1]\n')  # fmt: skip
    one_line_error(invoke("run", "--suite", str(suite), "--source",
                          f"milc={tmp_path / 'empty'}", "--db", db),
                   "not a milc_qcd (version 7) tree")  # fmt: skip
    # The suite option of earlier versions: refused, naming where the sources go now.
    old = write(tmp_path / "old.toml", 'name = "s"\ndescription = "d"\n[[benchmark]]\n'
                f'name = "milc"\nsource = "{tmp_path / "empty"}"\n')  # fmt: skip
    one_line_error(invoke("run", "--suite", str(old), "--db", db),
                   "[sources] table, or `hpceval run --source milc=PATH`")  # fmt: skip


FAKE_MAKE = """#!/bin/sh
# Stands in for make in ks_imp_dyn: records its arguments, makes an executable su3_rmd.
echo "$@" > make-args
printf '#!/bin/sh\\necho su3_rmd\\n' > su3_rmd
chmod +x su3_rmd
"""


def test_the_sources_are_built_in_a_private_copy_of_a_tree_or_an_archive(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path / "milc_qcd-7.8.1")
    make = write(tmp_path / "fake-make", FAKE_MAKE)
    make.chmod(0o755)
    archive = tmp_path / "milc.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
    built = []
    for source in (tree, archive):
        exe = build_su3_rmd(source, compiler="mpicc", compiler_identity="mpi x; gcc y",
                            make=str(make))  # fmt: skip
        assert exe.name == "su3_rmd" and os.access(exe, os.X_OK)
        assert not exe.is_relative_to(tmp_path)  # in the build cache, not the user's files
        args = (exe.parent / "make-args").read_text().split()
        assert args[:3] == ["su3_rmd", "CC=mpicc", "MY_CC=mpicc"] and "MPP=true" in args
        built.append(exe)
    assert built[0] != built[1]  # two sources (their hashes differ): two copies
    assert sorted(p.name for p in tree.rglob("*")) == sorted(
        ["ks_imp_dyn", "generic_ks", "libraries", "Makefile", "Make_template"]
    )  # the user's tree is left as it was
    # The same sources again: the cached build, not a new one.
    (built[0].parent / "make-args").unlink()
    assert build_su3_rmd(tree, compiler="mpicc", compiler_identity="mpi x; gcc y",
                         make=str(make)) == built[0]  # fmt: skip
    assert not (built[0].parent / "make-args").exists()
    # An archive with a member outside its tree is refused, nothing unpacked.
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
        tar.add(make, arcname="../escaped")
    with pytest.raises(UserError, match="outside the archive's tree"):
        build_su3_rmd(evil, compiler="mpicc", compiler_identity="mpi x; gcc y", make=str(make))


@pytest.mark.long
@requires_mpi
@pytest.mark.skipif(
    not (MILC_SOURCE / "ks_imp_dyn").is_dir(),
    reason=f"no MILC source tree at {MILC_SOURCE} (HPCEVAL_MILC_SOURCE)",
)
def test_recipe_builds_and_runs_su3_rmd(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.toml", 'name = "s"\ndescription = "d"\n[[benchmark]]\n'
                  'name = "milc"\nlattice = ["8"]\n'
                  "ranks = [1, 2]\ntrajectories = 1\nsteps = 2\ntime_limit_s = 900\n")  # fmt: skip
    db = str(tmp_path / "r.db")
    result = invoke("run", "--suite", str(suite), "--source", f"milc={MILC_SOURCE}", "--db", db)
    assert result.exit_code == 0, result.output
    ms = [s.measurement for s in open_store(db).measurements(metric="cg_rate")]
    assert sorted(int(m.parameters["ranks"]) for m in ms) == [1, 2]
    (p1,), (p2,) = (
        m.details["plaquettes"] for m in sorted(ms, key=lambda m: m.parameters["ranks"])
    )
    assert p1 == pytest.approx(p2, rel=1e-12)
    assert all(m.value > 0 for m in ms)
