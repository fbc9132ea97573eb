"""NPB-MZ facts the Python side needs: the zone mesh of each class, NPB-MZ's map_zones (block
distribution or bin packing of zones over ranks, and its load balancing with threads), the
rank rule, the Mop/s count and a memory estimate (the C programs, npb_mz.c, do the same; the
tests compare them on the programs' output and on the official programs' NPB_VERBOSE maps)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MULTI_ZONE: tuple[str, ...] = ("bt-mz", "sp-mz", "lu-mz")
# The single-zone solver each multi-zone program runs on its zones (its C file is compiled in).
ZONE_SOLVER = {"bt-mz": "bt", "sp-mz": "sp", "lu-mz": "lu"}
# NPB3.4-MZ's map_zones tries its block distribution before bin packing in SP-MZ and LU-MZ
# (BT-MZ, whose zones are uneven, packs bins only).
BLOCK_FIRST = frozenset({"sp-mz", "lu-mz"})


@dataclass(frozen=True)
class ZoneMesh:
    gx: int
    gy: int
    gz: int
    x_zones: int
    y_zones: int
    niter: int
    dt: float
    ratio: float
    block_first: bool = False

    @property
    def zones(self) -> int:
        return self.x_zones * self.y_zones

    def sizes(self) -> list[tuple[int, int, int]]:
        """(nx, ny, nz) of every zone, zone i + j * x_zones (NPB-MZ's zone_setup)."""
        xs = _axis_sizes(self.x_zones, self.gx, self.ratio)
        ys = _axis_sizes(self.y_zones, self.gy, self.ratio)
        return [(xs[i], ys[j], self.gz) for j in range(self.y_zones) for i in range(self.x_zones)]


def _axis_sizes(zones: int, total: int, ratio: float) -> list[int]:
    ends = []
    if abs(ratio - 1.0) > 1e-10:
        r = math.exp(math.log(ratio) / (zones - 1))
        smallest = total * (r - 1.0) / (r**zones - 1.0)
        ends = [int(smallest * (r**i - 1.0) / (r - 1.0) + 0.45) for i in range(1, zones + 1)]
    else:
        ends = [i * total // zones for i in range(1, zones + 1)]
    return [end - start for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def mesh(reference: Mapping[str, Any], program: str, class_name: str) -> ZoneMesh:
    ref = reference[program]
    gx, gy, gz, xz, yz, niter, dt = ref["size"][class_name]
    return ZoneMesh(
        int(gx), int(gy), int(gz), int(xz), int(yz), int(niter), float(dt),
        float(ref["ratio"][class_name]), block_first=program in BLOCK_FIRST,
    )  # fmt: skip


def process_grid(program: str, mz: ZoneMesh, ranks: int) -> tuple[int, int]:
    """(xdim, zdim): zdim zone processes, each zone split along i over xdim ranks. BT-MZ and
    SP-MZ deal whole zones (1, ranks). LU-MZ's proc_grid.f (without NPB_NUM_XPROCS): the
    factorisation, zdim from min(zones, ranks) down, that maximises zones * nx1 /
    (ceil(zones / zdim) * ceil(nx1 / xdim)), the first best (nx1: a zone's points in x)."""
    if program != "lu-mz":
        return 1, ranks
    nx1 = mz.gx // mz.x_zones
    best, grid = 0.0, (1, ranks)
    zdim = min(mz.zones, ranks)
    while zdim >= 1:
        while ranks % zdim:
            zdim -= 1
        xdim = ranks // zdim
        speedup = mz.zones * nx1 / -(-mz.zones // zdim) / -(-nx1 // xdim)
        if speedup > best:
            best, grid = speedup, (xdim, zdim)
        zdim -= 1
    return grid


def rank_rule_error(program: str, class_name: str, mz: ZoneMesh, ranks: int) -> str | None:
    """BT-MZ and SP-MZ deal whole zones to ranks: no more ranks than zones. LU-MZ splits
    zones along i (process_grid): a part needs 3 points, and ranks beyond zones * nx1 (which
    NPB-MZ leaves idle) are refused. The programs refuse the same counts."""
    if program == "lu-mz":
        nx1 = mz.gx // mz.x_zones
        if ranks > mz.zones * nx1:
            return (
                f"lu-mz class {class_name} on {ranks} ranks: more than its {mz.zones} zones x "
                f"{nx1} points along i (NPB-MZ would leave the extra ranks idle; hpceval "
                "refuses them)"
            )
        xdim, zdim = process_grid(program, mz, ranks)
        if nx1 // xdim < 3:
            return (
                f"lu-mz class {class_name} on {ranks} ranks: its {xdim} x {zdim} process grid "
                f"splits a zone's {nx1} points along i into parts of {nx1 // xdim}, LU needs at "
                "least 3"
            )
        return None
    if ranks > mz.zones:
        return (
            f"{program} class {class_name} has {mz.zones} zones: needs at most {mz.zones} ranks, "
            f"got {ranks}"
        )
    return None


# Operation-count fits per zone (NPB3.4-MZ bt.f / sp.f): n3, nsur, navg and constant terms.
_OPS = {
    "bt-mz": (3478.8, -17655.7, 28023.7, 0.0),
    "sp-mz": (881.174, -4683.91, 11484.5, -19272.4),
    "lu-mz": (1984.77, -10923.3, 27770.9, -144010.0),
}


def mops(program: str, mz: ZoneMesh, seconds: float) -> float:
    a, b, c, d = _OPS[program]
    total = 0.0
    for nx, ny, nz in mz.sizes():
        n3 = float(nx) * ny * nz
        nsur = (nx * ny + nx * nz + ny * nz) / 3.0
        navg = (nx + ny + nz) / 3.0
        total += 1e-6 * mz.niter * (a * n3 + b * nsur + c * navg + d)
    return total / seconds


def block_owners(mz: ZoneMesh, ranks: int) -> list[int] | None:
    """NPB-MZ's block distribution: the ranks as an n1 x n2 grid with n1 dividing x_zones and
    n2 y_zones (the last factorisation with the least remainder), each rank a rectangle of
    zones; None when no factorisation divides both."""
    best, np1, np2 = mz.y_zones % ranks, 1, ranks
    n1, n2 = 1, ranks
    while n1 <= n2:
        if n1 * n2 == ranks and (rest := mz.x_zones % n1 + mz.y_zones % n2) <= best:
            best, np1, np2 = rest, n1, n2
        n1 += 1
        n2 = ranks // n1
    if best != 0:
        return None
    wx, wy = mz.x_zones // np1, mz.y_zones // np2
    return [(z % mz.x_zones) // wx + (z // mz.x_zones) // wy * np1 for z in range(mz.zones)]


def zone_owners(mz: ZoneMesh, ranks: int) -> list[int]:
    """NPB-MZ's map_zones: the rank of every zone. The block distribution where the mesh
    tries it first and the rank count allows; otherwise bin packing (largest zones first,
    each to the least loaded rank, preferring among zones within 5 % of the largest left
    the one sharing the most boundary with that rank)."""
    if mz.block_first and (blocks := block_owners(mz, ranks)) is not None:
        return blocks
    sizes = mz.sizes()
    points = [float(nx * ny * nz) for nx, ny, nz in sizes]
    order = list(range(mz.zones))
    for a in range(mz.zones - 1):  # NPB-MZ's selection sort, largest first (its tie order)
        best = a
        for b in range(a + 1, mz.zones):
            if points[order[best]] < points[order[b]]:
                best = b
        order[a], order[best] = order[best], order[a]
    owner = [-1] * mz.zones
    load = [0.0] * ranks

    def neighbours(z: int) -> list[tuple[int, int]]:
        i, j = z % mz.x_zones, z // mz.x_zones
        nx, ny, _ = sizes[z]
        return [
            ((i - 1) % mz.x_zones + j * mz.x_zones, ny),
            ((i + 1) % mz.x_zones + j * mz.x_zones, ny),
            (i + ((j - 1) % mz.y_zones) * mz.x_zones, nx),
            (i + ((j + 1) % mz.y_zones) * mz.x_zones, nx),
        ]

    def shared(z: int, rank: int) -> int:
        return sum(length for other, length in neighbours(z) if owner[other] == rank)

    position = 0
    while position < mz.zones:
        rank = min(range(ranks), key=lambda r: (load[r], r))
        chosen = order[position]
        best = shared(chosen, rank)
        for z in order[position + 1 :]:
            if (points[order[position]] - points[z]) / points[order[position]] > 0.05:
                break
            if owner[z] < 0 and (s := shared(z, rank)) > best:
                chosen, best = z, s
        owner[chosen] = rank
        load[rank] += points[chosen]
        while position < mz.zones and owner[order[position]] >= 0:
            position += 1
    return owner


def rank_points(mz: ZoneMesh, ranks: int) -> list[float]:
    """The points of every rank's zones (for LU-MZ: of every zone process's)."""
    load = [0.0] * ranks
    for owner, (nx, ny, nz) in zip(zone_owners(mz, ranks), mz.sizes(), strict=True):
        load[owner] += nx * ny * nz
    return load


def load_imbalance(mz: ZoneMesh, ranks: int) -> float:
    """The busiest rank's points over the mean (1.0: perfect balance)."""
    load = rank_points(mz, ranks)
    return max(load) / (sum(load) / ranks)


def rank_threads(mz: ZoneMesh, threads: Sequence[int], *, balance: bool) -> list[int]:
    """Every rank's OpenMP threads, `threads` being each rank's as launched: unchanged
    (NPB-MZ's default), or with `balance` NPB-MZ's load balancing with threads (map_zones,
    one process group, no NPB_MAX_THREADS limit): the same total spread in proportion to
    the ranks' points, floor(points / (all points / total)) and at least 1 each; threads
    left over go one at a time to the rank with the most points per thread, an excess is
    taken one at a time from the rank (with more than one) left with the fewest points per
    thread."""
    total = sum(threads)
    if not balance or total <= len(threads):
        return list(threads)
    size = rank_points(mz, len(threads))
    per_thread = sum(size) / total
    given = [max(1, int(s / per_thread)) for s in size]
    while (left := total - sum(given)) != 0:
        if left > 0:
            loads = [s / t for s, t in zip(size, given, strict=True)]
            pick = loads.index(max(loads))
            given[pick] += 1
        else:
            fewer = [(s / (t - 1), r) for r, (s, t) in enumerate(zip(size, given, strict=True))
                     if t > 1]  # fmt: skip
            given[min(fewer)[1]] -= 1
    return given


def memory_per_rank(program: str, mz: ZoneMesh, ranks: int) -> int:
    """Bytes of the busiest rank: its zones' points times the solver's doubles per point
    (bt.c 21 per point, u, rhs, forcing and six derived fields, no ghost layers, as NPB-MZ;
    sp.c 23, u, rhs, forcing and eight derived fields, no ghost layers and nx padded to an
    odd nxmax, as NPB-MZ, its lhs being per line; lu.c 17, u, rsd, frct, rho_i and qs with
    two ghost layers in i and j, plus one flux array of the largest zone; a zone split over
    xdim ranks counts its largest part)."""
    xdim, zdim = process_grid(program, mz, ranks)
    owner = zone_owners(mz, zdim)
    per_point = {"bt-mz": 21, "sp-mz": 23, "lu-mz": 17}[program]
    ghosts_xy = 4 if program == "lu-mz" else 0
    load = [0.0] * zdim
    for z, (nx, ny, nz) in enumerate(mz.sizes()):
        part_nx = -(-nx // xdim)  # the largest part of a zone split along i
        if program == "sp-mz":
            part_nx |= 1  # NPB-MZ's nxmax = nx + 1 - mod(nx, 2)
        load[owner[z]] += (part_nx + ghosts_xy) * (ny + ghosts_xy) * nz
    scratch = 0.0
    if program == "lu-mz":
        scratch = 5.0 * max((-(-nx // xdim) + 4) * (ny + 4) * nz for nx, ny, nz in mz.sizes())
    return int((max(load) * per_point + scratch) * 8 * 1.05 + (8 << 20))
