"""Collective algorithms forced on a simulation, instead of the ones the MPI library's selector
picks (`hpceval simulate --collective alltoall=pair`).

Why it exists: some algorithms the library picks cannot be simulated at scale here. Open MPI
4.1 runs FT class C's all-to-all basic linear at 512 ranks: all P(P-1) = 261,632 messages
start at once, and SimGrid's max-min solver re-solves the links' allocation each time one
ends (days of one core; docs/simulation.md). A projection with another algorithm finishes,
but it projects *that* algorithm: the simulated run's note says so (`hpceval show`), its
configuration records what was forced, and the starter's command carries the same note.

SMPI takes `--cfg=smpi/NAME:ALGORITHM`; a collective set that way wins over
`smpi/coll-selector` (checked: SimGrid 3.32 runs the forced one in either order). The names
are SimGrid 3.32's, as it lists them when given an unknown one (tests/test_smpi_collectives.py
checks this table against the installed SimGrid).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from hpceval.errors import UserError


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# SimGrid 3.32's algorithms per collective, less "automatic" (it runs every algorithm and
# keeps the fastest: not one library's behaviour either).
SMPI_ALGORITHMS: Final[Mapping[str, frozenset[str]]] = {
    "allgather": _names(
        "default 2dmesh 3dmesh bruck GB loosely_lr NTSLR NTSLR_NB pair rdb rhv ring SMP_NTS "
        "smp_simple spreading_simple ompi ompi_neighborexchange mvapich2 mvapich2_smp mpich impi"
    ),
    "allgatherv": _names(
        "default GB pair ring ompi ompi_neighborexchange ompi_bruck mpich mpich_rdb mpich_ring "
        "mvapich2 impi"
    ),
    "allreduce": _names(
        "default lr rab1 rab2 rab_rdb rdb smp_binomial smp_binomial_pipeline smp_rdb smp_rsag "
        "smp_rsag_lr smp_rsag_rab redbcast ompi ompi_ring_segmented mpich mvapich2 mvapich2_rs "
        "mvapich2_two_level impi rab"
    ),
    "alltoall": _names(
        "default 2dmesh 3dmesh basic_linear bruck pair pair_rma pair_light_barrier "
        "pair_mpi_barrier pair_one_barrier rdb ring ring_light_barrier ring_mpi_barrier "
        "ring_one_barrier mvapich2 mvapich2_scatter_dest ompi mpich impi"
    ),
    "alltoallv": _names(
        "default bruck pair pair_light_barrier pair_mpi_barrier pair_one_barrier ring "
        "ring_light_barrier ring_mpi_barrier ring_one_barrier ompi mpich ompi_basic_linear "
        "mvapich2 impi"
    ),
    "barrier": _names(
        "default ompi ompi_basic_linear ompi_two_procs ompi_tree ompi_bruck "
        "ompi_recursivedoubling ompi_doublering mpich_smp mpich mvapich2_pair mvapich2 impi"
    ),
    "bcast": _names(
        "default arrival_pattern_aware arrival_pattern_aware_wait arrival_scatter binomial_tree "
        "flattree flattree_pipeline NTSB NTSL NTSL_Isend scatter_LR_allgather "
        "scatter_rdb_allgather SMP_binary SMP_binomial SMP_linear ompi ompi_split_bintree "
        "ompi_pipeline mpich mvapich2 mvapich2_inter_node mvapich2_intra_node "
        "mvapich2_knomial_intra_node impi"
    ),
    "gather": _names(
        "default ompi ompi_basic_linear ompi_binomial ompi_linear_sync mpich mvapich2 "
        "mvapich2_two_level impi"
    ),
    "reduce": _names(
        "default arrival_pattern_aware binomial flat_tree NTSL scatter_gather ompi ompi_chain "
        "ompi_pipeline ompi_basic_linear ompi_in_order_binary ompi_binary ompi_binomial mpich "
        "mvapich2 mvapich2_knomial mvapich2_two_level impi rab"
    ),
    "reduce_scatter": _names(
        "default ompi ompi_basic_recursivehalving ompi_ring ompi_butterfly mpich mpich_pair "
        "mpich_rdb mpich_noncomm mvapich2 impi"
    ),
    "scatter": _names(
        "default ompi ompi_basic_linear ompi_linear_nb ompi_binomial mpich mvapich2 "
        "mvapich2_two_level_binomial mvapich2_two_level_direct impi"
    ),
}
CFG_PREFIX: Final = "smpi/"


def parse_forced(texts: Iterable[str], *, option: str = "--collective") -> dict[str, str]:
    """{collective: algorithm} from NAME=ALGORITHM texts; each bad one is a one-line error
    naming the option, the text and what SimGrid accepts."""
    forced: dict[str, str] = {}
    for text in texts:
        name, sep, algorithm = text.partition("=")
        name, algorithm = name.strip(), algorithm.strip()
        if not sep or not name or not algorithm:
            raise UserError(f"{option} {text!r}: not COLLECTIVE=ALGORITHM (alltoall=pair)")
        if name not in SMPI_ALGORITHMS:
            known = ", ".join(sorted(SMPI_ALGORITHMS))
            raise UserError(f"{option} {text!r}: no collective {name!r} in SMPI ({known})")
        if algorithm not in SMPI_ALGORITHMS[name]:
            known = ", ".join(sorted(SMPI_ALGORITHMS[name], key=str.lower))
            raise UserError(
                f"{option} {text!r}: SimGrid's {name} has no algorithm {algorithm!r} ({known})"
            )
        if forced.get(name, algorithm) != algorithm:
            raise UserError(f"{option}: {name} forced twice ({forced[name]}, {algorithm})")
        forced[name] = algorithm
    return forced


def forced_config(forced: Mapping[str, str]) -> dict[str, str]:
    """The SMPI settings that force these algorithms."""
    return {f"{CFG_PREFIX}{name}": algorithm for name, algorithm in sorted(forced.items())}


def forced_in(cfg: Mapping[str, str]) -> dict[str, str]:
    """The collectives an SMPI configuration forces (the inverse of forced_config)."""
    return {
        key[len(CFG_PREFIX):]: value
        for key, value in sorted(cfg.items())
        if key.startswith(CFG_PREFIX) and key[len(CFG_PREFIX):] in SMPI_ALGORITHMS
    }  # fmt: skip


def forced_note(forced: Mapping[str, str]) -> str:
    """The line every execution with forced collectives carries."""
    what = ", ".join(f"{name} {algorithm}" for name, algorithm in sorted(forced.items()))
    return f"collectives forced to SMPI's {what}: not the MPI library's choice"
