"""The BioBench tools: per tool, the generated input at each size, the steps that run it
(argv lists, no shell) and what the verification must find.

- blastn: a random DNA database, queries planted with 10 % substitutions; makeblastdb,
  blastn; queries/s.
- blastp: a random protein database, queries planted with 30 %; makeblastdb, blastp;
  queries/s.
- clustalw: descendants of one random protein (substitutions, short indels); clustalw;
  sequences aligned/s.
- hmmer: a domain family's seed alignment, random proteins carrying copies; hmmbuild,
  hmmsearch; database sequences searched/s.
- mummer: a random genome and its copy (1 % SNPs, an inversion); nucmer, show-coords;
  Mbases (both genomes) aligned/s.
- velvet: reads sampled from a random genome (30x, 0.5 % errors); velveth, velvetg;
  Mbases of reads assembled/s.

The figure is measured on the main step (blastn, hmmsearch, nucmer, clustalw; velveth and
velvetg together, both are the assembly); preparation steps (makeblastdb, hmmbuild,
show-coords) are timed too and kept in the details.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from hpceval.benchmarks.base import Tool
from hpceval.benchmarks.biobench import generate as g

ToolName = Literal["blastn", "blastp", "clustalw", "hmmer", "mummer", "velvet"]
Size = Literal["tiny", "small", "moderate"]
TOOL_NAMES: Final[tuple[ToolName, ...]] = (
    "blastn", "blastp", "clustalw", "hmmer", "mummer", "velvet",
)  # fmt: skip

QUERIES_PER_SECOND: Final = "queries/s"  # declared in benchmark.toml
SEQUENCES_PER_SECOND: Final = "sequences/s"
MBASES_PER_SECOND: Final = "Mbases/s"

BLAST = Tool(
    "blastn", package="ncbi-blast+", needed_for="the BioBench BLAST cases (queries/s)",
    package_words="NCBI BLAST+ (blastn, blastp, makeblastdb)", version_args=None,
)  # fmt: skip
CLUSTALW = Tool(
    "clustalw", package="clustalw", needed_for="the BioBench ClustalW case (sequences/s)",
    package_words="ClustalW 2", version_args=None,
)  # fmt: skip
HMMER = Tool(
    "hmmsearch", package="hmmer", needed_for="the BioBench HMMER case (sequences/s)",
    package_words="HMMER 3 (hmmbuild, hmmsearch)", version_args=None,
)  # fmt: skip
MUMMER = Tool(
    "nucmer", package="mummer", needed_for="the BioBench MUMmer case (Mbases/s)",
    package_words="MUMmer 3 (nucmer, show-coords)", version_args=None,
)  # fmt: skip
VELVET = Tool(
    "velveth", package="velvet", needed_for="the BioBench Velvet case (Mbases/s)",
    package_words="Velvet (velveth, velvetg)", version_args=None,
)  # fmt: skip

# Per tool: the Tool (doctor, skip) and every program its steps start.
PROGRAMS: Final[Mapping[ToolName, tuple[Tool, tuple[str, ...]]]] = {
    "blastn": (BLAST, ("makeblastdb", "blastn")),
    "blastp": (BLAST, ("makeblastdb", "blastp")),
    "clustalw": (CLUSTALW, ("clustalw",)),
    "hmmer": (HMMER, ("hmmbuild", "hmmsearch")),
    "mummer": (MUMMER, ("nucmer", "show-coords")),
    "velvet": (VELVET, ("velveth", "velvetg")),
}
# Tools that run threads, and how they are told (velvet: OpenMP, when built with it).
THREADED: Final = frozenset({"blastn", "blastp", "hmmer", "velvet"})

# The generator's parameters per tool and size: tiny for tests (well under a second),
# small for the `apps` suite (seconds), moderate for `apps-seed` (tens of seconds).
SIZES: Final[Mapping[ToolName, Mapping[Size, Mapping[str, Any]]]] = {
    "blastn": {
        "tiny": {"subjects": 50, "subject_length": 2000, "queries": 10, "query_length": 300},
        "small": {"subjects": 2000, "subject_length": 5000, "queries": 400, "query_length": 500},
        "moderate": {"subjects": 10000, "subject_length": 10000, "queries": 300,
                     "query_length": 1000},
    },
    "blastp": {
        "tiny": {"subjects": 200, "subject_length": 300, "queries": 10, "query_length": 120},
        "small": {"subjects": 5000, "subject_length": 350, "queries": 50, "query_length": 150},
        "moderate": {"subjects": 20000, "subject_length": 350, "queries": 150,
                     "query_length": 200},
    },
    "clustalw": {
        "tiny": {"count": 8, "length": 120},
        "small": {"count": 40, "length": 300},
        "moderate": {"count": 100, "length": 400},
    },
    "hmmer": {
        "tiny": {"sequences": 300, "sequence_length": 250, "carriers": 10, "seed_members": 12},
        "small": {"sequences": 100_000, "sequence_length": 350, "carriers": 50,
                  "seed_members": 25},
        "moderate": {"sequences": 400_000, "sequence_length": 350, "carriers": 200,
                     "seed_members": 40},
    },
    "mummer": {
        "tiny": {"length": 50_000, "inversion": 2000},
        "small": {"length": 1_000_000, "inversion": 20_000},
        "moderate": {"length": 5_000_000, "inversion": 50_000},
    },
    "velvet": {
        "tiny": {"genome_length": 20_000},
        "small": {"genome_length": 200_000},
        "moderate": {"genome_length": 800_000},
    },
}  # fmt: skip

# Fixed generator settings (the same at every size).
BLASTN_DIVERGENCE = 0.10
BLASTP_DIVERGENCE = 0.30
CLUSTAL_SUBSTITUTION = 0.15
CLUSTAL_INDEL = 0.02
DOMAIN_LENGTH = 80
DOMAIN_DIVERGENCE = 0.25
SNP_RATE = 0.01
READ_LENGTH = 100
COVERAGE = 30.0
READ_ERROR_RATE = 0.005
VELVET_K = 31
HMMER_E_VALUE = 1e-3
BLAST_E_VALUE = 1e-5


@dataclass(frozen=True)
class Step:
    """One program run: argv, the file its stdout goes to (None: discarded), extra env."""

    name: str
    argv: list[str]
    stdout: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timed: bool = True  # part of the figure's time


@dataclass(frozen=True)
class Prepared:
    """A generated input: its files (in `directory`) and what the verification expects."""

    directory: Path
    expected: dict[str, Any]
    work_units: float  # queries, sequences or Mbases: the figure's numerator


def write_input(tool: ToolName, size: Size, seed: int, directory: Path) -> Prepared:
    """Generate the input files of a case in `directory` and record what was planted
    (expected.json); deterministic in (tool, size, seed)."""
    p = dict(SIZES[tool][size])
    expected: dict[str, Any] = {"tool": tool, "size": size, "seed": seed, **p}
    work: float
    if tool in ("blastn", "blastp"):
        alphabet = g.DNA if tool == "blastn" else g.AMINO
        divergence = BLASTN_DIVERGENCE if tool == "blastn" else BLASTP_DIVERGENCE
        search = g.search_input(seed, alphabet=alphabet, divergence=divergence, **p)
        (directory / "database.fa").write_text(g.fasta(search.database.items()))
        (directory / "queries.fa").write_text(g.fasta(search.queries.items()))
        expected["planted"] = [[x.query, x.subject, x.start, x.length] for x in search.planted]
        work = float(len(search.queries))
    elif tool == "clustalw":
        sequences = g.related_sequences(
            seed, alphabet=g.AMINO, substitution=CLUSTAL_SUBSTITUTION, indel=CLUSTAL_INDEL, **p
        )
        (directory / "sequences.fa").write_text(g.fasta(sequences.items()))
        expected["sequences"] = sequences
        expected["substitution"] = CLUSTAL_SUBSTITUTION
        work = float(len(sequences))
    elif tool == "hmmer":
        domains = g.domain_input(
            seed, domain_length=DOMAIN_LENGTH, divergence=DOMAIN_DIVERGENCE, **p
        )
        (directory / "seed.afa").write_text(g.fasta(domains.seed_alignment.items()))
        (directory / "database.fa").write_text(g.fasta(domains.database.items()))
        expected["carriers"] = sorted(domains.carriers)
        expected["e_value"] = HMMER_E_VALUE
        work = float(len(domains.database))
    elif tool == "mummer":
        reference, query = g.related_genomes(seed, snp_rate=SNP_RATE, **p)
        (directory / "reference.fa").write_text(g.fasta([("reference", reference)]))
        (directory / "query.fa").write_text(g.fasta([("query", query)]))
        expected["snp_rate"] = SNP_RATE
        work = (len(reference) + len(query)) / 1e6
    else:
        genome, reads = g.sampled_reads(
            seed, read_length=READ_LENGTH, coverage=COVERAGE, error_rate=READ_ERROR_RATE, **p
        )
        (directory / "genome.fa").write_text(g.fasta([("genome", genome)]))
        (directory / "reads.fa").write_text(g.fasta(reads.items()))
        expected["reads"] = len(reads)
        expected["k"] = VELVET_K
        work = len(reads) * READ_LENGTH / 1e6
    expected["work_units"] = work
    (directory / "expected.json").write_text(json.dumps(expected, sort_keys=True))
    return Prepared(directory, expected, work)


def steps(tool: ToolName, inputs: Path, run: Path, threads: int) -> list[Step]:
    """The programs one execution runs, in order; outputs go to `run`."""
    n = str(threads)
    if tool in ("blastn", "blastp"):
        kind = "nucl" if tool == "blastn" else "prot"
        db = str(run / "db")
        return [
            Step("makeblastdb", ["makeblastdb", "-in", str(inputs / "database.fa"),
                                 "-dbtype", kind, "-out", db], timed=False),
            # -task blastn (word 11) for blastn: megablast's 28-mer seeds can miss a
            # planted query at 10 % divergence (measured: 1 of 10 at the tiny size).
            Step(tool, [tool, *(["-task", "blastn"] if tool == "blastn" else []),
                        "-query", str(inputs / "queries.fa"), "-db", db,
                        "-outfmt", "6 qseqid sseqid pident length qstart qend sstart send "
                        "evalue bitscore", "-evalue", f"{BLAST_E_VALUE:g}",
                        "-max_target_seqs", "5", "-num_threads", n,
                        "-out", str(run / "hits.tsv")]),
        ]  # fmt: skip
    if tool == "clustalw":
        return [
            Step("clustalw", ["clustalw", f"-INFILE={inputs / 'sequences.fa'}", "-ALIGN",
                              f"-OUTFILE={run / 'alignment.aln'}",
                              f"-NEWTREE={run / 'guide.dnd'}", "-OUTPUT=CLUSTAL",
                              "-TYPE=PROTEIN", "-QUIET"], stdout="clustalw.log"),
        ]  # fmt: skip
    if tool == "hmmer":
        hmm = str(run / "domain.hmm")
        return [
            Step("hmmbuild", ["hmmbuild", "--informat", "afa", "--amino", "--cpu", n, hmm,
                              str(inputs / "seed.afa")], stdout="hmmbuild.log", timed=False),
            Step("hmmsearch", ["hmmsearch", "--cpu", n, "--noali", "-E", f"{HMMER_E_VALUE:g}",
                               "--tblout", str(run / "hits.tbl"), hmm,
                               str(inputs / "database.fa")], stdout="hmmsearch.log"),
        ]  # fmt: skip
    if tool == "mummer":
        prefix = str(run / "nucmer")
        return [
            Step("nucmer", ["nucmer", "-p", prefix, str(inputs / "reference.fa"),
                            str(inputs / "query.fa")]),
            Step("show-coords", ["show-coords", "-rclTH", f"{prefix}.delta"],
                 stdout="coords.tsv", timed=False),
        ]  # fmt: skip
    velvet_dir = str(run / "assembly")
    env = {"OMP_NUM_THREADS": n, "OMP_THREAD_LIMIT": n}
    return [
        Step("velveth", ["velveth", velvet_dir, str(VELVET_K), "-fasta", "-short",
                         str(inputs / "reads.fa")], stdout="velveth.log", env=env),
        Step("velvetg", ["velvetg", velvet_dir, "-exp_cov", "auto", "-cov_cutoff", "auto"],
             stdout="velvetg.log", env=env),
    ]  # fmt: skip
