"""The BioBench verifications: pure functions of a tool's output text and what the input
generator planted (expected.json). Each raises BenchmarkFailure naming what is wrong, or
returns the facts the measurement keeps in its details.

- BLAST: every planted query's best hit is the subject it was planted in, overlapping the
  planted region by at least half the query.
- ClustalW: every input sequence is in the alignment, each aligned row with its gaps taken
  out is the input sequence exactly, all rows are as long, and the mean pairwise identity
  of the aligned columns is at least MIN_IDENTITY_SHARE of what the generator implies
  (a misaligned result scores near random, ~1/20).
- HMMER: every planted domain carrier is a hit (E <= 1e-3); at most MAX_FALSE_HITS others.
- MUMmer: the alignments cover MIN_COVERAGE of the reference at an identity close to the
  planted SNP rate, and the planted inversion is aligned on the reverse strand.
- Velvet: N50 at least MIN_N50_SHARE of the genome, the contigs together at least
  MIN_ASSEMBLED of it, and every contig maps back: at least MIN_KMER_MATCH of its k-mers
  are the genome's (either strand).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hpceval.benchmarks.biobench import generate as g
from hpceval.errors import BenchmarkFailure

MIN_IDENTITY_SHARE: Final = 0.8
MAX_FALSE_HITS: Final = 2
MIN_COVERAGE: Final = 0.95
MAX_IDENTITY_SHORTFALL: Final = 1.5  # percentage points below 100 x (1 - SNP rate)
MIN_N50_SHARE: Final = 0.2
MIN_ASSEMBLED: Final = 0.9
MIN_KMER_MATCH: Final = 0.95
MIN_CONTIG: Final = 200  # contigs shorter than this are not checked (velvet's own cut-off)


def check_blast(text: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """Tabular hits: qseqid sseqid pident length qstart qend sstart send evalue bitscore."""
    best: dict[str, tuple[float, str, int, int]] = {}
    lines = 0
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise BenchmarkFailure(f"blast: a hit line has {len(fields)} fields, expected 10")
        try:
            query, subject = fields[0], fields[1]
            sstart, send, bits = int(fields[6]), int(fields[7]), float(fields[9])
        except ValueError:
            raise BenchmarkFailure(f"blast: unreadable hit line {line[:80]!r}") from None
        lines += 1
        if query not in best or bits > best[query][0]:
            best[query] = (bits, subject, min(sstart, send), max(sstart, send))
    found = 0
    for query, subject, start, length in expected["planted"]:
        hit = best.get(query)
        if hit is None:
            raise BenchmarkFailure(f"blast: planted query {query} has no hit")
        _, got, lo, hi = hit
        overlap = min(hi, start + length) - max(lo - 1, start)
        if got != subject or overlap < length / 2:
            raise BenchmarkFailure(
                f"blast: query {query}'s best hit is {got} {lo}-{hi}, planted in {subject} "
                f"{start + 1}-{start + length}"
            )
        found += 1
    return {"planted_found": found, "hit_lines": lines}


def parse_clustal(text: str) -> dict[str, str]:
    """Name -> aligned row (with '-') of a CLUSTAL-format alignment."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("CLUSTAL"):
        raise BenchmarkFailure("clustalw: the alignment does not start with a CLUSTAL header")
    rows: dict[str, list[str]] = {}
    for line in lines[1:]:
        if not line.strip() or line[0].isspace():
            continue  # blank lines and the conservation line
        parts = line.split()
        if len(parts) < 2:
            raise BenchmarkFailure(f"clustalw: unreadable alignment line {line[:60]!r}")
        rows.setdefault(parts[0], []).append(parts[1])
    return {name: "".join(chunks) for name, chunks in rows.items()}


