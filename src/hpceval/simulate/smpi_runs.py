"""Running SMPI for calibration: the `smpi` launcher, one simulated case, and the runner that
simulates mpibench patterns and NPB kernels on a candidate platform while a calibration fits it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hpceval.benchmarks import Benchmark, Case, Program, get_benchmark
from hpceval.config import PlatformConfig
from hpceval.errors import BenchmarkFailure, UserError
from hpceval.launch import Launcher, MpiRuntime, get_launcher_class
from hpceval.simulate.plan import (
    MPIBENCH_SIM_CONFIG,
    MPIBENCH_SIM_OPTIONS,
    SmpiTools,
    build_programs,
    simulated_platform,
)
from hpceval.simulate.platform import PlatformSpec, platform_xml
from hpceval.simulate.sources import NetworkPath, SpeedReference

CALIBRATION_TIMEOUT_S = 600.0


# --------------------------------------------------------------------------- executing


def _launcher(
    spec: PlatformSpec, cfg: Mapping[str, str], workdir: Path, tools: SmpiTools, name: str
) -> Launcher:
    workdir.mkdir(parents=True, exist_ok=True)
    xml = workdir / f"{name}.xml"
    xml.write_text(platform_xml(spec))
    platform = simulated_platform(
        spec.name, "calibration", spec, memory_gb_per_node=None, platform_file=xml,
        workdir=workdir, cfg=cfg, tools=tools, oversubscribe=True,
    )  # fmt: skip
    return smpi_launcher(platform, tools)


def smpi_launcher(platform: PlatformConfig, tools: SmpiTools) -> Launcher:
    """The local scheduler with the smpirun starter (`kind = "smpi"`)."""
    return get_launcher_class("smpi")(platform, MpiRuntime("SMPI", tools.smpirun))


def run_once(
    launcher: Launcher, bench: Benchmark[Any], program: Program, case: Case, timeout_s: float
) -> list[Any]:
    """One smpirun of a case outside any run (calibration): its verified measurements."""
    command = launcher.command(case.placement, bench.command(case, program, case.points))
    try:
        done = subprocess.run(
            list(command.argv),
            env={**os.environ, **command.env},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UserError(
            f"calibration: smpirun of {case.key} took more than {timeout_s:g} s"
        ) from None
    why = ""
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}"
    else:
        try:
            effective = replace(case, parameters={**case.parameters, "oversubscribed": False})
            bench.verify(done.stdout, effective, case.points)
            return [m for p in bench.parse(done.stdout, effective) for m in p.measurements]
        except BenchmarkFailure as e:
            why = str(e)
    raise UserError(f"calibration: smpirun of {case.key} failed: {why}")


class SmpiCalibrationRunner:
    """The real simulators the calibration iterates (smpirun of mpibench and NPB)."""

    def __init__(self, tools: SmpiTools, workdir: Path) -> None:
        self.tools = tools
        self.workdir = workdir
        self._programs: dict[str, Program] = {}
        self.runs = 0

    def program(self, name: str) -> Program:
        if name not in self._programs:
            self._programs.update(build_programs([name], self.tools))
        return self._programs[name]

    def pingpong(
        self, spec: PlatformSpec, cfg: Mapping[str, str], path: NetworkPath, sizes: Sequence[int]
    ) -> list[float]:
        bench = get_benchmark("mpibench")
        nodes, ppn = (2, 1) if path == "inter-node" else (1, 2)
        spec = replace(
            spec, nodes=max(spec.nodes, nodes), cores_per_node=max(2, spec.cores_per_node)
        )
        launcher = _launcher(
            spec, {**cfg, **MPIBENCH_SIM_CONFIG}, self.workdir, self.tools, "calibration"
        )
        options = {"patterns": ["pingpong"], "sizes": list(sizes), "ranks": [2],
                   "ranks_per_node": [ppn], **MPIBENCH_SIM_OPTIONS}  # fmt: skip
        (case,) = bench.cases(bench.parse_options(options), launcher.platform, 0)
        self.runs += 1
        measured = run_once(launcher, bench, self.program("mpibench"), case, CALIBRATION_TIMEOUT_S)
        by_size = {int(m.parameters["size"]): m.value for m in measured if m.metric == "latency"}
        return [by_size[s] for s in sizes]

    def pattern(
        self,
        spec: PlatformSpec,
        cfg: Mapping[str, str],
        pattern: str,
        ranks: int,
        ppn: int,
        sizes: Sequence[int],
    ) -> dict[tuple[str, int], float]:
        """mpibench `pattern` on `ranks` ranks at `ppn` per node: (metric, size) -> value."""
        bench = get_benchmark("mpibench")
        spec = replace(spec, nodes=max(spec.nodes, ranks // ppn),
                       cores_per_node=max(ppn, spec.cores_per_node))  # fmt: skip
        launcher = _launcher(
            spec, {**cfg, **MPIBENCH_SIM_CONFIG}, self.workdir, self.tools, "calibration"
        )
        options = {"patterns": [pattern], "sizes": list(sizes), "ranks": [ranks],
                   "ranks_per_node": [ppn], **MPIBENCH_SIM_OPTIONS}  # fmt: skip
        (case,) = bench.cases(bench.parse_options(options), launcher.platform, 0)
        self.runs += 1
        measured = run_once(launcher, bench, self.program("mpibench"), case, CALIBRATION_TIMEOUT_S)
        return {(m.metric, int(m.parameters["size"])): float(m.value) for m in measured}

    def kernel(
        self, spec: PlatformSpec, cfg: Mapping[str, str], reference: SpeedReference
    ) -> float:
        bench = get_benchmark("npb")
        launcher = _launcher(spec, cfg, self.workdir, self.tools, "calibration")
        options = {"kernels": [reference.kernel], "classes": [reference.class_name],
                   "ranks": [1], "ranks_per_node": [1]}  # fmt: skip
        (case,) = bench.cases(bench.parse_options(options), launcher.platform, 0)
        self.runs += 1
        measured = run_once(launcher, bench, self.program("npb"), case, CALIBRATION_TIMEOUT_S)
        return float(next(m.value for m in measured if m.metric == "time"))
