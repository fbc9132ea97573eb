"""The C programs under SimGrid SMPI: smpicc builds through the benchmarks' build(), real
smpirun runs on a tiny platform (tests/data/smpi/), and the "not checked" verification state
of sampled/folded builds (captured outputs in tests/data/smpi/, see its README)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from hpceval.benchmarks import get_benchmark
from hpceval.benchmarks.base import Case, Program
from hpceval.benchmarks.mpibench import point_key
from hpceval.benchmarks.npb import SMPI_BUILD_OPTION, smpi_build_flags
from hpceval.build import compile_program, smpi_cflags
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.launch.starters import get_starter_class
from hpceval.launch.starters.base import StartRequest
from hpceval.model import Placement
from hpceval.toolchain import detect_smpi, parse_smpi_version

from .conftest import DATA

SMPI_DATA = DATA / "smpi"
NPB = get_benchmark("npb")
MPIBENCH = get_benchmark("mpibench")

requires_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="smpicc/smpirun not installed (Debian package libsimgrid-dev, in setup.sh)",
)


def npb_case(
    kernel: str,
    class_name: str,
    placement: Placement,
    build: Mapping[str, bool | int | None] | None = None,
) -> Case:
    options: dict[str, Any] = {} if build is None else {SMPI_BUILD_OPTION: dict(build)}
    return Case(
        f"npb:{kernel}", "npb", placement, {"kernel": kernel, "class": class_name},
        ("rep=1",), 60, options,
    )  # fmt: skip


# ------------------------------------------------------------------ pure parts --


def test_smpi_version_from_captured_smpicc() -> None:
    text = (SMPI_DATA / "toolchain" / "smpicc--version.txt").read_text()
    assert parse_smpi_version(text) == "3.32"
    assert parse_smpi_version("gcc (Debian 12.2.0-14) 12.2.0") is None


def test_smpi_flags_drop_the_openmp_runtime_and_define_hpceval_smpi() -> None:
    flags = smpi_cflags(["-O3", "-march=native", "-fopenmp", "-std=c11"])
    assert flags == ("-O3", "-march=native", "-std=c11", "-fopenmp-simd", "-DHPCEVAL_SMPI")
    assert smpi_cflags(["-O2"]) == ("-O2", "-DHPCEVAL_SMPI")
    assert smpi_build_flags(sampling=True, folding=True) == [
        "-DHPCEVAL_SMPI_SAMPLE", "-DHPCEVAL_SMPI_FOLD",
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["npb", "mpibench"])
def test_smpi_options_need_smpicc(name: str) -> None:
    with pytest.raises(UserError, match="cflags: -DHPCEVAL_SMPI_FOLD is an SMPI build option"):
        get_benchmark(name).build(
            compiler="mpicc", compiler_identity="x", cflags=["-O2", "-DHPCEVAL_SMPI_FOLD"]
        )


def test_captured_plain_smpi_run_verifies() -> None:
    text = (SMPI_DATA / "npb-cg-S-np4.jsonl").read_text()
    case = npb_case("cg", "S", Placement(1, 4))
    NPB.verify(text, case, case.points)
    (point,) = NPB.parse(text, case)
    time = next(m for m in point.measurements if m.metric == "time")
    assert isinstance(time.details["verification"], list)
    assert time.details["smpi"]["sampled"] is False


@pytest.mark.parametrize(
    ("capture", "build", "reason"),
    [
        ("npb-cg-S-np4-fold.jsonl", {"sampling": False, "memory_folding": True}, "memory folding"),
        (
            "npb-cg-S-np4-sample.jsonl",
            {"sampling": True, "memory_folding": False},
            "computation sampling",
        ),
        (
            "npb-cg-S-np4-iter3.jsonl",
            {"sampling": False, "memory_folding": False, "iterations": 3},
            "iteration sampling (3 of 15)",
        ),
    ],
)
def test_captured_folded_or_sampled_run_is_not_checked(
    capture: str, build: Mapping[str, bool | int | None], reason: str
) -> None:
    text = (SMPI_DATA / capture).read_text()
    case = npb_case("cg", "S", Placement(1, 4), build)
    NPB.verify(text, case, case.points)
    (point,) = NPB.parse(text, case)
    for m in point.measurements:
        assert m.details["verification"] == f"not checked ({reason})"
    # The same output is refused for a case that is not such an SMPI build...
    plain = npb_case("cg", "S", Placement(1, 4))
    with pytest.raises(BenchmarkFailure, match="not an SMPI sampled or folded build"):
        NPB.parse(text, plain)
    with pytest.raises(BenchmarkFailure, match="not an SMPI sampled or folded build"):
        NPB.verify(text, plain, plain.points)
    # ... and for one whose build did not ask for what the program did.
    other = npb_case("cg", "S", Placement(1, 4), {k: not v for k, v in build.items()})
    with pytest.raises(BenchmarkFailure, match="but the case's build is"):
        NPB.parse(text, other)


def test_not_checked_with_a_verdict_is_inconsistent() -> None:
    lines = (SMPI_DATA / "npb-cg-S-np4-fold.jsonl").read_text().splitlines()
    result = json.loads(lines[1])
    result["verified"] = True
    lines[1] = json.dumps(result)
    case = npb_case("cg", "S", Placement(1, 4), {"sampling": False, "memory_folding": True})
    with pytest.raises(BenchmarkFailure, match="inconsistent not-checked result"):
        NPB.parse("\n".join(lines), case)


def test_a_kernel_that_folds_nothing_is_verified() -> None:
    # IS holds keys (indices): it folds nothing, so its folded build still verifies.
    text = (SMPI_DATA / "npb-is-S-np4-fold.jsonl").read_text()
    case = npb_case("is", "S", Placement(1, 4), {"sampling": False, "memory_folding": True})
    NPB.verify(text, case, case.points)
    (point,) = NPB.parse(text, case)
    assert isinstance(point.measurements[0].details["verification"], list)


# ------------------------------------------------------------ real smpirun runs --


def smpirun_process(program: Path, args: Sequence[str], ranks: int, *cfg: str,
                    hostfile: Path = SMPI_DATA / "hosts-4x4.txt",
                    env: Mapping[str, str] | None = None,
                    cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """smpirun of `program` on the 4x4 test cluster, whatever its exit status (a failing
    smpirun leaves its unrolled hostfile in `cwd`: tests that expect one pass a tmp_path)."""
    argv = [
        "smpirun", "-platform", str(SMPI_DATA / "cluster-4x4.xml"),
        "-hostfile", str(hostfile), "-np", str(ranks),
        "--cfg=smpi/host-speed:1Gf", "--log=xbt_cfg.thres:warning", *cfg,
        str(program), *args,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          env=env, cwd=cwd)  # fmt: skip


def smpirun(program: Path, args: Sequence[str], ranks: int, *cfg: str,
            hostfile: Path = SMPI_DATA / "hosts-4x4.txt",
            env: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """The stdout of an smpirun that must succeed."""
    done = smpirun_process(program, args, ranks, *cfg, hostfile=hostfile, env=env)
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    return done.stdout


def environment_with(name: str, value: str | None) -> dict[str, str]:
    """This process's environment with variable `name` set to `value` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != name}
    if value is not None:
        env[name] = value
    return env


