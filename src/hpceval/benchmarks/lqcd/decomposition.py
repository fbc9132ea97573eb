"""The 4-D domain decomposition of the lattice-QCD mini-application and the communication
it implies: which process grid a lattice gets over a rank count, and the halo bytes and
global sums one CG iteration must send (the figures the program's own counts are checked
against)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hpceval.errors import UserError

NDIM = 4
VECTOR_BYTES = 48  # an SU(3) colour vector: 3 complex doubles
DSLASH_PER_ITERATION = 2  # D_oe then D_eo
ALLREDUCES_PER_ITERATION = 2  # <p, Ap> and <r, r>
# 8 SU(3) matrix-vector products (66 flops) and 7 vector sums (6) per site of a dslash,
# two half-lattice dslash per even site, and 6 vector operations of 12 flops: MILC's 606
# per lattice site for its one-link staggered CG.
FLOPS_PER_EVEN_SITE = DSLASH_PER_ITERATION * (8 * 66 + 7 * 6) + 6 * 12
_LATTICE = re.compile(r"^(\d+)(?:x(\d+)x(\d+)x(\d+))?$")

Extents = tuple[int, int, int, int]


def parse_lattice(text: str) -> Extents:
    """`8` (8^4) or `8x8x8x16`: even extents of at least 2; ValueError naming the cause."""
    found = _LATTICE.match(text.strip())
    if found is None:
        raise ValueError(f"lattice {text!r} is not L or LxLxLxT (e.g. 8 or 8x8x8x16)")
    first = int(found.group(1))
    extents = (first,) * NDIM if found.group(2) is None else tuple(int(g) for g in found.groups())
    for extent in extents:
        if extent < 2 or extent % 2 or extent > 256:
            raise ValueError(f"lattice {text!r}: extents must be even, 2..256")
    return extents[0], extents[1], extents[2], extents[3]


def lattice_label(extents: Sequence[int]) -> str:
    return "x".join(map(str, extents))


@dataclass(frozen=True)
class Decomposition:
    lattice: Extents
    grid: Extents

    @property
    def local(self) -> Extents:
        x, y, z, t = (n // p for n, p in zip(self.lattice, self.grid, strict=True))
        return x, y, z, t

    @property
    def local_volume(self) -> int:
        return math.prod(self.local)

    @property
    def global_volume(self) -> int:
        return math.prod(self.lattice)

    @property
    def ranks(self) -> int:
        return math.prod(self.grid)

    def halo_bytes_per_rank(self) -> int:
        """Bytes one rank sends per CG iteration: in every split direction, each dslash sends
        the face of the source parity (V / (2 l_mu) vectors) to both neighbours."""
        return sum(
            DSLASH_PER_ITERATION * 2 * (self.local_volume // (2 * extent)) * VECTOR_BYTES
            for extent, split in zip(self.local, self.grid, strict=True)
            if split > 1
        )

    def halo_bytes_per_iteration(self) -> int:
        """All ranks together."""
        return self.ranks * self.halo_bytes_per_rank()

    def neighbours(self) -> int:
        """Distinct messages partners per dslash per rank: 2 per split direction (up to 8)."""
        return 2 * sum(1 for p in self.grid if p > 1)

    def flops_per_iteration(self) -> int:
        return FLOPS_PER_EVEN_SITE * self.global_volume // 2


def _valid(lattice: Extents, grid: Extents) -> bool:
    return all(n % p == 0 and (n // p) % 2 == 0 for n, p in zip(lattice, grid, strict=True))


def decompose(lattice: Extents, ranks: int) -> Decomposition:
    """The process grid for `ranks`: every local extent even; of those, the least halo
    traffic, then the most even local extents, then the grid that splits the later (t, z,
    ...) dimensions first.
    UserError (exit 2) when the lattice cannot be split so."""
    if ranks < 1:
        raise UserError(f"lqcd: {ranks} ranks is not a valid rank count")
    divisors = [d for d in range(1, ranks + 1) if ranks % d == 0]
    best: Decomposition | None = None
    best_key: tuple[int, int, Extents] | None = None
    for a, b, c in itertools.product(divisors, repeat=3):
        if ranks % (a * b * c):
            continue
        grid = (a, b, c, ranks // (a * b * c))
        if not _valid(lattice, grid):
            continue
        candidate = Decomposition(lattice, grid)
        local = candidate.local
        key = (candidate.halo_bytes_per_rank(), max(local) - min(local), grid)
        if best_key is None or key < best_key:
            best, best_key = candidate, key
    if best is None:
        raise UserError(
            f"lqcd: lattice {lattice_label(lattice)} cannot be split over {ranks} ranks "
            "into even local extents (every extent / ranks along it must be even)"
        )
    return best
