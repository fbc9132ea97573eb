"""Building and running one of hpceval's NPB C programs directly (the tests of BT and LU)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from hpceval.benchmarks.npb import NPB_CFLAGS, compile_npb_program
from hpceval.toolchain import MpiToolchain

RUN_TIMEOUT_S = 300


def build_program(
    program: str, toolchain: MpiToolchain, cache: Path, extra_flags: tuple[str, ...] = ()
) -> Path:
    return compile_npb_program(
        program,
        compiler=toolchain.mpicc,
        compiler_identity=toolchain.identity(),
        cflags=[*NPB_CFLAGS, *extra_flags],
        cache=cache,
    )


def run_program(
    toolchain: MpiToolchain, exe: Path, ranks: int, threads: int = 1, class_name: str = "S"
) -> tuple[int, list[dict[str, Any]], str]:
    """Exit status, the JSON records on stdout and the whole output of one mpirun."""
    root = toolchain.run_as_root() if os.geteuid() == 0 else None
    argv = [
        toolchain.mpirun,
        *(root.mpirun_args if root else ()),
        "--oversubscribe",
        "-np",
        str(ranks),
        str(exe),
        "--class",
        class_name,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, env=env
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, records, proc.stdout + proc.stderr


def only(records: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [r for r in records if r["record"] == kind]
    assert len(found) == 1, f"expected one {kind} record, got {found}"
    return found[0]
