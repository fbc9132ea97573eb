"""`lqcd`: hpceval's lattice-QCD mini-application, MILC's class (lqcd.c, docs/lqcd.md).

A staggered-fermion conjugate gradient on a 4-D lattice of SU(3) links drawn from a seed:
the normal equations on the even sites that MILC's CG solves (4m^2 - D_eo D_oe), a 4-D
domain decomposition over the MPI ranks (decomposition.py picks the grid; impossible ones
are refused before anything runs), halo exchange with up to 8 neighbours, two global sums
of one double per iteration. One run per point; a point exists only once the run verified
(output.py). Figures: CG iterations/s, GFLOP/s (1212 flops per even site per iteration),
the CG's time, halo bytes and global sums per iteration (checked against the grid), and
the share of the CG spent communicating.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from hpceval.benchmarks import register
from hpceval.benchmarks.base import Benchmark, Case, ParsedPoint, Program
from hpceval.benchmarks.common import (
    RankSweepOptions,
    WholeOutputs,
    rank_placements,
    repeated_case,
)
from hpceval.benchmarks.display import application_headline, application_table
from hpceval.benchmarks.lqcd.decomposition import (
    Decomposition,
    decompose,
    lattice_label,
    parse_lattice,
)
from hpceval.benchmarks.lqcd.output import PROGRAM, decoded_records, parse_output
from hpceval.build import check_smpi_options, compile_program, is_smpi_compiler, smpi_cflags
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure
from hpceval.model import Measurement, ParamValue, Placement

if TYPE_CHECKING:
    from rich.table import Table

SOURCE = Path(__file__).with_name("lqcd.c")
LQCD_CFLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fno-math-errno", "-std=c11")
# A pessimistic flop rate and iteration count for the ETA and the default time limit.
ESTIMATE_FLOPS_PER_S = 3e8
ESTIMATE_ITERATIONS = 400


class LqcdOptions(RankSweepOptions):
    # "L" (L^4) or "XxYxZxT", even extents.
    lattice: list[str] = Field(default_factory=lambda: ["8"], min_length=1)
    mass: float = Field(0.1, gt=0, le=10)
    tol: float = Field(1e-8, ge=1e-13, lt=1e-2)
    seed: int = Field(1, ge=0, le=2**62)
    max_iterations: int = Field(5000, ge=1, le=1_000_000)

    @field_validator("lattice")
    @classmethod
    def _lattices(cls, value: list[str]) -> list[str]:
        return [lattice_label(parse_lattice(text)) for text in value]

    @model_validator(mode="after")
    def _check(self) -> LqcdOptions:
        if self.threads_per_rank != [1]:
            raise ValueError("threads_per_rank: the lattice-QCD program runs one thread per rank")
        return self


@register
class Lqcd(Benchmark[LqcdOptions]):
    name = "lqcd"
    description = "Lattice QCD (MILC's class): staggered CG on SU(3) links, 4-D halo exchange"
    points_per_execution = 1
    Options = LqcdOptions

    def __init__(self) -> None:
        self._outputs = WholeOutputs()

    def cases(self, options: LqcdOptions, platform: PlatformConfig, entry_index: int) -> list[Case]:
        cases = []
        for text in options.lattice:
            lattice = parse_lattice(text)
            for ranks in options.ranks:
                decomposition = decompose(lattice, ranks)  # UserError when impossible
                estimate = 1.0 + ESTIMATE_ITERATIONS * decomposition.flops_per_iteration() / (
                    ESTIMATE_FLOPS_PER_S * ranks
                )
                for placement in rank_placements(
                    ranks, 1, options.ranks_per_node, options.binding, platform
                ):
                    cases.append(self._case(options, decomposition, placement, estimate))
        return cases

    def _case(
        self, options: LqcdOptions, d: Decomposition, placement: Placement, estimate: float
    ) -> Case:
        params: dict[str, ParamValue] = {
            "lattice": lattice_label(d.lattice),
            "grid": lattice_label(d.grid),
            "local": lattice_label(d.local),
            "mass": options.mass,
            "tol": options.tol,
            "seed": options.seed,
        }
        key_parts = [
            f"lattice={lattice_label(d.lattice)}", f"grid={lattice_label(d.grid)}",
            f"mass={options.mass:g}", f"tol={options.tol:g}", f"seed={options.seed}",
        ]  # fmt: skip
        return repeated_case(
            self.name, key_parts, placement, params,
            repeat=options.repeat, run_estimate_s=estimate,
            explicit_limit_s=options.time_limit_s,
            options={
                "lattice": list(d.lattice), "grid": list(d.grid), "mass": options.mass,
                "tol": options.tol, "seed": options.seed,
                "max_iterations": options.max_iterations,
            },
        )  # fmt: skip

    def build(self, *, compiler: str, compiler_identity: str, cflags: Sequence[str]) -> Program:
        check_smpi_options(compiler, cflags)
        # A compute kernel: its own optimisation flags, not the platform's -O2.
        flags: tuple[str, ...] = (*LQCD_CFLAGS, *(f for f in cflags if not f.startswith("-O")))
        if is_smpi_compiler(compiler):
            flags = smpi_cflags(flags)
        path = compile_program(
            PROGRAM, [SOURCE], compiler=compiler, compiler_identity=compiler_identity,
            cflags=flags, ldflags=["-lm"],
        )  # fmt: skip
        return Program(path, compiler, flags)

    def command(self, case: Case, program: Program, points: Sequence[str]) -> list[str]:
        o = case.options
        return [
            str(program.path),
            "--lattice", ",".join(str(int(n)) for n in o["lattice"]),
            "--grid", ",".join(str(int(n)) for n in o["grid"]),
            "--mass", repr(float(o["mass"])),
            "--tol", repr(float(o["tol"])),
            "--seed", str(int(o["seed"])),
            "--max-iters", str(int(o["max_iterations"])),
        ]  # fmt: skip

    def parse_line(self, line: str, case: Case) -> ParsedPoint | None:
        decoded = decoded_records(line)  # raises on an error record
        if not decoded:
            return None
        kind = decoded[0].get("record")
        lines = self._outputs.add(case.key, line, starts=kind == "header")
        if kind != "end":
            return None
        self._outputs.discard(case.key)
        (point,) = case.points
        return parse_output("\n".join(lines), case, point)

    def verify(self, stdout: str, case: Case, points: Sequence[str]) -> None:
        self._outputs.discard(case.key)
        if len(points) != 1:
            raise BenchmarkFailure(f"lqcd: one point per run, asked for {len(points)}")
        parse_output(stdout, case, points[0])

    def headline(self, measurements: Sequence[Measurement]) -> str:
        gflops = [m.value for m in measurements if m.metric == "gflops"]
        head = application_headline(measurements, "cg_rate", "CG iterations/s")
        return f"{head}, {max(gflops):.2f} GFLOP/s" if gflops and head else head

    def tables(self, measurements: Sequence[Measurement]) -> list[Table]:
        return application_table(
            measurements,
            benchmark=self.name,
            title="Lattice QCD (staggered CG)",
            figures=(("cg_rate", "CG it/s"), ("gflops", "GFLOP/s")),
            size_keys=("lattice", "grid", "mass"),
        )
