"""What pw.x runs on: a silicon pseudopotential made by QE's own ld1.x, and the SCF inputs.

Nothing is downloaded. The pseudopotential is generated once per ld1.x version (and
generation input) into the build cache: a norm-conserving Troullier–Martins potential of Si
in the LDA (Perdew–Zunger), 3s/3p/3d channels, the d channel local. The generation is then
tested with ld1.x's own test mode on excited configurations of the atom (3s1 3p3, 3s2 3p1):
the excitation energies with the pseudopotential must equal the all-electron ones within
TRANSFERABILITY_TOLERANCE_RY, else the potential is refused.

Systems: `si-primitive` is the 2-atom fcc cell of diamond silicon with a 4x4x4 shifted
k-point mesh; `si-cubic-N` is N x N x N conventional cubic cells, 8 N^3 atoms, with the
k-point density of the primitive case scaled down (2x2x2 for N = 1, one shifted point for
N >= 2) — the class of PARATEC's bulk-silicon runs, growing in FFT grid and bands.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hpceval.benchmarks.qe.output import parse_ld1_tests
from hpceval.errors import BenchmarkFailure

LATTICE_BOHR: Final = 10.26  # diamond Si, the LDA equilibrium lattice parameter (a.u.)
SILICON_MASS: Final = 28.0855
PSEUDO_NAME: Final = "Si.pz-tm-hpceval.UPF"
GENERATOR_VERSION: Final = "1"
# The largest error of an excitation energy of a test configuration (Ry) that a usable
# norm-conserving potential makes; 2 mRy = 27 meV. Measured here: 0.28 and 0.40 mRy.
TRANSFERABILITY_TOLERANCE_RY: Final = 2e-3
LD1_TIMEOUT_S: Final = 300.0
MAX_CUBIC_CELLS: Final = 4  # 512 atoms

# ld1.x input, generation (iswitch = 3): all-electron Si, then the pseudization cards
# (label, n, l, occupation, energy, rcut, rcut_us, j). The 3d state is unbound in the
# neutral atom: it is flagged with a negative occupation in the configuration and
# pseudized at a chosen reference energy (0.1 Ry) instead of an eigenvalue.
_GENERATION = """\
&input
   title = 'Si'
   zed = 14.0
   rel = 0
   config = '[Ne] 3s2 3p2 3d-2'
   iswitch = 3
   dft = 'PZ'
/
&inputp
   pseudotype = 1
   file_pseudopw = '{name}'
   author = 'hpceval'
   lloc = 2
   tm = .true.
/
3
3S  1  0  2.00  0.00  1.90  1.90  0.0
3P  2  1  2.00  0.00  2.10  2.10  0.0
3D  3  2  0.00  0.10  2.10  2.10  0.0
"""

# ld1.x input, test (iswitch = 2): the ground state, then two excited configurations.
_TEST = """\
&input
   title = 'Si'
   zed = 14.0
   rel = 0
   config = '[Ne] 3s2 3p2 3d-2'
   iswitch = 2
   dft = 'PZ'
/
&test
   file_pseudo = '{name}'
   nconf = 3
   configts(1) = '3s2 3p2 3d0'
   configts(2) = '3s1 3p3 3d0'
   configts(3) = '3s2 3p1 3d0'
/
"""

_SYSTEM = re.compile(r"^si-(?:primitive|cubic-([1-9]\d*))$")
_DIAMOND_BASIS: Final = (
    (0.0, 0.0, 0.0), (0.0, 0.5, 0.5), (0.5, 0.0, 0.5), (0.5, 0.5, 0.0),
    (0.25, 0.25, 0.25), (0.25, 0.75, 0.75), (0.75, 0.25, 0.75), (0.75, 0.75, 0.25),
)  # fmt: skip


@dataclass(frozen=True)
class SiliconSystem:
    """One of the benchmark's systems, by name."""

    name: str
    cells: int  # 0: the primitive cell; N: N^3 conventional cubic cells

    @classmethod
    def parse(cls, name: str) -> SiliconSystem:
        m = _SYSTEM.match(name)
        if m is None:
            raise ValueError(f"system: {name!r} is not si-primitive or si-cubic-N (N = 1..4)")
        cells = int(m.group(1)) if m.group(1) else 0
        if cells > MAX_CUBIC_CELLS:
            raise ValueError(f"system: {name!r}: at most {MAX_CUBIC_CELLS} cubic cells a side")
        return cls(name, cells)

    @property
    def atoms(self) -> int:
        return 2 if self.cells == 0 else 8 * self.cells**3

    @property
    def k_mesh(self) -> int:
        return 4 if self.cells == 0 else math.ceil(2 / self.cells)

    def input_text(self, ecutwfc_ry: float, pseudo_dir: Path, outdir: Path) -> str:
        """The pw.x SCF input (nothing written but the standard output: disk_io 'none')."""
        # conv_thr bounds the estimated error of the total energy, which grows with the
        # system: the same accuracy per atom for every size.
        conv_thr = 5e-10 * self.atoms
        head = (
            "&control\n"
            "  calculation = 'scf'\n"
            "  prefix = 'si'\n"
            f"  outdir = '{outdir}'\n"
            f"  pseudo_dir = '{pseudo_dir}'\n"
            "  disk_io = 'none'\n"
            "/\n"
            "&system\n"
        )
        if self.cells == 0:
            geometry = (
                f"  ibrav = 2\n  celldm(1) = {LATTICE_BOHR}\n  nat = 2\n",
                "ATOMIC_POSITIONS alat\n  Si 0.00 0.00 0.00\n  Si 0.25 0.25 0.25\n",
            )
        else:
            n = self.cells
            positions = [
                f"  Si {(x + i) / n:.8f} {(y + j) / n:.8f} {(z + k) / n:.8f}\n"
                for i in range(n) for j in range(n) for k in range(n)
                for x, y, z in _DIAMOND_BASIS
            ]  # fmt: skip
            geometry = (
                f"  ibrav = 1\n  celldm(1) = {LATTICE_BOHR * n:.6f}\n  nat = {self.atoms}\n",
                "ATOMIC_POSITIONS crystal\n" + "".join(positions),
            )
        mesh = self.k_mesh
        return (
            head
            + geometry[0]
            + f"  ntyp = 1\n  ecutwfc = {ecutwfc_ry:g}\n/\n"
            + f"&electrons\n  conv_thr = {conv_thr:.3e}\n  mixing_beta = 0.7\n/\n"
            + f"ATOMIC_SPECIES\n  Si {SILICON_MASS} {PSEUDO_NAME}\n"
            + geometry[1]
            + f"K_POINTS automatic\n  {mesh} {mesh} {mesh} 1 1 1\n"
        )