def smpi_build(name: str, extra: Sequence[str] = ()) -> Program:
    identity = detect_smpi().identity()
    return get_benchmark(name).build(
        compiler="smpicc", compiler_identity=identity, cflags=["-O2", *extra]
    )


@requires_smpi
def test_smpi_builds_are_cached_apart_and_define_hpceval_smpi() -> None:
    program = smpi_build("npb")
    assert "-DHPCEVAL_SMPI" in program.cflags and "-fopenmp" not in program.cflags
    # (the same variant as the sampled and folded run below: one build less)
    folded = smpi_build("npb", smpi_build_flags(sampling=True, folding=True))
    assert folded.executables["cg"] != program.executables["cg"]
    assert smpi_build("npb").executables["cg"] == program.executables["cg"]  # cache hit
    build_txt = (program.executables["cg"].parent / "build.txt").read_text()
    assert "SimGrid SMPI" in build_txt


@requires_smpi
@pytest.mark.parametrize(
    ("kernel", "nodes", "ppn"),
    [
        ("cg", 1, 4),
        ("cg", 4, 4),
        ("mg", 1, 4),
        ("ft", 1, 4),
        ("bt", 1, 4),
        ("sp", 1, 4),
        ("lu", 1, 2),
        ("bt-mz", 1, 4),
        ("sp-mz", 1, 4),
        ("lu-mz", 1, 4),
    ],
)
def test_npb_class_s_verifies_under_smpirun(kernel: str, nodes: int, ppn: int) -> None:
    program = smpi_build("npb")
    case = npb_case(kernel, "S", Placement(nodes, ppn))
    out = smpirun(program.executables[kernel], ["--class", "S"], nodes * ppn)
    NPB.verify(out, case, case.points)
    (point,) = NPB.parse(out, case)
    header = json.loads(out.splitlines()[0])
    assert header["mpi_library"].startswith("SMPI") and header["threads"] == 1
    assert [m.metric for m in point.measurements] == ["time", "mops_total", "mops_per_process"]


