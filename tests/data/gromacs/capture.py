"""Capture real GROMACS and LAMMPS outputs for the parser tests (run by hand, not by pytest).

Each capture runs the exact command the benchmark builds (staged input, the local
launcher's mpirun argv and environment) and saves the program's standard output, which for
both tools is their log (mdrun's md.log is linked to stdout; lmp runs with -log none):

    .venv/bin/python tests/data/gromacs/capture.py gromacs NAME 'box_nm=[2.5]' ...
    .venv/bin/python tests/data/gromacs/capture.py lammps NAME 'n=[5]' 'ranks=[2]'

The options are the suite entry's, as TOML key=value pairs; the output goes to
tests/data/<tool>/NAME.log, its argv to NAME.argv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from hpceval.benchmarks import get_benchmark
from hpceval.campaign import load_platform
from hpceval.launch import MpiRuntime, get_launcher_class
from hpceval.toolchain import detect_mpi

DATA = Path(__file__).resolve().parent.parent


def main(tool: str, name: str, *pairs: str) -> None:
    options = tomllib.loads("\n".join(pairs))
    bench = get_benchmark(tool)
    platform = load_platform("local").config
    (case,) = bench.cases(bench.parse_options(options), platform, 0)
    toolchain = detect_mpi()
    launcher = get_launcher_class("local")(
        platform, MpiRuntime(toolchain.implementation, toolchain.mpirun)
    )
    program = bench.build(compiler="", compiler_identity="", cflags=())
    with bench.staged(case, case.points[:1]) as staged:
        command = launcher.command(staged.placement, bench.command(staged, program, ["rep=1"]))
        env = {**os.environ, **command.env}
        proc = subprocess.run(command.argv, env=env, capture_output=True, text=True, check=False)
    (DATA / tool / f"{name}.log").write_text(proc.stdout)
    (DATA / tool / f"{name}.argv").write_text(" ".join(command.argv) + "\n")
    print(f"{name}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")
    if proc.returncode != 0:
        print(proc.stderr[-2000:])


if __name__ == "__main__":
    main(*sys.argv[1:])