@dataclass(frozen=True)
class Pseudopotential:
    directory: Path  # holds PSEUDO_NAME
    ld1_version: str
    transferability_errors_ry: tuple[float, ...]  # |Delta E| of each test configuration
    digest: str


def _run_ld1(ld1: str, input_text: str, directory: Path, what: str) -> str:
    """Run ld1.x on `input_text` in `directory` (it writes its files there)."""
    path = directory / f"{what}.in"
    path.write_text(input_text)
    try:
        with path.open() as stdin:
            proc = subprocess.run(
                [ld1], stdin=stdin, capture_output=True, text=True, cwd=directory,
                timeout=LD1_TIMEOUT_S, check=False,
            )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchmarkFailure(f"ld1.x ({what} of the Si pseudopotential): {e}") from e
    (directory / f"{what}.out").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        _, error = parse_ld1_tests(proc.stdout)
        raise BenchmarkFailure(
            f"ld1.x ({what} of the Si pseudopotential) exited {proc.returncode}: "
            f"{error or 'no error message'}"
        )
    return proc.stdout


def _ld1_version(output: str) -> str:
    m = re.search(r"Program LD1 v\.(\S+)", output)
    return m.group(1) if m else "unknown"


def check_transferability(test_output: str) -> tuple[float, ...]:
    """The test configurations' excitation-energy errors, or BenchmarkFailure."""
    tests, error = parse_ld1_tests(test_output)
    if error is not None:
        raise BenchmarkFailure(f"ld1.x test of the Si pseudopotential: {error}")
    if len(tests) != 2:
        raise BenchmarkFailure(
            f"ld1.x tested {len(tests)} excited configurations of Si, expected 2"
        )
    errors = tuple(abs(t.delta_ry) for t in tests)
    worst = max(errors)
    if not math.isfinite(worst) or worst > TRANSFERABILITY_TOLERANCE_RY:
        raise BenchmarkFailure(
            f"the generated Si pseudopotential is not transferable: excitation energy off by "
            f"{worst * 1e3:.2f} mRy (at most {TRANSFERABILITY_TOLERANCE_RY * 1e3:g} mRy)"
        )
    return errors


def silicon_pseudopotential(ld1: str, cache: Path) -> Pseudopotential:
    """The Si pseudopotential for this ld1.x, generated and tested once, then cached."""
    found = shutil.which(ld1)
    if found is None:
        raise BenchmarkFailure(f"{ld1} not found on PATH; install Debian package quantum-espresso")
    generation = _GENERATION.format(name=PSEUDO_NAME)
    identity = "\0".join((GENERATOR_VERSION, generation, _TEST, _file_identity(Path(found))))
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    final = cache / "qe" / "pseudo" / digest
    record = final / "pseudopotential.json"
    if record.is_file() and (final / PSEUDO_NAME).is_file():
        data = json.loads(record.read_text())
        return Pseudopotential(
            final, data["ld1_version"], tuple(data["transferability_errors_ry"]), digest
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{digest}.", dir=final.parent))
    try:
        generated = _run_ld1(found, generation, work, "generation")
        if not (work / PSEUDO_NAME).is_file():
            raise BenchmarkFailure(f"ld1.x wrote no {PSEUDO_NAME}")
        errors = check_transferability(
            _run_ld1(found, _TEST.format(name=PSEUDO_NAME), work, "test")
        )
        version = _ld1_version(generated)
        (work / "pseudopotential.json").write_text(
            json.dumps({"ld1_version": version, "transferability_errors_ry": list(errors)})
        )
        try:
            os.rename(work, final)
        except OSError:
            # Another process made it first: theirs is the same generation.
            if not record.is_file():
                raise
    except OSError as e:
        raise BenchmarkFailure(f"cannot write the Si pseudopotential in {final.parent}: {e}") from e
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return silicon_pseudopotential(ld1, cache)


def _file_identity(path: Path) -> str:
    """A program's identity for the cache: its resolved path, size and modification time."""
    resolved = path.resolve()
    st = resolved.stat()
    return f"{resolved}:{st.st_size}:{st.st_mtime_ns}"