@requires_smpi
@pytest.mark.parametrize("ranks", [1, 2])
def test_ft_verifies_under_the_open_mpi_selector_on_one_and_two_ranks(
    ranks: int, tmp_path: Path
) -> None:
    # FT's checksum MPI_Reduce on one rank aborted under SimGrid 3.32's Open MPI selector
    # (issue 21: "a single-rank FT aborts under SMPI"); the smpirun starter's command for one
    # rank goes without the selector. Run that very command, as `hpceval simulate` does.
    program = smpi_build("npb")
    starter = get_starter_class("smpirun")()
    cfg = {"smpi/host-speed": "1Gf", "smpi/coll-selector": "ompi"}
    options = starter.options_model.model_validate(  # type: ignore[union-attr]
        {"platform_file": str(SMPI_DATA / "cluster-4x4.xml"), "workdir": str(tmp_path),
         "cfg": cfg}
    )  # fmt: skip
    placement = Placement(1, ranks)
    command = starter.command(StartRequest(
        placement=placement, program=[str(program.executables["ft"]), "--class", "S"],
        implementation="SMPI", executable="smpirun", options=options,
    ))  # fmt: skip
    assert ("--cfg=smpi/coll-selector:ompi" in command.argv) is (ranks > 1)
    for path, text in command.files.items():
        Path(path).write_text(text)
    done = subprocess.run(list(command.argv), capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    case = npb_case("ft", "S", placement)
    NPB.verify(done.stdout, case, case.points)
    (point,) = NPB.parse(done.stdout, case)
    assert point.measurements[0].details["verification"][0]["passed"] is True


@requires_smpi
def test_the_open_mpi_selector_still_aborts_a_one_rank_reduce(tmp_path: Path) -> None:
    # Why the starter drops the selector for one rank: if a SimGrid release fixes its
    # pipelined reduce on one rank, this fails and the workaround can go.
    source = tmp_path / "reduce.c"
    source.write_text(
        "#include <mpi.h>\nint main(int c, char **v) { double a[2] = {1, 2}, b[2];\n"
        "MPI_Init(&c, &v); MPI_Reduce(a, b, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);\n"
        "MPI_Finalize(); return 0; }\n"
    )
    subprocess.run(["smpicc", "-o", str(tmp_path / "reduce"), str(source)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    argv = [
        "smpirun", "-platform", str(SMPI_DATA / "cluster-4x4.xml"),
        "-hostfile", str(SMPI_DATA / "hosts-4x4.txt"), "-np", "1",
        "--log=xbt_cfg.thres:warning", "--cfg=smpi/coll-selector:ompi", str(tmp_path / "reduce"),
    ]  # fmt: skip
    # In tmp_path: the aborted smpirun leaves its unrolled hostfile (smpitmp-hostf*) in its
    # working directory.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0 and "is gone" in done.stdout + done.stderr


@requires_smpi
def test_folded_and_sampled_cg_runs_and_says_not_checked() -> None:
    flags = smpi_build_flags(sampling=True, folding=True)
    program = smpi_build("npb", flags)
    case = npb_case("cg", "S", Placement(1, 4), {"sampling": True, "memory_folding": True})
    out = smpirun(program.executables["cg"], ["--class", "S"], 4)
    NPB.verify(out, case, case.points)
    (point,) = NPB.parse(out, case)
    assert point.measurements[0].details["verification"] == (
        "not checked (computation sampling and memory folding)"
    )


def test_extrapolated_time_follows_the_official_count() -> None:
    # 3 of 15 iterations timed: time_s is already scaled to 15, so the Mop/s check holds;
    # a case asking for another count refuses the result.
    text = (SMPI_DATA / "npb-cg-S-np4-iter3.jsonl").read_text()
    case = npb_case("cg", "S", Placement(1, 4), {"sampling": False, "iterations": 5})
    with pytest.raises(BenchmarkFailure, match="timed 3 of 15 iterations, but the case's build"):
        NPB.parse(text, case)


@requires_smpi
@pytest.mark.parametrize("pattern", ["pingpong", "allreduce", "natural_ring"])
def test_mpibench_runs_under_smpirun(pattern: str) -> None:
    program = smpi_build("mpibench")
    sizes = [0, 1024, 65536]
    argv = [
        "--pattern", pattern, "--sizes", ",".join(map(str, sizes)), "--warmup-s", "0",
        "--sample-s", "0.0001", "--min-samples", "3", "--budget", "0.01",
    ]  # fmt: skip
    # The harness's own bookkeeping is host time, not target time: not simulated.
    out = smpirun(program.path, argv, 4, "--cfg=smpi/simulate-computation:no")
    case = Case(
        f"mpibench:{pattern}", "mpibench", Placement(1, 4, 1, "none"), {"pattern": pattern},
        tuple(point_key(s) for s in sizes), 60,
    )  # fmt: skip
    MPIBENCH.verify(out, case, case.points)
    points = MPIBENCH.parse(out, case)
    assert [p.point_key for p in points] == list(case.points)
    # Deterministic simulation: every sample of a point is the same time.
    for line in out.splitlines():
        record = json.loads(line)
        if record["record"] == "point":
            assert max(record["t_max_us"]) - min(record["t_max_us"]) < 1e-6 * record["t_max_us"][0]


# ------------------------------------------- Open MPI's broadcasts (smpi_colls/ompi_colls.c) --

BCAST_CHECK = SMPI_DATA / "bcast_check.c"


def bcast_check_build(tmp_path: Path) -> Path:
    # Through compile_program, as every benchmark is built: the smpicc build links the file in.
    return compile_program(
        "bcast-check", [BCAST_CHECK], compiler="smpicc",
        compiler_identity=detect_smpi().identity(), cflags=["-O2", "-DHPCEVAL_SMPI"],
        cache=tmp_path,
    )  # fmt: skip


def bcast_run(program: Path, args: Sequence[str], ranks: int, hostfile: Path,
              bcast_env: str | None, *cfg: str) -> str:  # fmt: skip
    env = environment_with("HPCEVAL_SMPI_BCAST", bcast_env)
    return smpirun(program, args, ranks, "--cfg=smpi/coll-selector:ompi", *cfg,
                   hostfile=hostfile, env=env)  # fmt: skip


@requires_smpi
def test_open_mpi_broadcasts_deliver_every_byte(tmp_path: Path) -> None:
    # Communicators of 2 to 9 ranks, every root, sizes that reach Open MPI's linear, chain,
    # binary tree and the algorithms left to SMPI (binomial, k-nomial, scatter+allgather).
    program = bcast_check_build(tmp_path)
    hosts = SMPI_DATA / "hosts-4x4.txt"
    out = bcast_run(program, ["verify"], 9, hosts, "openmpi")
    assert out.strip() == f"verified {sum(range(2, 10)) * 10}"


@requires_smpi
def test_open_mpi_chain_sends_the_whole_buffer_hop_by_hop(tmp_path: Path) -> None:
    # 4 ranks on 4 nodes, 1 MiB: Open MPI 4.1's fixed decision is a chain of one segment,
    # 3 hops of a whole 1 MiB send; SimGrid's own pipeline of segments overlaps them (2.3
    # sends on this platform, its segments' latencies included). Host time between the
    # calls is not charged (smpi/simulate-computation:no): the ratios are exact.
    program = bcast_check_build(tmp_path)
    hosts = tmp_path / "hosts-4x1.txt"
    hosts.write_text("".join(f"node-{n}\n" for n in range(4)))

    def ratio(bcast_env: str | None) -> float:
        words = bcast_run(program, ["time"], 4, hosts, bcast_env,
                          "--cfg=smpi/simulate-computation:no").split()  # fmt: skip
        assert words[0] == "send" and words[2] == "bcast"
        return float(words[3]) / float(words[1])

    assert 2.8 < ratio("openmpi") < 3.1  # 2.95 here
    assert ratio(None) < 2.5  # 2.28 here


# ------------------------------------ Open MPI's scans (smpi_colls/ompi_colls.c: a chain) --

SCAN_CHECK = SMPI_DATA / "scan_check.c"


def scan_run(tmp_path: Path, args: Sequence[str], ranks: int, hostfile: Path,
             scan_env: str | None, *cfg: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    program = compile_program(
        "scan-check", [SCAN_CHECK], compiler="smpicc",
        compiler_identity=detect_smpi().identity(), cflags=["-O2", "-DHPCEVAL_SMPI"],
        cache=tmp_path,
    )  # fmt: skip
    return smpirun_process(program, args, ranks, "--cfg=smpi/coll-selector:ompi", *cfg,
                           hostfile=hostfile, env=environment_with("HPCEVAL_SMPI_SCAN", scan_env),
                           cwd=tmp_path)  # fmt: skip


@requires_smpi
def test_open_mpi_scans_combine_every_prefix_in_order(tmp_path: Path) -> None:
    # Communicators of 2 to 9 ranks, sums and maxima of 3 ints and a non-commutative matrix
    # product, in place or not; SimGrid 3.32's own scans return each rank's own matrix.
    hosts = SMPI_DATA / "hosts-4x4.txt"
    done = scan_run(tmp_path, ["verify"], 9, hosts, "openmpi")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "verified 480"
    smpi_own = scan_run(tmp_path, ["verify"], 3, hosts, None)
    assert smpi_own.returncode != 0 and "scan matrices, product 0 wrong" in smpi_own.stderr


@requires_smpi
def test_open_mpi_exscan_is_a_chain(tmp_path: Path) -> None:
    # 4 ranks on 4 nodes: the last rank has its prefix after 3 hops of one int (Open MPI's
    # chain); SimGrid's own sends every prefix at once (one hop). Host time between the
    # calls is not charged (smpi/simulate-computation:no): the ratios are exact.
    hosts = tmp_path / "hosts-4x1.txt"
    hosts.write_text("".join(f"node-{n}\n" for n in range(4)))

    def ratio(scan_env: str | None) -> float:
        done = scan_run(tmp_path, ["time"], 4, hosts, scan_env,
                        "--cfg=smpi/simulate-computation:no")  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        words = done.stdout.split()
        assert words[0] == "send" and words[2] == "exscan"
        return float(words[3]) / float(words[1])

    assert 2.8 < ratio("openmpi") < 3.2  # 2.99 here
    assert ratio(None) < 1.5  # 1.00 here


# ------------- Open MPI's small allreduce (smpi_colls/ompi_colls.c: recursive doubling) --

ALLREDUCE_CHECK = SMPI_DATA / "allreduce_check.c"


def allreduce_run(
    tmp_path: Path, args: Sequence[str], ranks: int, hostfile: Path, allreduce_env: str | None,
    *cfg: str,
) -> subprocess.CompletedProcess[str]:
    program = compile_program(
        "allreduce-check", [ALLREDUCE_CHECK], compiler="smpicc",
        compiler_identity=detect_smpi().identity(), cflags=["-O2", "-DHPCEVAL_SMPI"],
        cache=tmp_path,
    )  # fmt: skip
    env = environment_with("HPCEVAL_SMPI_ALLREDUCE", allreduce_env)
    return smpirun_process(program, args, ranks, "--cfg=smpi/coll-selector:ompi", *cfg,
                           hostfile=hostfile, env=env, cwd=tmp_path)  # fmt: skip


@requires_smpi
def test_open_mpi_small_allreduces_combine_every_rank(tmp_path: Path) -> None:
    # Communicators of 2 to 9 ranks (5 to 7: beyond a power of two, the pairing of the extra
    # ranks), 1 to size + 1 ints, sums and maxima, in place or not.
    hosts = SMPI_DATA / "hosts-4x4.txt"
    done = allreduce_run(tmp_path, ["verify"], 9, hosts, "openmpi")
    assert done.returncode == 0, done.stderr[-2000:]
    # Each rank of each communicator counts its checks: 4 x size x (size + 1) per size.
    assert done.stdout.strip() == f"verified {sum(4 * k * (k + 1) for k in range(2, 10))}"


@requires_smpi
def test_a_small_allreduce_is_open_mpis_recursive_doubling(tmp_path: Path) -> None:
    # 4 ranks on 4 nodes, one double: Open MPI 4.1 rings below 16 B and its ring hands fewer
    # elements than ranks to recursive doubling; SimGrid's stand-in for the ring reduces and
    # then broadcasts. This file's exchange takes exactly as long as SMPI's own recursive
    # doubling (3.0 sends here), SMPI's selector as long as its reduce + broadcast (4.0).
    # Host time between the calls is not charged (smpi/simulate-computation:no).
    hosts = tmp_path / "hosts-4x1.txt"
    hosts.write_text("".join(f"node-{n}\n" for n in range(4)))

    def ratio(allreduce_env: str | None, *cfg: str) -> float:
        done = allreduce_run(tmp_path, ["time"], 4, hosts, allreduce_env,
                             "--cfg=smpi/simulate-computation:no", *cfg)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        words = done.stdout.split()
        assert words[0] == "send" and words[2] == "allreduce"
        return float(words[3]) / float(words[1])  # the second call's

    ours, smpis = ratio("openmpi"), ratio(None)
    assert ours == pytest.approx(ratio(None, "--cfg=smpi/allreduce:rdb"), rel=1e-9)
    assert smpis == pytest.approx(ratio(None, "--cfg=smpi/allreduce:redbcast"), rel=1e-9)
    assert smpis > 1.2 * ours


@requires_smpi
@pytest.mark.parametrize("how", ["world", "dup", "split", "split_type", "create", "create_group",
                                 "cart", "cart_sub"])  # fmt: skip
def test_a_communicators_duplicate_is_made_with_it_not_in_its_first_collective(
    tmp_path: Path, how: str,
) -> None:
    # The file's collectives send on a duplicate of the program's communicator, and SMPI
    # charges an MPI_Comm_dup as time (4.05 us on this platform, two thirds of the allreduce):
    # made in the first MPI_Allreduce it lengthened that call, inside a program's timed region.
    # Made in the call that makes the communicator, the first allreduce takes exactly as long
    # as the second. split_type (MPI_COMM_TYPE_SHARED) keeps the ranks of a node: one node.
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("node-0:4\n" if how == "split_type" else
                     "".join(f"node-{n}\n" for n in range(4)))  # fmt: skip
    done = allreduce_run(tmp_path, ["time", how], 4, hosts, "openmpi",
                         "--cfg=smpi/simulate-computation:no")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    words = done.stdout.split()
    assert words[2] == "allreduce" and words[4] == "first"
    second, first = float(words[3]), float(words[5])
    assert second > 0
    assert first == pytest.approx(second, rel=1e-9)
