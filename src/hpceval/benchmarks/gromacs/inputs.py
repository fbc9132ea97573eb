"""The GROMACS benchmark system: a water box made offline with GROMACS' own tools.

`gmx solvate` fills a cubic box with the equilibrated 3-site water shipped with GROMACS
(spc216.gro), hpceval writes the topology (the chosen water model from the OPLS-AA force
field directory shipped with GROMACS) and the run parameters (.mdp), a short steepest-descent
minimisation removes the close contacts solvate leaves at the box faces, and `gmx grompp`
makes the run input (.tpr). The result is cached by everything that determines it (the
texts below, the box, the GROMACS version), so a size is prepared once per machine.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hpceval.build import cache_root
from hpceval.errors import BenchmarkFailure
from hpceval.scratch import make_scratch

# Bumped whenever the generated files change meaning; part of the cache key.
GENERATOR_VERSION: Final = "1"
WATER_MODELS: Final[dict[str, str]] = {
    # model -> (include of the OPLS-AA directory shipped with GROMACS)
    "spce": "oplsaa.ff/spce.itp",
    "tip3p": "oplsaa.ff/tip3p.itp",
    "spc": "oplsaa.ff/spc.itp",
}
WATER_NAMES: Final[dict[str, str]] = {"spce": "SPC/E", "tip3p": "TIP3P", "spc": "SPC"}
TIME_STEP_PS: Final = 0.002
CUTOFF_NM: Final = 1.0
# The smallest cubic box whose pair list (cut-off plus the Verlet buffer mdrun may grow to
# about 0.2 nm) stays within half a box edge, as periodic boundaries require.
MIN_BOX_NM: Final = 2.5
MINIMISATION_STEPS: Final = 500
TOOL_TIMEOUT_S: Final = 600
LOG_NAME: Final = "md"  # mdrun -deffnm: md.log, md.edr ... in the execution's directory


@dataclass(frozen=True)
class SystemSpec:
    """What determines a benchmark input: water model, box edge, number of MD steps."""

    water: str
    box_nm: float
    steps: int

    @property
    def label(self) -> str:
        return f"{WATER_NAMES[self.water]} water, {self.box_nm:g} nm box"


@dataclass(frozen=True)
class PreparedSystem:
    """A cached input: the run input file and the facts recorded with the measurements."""

    directory: Path
    tpr: Path
    atoms: int
    molecules: int
    gromacs_version: str


def topology_text(water: str, molecules: int, box_nm: float) -> str:
    return (
        f"; hpceval GROMACS benchmark system: {WATER_NAMES[water]} water, OPLS-AA parameters\n"
        '#include "oplsaa.ff/forcefield.itp"\n'
        f'#include "{WATER_MODELS[water]}"\n'
        "\n"
        "[ system ]\n"
        f"hpceval water box {box_nm:g} nm ({WATER_NAMES[water]})\n"
        "\n"
        "[ molecules ]\n"
        f"SOL {molecules}\n"
    )


_INTERACTIONS = (
    "cutoff-scheme            = Verlet\n"
    "coulombtype              = PME\n"
    f"rcoulomb                 = {CUTOFF_NM:g}\n"
    "vdwtype                  = Cut-off\n"
    f"rvdw                     = {CUTOFF_NM:g}\n"
    "DispCorr                 = EnerPres\n"
    "fourierspacing           = 0.12\n"
    "pme-order                = 4\n"
)


def minimisation_mdp_text() -> str:
    return (
        "; hpceval: steepest descent to remove the close contacts gmx solvate leaves\n"
        "integrator               = steep\n"
        f"nsteps                   = {MINIMISATION_STEPS}\n"
        "emtol                    = 1000\n"
        "emstep                   = 0.01\n" + _INTERACTIONS
    )


def md_mdp_text(steps: int) -> str:
    """The benchmark run: NVT water with PME, fixed steps, energies logged at both ends only."""
    return (
        "; hpceval GROMACS benchmark: PME water, fixed number of steps, no trajectory output\n"
        "integrator               = md\n"
        f"dt                       = {TIME_STEP_PS:g}\n"
        f"nsteps                   = {steps}\n"
        + _INTERACTIONS
        + "tcoupl                   = V-rescale\n"
        "tc-grps                  = System\n"
        "tau-t                    = 0.1\n"
        "ref-t                    = 300\n"
        "pcoupl                   = no\n"
        "constraints              = h-bonds\n"
        "gen-vel                  = yes\n"
        "gen-temp                 = 300\n"
        # Fixed seeds: every run of a size integrates the same trajectory.
        "gen-seed                 = 1993\n"
        "ld-seed                  = 1993\n"
        "nstxout                  = 0\n"
        "nstvout                  = 0\n"
        "nstfout                  = 0\n"
        "nstxout-compressed       = 0\n"
        "nstenergy                = 0\n"
        # The log gets the energies of the first and the last step (the completion check).
        f"nstlog                   = {steps}\n"
        f"nstcalcenergy            = {energy_interval(steps)}\n"
    )


def energy_interval(steps: int) -> int:
    """nstcalcenergy: at most 100 (GROMACS' default) and a divisor of the logged interval."""
    return max(d for d in range(1, min(100, steps) + 1) if steps % d == 0)


def gro_atom_count(text: str) -> int:
    """The atom count of a .gro file (its second line)."""
    lines = text.splitlines()
    try:
        return int(lines[1].strip())
    except (IndexError, ValueError):
        raise BenchmarkFailure("gmx solvate wrote a .gro file without an atom count") from None


@functools.cache
def gromacs_version(gmx: str) -> str:
    """'2022.5-Debian_2022.5_2' from `gmx --version` (part of the input's cache key)."""
    try:
        proc = subprocess.run(
            [gmx, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchmarkFailure(f"{gmx} --version failed: {e}") from e
    m = re.search(r"^GROMACS version:\s*(\S+)", proc.stdout, re.MULTILINE)
    if proc.returncode != 0 or m is None:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchmarkFailure(f"{gmx} --version did not give a version: {last}")
    return m.group(1)


def _tool_environment() -> dict[str, str]:
    # The preparation runs one thread-MPI rank with one OpenMP thread; a stray
    # OMP_NUM_THREADS that disagrees with -ntomp is a fatal error in mdrun.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GMX_"))}
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run_tool(argv: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=_tool_environment(),
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise BenchmarkFailure(f"{what} took more than {TOOL_TIMEOUT_S} s") from e
    except OSError as e:
        raise BenchmarkFailure(f"cannot start {argv[0]}: {e.strerror}") from e
    if proc.returncode != 0:
        raise BenchmarkFailure(f"{what} failed: {tool_error(proc.stderr)}")


def tool_error(stderr: str) -> str:
    """The message of a GROMACS error block ('Fatal error:' ...), else the last line."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("error:") and not line.startswith(" "):
            message = []
            for follow in lines[i + 1 :]:
                if not follow.strip() or follow.startswith("For more information"):
                    break
                message.append(follow.strip())
            return f"{line.strip()} {' '.join(message)}".strip()
    tail = [ln.strip() for ln in lines if ln.strip()]
    return tail[-1] if tail else "no output"


def cache_key(spec: SystemSpec, version: str) -> str:
    h = hashlib.sha256()
    for part in (
        GENERATOR_VERSION,
        version,
        spec.water,
        f"{spec.box_nm:.6g}",
        minimisation_mdp_text(),
        md_mdp_text(spec.steps),
        topology_text(spec.water, 0, spec.box_nm),
    ):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:20]


def prepare_system(spec: SystemSpec, gmx: str = "gmx", cache: Path | None = None) -> PreparedSystem:
    """The cached run input for `spec`, generated first if needed (BenchmarkFailure if not)."""
    if shutil.which(gmx) is None:
        raise BenchmarkFailure(
            f"{gmx} not found on PATH; install Debian package gromacs (./setup.sh deps)"
        )
    version = gromacs_version(gmx)
    root = (cache or cache_root()) / "gromacs"
    target = root / f"water-{spec.water}-{spec.box_nm:g}nm-{spec.steps}-{cache_key(spec, version)}"
    if not (target / "done").is_file():
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".prepare-", dir=root))
        try:
            _generate(spec, gmx, work)
            (work / "done").write_text(f"GROMACS {version}\n")
            try:
                os.rename(work, target)
            except OSError:
                # Another process prepared the same input meanwhile: keep theirs.
                if not (target / "done").is_file():
                    raise
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    atoms = gro_atom_count((target / "minimised.gro").read_text())
    return PreparedSystem(target, target / "topol.tpr", atoms, atoms // 3, version)


def _generate(spec: SystemSpec, gmx: str, work: Path) -> None:
    box = f"{spec.box_nm:g}"
    _run_tool(
        [gmx, "-nobackup", "solvate", "-cs", "spc216.gro", "-box", box, box, box,
         "-o", "solvated.gro"],
        work, f"gmx solvate ({spec.label})",
    )  # fmt: skip
    atoms = gro_atom_count((work / "solvated.gro").read_text())
    if atoms % 3:
        raise BenchmarkFailure(f"gmx solvate wrote {atoms} atoms, not a number of 3-site waters")
    (work / "topol.top").write_text(topology_text(spec.water, atoms // 3, spec.box_nm))
    (work / "minimisation.mdp").write_text(minimisation_mdp_text())
    (work / "md.mdp").write_text(md_mdp_text(spec.steps))
    _run_tool(
        [gmx, "-nobackup", "grompp", "-f", "minimisation.mdp", "-c", "solvated.gro",
         "-p", "topol.top", "-o", "minimisation.tpr", "-po", "minimisation-out.mdp"],
        work, f"gmx grompp of the minimisation ({spec.label})",
    )  # fmt: skip
    _run_tool(
        [gmx, "-nobackup", "mdrun", "-s", "minimisation.tpr", "-deffnm", "minimisation",
         "-c", "minimised.gro", "-ntmpi", "1", "-ntomp", "1"],
        work, f"the minimisation ({spec.label})",
    )  # fmt: skip
    _run_tool(
        [gmx, "-nobackup", "grompp", "-f", "md.mdp", "-c", "minimised.gro", "-p", "topol.top",
         "-o", "topol.tpr", "-po", "md-out.mdp"],
        work, f"gmx grompp of the benchmark run ({spec.label})",
    )  # fmt: skip
    for scratch in ("minimisation.trr", "minimisation.edr"):
        (work / scratch).unlink(missing_ok=True)


def stage_run_directory(parent: Path) -> Path:
    """A fresh directory for one execution whose mdrun log is the process's stdout.

    mdrun writes its log to a file it names itself (it appends `.log`); the link makes that
    file rank 0's standard output, so the log streams to hpceval like any benchmark output,
    and the energy file it insists on writing goes nowhere. mdrun runs with -nobackup, so it
    opens the links instead of renaming them away.
    """
    parent.mkdir(parents=True, exist_ok=True)
    run_dir = make_scratch(parent, "run-")
    (run_dir / f"{LOG_NAME}.log").symlink_to("/dev/stdout")
    (run_dir / f"{LOG_NAME}.edr").symlink_to("/dev/null")
    return run_dir
