"""verification.toml's reference values of a class against the official verify.f files.

NPB 3.4-MPI (BT, SP, LU) and NPB3.4-MZ-MPI (BT-MZ, SP-MZ, LU-MZ) set, per class in verify.f,
dtref and the reference norms xcrref(1..5), xceref(1..5) (LU and LU-MZ also xciref). This
module reads those Fortran assignments and compares them, as numbers, with hpceval's
verification.toml (used by perf/npb_class_c.py --check-references).
"""

from __future__ import annotations

import re
from pathlib import Path

from hpceval.benchmarks.npb import reference

FORTRAN_NUMBER = r"([-+]?[0-9.]+(?:[dDeE][-+]?[0-9]+)?)"
ASSIGNMENT = re.compile(rf"^\s*(xcrref|xceref|xciref|dtref)\s*(?:\((\d)\))?\s*=\s*{FORTRAN_NUMBER}")
CLASS_BRANCH = re.compile(r"^\s*(?:else\s*)?if\s*\(\s*class\s*\.eq\.\s*'(\w)'\s*\)", re.IGNORECASE)
VERIFY_DIRS = {"bt": "BT", "sp": "SP", "lu": "LU", "bt-mz": "BT-MZ", "sp-mz": "SP-MZ",
               "lu-mz": "LU-MZ"}  # fmt: skip


def official_references(verify_f: Path, class_name: str) -> dict[str, list[float]]:
    """{"xcr": [5 values], "xce": [...], "xci": [v], "dt": [v]} of the class's branch."""
    values: dict[str, list[float]] = {}
    inside = False
    for line in verify_f.read_text().splitlines():
        if line[:1] in "cC*!":  # a fixed-form comment line
            continue
        if branch := CLASS_BRANCH.match(line.replace("elseif", "else if")):
            inside = branch.group(1) == class_name
        elif re.match(r"^\s*(else|end\s*if)\s*$", line, re.IGNORECASE):
            inside = False
        elif inside and (m := ASSIGNMENT.match(line)):
            name, _, number = m.groups()
            values.setdefault(name.removesuffix("ref"), []).append(
                float(number.replace("d", "e").replace("D", "e"))
            )
    return values


def check(program: str, source: Path, class_name: str) -> list[str]:
    """One line per quantity: equal, or the two values that differ."""
    official = official_references(source / VERIFY_DIRS[program] / "verify.f", class_name)
    if not official:
        return [f"{program} class {class_name}: no branch in {VERIFY_DIRS[program]}/verify.f"]
    ours = reference()[program]
    size = ours["size"][class_name]
    mine = {"xcr": ours["xcr"][class_name], "xce": ours["xce"][class_name], "dt": [size[-1]]}
    if "xci" in official:
        mine["xci"] = [ours["xci"][class_name]]
    lines = []
    for name, theirs in sorted(official.items()):
        status = "equal" if mine.get(name) == theirs else f"DIFFER: {mine.get(name)} vs {theirs}"
        lines.append(f"{program} class {class_name} {name}: {status}")
    return lines
