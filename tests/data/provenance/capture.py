"""Capture what provenance and doctor read on this machine, for replay in tests.

Usage: python tests/data/provenance/capture.py DIRECTORY

Every file, link, directory listing and command output that `collect_environment` and
`run_checks` look at is saved under DIRECTORY (see hpceval.provenance.RecordingHost).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hpceval.doctor import run_checks
from hpceval.errors import ToolMissing
from hpceval.provenance import RecordingHost, SystemHost, collect_environment
from hpceval.toolchain import CommandOutput, detect_mpi


class WithoutHwloc:
    """The recorded host as if hwloc were not installed, so that the /proc and /sys fallback
    reads are captured too; asking it for lstopo leaves the recording untouched."""

    def __init__(self, recorder: RecordingHost):
        self.recorder = recorder

    def which(self, name: str) -> str | None:
        return None if name == "lstopo-no-graphics" else self.recorder.which(name)

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        return self.recorder.run(argv)

    def __getattr__(self, name: str) -> object:
        return getattr(self.recorder, name)


def main(directory: Path) -> None:
    recorder = RecordingHost(SystemHost())
    try:
        toolchain = detect_mpi(which=recorder.which, run=recorder.run)
    except ToolMissing:
        toolchain = None
    collect_environment(toolchain, cflags=["-O3"], host=WithoutHwloc(recorder))
    collect_environment(toolchain, cflags=["-O3"], host=recorder)
    run_checks(host=recorder)
    directory.mkdir(parents=True, exist_ok=True)
    recorder.save(directory)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
