"""biobench: deterministic generated inputs with what was planted, each tool's verification
on its real captured output (tests/data/biobench/<tool>, the tiny size, seed 1) and on
corrupted copies of it, option checks, and real `hpceval run`s of every tool on a tiny
input (with threads where the tool has them, and a skip with the remedy when missing)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.biobench import generate as g
from hpceval.benchmarks.biobench import point_of_run, step_times, verify
from hpceval.benchmarks.biobench.tools import SIZES, TOOL_NAMES, write_input
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure
from hpceval.model import ExecutionStatus
from hpceval.store import open_store

from .conftest import DATA, entry_cases, requires_mpi, requires_tool, run_suite
from .test_skip import path_without

CAPTURED = DATA / "biobench"
PLATFORM = PlatformConfig(name="l", cores_per_node=2)


def captured(tool: str, name: str) -> str:
    return (CAPTURED / tool / name).read_text()


def expected(tool: str) -> dict:
    return json.loads(captured(tool, "expected.json"))


def test_inputs_are_deterministic_and_plant_what_they_say(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d in (a, b, c):
        d.mkdir()
    write_input("blastp", "tiny", 7, a)
    write_input("blastp", "tiny", 7, b)
    write_input("blastp", "tiny", 8, c)
    for name in ("database.fa", "queries.fa", "expected.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "database.fa").read_bytes() != (c / "database.fa").read_bytes()
    database = g.read_fasta((a / "database.fa").read_text())
    queries = g.read_fasta((a / "queries.fa").read_text())
    for query, subject, start, length in json.loads((a / "expected.json").read_text())["planted"]:
        region = database[subject][start : start + length]
        same = sum(x == y for x, y in zip(region, queries[query], strict=True)) / length
        assert 0.5 < same < 0.9  # 30 % substitutions, drawn per position
    # The same bytes on another day and machine: the captured tiny inputs' records.
    for tool in TOOL_NAMES:
        d = tmp_path / tool
        d.mkdir()
        write_input(tool, "tiny", 1, d)
        assert json.loads((d / "expected.json").read_text()) == expected(tool), tool
    assert (tmp_path / "velvet" / "genome.fa").read_text() == captured("velvet", "genome.fa")


def test_mutation_rate_and_n50() -> None:
    rng = random.Random(3)
    seq = g.random_sequence(rng, 100_000, g.DNA)
    changed = sum(x != y for x, y in zip(seq, g.mutate(rng, seq, 0.05, g.DNA), strict=True))
    assert 4500 < changed < 5500
    assert g.n50([10, 20, 30, 40]) == 30 and g.n50([100]) == 100 and g.n50([]) == 0
    assert g.reverse_complement("AACGT") == "ACGTT"


@pytest.mark.parametrize("tool", ["blastn", "blastp"])
def test_blast_captured_and_corrupted(tool: str) -> None:
    text = captured(tool, "hits.tsv")
    facts = verify.check_blast(text, expected(tool))
    assert facts["planted_found"] == SIZES[tool]["tiny"]["queries"] == 10
    first_query = expected(tool)["planted"][0][0]
    without = "\n".join(ln for ln in text.splitlines() if not ln.startswith(first_query + "\t"))
    with pytest.raises(BenchmarkFailure, match=f"planted query {first_query} has no hit"):
        verify.check_blast(without, expected(tool))
    moved = expected(tool)
    moved["planted"][0][1] = moved["planted"][1][1]  # another subject than the one it hit
    with pytest.raises(BenchmarkFailure, match="best hit"):
        verify.check_blast(text, moved)


def test_clustalw_captured_and_corrupted() -> None:
    text = captured("clustalw", "alignment.aln")
    facts = verify.check_clustal(text, expected("clustalw"))
    assert facts["pairwise_identity"] > 0.6
    rows = verify.parse_clustal(text)
    name, row = next(iter(rows.items()))
    residue = next(i for i, ch in enumerate(row) if ch != "-")
    swapped = "W" if row[residue] != "W" else "Y"
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(name + " "))
    start = lines[at].index(row[:60], len(name))
    lines[at] = lines[at][:start + residue] + swapped + lines[at][start + residue + 1:]  # fmt: skip
    with pytest.raises(BenchmarkFailure, match=f"row {name} is not its input"):
        verify.check_clustal("\n".join(lines), expected("clustalw"))
    # Rows shifted against each other: the input is reproduced but no longer aligned.
    width = 7 * len(rows) + max(len(r.replace("-", "")) for r in rows.values())
    shuffled = "CLUSTAL 2.1\n\n" + "\n".join(
        f"{n} {('-' * (7 * i) + r.replace('-', '')).ljust(width, '-')}"
        for i, (n, r) in enumerate(rows.items())
    )
    with pytest.raises(BenchmarkFailure, match="pairwise identity"):
        verify.check_clustal(shuffled, expected("clustalw"))
    with pytest.raises(BenchmarkFailure, match="CLUSTAL header"):
        verify.check_clustal("garbage\n", expected("clustalw"))


def test_hmmer_captured_and_corrupted() -> None:
    text = captured("hmmer", "hits.tbl")
    facts = verify.check_hmmer(text, expected("hmmer"))
    assert facts["planted_found"] == 10 and facts["false_hits"] == 0
    carrier = expected("hmmer")["carriers"][0]
    without = "\n".join(ln for ln in text.splitlines() if not ln.startswith(carrier + " "))
    with pytest.raises(BenchmarkFailure, match="1 of 10 planted domains not found"):
        verify.check_hmmer(without, expected("hmmer"))
    truncated = "\n".join(ln for ln in text.splitlines() if "[ok]" not in ln)
    with pytest.raises(BenchmarkFailure, match=r"\[ok\]"):
        verify.check_hmmer(truncated, expected("hmmer"))


def test_mummer_captured_and_corrupted() -> None:
    text = captured("mummer", "coords.tsv")
    facts = verify.check_mummer(text, expected("mummer"))
    assert facts["coverage"] > 0.99 and 98.0 < facts["identity_percent"] < 99.5
    longest = max(text.splitlines(), key=lambda ln: int(ln.split("\t")[4]))
    with pytest.raises(BenchmarkFailure, match="cover"):
        verify.check_mummer(text.replace(longest + "\n", ""), expected("mummer"))
    forward_only = "\n".join(
        ln for ln in text.splitlines() if int(ln.split("\t")[2]) < int(ln.split("\t")[3])
    )
    with pytest.raises(BenchmarkFailure, match=r"inversion|cover"):
        verify.check_mummer(forward_only, expected("mummer"))
    low = "\n".join(
        "\t".join([*f[:6], "90.00", *f[7:]])
        for f in (ln.split("\t") for ln in text.splitlines() if ln)
    )
    with pytest.raises(BenchmarkFailure, match="identity"):
        verify.check_mummer(low, expected("mummer"))


def test_velvet_captured_and_corrupted() -> None:
    genome = "".join(captured("velvet", "genome.fa").splitlines()[1:])
    contigs = captured("velvet", "contigs.fa")
    facts = verify.check_velvet(contigs, genome, expected("velvet"))
    assert facts["n50"] >= 0.2 * len(genome) and facts["worst_kmer_match"] > 0.95
    foreign = g.random_sequence(random.Random(9), 400, g.DNA)
    with pytest.raises(BenchmarkFailure, match="does not map back"):
        verify.check_velvet(contigs + f">NODE_foreign\n{foreign}\n", genome, expected("velvet"))
    with pytest.raises(BenchmarkFailure, match="N50"):
        verify.check_velvet(">a\n" + genome[:300] + "\n", genome, expected("velvet"))


def test_runner_output_and_the_figure(tmp_path: Path) -> None:
    stdout = captured("hmmer", "runner.txt")
    times = step_times(stdout, "hmmer")
    assert times["timed"] == times["hmmsearch"]  # hmmbuild is preparation
    (case,) = entry_cases(get_benchmark("biobench"), {"tool": ["hmmer"], "size": "tiny"},
                          PLATFORM)  # fmt: skip
    run_dir, inputs = tmp_path / "run", tmp_path / "inputs"
    run_dir.mkdir()
    inputs.mkdir()
    (run_dir / "hits.tbl").write_text(captured("hmmer", "hits.tbl"))
    (inputs / "expected.json").write_text(captured("hmmer", "expected.json"))
    point = point_of_run(stdout, case, "rep=1", run_dir, inputs)
    by = {m.metric: m for m in point.measurements}
    assert by["throughput"].value == pytest.approx(300 / times["hmmsearch"])
    assert by["throughput"].unit == "sequences/s" and by["time"].unit == "s"
    failed = stdout.replace('"status": "ok"', '"status": "failed"')
    with pytest.raises(BenchmarkFailure, match="end record"):
        step_times(failed, "hmmer")
    error = '{"record": "error", "message": "hmmsearch exited with status 1: Error"}'
    with pytest.raises(BenchmarkFailure, match="exited with status 1"):
        step_times(error, "hmmer")


def test_options_refuse_threads_for_single_threaded_tools() -> None:
    bench = get_benchmark("biobench")
    with pytest.raises(ValueError, match="clustalw, mummer run"):
        bench.parse_options({"tool": ["blastn", "clustalw", "mummer"], "threads": [1, 2]})
    with pytest.raises(ValueError, match="tool"):
        bench.parse_options({"tool": ["bowtie"]})
    cases = entry_cases(bench, {"tool": ["blastp", "hmmer"], "threads": [1, 2]}, PLATFORM)
    assert [(c.parameters["tool"], c.placement.threads_per_rank) for c in cases] == [
        ("blastp", 1), ("blastp", 2), ("hmmer", 1), ("hmmer", 2),
    ]  # fmt: skip


BIOBENCH_TINY = """
name = "biobench-tiny"
[[benchmark]]
name = "biobench"
size = "tiny"
tool = {tools}
threads = {threads}
"""


@requires_mpi
@requires_tool("blastn")
@requires_tool("clustalw")
@requires_tool("hmmsearch")
@requires_tool("nucmer")
@requires_tool("velveth")
def test_every_tool_runs_and_verifies(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "r.db"))
    body = BIOBENCH_TINY.format(tools=json.dumps(list(TOOL_NAMES)), threads="[1]")
    body += BIOBENCH_TINY.split("\n", 2)[2].format(tools='["blastn", "hmmer"]', threads="[2]")
    _, ms = run_suite(tmp_path, store, body)
    figures = [m for m in ms if m.metric == "throughput"]
    assert sorted((str(m.parameters["tool"]), int(m.parameters["threads_per_rank"]))
                  for m in figures) == sorted(
        [(t, 1) for t in TOOL_NAMES] + [("blastn", 2), ("hmmer", 2)])  # fmt: skip
    for m in figures:
        assert m.value > 0 and m.parameters["tool_version"] != "unknown", m
    velvet = next(m for m in figures if m.parameters["tool"] == "velvet")
    assert velvet.details["n50"] >= 4000


@requires_mpi
def test_missing_tool_is_skipped_with_the_remedy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without(tmp_path, "nucmer"))
    store = open_store(str(tmp_path / "r.db"))
    run_id, ms = run_suite(tmp_path, store, BIOBENCH_TINY.format(tools='["mummer"]', threads="[1]"))
    assert ms == []
    (execution,) = store.executions(run_id)
    assert execution.status == ExecutionStatus.SKIPPED.value
    assert execution.error == (
        "nucmer not found on PATH; install Debian package mummer (./setup.sh deps)"
    )


def test_cached_inputs_follow_the_size_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed size table or generator setting gets a fresh input, never a stale one
    (measured: a cache keyed by tool, size and seed alone kept serving old sizes)."""
    from hpceval.benchmarks import biobench
    from hpceval.benchmarks.biobench import tools

    before = biobench.input_key("blastn", "small")
    assert biobench.input_key("blastn", "small") == before  # stable
    bigger = {**SIZES["blastn"]["small"], "queries": 401}
    monkeypatch.setitem(tools.SIZES["blastn"], "small", bigger)
    assert biobench.input_key("blastn", "small") != before
    monkeypatch.undo()
    monkeypatch.setattr(tools, "BLASTN_DIVERGENCE", 0.2)
    assert biobench.input_key("blastn", "small") != before
