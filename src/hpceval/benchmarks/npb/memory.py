"""Estimated memory per rank of hpceval's NPB programs (the kernels distribute their data
over the ranks; the multi-zone programs hold whole zones)."""

from __future__ import annotations

import math

from hpceval.benchmarks.npb import multizone


def memory_per_rank(kernel: str, class_name: str, ranks: int) -> int:
    """Estimated bytes one rank needs (the kernels distribute their data over the ranks)."""
    # The package's fact readers (imported here: the package imports this module).
    from hpceval.benchmarks.npb import lu_process_grid, problem_size, reference

    if kernel in multizone.MULTI_ZONE:
        mesh = multizone.mesh(reference(), kernel, class_name)
        return multizone.memory_per_rank(kernel, mesh, ranks)
    size = problem_size(kernel, class_name)
    if kernel == "ep":
        return 4 * 2**16 * 8 + (1 << 20)  # batch buffers per thread plus slack
    if kernel == "is":
        # is.c's allocations: keys and their copy, received keys with 4 % imbalance, bucket
        # pointers, the count array over the key range, per-thread bucket counts.
        n, k, b = int(size[0]), int(size[1]), int(size[2])
        per_rank = 2**n / ranks
        received = 1.04 * per_rank if ranks > 1 else 0.0
        threads = 1
        return int(
            4 * (2 * per_rank + received + 2 ** (n - b + 4) + 1.04 * 2**k)
            + 4 * threads * 2**b
            + (1 << 20)
        )
    if kernel == "cg":
        na, nonzer = int(size[0]), int(size[1])
        nonzeros = na * (nonzer + 1) ** 2
        # values (8 B) and column indices (4 B), doubled for makea's temporaries, plus vectors
        return int(12 * nonzeros / ranks * 2.2 + 8 * na * 8 / math.sqrt(ranks) + (1 << 20))
    if kernel == "mg":
        n = int(size[0])
        # u, v, r on all levels: the finest level dominates, the coarser add 1/7, ghost cells
        return int(3 * 8 * n**3 / ranks * 8 / 7 * 1.1 + (1 << 20))
    if kernel == "ft":
        n = int(size[0]) * int(size[1]) * int(size[2])
        # NPB's three complex arrays and the real twiddle array (the evolve factors)
        return int((3 * 16 + 8) * n / ranks + (1 << 20))
    if kernel == "bt":
        # p cells of (n/p + 4)^3 points (two ghost layers): u, rhs, forcing (5 values each),
        # the 5x5 block lhsc and 6 derived fields, 46 doubles per point.
        p = math.isqrt(ranks)
        return int(p * (int(size[0]) / p + 5) ** 3 * 46 * 8 + (1 << 20))
    if kernel == "sp":
        # sp.c per cell: u (2 ghost layers, 5 values), 8 point-wise fields (1 ghost layer),
        # rhs and forcing (5 each) and lhs (15), x and y extents padded to odd counts.
        p = math.isqrt(ranks)
        m = int(size[0]) // p + 1
        mp = m // 2 * 2 + 1
        doubles = 5 * (mp + 4) ** 2 * (m + 4) + 8 * (m + 2) ** 3 + 25 * mp * mp * m
        return int(8 * doubles * p * 1.05 + (8 << 20))
    if kernel == "lu":
        # a pencil of (n/px + 4) x (n/py + 4) x n points: u, rsd, frct, flux (5 values each)
        px, py = lu_process_grid(ranks) or (ranks, 1)
        n = int(size[0])
        return int((n / px + 5) * (n / py + 5) * n * 20 * 8 + (1 << 20))
    raise ValueError(kernel)
