"""`npb-mz-official`: the official NPB 3.4 multi-zone benchmarks BT-MZ, SP-MZ and LU-MZ
(MPI + OpenMP, or OpenMP), built from the sources the user points hpceval at (platform
`[sources] npb-mz-mpi` / `npb-mz-omp`, or `hpceval run --source`), as `npb-official` builds
NPB 3.4: a private copy in the build cache, config/make.def with the platform's wrappers and
hpceval's NPB flags (OpenMP on: the multi-zone codes are hybrid), `make bt-mz CLASS=X`.
A run counts only with "Verification = SUCCESSFUL" on the case's class and process count;
threads per rank come from the placement (OMP_NUM_THREADS). Measurements carry the
implementation "official/NPB-MZ <version printed>".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from hpceval.benchmarks import register
from hpceval.benchmarks.npb_official import (
    GFORTRAN_FLAGS,
    GFORTRAN_OPENMP_FLAGS,
    RAND,
    OfficialNpbBenchmark,
    OfficialNpbOptions,
    fortran_wrapper,
)

NAME = "npb-mz-official"
MultiZone = Literal["bt-mz", "sp-mz", "lu-mz"]
SOURCE_OF_VARIANT = {"mpi": "npb-mz-mpi", "omp": "npb-mz-omp"}
# Class A of BT-MZ takes about as long as NPB's BT class A.
ESTIMATE_FACTOR = 5.0


class NpbMzOfficialOptions(OfficialNpbOptions):
    benchmarks: list[MultiZone] = Field(min_length=1)


def make_def_mz(variant: str, *, mpicc: str, flags: Sequence[str]) -> str:
    """NPB-MZ's config/make.def (FC/CC: the MPI wrappers, or gfortran/gcc), OpenMP on."""
    cflags = " ".join(f for f in flags if f != "-std=c11")
    fflags = " ".join([*(f for f in flags if f != "-std=c11"), *GFORTRAN_FLAGS])
    fc, cc = (fortran_wrapper(mpicc), mpicc) if variant == "mpi" else ("gfortran", "gcc")
    return (
        f"FC = {fc}\nFLINK = $(FC)\nF_LIB =\nF_INC =\n"
        f"FFLAGS = {fflags} {GFORTRAN_OPENMP_FLAGS}\n"
        f"FLINKFLAGS = $(FFLAGS)\nCC = {cc}\nCLINK = $(CC)\nC_LIB = -lm\nC_INC =\n"
        f"CFLAGS = {cflags} -fopenmp\nCLINKFLAGS = $(CFLAGS)\nUCC = gcc\nBINDIR = ../bin\n"
        f"RAND = {RAND}\nWTIME = wtime.c\n"
    )


@register
class NpbMzOfficial(OfficialNpbBenchmark[NpbMzOfficialOptions]):
    name = NAME
    description = "The official NPB 3.4 multi-zone BT-MZ, SP-MZ, LU-MZ, from the user's sources"
    Options = NpbMzOfficialOptions
    source_of_variant = SOURCE_OF_VARIANT
    program_order = ("bt-mz", "sp-mz", "lu-mz")
    implementation_name = "NPB-MZ"
    estimate_factor = ESTIMATE_FACTOR

    def programs(self, options: NpbMzOfficialOptions) -> list[str]:
        return list(options.benchmarks)

    def make_def(self, variant: str, *, mpicc: str, flags: Sequence[str]) -> str:
        return make_def_mz(variant, mpicc=mpicc, flags=flags)
