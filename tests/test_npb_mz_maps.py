"""NPB-MZ's zone distribution and thread balancing (multizone.py) against the official
NPB3.4-MZ-MPI programs' own maps (NPB_VERBOSE=1 output captured in
tests/data/npb-mz-official-maps, README there): block distribution (SP-MZ, LU-MZ), bin
packing (BT-MZ's uneven zones, rank counts the blocks do not fit) and the load balancing
with threads (ranks with more points get more threads, same total)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpceval.benchmarks.npb import multizone, reference

MAPS = Path(__file__).parent / "data" / "npb-mz-official-maps"
NAME = re.compile(r"(?P<prog>[a-z]{2}-mz)\.(?P<cls>[SWABC])\.(?P<ranks>\d+)x(?P<threads>\d+)")


def official_map(text: str) -> tuple[list[int], list[int]]:
    """(owner rank of every zone, threads of every rank) from NPB-MZ's "Zone-process
    mapping" table (zones 1-based there)."""
    table = text.split("Zone-process mapping:", 1)[1].split(" Max:", 1)[0]
    owners: dict[int, int] = {}
    threads: list[int] = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[0].isdigit():
            threads.append(int(fields[3]))
        elif len(fields) == 3 and fields[0] == "zone":
            owners[int(fields[1]) - 1] = len(threads) - 1
    return [owners[z] for z in range(len(owners))], threads


def test_the_parser_reads_a_balanced_map() -> None:
    owners, threads = official_map((MAPS / "bt-mz.S.3x2.balanced.txt").read_text())
    assert owners == [1, 1, 2, 0] and threads == [3, 2, 1]


@pytest.mark.parametrize("path", sorted(MAPS.glob("*.txt")), ids=lambda p: p.stem)
def test_multizone_maps_zones_and_threads_as_npb_mz(path: Path) -> None:
    m = NAME.match(path.name)
    assert m is not None, path.name
    ranks, threads = int(m["ranks"]), int(m["threads"])
    mesh = multizone.mesh(reference(), m["prog"], m["cls"])
    owners, official_threads = official_map(path.read_text())
    assert multizone.zone_owners(mesh, ranks) == owners
    balanced = path.name.endswith(".balanced.txt")
    assert multizone.rank_threads(mesh, [threads] * ranks, balance=balanced) == official_threads


def test_threads_stay_as_launched_without_balancing() -> None:
    mesh = multizone.mesh(reference(), "bt-mz", "W")
    assert multizone.rank_threads(mesh, [2] * 16, balance=False) == [2] * 16
    # one thread per rank leaves nothing to move
    assert multizone.rank_threads(mesh, [1] * 16, balance=True) == [1] * 16
    balanced = multizone.rank_threads(mesh, [2] * 16, balance=True)
    assert sum(balanced) == 32 and max(balanced) == 6 and min(balanced) == 1


def test_block_distribution_needs_dividing_rank_grids() -> None:
    lu = multizone.mesh(reference(), "lu-mz", "W")
    assert multizone.block_owners(lu, 3) is None  # 3 divides neither 4-zone side
    assert multizone.block_owners(lu, 2) == [0] * 8 + [1] * 8  # rows of zones (1 x 2 grid)
    # BT-MZ never tries it: bin packing even where blocks would fit
    bt = multizone.mesh(reference(), "bt-mz", "W")
    assert multizone.zone_owners(bt, 2) != multizone.block_owners(bt, 2)
