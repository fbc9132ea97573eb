"""The process that cancels hpceval's Slurm jobs if hpceval dies first (kill -9 included).

`python slurm_guard.py` reads lines from its stdin, a pipe whose only writer is hpceval:
`+JOBID` for each job hpceval submitted, `done` when hpceval has stopped them all itself.
When the pipe ends without `done` (hpceval was killed: the kernel closes its end), it runs
`scancel` on every job id it was given (ids of jobs that already ended are refused by scancel
and cost nothing). Started in a session of its own, so a signal to hpceval's process group
does not end it first; its environment is the Slurm clients' (SLURM_CONF).

It imports nothing of hpceval, so that it starts fast and runs as a plain script.
"""

from __future__ import annotations

import subprocess
import sys

SCANCEL_TIMEOUT_S = 30


def main() -> int:
    jobs: list[str] = []
    clean = False
    for line in sys.stdin:
        word = line.strip()
        if word == "done":
            clean = True
        elif word.startswith("+") and word[1:].isdigit():
            jobs.append(word[1:])
    if clean or not jobs:
        return 0
    try:
        subprocess.run(["scancel", *jobs], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=SCANCEL_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
