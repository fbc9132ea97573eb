"""Tests of hpceval.importers.npb: official NPB outputs parsed.

The captures in tests/data/npb-official/ are published outputs of official NPB programs
(sources in its README.md); the expected values below are read off those texts. Edited and
refused captures are in test_import_npb_variants.py, imports into a store in
test_import_npb_store.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hpceval.benchmarks.npb.official_checks import implausible
from hpceval.importers import NpbOutputError, NpbReport, parse_npb_output

DATA = Path(__file__).parent / "data" / "npb-official"
HPCC_OUTPUT = Path(__file__).parent / "data" / "hpcc" / "hpccoutf-2ranks.txt"

OMP_OPTIONS = {
    "F77": "gfortran",
    "FLINK": "$(F77)",
    "F_LIB": "(none)",
    "F_INC": "(none)",
    "FFLAGS": "-O -ff2c",
    "FLINKFLAGS": "-fopenmp -O -ff2c",
    "RAND": "randi8",
}


@dataclass(frozen=True)
class Expected:
    benchmark: str
    npb_class: str
    size: str
    iterations: int
    time_s: float
    mops_total: float
    per_process: float | None  # printed Mop/s/process
    per_thread: float | None  # printed Mop/s/thread
    processes: int | None
    threads: int | None
    version: str
    compile_date: str | None
    compiler: str | None
    flags: str | None
    verification: str = "SUCCESSFUL"


def omp_331(
    benchmark: str, size: str, iterations: int, time_s: float, mops: float, **changes: Any
) -> Expected:
    """A run of the NPB 3.3.1 OpenMP build of the captures (gfortran, 1 thread, class S)."""
    fields: dict[str, Any] = {
        "benchmark": benchmark,
        "npb_class": "S",
        "size": size,
        "iterations": iterations,
        "time_s": time_s,
        "mops_total": mops,
        "per_process": None,
        "per_thread": mops,
        "processes": None,
        "threads": 1,
        "version": "3.3.1",
        "compile_date": "27 Jun 2017",
        "compiler": "gfortran",
        "flags": "-O -ff2c",
    }
    return Expected(**(fields | changes))


def mpi(
    benchmark: str, npb_class: str, size: str, iterations: int, time_s: float, **changes: Any
) -> Expected:
    """A run of an MPI build: no thread count printed, Mop/s per process."""
    fields: dict[str, Any] = {
        "benchmark": benchmark,
        "npb_class": npb_class,
        "size": size,
        "iterations": iterations,
        "time_s": time_s,
        "per_thread": None,
        "threads": None,
        "compiler": None,
        "flags": None,
    }
    return Expected(**(fields | changes))


def npb34(
    benchmark: str,
    npb_class: str,
    size: str,
    iterations: int,
    time_s: float,
    mops: float,
    per_process: float | None,
    per_thread: float | None,
    processes: int,
    threads: int | None,
) -> Expected:
    """A run of NPB 3.4-MPI or 3.4-MZ-MPI built here (gfortran -O3 -march=native)."""
    multi_zone = benchmark.endswith("-MZ")
    return Expected(
        benchmark, npb_class, size, iterations, time_s, mops, per_process, per_thread,
        processes, threads, "3.4", "25 Nov 2026", "mpif90",
        "-O3 -march=native -fopenmp -fallow-argument..." if multi_zone
        else "-O3 -march=native -fallow-argument-mismatch",
    )  # fmt: skip


EXPECTED: dict[str, Expected] = {
    "npb3.3.1-omp-cg.S.t1.txt": omp_331("CG", "1400", 15, 1.85, 35.96),
    "npb3.3.1-omp-ep.S.t1.txt": omp_331("EP", "33554432", 0, 21.52, 1.56),
    "npb3.3.1-omp-ft.S.t1.txt": omp_331("FT", "64x  64x  64", 6, 3.18, 55.67),
    "npb3.3.1-omp-is.S.t1.txt": omp_331("IS", "65536", 10, 0.07, 10.04, compiler="cc", flags="-O"),
    "npb3.3.1-omp-mg.S.t1.txt": omp_331("MG", "32x  32x  32", 4, 0.15, 49.18),
    "npb3.3.1-omp-bt.S.t1.txt": omp_331("BT", "12x  12x  12", 60, 3.32, 68.68),
    "npb3.3.1-omp-cg.S.t1-unsuccessful.txt": omp_331(
        "CG", "1400", 15, 1.86, 35.86, verification="UNSUCCESSFUL"
    ),
    "npb3.2-mpi-cg.A.1.txt": mpi(
        "CG",
        "A",
        "14000",
        15,
        3.02,
        mops_total=495.93,
        per_process=495.93,
        processes=1,
        version="3.2",
        compile_date="11 Jun 2007",
    ),
    "npb3.2-mpi-cg.A.2.txt": mpi(
        "CG",
        "A",
        "14000",
        15,
        2.47,
        mops_total=606.32,
        per_process=303.16,
        processes=2,
        version="3.2",
        compile_date="11 Jun 2007",
    ),
    "npb2.3-mpi-mg.B.4.txt": mpi(
        "MG",
        "B",
        "256x256x256",
        20,
        47.19,
        mops_total=412.43,
        per_process=103.11,
        processes=4,
        version="2.3",
        compile_date="13 Dec 2007",
        compiler="mpif77",
        flags="-O3",
    ),
    "npb2.3-mpi-ep.S.1.txt": mpi(
        "EP",
        "S",
        "33554432",
        0,
        4.76,
        mops_total=7.05,
        per_process=7.05,
        processes=1,
        version="2.3",
        compile_date="01 Sep 2005",
        compiler="f77",
        flags="-O3 -Wno-globals",
    ),
    # Captured here from the official NPB 3.4 builds (tests/data/npb-official/README.md).
    "npb3.4-mpi-bt.S.1.txt": npb34(
        "BT", "S", "12x  12x  12", 60, 0.31, 738.63, 738.63, None, 1, None
    ),
    "npb3.4-mpi-sp.S.4.txt": npb34(
        "SP", "S", "12x  12x  12", 100, 1.06, 91.0, 22.75, None, 4, None
    ),
    "npb3.4-mpi-lu.S.2.txt": npb34(
        "LU", "S", "12x  12x  12", 50, 3.34, 30.67, 15.33, None, 2, None
    ),
    "npb3.4-mz-mpi-bt-mz.S.2x1.txt": npb34(
        "BT-MZ", "S", "24x   24x  6", 60, 1.84, 207.45, None, 103.73, 2, 2
    ),
    "npb3.4-mz-mpi-bt-mz.W.1x2.txt": npb34(
        "BT-MZ", "W", "64x   64x  8", 200, 13.46, 1065.92, None, 532.96, 1, 2
    ),
    "npb3.4-mz-mpi-sp-mz.S.2x2.txt": npb34(
        "SP-MZ", "S", "24x   24x  6", 100, 0.05, 3229.55, None, 807.39, 2, 4
    ),
    "npb3.4-mz-mpi-lu-mz.S.1x2.txt": npb34(
        "LU-MZ", "S", "24x   24x  6", 50, 253.84, 0.18, None, 0.09, 1, 2
    ),
}
VERIFIED_FILES = sorted(name for name, e in EXPECTED.items() if e.verification == "SUCCESSFUL")
TRUNCATED_FILES = ("npb3.3-mpi-ft.S.4-segv.txt", "npb2.3-mpi-ft.C.128-mpi-error.txt")


def parse(name: str) -> NpbReport:
    return parse_npb_output((DATA / name).read_text(), name)


def edited(name: str, old: str, new: str) -> str:
    """A capture with one exact passage replaced (to test what NPB versions print differently)."""
    text = (DATA / name).read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {name}"
    return text.replace(old, new)


# --------------------------------------------------------------------------------------------
# Parser


def test_every_capture_is_covered() -> None:
    captures = {path.name for path in DATA.glob("*.txt")}
    rejected = {*TRUNCATED_FILES, "npb3.3.1-omp-ua.S.t1.txt"}
    assert captures == set(EXPECTED) | rejected
    assert len(captures) >= 10


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parses_capture(name: str) -> None:
    expected = EXPECTED[name]
    report = parse(name)
    assert report.source == name
    assert report.benchmark == expected.benchmark
    assert report.kernel == expected.benchmark.lower()
    assert report.npb_class == expected.npb_class
    assert report.size == expected.size
    assert report.iterations == expected.iterations
    assert report.time_s == expected.time_s
    assert report.mops_total == expected.mops_total
    assert report.mops_per_process == expected.per_process
    assert report.mops_per_thread == expected.per_thread
    assert report.total_processes == expected.processes
    assert report.total_threads == expected.threads
    assert report.verification == expected.verification
    assert report.verified is (expected.verification == "SUCCESSFUL")
    assert report.version == expected.version
    assert report.compile_date == expected.compile_date
    assert report.compiler == expected.compiler
    assert report.flags == expected.flags
    assert report.run_date is None  # none of these versions prints one
    assert report.other_fields == {}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ranks_and_threads(name: str) -> None:
    expected = EXPECTED[name]
    report = parse(name)
    assert report.ranks == (expected.processes or 1)
    # MPI+OpenMP (NPB-MZ) outputs print the threads of all processes together.
    per_rank = expected.threads // report.ranks if expected.processes and expected.threads else 1
    assert report.threads_per_rank == (per_rank if expected.processes else expected.threads)
    model = "openmp"
    if expected.processes:
        model = "mpi+openmp" if expected.threads else "mpi"
    assert report.programming_model == model


def test_operation_types_and_headers() -> None:
    assert parse("npb3.3.1-omp-ep.S.t1.txt").operation_type == "Random numbers generated"
    assert parse("npb3.3.1-omp-is.S.t1.txt").operation_type == "keys ranked"
    assert parse("npb3.3.1-omp-cg.S.t1.txt").operation_type == "floating point"
    cg = parse("npb3.2-mpi-cg.A.1.txt")
    # The Open MPI warning printed before the header does not disturb the parse.
    assert cg.header == "NAS Parallel Benchmarks 3.2 -- CG Benchmark"
    assert parse("npb3.3.1-omp-mg.S.t1.txt").header == (
        "NAS Parallel Benchmarks (NPB3.3-OMP) - MG Benchmark"
    )


def test_compile_options_kept_in_order() -> None:
    omp = parse("npb3.3.1-omp-cg.S.t1.txt")
    assert omp.compile_options == OMP_OPTIONS
    assert list(omp.compile_options) == list(OMP_OPTIONS)
    assert parse("npb3.3.1-omp-is.S.t1.txt").compile_options == {
        "CC": "cc",
        "CLINK": "$(CC)",
        "C_LIB": "-lm",
        "C_INC": "(none)",
        "CFLAGS": "-O",
        "CLINKFLAGS": "-O",
    }
    assert parse("npb2.3-mpi-mg.B.4.txt").compile_options == {
        "MPIF77": "mpif77",
        "FLINK": "mpif77",
        "FMPI_LIB": "-L~/MyMPI/lib -lmpi_f77",
        "FMPI_INC": "-I~/MyMPI/include",
        "FFLAGS": "-O3",
        "FLINKFLAGS": "(none)",
        "RAND": "(none)",
    }
    # Its poster cut the output after the compile date.
    assert parse("npb3.2-mpi-cg.A.2.txt").compile_options == {}


def test_cg_verification_lines() -> None:
    report = parse("npb3.3.1-omp-cg.S.t1.txt")
    assert report.verification_lines == (
        "VERIFICATION SUCCESSFUL",
        "Zeta is     0.8597177507865E+01",
        "Error is    0.1033104665906E-14",
    )
    assert report.verification_values == {"zeta": 8.597177507865, "error": 1.033104665906e-15}
    mpi = parse("npb3.2-mpi-cg.A.2.txt")
    assert mpi.verification_values == {"zeta": 17.130235054, "error": 5.22633719989e-14}


def test_failed_cg_verification_lines() -> None:
    report = parse("npb3.3.1-omp-cg.S.t1-unsuccessful.txt")
    assert not report.verified
    assert report.verification_lines == (
        "VERIFICATION FAILED",
        "Zeta                 0.8597178614061E+01",
        "The correct zeta is  0.8597177507865E+01",
    )
    assert report.verification_values == {
        "zeta": 8.597178614061,
        "zeta_reference": 8.597177507865,
    }


def test_mg_verification_lines() -> None:
    assert parse("npb3.3.1-omp-mg.S.t1.txt").verification_values == {
        "l2_norm": 5.307707005735e-05,
        "error": 1.659688947021e-13,
    }
    assert parse("npb2.3-mpi-mg.B.4.txt").verification_lines == (
        "VERIFICATION SUCCESSFUL",
        "L2 Norm is   0.180056440136E-05",
        "Error is     0.351679609371E-16",
    )


def test_ft_checksums() -> None:
    report = parse("npb3.3.1-omp-ft.S.t1.txt")
    assert report.verification_lines[0] == (
        "T =    1     Checksum =    5.546087004964D+02    4.845363331978D+02"
    )
    assert report.verification_lines[-2:] == ("Result verification successful", "class = S")
    values = report.verification_values
    assert len(values) == 12  # real and imaginary part at each of the 6 iterations
    assert values["checksum_1_real"] == 554.6087004964
    assert values["checksum_6_imag"] == 493.2597244941


def test_ep_sums() -> None:
    omp = parse("npb3.3.1-omp-ep.S.t1.txt")
    assert omp.verification_values == {
        "gaussian_pairs": 13176389.0,
        "sx": -3247.83465203474,
        "sy": -6958.407078382301,
    }
    mpi = parse("npb2.3-mpi-ep.S.1.txt")
    assert mpi.verification_values["sx"] == -3247.83465203475
    assert mpi.verification_values["sy"] == -6958.407078382243


def test_bt_comparison_tables_kept() -> None:
    lines = parse("npb3.3.1-omp-bt.S.t1.txt").verification_lines
    assert lines[0] == "Verification being performed for class S"
    assert lines[1] == "Comparison of RMS-norms of residual"
    assert lines[2] == "1 0.1703428370954E+00 0.1703428370954E+00 0.7201925617357E-13"
    assert lines[-1] == "Verification Successful"
    assert len(lines) == 1 + 2 * (1 + 5) + 1


def test_is_prints_no_verification_lines() -> None:
    report = parse("npb3.3.1-omp-is.S.t1.txt")
    assert report.verification_lines == ()
    assert report.verified


# Variations across NPB versions, made by editing a real capture into the form that the NPB
# sources print (the format statements quoted in each test).


def test_npb34_mpi_active_processes() -> None:
    # NPB 3.4 print_results.f90: ' Active processes= ', 12x, i12 (no space before "=").
    text = edited(
        "npb3.2-mpi-cg.A.2.txt",
        " Compiled procs  =                        2\n",
        " Active processes=                        2\n",
    )
    report = parse_npb_output(text, "cg.A.x")
    assert report.total_processes == 2
    assert report.active_processes == 2
    assert report.compiled_processes is None


def test_compiled_procs_kept() -> None:
    assert parse("npb2.3-mpi-mg.B.4.txt").compiled_processes == 4


def test_multizone_hybrid_threads() -> None:
    # NPB3.4-MZ-MPI print_results.f: Total processes, Total threads (all processes
    # together), then Mop/s/thread; the real 2 x 1 capture edited to 2 x 4 threads.
    text = edited(
        "npb3.4-mz-mpi-bt-mz.S.2x1.txt",
        " Total threads   =                        2\n",
        " Total threads   =                        8\n",
    ).replace("103.73", " 25.93")
    report = parse_npb_output(text, "bt-mz.S.x")
    assert report.benchmark == "BT-MZ"
    assert report.kernel == "bt-mz"
    assert report.programming_model == "mpi+openmp"
    assert report.ranks == 2
    assert report.threads_per_rank == 4
    assert report.mops_per_thread == 25.93


def test_multi_zone_and_application_captures() -> None:
    bt_mz = parse("npb3.4-mz-mpi-bt-mz.S.2x1.txt")
    assert bt_mz.header == "NAS Parallel Benchmarks (NPB3.4-MZ MPI+OpenMP) - BT-MZ Benchmark"
    assert bt_mz.verification_lines[2] == (
        "1 0.1047687395830E+04 0.1047687395830E+04 0.1753556743064E-12"
    )
    assert parse("npb3.4-mz-mpi-sp-mz.S.2x2.txt").threads_per_rank == 2
    # NPB 3.4-MPI prints "Active procs" (not "Active processes").
    assert parse("npb3.4-mpi-sp.S.4.txt").active_processes == 4
    # Their Mop/s follow the official operation counts (BT-MZ, LU-MZ per zone, summed) ...
    for name in (
        "npb3.4-mpi-bt.S.1.txt", "npb3.4-mz-mpi-bt-mz.W.1x2.txt", "npb3.4-mz-mpi-lu-mz.S.1x2.txt",
    ):  # fmt: skip
        assert implausible(parse(name)) is None
    # ... and one that does not is refused.
    text = edited("npb3.4-mz-mpi-bt-mz.W.1x2.txt", "1065.92", "2065.92")
    with pytest.raises(NpbOutputError, match="BT-MZ class W's official operation count"):
        parse_npb_output(text, "x.txt")
    text = edited("npb3.4-mz-mpi-lu-mz.S.1x2.txt", "253.84", "353.84")
    with pytest.raises(NpbOutputError, match="LU-MZ class S's official operation count"):
        parse_npb_output(text, "x.txt")