def check_clustal(text: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    rows = parse_clustal(text)
    sequences: Mapping[str, str] = expected["sequences"]
    if set(rows) != set(sequences):
        missing = sorted(set(sequences) - set(rows))[:3]
        raise BenchmarkFailure(f"clustalw: the alignment lacks {missing or 'nothing'}, "
                               f"has {len(rows)} rows for {len(sequences)} sequences")  # fmt: skip
    widths = {len(row) for row in rows.values()}
    if len(widths) != 1:
        raise BenchmarkFailure(f"clustalw: aligned rows of different lengths {sorted(widths)}")
    for name, row in rows.items():
        if row.replace("-", "") != sequences[name]:
            raise BenchmarkFailure(f"clustalw: row {name} is not its input sequence with gaps")
    identity = mean_pairwise_identity(list(rows.values()))
    s = float(expected["substitution"])
    implied = (1 - s) ** 2 + s**2 / (len(g.AMINO) - 1)  # two descendants of one ancestor
    if identity < MIN_IDENTITY_SHARE * implied:
        raise BenchmarkFailure(
            f"clustalw: mean pairwise identity {identity:.3f} of the aligned columns, below "
            f"{MIN_IDENTITY_SHARE:g} x the {implied:.3f} the input implies"
        )
    return {"aligned_columns": widths.pop(), "pairwise_identity": identity}


def mean_pairwise_identity(rows: list[str]) -> float:
    """Identical residues over columns where both rows have a residue, over all pairs."""
    same = both = 0
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            for a, b in zip(rows[i], rows[j], strict=True):
                if a != "-" and b != "-":
                    both += 1
                    same += a == b
    return same / both if both else 0.0


def check_hmmer(text: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """hmmsearch --tblout: target name first, full-sequence E-value fifth."""
    hits = set()
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        try:
            e_value = float(fields[4])
        except (IndexError, ValueError):
            raise BenchmarkFailure(f"hmmsearch: unreadable hit line {line[:80]!r}") from None
        if e_value <= float(expected.get("e_value", 1e-3)):
            hits.add(fields[0])
    if not text.rstrip().endswith("[ok]") and "# [ok]" not in text:
        raise BenchmarkFailure("hmmsearch: the hit table does not end with [ok]")
    carriers = set(expected["carriers"])
    missed = sorted(carriers - hits)
    if missed:
        raise BenchmarkFailure(
            f"hmmsearch: {len(missed)} of {len(carriers)} planted domains not found "
            f"(e.g. {missed[0]})"
        )
    false = sorted(hits - carriers)
    if len(false) > MAX_FALSE_HITS:
        raise BenchmarkFailure(
            f"hmmsearch: {len(false)} hits in sequences without the domain (at most "
            f"{MAX_FALSE_HITS})"
        )
    return {"planted_found": len(carriers), "false_hits": len(false)}


def check_mummer(text: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    """show-coords -rclTH: S1 E1 S2 E2 LEN1 LEN2 %IDY LENR LENQ COVR COVQ TAGR TAGQ."""
    intervals: list[tuple[int, int]] = []
    weighted = 0.0
    aligned = 0
    reverse = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            s1, e1, s2, e2, len1 = (int(f) for f in fields[:5])
            identity = float(fields[6])
        except (IndexError, ValueError):
            raise BenchmarkFailure(f"nucmer: unreadable coordinate line {line[:80]!r}") from None
        intervals.append((min(s1, e1), max(s1, e1)))
        weighted += identity * len1
        aligned += len1
        if s2 > e2 and len1 >= expected["inversion"] // 2:
            reverse += 1
    if not intervals:
        raise BenchmarkFailure("nucmer: no alignment between the two genomes")
    covered = covered_length(intervals)
    coverage = covered / int(expected["length"])
    identity = weighted / aligned
    floor = 100 * (1 - float(expected["snp_rate"])) - MAX_IDENTITY_SHORTFALL
    if coverage < MIN_COVERAGE:
        raise BenchmarkFailure(f"nucmer: alignments cover {coverage:.1%} of the reference, "
                               f"below {MIN_COVERAGE:.0%}")  # fmt: skip
    if identity < floor:
        raise BenchmarkFailure(f"nucmer: identity {identity:.2f} %, below {floor:.2f} %")
    if expected["inversion"] and reverse == 0:
        raise BenchmarkFailure("nucmer: the planted inversion is not aligned on the reverse strand")
    return {"coverage": coverage, "identity_percent": identity, "alignments": len(intervals)}


def covered_length(intervals: list[tuple[int, int]]) -> int:
    """Bases covered by the union of closed intervals."""
    total, end = 0, 0
    for lo, hi in sorted(intervals):
        if hi <= end:
            continue
        total += hi - max(lo, end + 1) + 1
        end = hi
    return total


def check_velvet(contigs_text: str, genome: str, expected: Mapping[str, Any]) -> dict[str, Any]:
    try:
        contigs = g.read_fasta(contigs_text)
    except ValueError as e:
        raise BenchmarkFailure(f"velvet: contigs.fa: {e}") from None
    lengths = [len(s) for s in contigs.values() if len(s) >= MIN_CONTIG]
    if not lengths:
        raise BenchmarkFailure("velvet: no contig of at least 200 bases")
    genome_length = len(genome)
    n50 = g.n50(lengths)
    if n50 < MIN_N50_SHARE * genome_length:
        raise BenchmarkFailure(f"velvet: N50 {n50} below {MIN_N50_SHARE:g} x the genome "
                               f"({genome_length} bases)")  # fmt: skip
    if sum(lengths) < MIN_ASSEMBLED * genome_length:
        raise BenchmarkFailure(f"velvet: contigs hold {sum(lengths)} bases, below "
                               f"{MIN_ASSEMBLED:.0%} of the genome's {genome_length}")  # fmt: skip
    k = int(expected.get("k", 31))
    kmers = {genome[i : i + k] for i in range(genome_length - k + 1)}
    rc = g.reverse_complement(genome)
    kmers.update(rc[i : i + k] for i in range(genome_length - k + 1))
    worst = 1.0
    for name, seq in contigs.items():
        if len(seq) < MIN_CONTIG:
            continue
        total = len(seq) - k + 1
        share = sum(seq[i : i + k] in kmers for i in range(total)) / total
        if share < MIN_KMER_MATCH:
            raise BenchmarkFailure(f"velvet: contig {name} does not map back to the genome "
                                   f"({share:.1%} of its {k}-mers are the genome's)")  # fmt: skip
        worst = min(worst, share)
    return {"n50": n50, "contigs": len(lengths), "assembled_bases": sum(lengths),
            "worst_kmer_match": worst}  # fmt: skip
