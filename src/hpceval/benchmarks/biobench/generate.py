"""The BioBench inputs, generated from a seed in pure Python (deterministic: the same seed
and size give the same bytes on every machine): random genomes and proteins, related
sequences, planted matches and domains, sampled reads. Nothing is downloaded.

Every generator returns the sequences and what was planted, so that the verification
knows what the tool must find."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DNA = "ACGT"
# The 20 amino acids, drawn uniformly (a random protein has no structure to find).
AMINO = "ACDEFGHIKLMNPQRSTVWY"
_COMPLEMENT = str.maketrans("ACGT", "TGCA")


def reverse_complement(seq: str) -> str:
    return seq.translate(_COMPLEMENT)[::-1]


def random_sequence(rng: random.Random, length: int, alphabet: str) -> str:
    return "".join(rng.choices(alphabet, k=length))


def mutate(rng: random.Random, seq: str, rate: float, alphabet: str) -> str:
    """Substitutions at `rate` per position (each to another letter). The positions are
    drawn by geometric skips (one random number per substitution, not per letter)."""
    if rate <= 0:
        return seq
    out = list(seq)
    log_keep = math.log1p(-rate) if rate < 1 else -math.inf
    i = -1
    while True:
        i += 1 if rate >= 1 else 1 + int(math.log(1.0 - rng.random()) / log_keep)
        if i >= len(out):
            return "".join(out)
        letter = out[i]
        out[i] = rng.choice([a for a in alphabet if a != letter])


def mutate_with_indels(
    rng: random.Random, seq: str, substitution: float, indel: float, alphabet: str
) -> str:
    """Substitutions, and insertions or deletions of 1-3 letters at `indel` per position."""
    out: list[str] = []
    i = 0
    while i < len(seq):
        r = rng.random()
        if r < indel / 2:
            i += rng.randint(1, 3)  # deletion
            continue
        if r < indel:
            out.append(random_sequence(rng, rng.randint(1, 3), alphabet))  # insertion
        letter = seq[i]
        if rng.random() < substitution:
            letter = rng.choice([a for a in alphabet if a != letter])
        out.append(letter)
        i += 1
    return "".join(out)


def fasta(records: Iterable[tuple[str, str]], width: int = 70) -> str:
    lines = []
    for name, seq in records:
        lines.append(f">{name}")
        lines.extend(seq[i : i + width] for i in range(0, len(seq), width))
    return "\n".join(lines) + "\n"


def read_fasta(text: str) -> dict[str, str]:
    """Name (first word of the header) -> sequence; ValueError on a malformed file."""
    out: dict[str, str] = {}
    name: str | None = None
    parts: list[str] = []
    for line in text.splitlines():
        if line.startswith(">"):
            if name is not None:
                out[name] = "".join(parts)
            words = line[1:].split()
            if not words:
                raise ValueError("a FASTA header without a name")
            name, parts = words[0], []
        elif line.strip():
            if name is None:
                raise ValueError("sequence before the first FASTA header")
            parts.append(line.strip())
    if name is not None:
        out[name] = "".join(parts)
    return out


@dataclass(frozen=True)
class Planted:
    """A query planted in a database sequence at [start, start + length) (0-based)."""

    query: str
    subject: str
    start: int
    length: int


@dataclass(frozen=True)
class SearchInput:
    database: dict[str, str]
    queries: dict[str, str]
    planted: tuple[Planted, ...]


def search_input(
    seed: int,
    *,
    subjects: int,
    subject_length: int,
    queries: int,
    query_length: int,
    alphabet: str,
    divergence: float,
) -> SearchInput:
    """A database of random sequences, and queries each planted (with `divergence`
    substitutions) in a different subject at a random place."""
    if queries > subjects or query_length > subject_length:
        raise ValueError("more queries than subjects, or queries longer than subjects")
    rng = random.Random(seed)
    database = {
        f"s{i:06d}": random_sequence(rng, subject_length, alphabet) for i in range(subjects)
    }
    names = sorted(database)
    chosen = rng.sample(names, queries)
    query_seqs: dict[str, str] = {}
    planted = []
    for q, subject in enumerate(chosen):
        start = rng.randrange(0, subject_length - query_length + 1)
        region = database[subject][start : start + query_length]
        name = f"q{q:05d}"
        query_seqs[name] = mutate(rng, region, divergence, alphabet)
        planted.append(Planted(name, subject, start, query_length))
    return SearchInput(database, query_seqs, tuple(planted))


def related_sequences(
    seed: int, *, count: int, length: int, alphabet: str, substitution: float, indel: float
) -> dict[str, str]:
    """`count` descendants of one random ancestor (star phylogeny), with substitutions and
    short indels: what a multiple alignment has to line up."""
    rng = random.Random(seed)
    ancestor = random_sequence(rng, length, alphabet)
    return {
        f"seq{i:04d}": mutate_with_indels(rng, ancestor, substitution, indel, alphabet)
        for i in range(count)
    }


@dataclass(frozen=True)
class DomainInput:
    seed_alignment: dict[str, str]  # ungapped, equal lengths
    database: dict[str, str]
    carriers: frozenset[str]  # database sequences with a planted domain


def domain_input(
    seed: int,
    *,
    domain_length: int,
    seed_members: int,
    sequences: int,
    sequence_length: int,
    carriers: int,
    divergence: float,
) -> DomainInput:
    """A protein domain family (an ancestor and `seed_members` substituted copies: an
    ungapped seed alignment for hmmbuild), and a database of random proteins, `carriers`
    of them with a fresh copy of the domain planted at a random place."""
    if carriers > sequences or domain_length > sequence_length:
        raise ValueError("more carriers than sequences, or the domain longer than them")
    rng = random.Random(seed)
    ancestor = random_sequence(rng, domain_length, AMINO)
    alignment = {
        f"member{i:03d}": mutate(rng, ancestor, divergence, AMINO) for i in range(seed_members)
    }
    database = {f"p{i:06d}": random_sequence(rng, sequence_length, AMINO) for i in range(sequences)}
    chosen = frozenset(rng.sample(sorted(database), carriers))
    for name in sorted(chosen):
        start = rng.randrange(0, sequence_length - domain_length + 1)
        copy = mutate(rng, ancestor, divergence, AMINO)
        seq = database[name]
        database[name] = seq[:start] + copy + seq[start + domain_length :]
    return DomainInput(alignment, database, chosen)


def related_genomes(seed: int, *, length: int, snp_rate: float, inversion: int) -> tuple[str, str]:
    """A random reference genome and a query: the reference with SNPs at `snp_rate` and one
    segment of `inversion` bases reverse-complemented (what nucmer must align through)."""
    rng = random.Random(seed)
    reference = random_sequence(rng, length, DNA)
    query = mutate(rng, reference, snp_rate, DNA)
    if inversion:
        start = rng.randrange(length // 4, length // 2)
        segment = query[start : start + inversion]
        query = query[:start] + reverse_complement(segment) + query[start + inversion :]
    return reference, query


def sampled_reads(
    seed: int, *, genome_length: int, read_length: int, coverage: float, error_rate: float
) -> tuple[str, dict[str, str]]:
    """A random genome and reads sampled uniformly from both strands at `coverage`, with
    substitution errors at `error_rate`."""
    rng = random.Random(seed)
    genome = random_sequence(rng, genome_length, DNA)
    count = int(coverage * genome_length / read_length)
    reads = {}
    for i in range(count):
        start = rng.randrange(0, genome_length - read_length + 1)
        read = genome[start : start + read_length]
        if rng.random() < 0.5:
            read = reverse_complement(read)
        reads[f"r{i:07d}"] = mutate(rng, read, error_rate, DNA)
    return genome, reads


def n50(lengths: Sequence[int]) -> int:
    """The length L such that contigs of length >= L hold half the assembled bases."""
    total = sum(lengths)
    running = 0
    for length in sorted(lengths, reverse=True):
        running += length
        if 2 * running >= total:
            return length
    return 0
