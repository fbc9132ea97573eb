"""The transport probe: a two-rank ping-pong run through the platform's own launcher, once
per pair class (intra-node; inter-node when the platform has two nodes or more), with the
MPI library asked to say what it chose. Run at the start of a campaign, inside the launcher's
session (an emulated cluster exists only there); the answer goes into the run's provenance
(facts["transport"]).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from hpceval.build import compile_program
from hpceval.config import PlatformConfig
from hpceval.errors import ToolMissing, UserError
from hpceval.execute import StartFailed
from hpceval.launch import Launcher
from hpceval.model import Environment, Placement
from hpceval.provenance import fingerprint
from hpceval.toolchain import MpiToolchain
from hpceval.transport.parse import (
    parse_mpich_device,
    parse_ompi_info_single_copy,
    parse_probe,
)

SOURCE = Path(__file__).with_name("transport_probe.c")
# The probe takes about a second (a few on an emulated cluster); one that has not ended by
# then is stopped and recorded as failed.
PROBE_TIMEOUT_S = 30.0
INFO_TIMEOUT_S = 20.0

# How each library is asked to report its choice (stderr of the ranks; the probe joins it
# to stdout). Open MPI: the PML/MTL selection and, per peer, the BML's BTL; UCX (MPICH's
# ch4:ucx, Open MPI's pml ucx): the endpoint configurations.
VERBOSE_ENV = {
    "Open MPI": {
        "OMPI_MCA_pml_base_verbose": "10",
        "OMPI_MCA_btl_base_verbose": "100",
        "OMPI_MCA_mtl_base_verbose": "10",
        "UCX_LOG_LEVEL": "info",
    },
    "MPICH": {"UCX_LOG_LEVEL": "info"},
}

INTRA_NODE = "intra-node"
INTER_NODE = "inter-node"


def pair_classes(platform: PlatformConfig) -> list[tuple[str, Placement]]:
    """The placements that show each pair class: two ranks on one node, one rank on each
    of two nodes. Unbound: the probe asks which path, not how fast a core is."""
    classes = [(INTRA_NODE, Placement(1, 2, 1, "none"))]
    if platform.nodes >= 2:
        classes.append((INTER_NODE, Placement(2, 1, 1, "none")))
    return classes


def build_probe(toolchain: MpiToolchain) -> Path:
    return compile_program(
        "transport_probe",
        [SOURCE],
        compiler=toolchain.mpicc,
        compiler_identity=toolchain.identity(),
        cflags=["-O2"],
    )


def run_probe(
    launcher: Launcher, program: Path, placement: Placement, implementation: str
) -> tuple[str, int | None]:
    """The probe's whole output and exit status (None: it did not end in time)."""
    command = launcher.command(placement, [str(program)])
    command = replace(command, env={**command.env, **VERBOSE_ENV.get(implementation, {})})
    running = launcher.submit(command, PROBE_TIMEOUT_S)
    lines: list[str] = []
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    while time.monotonic() < deadline:
        if running.queued():  # a batch job's wait in the queue is not the probe's time
            deadline = time.monotonic() + PROBE_TIMEOUT_S
        try:
            line = running.next_line(timeout=0.2)
        except TimeoutError:
            continue
        if line is None:
            break
        lines.append(line)
    code = running.wait(timeout=5.0)
    if code is None:
        running.stop()
        running.wait()
    return "".join(lines) + running.stderr_tail(), code


def _library_facts(toolchain: MpiToolchain) -> dict[str, Any]:
    """What the installation says of itself: vader's single-copy mechanism, MPICH's device."""
    if toolchain.implementation == "Open MPI":
        program = shutil.which("ompi_info", path=str(Path(toolchain.mpirun).parent))
        argv = ["--param", "btl", "vader", "--level", "9", "--parsable"]
        text = _output([program, *argv]) if program else None
        return {"single_copy": parse_ompi_info_single_copy(text) if text else None}
    if toolchain.implementation == "MPICH":
        program = shutil.which("mpichversion", path=str(Path(toolchain.mpirun).parent))
        text = _output([program]) if program else None
        return {"device": parse_mpich_device(text) if text else None}
    return {}


def _output(argv: list[str]) -> str | None:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=INFO_TIMEOUT_S, check=False
        )
        if proc.returncode == 0:
            return proc.stdout
    return None


def probe_transports(
    launcher: Launcher, toolchain: MpiToolchain, platform: PlatformConfig
) -> dict[str, Any]:
    """facts["transport"]: per pair class, the transport the library reported (or why not)."""
    if toolchain.implementation not in VERBOSE_ENV:
        return {"error": f"no transport probe for {toolchain.implementation}"}
    try:
        program = build_probe(toolchain)
    except (UserError, ToolMissing) as e:
        return {"error": f"transport probe not built: {e}"}
    library = _library_facts(toolchain)
    facts: dict[str, Any] = {}
    for pair, placement in pair_classes(platform):
        try:
            text, code = run_probe(launcher, program, placement, toolchain.implementation)
        except (StartFailed, UserError) as e:
            facts[pair] = {"error": f"transport probe not started: {e}"}
            continue
        if code != 0:
            last = text.strip().splitlines()[-1:] or ["no output"]
            facts[pair] = {"error": f"transport probe failed (exit {code}): {last[0][:200]}"}
            continue
        transport = parse_probe(text, toolchain.implementation)
        facts[pair] = {**transport.as_facts(), **library}
    return facts


def with_facts(environment: Environment, key: str, value: dict[str, Any]) -> Environment:
    """The environment with a record probed in the session (provenance.MEASURED_KEYS: the
    transport, the container runtime), and the fingerprint that includes it."""
    facts = {**environment.facts, key: value}
    return Environment(facts=facts, fingerprint=fingerprint(facts))
