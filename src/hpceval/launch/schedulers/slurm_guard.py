"""The process that cancels hpceval's Slurm jobs if hpceval dies first (kill -9 included).

`python slurm_guard.py` reads lines from its stdin, a pipe whose only writer is hpceval:
`?SCRIPT` before each sbatch of the batch script SCRIPT (the guard is armed before the job
exists), `+JOBID SCRIPT` once sbatch has answered with the job's id, `done` when hpceval has
stopped them all itself. When the pipe ends without `done` (hpceval was killed: the kernel
closes its end), it runs `scancel` on every job id it was given (ids of jobs that already
ended are refused by scancel and cost nothing), and for a script whose id never came
(hpceval killed while sbatch ran: sbatch, in a session of its own, goes on and submits) it
waits for that sbatch to end, then cancels the queued jobs whose command is that script.
Started in a session of its own, so a signal to hpceval's process group does not end it
first; its environment is the Slurm clients' (SLURM_CONF).

It imports nothing of hpceval, so that it starts fast and runs as a plain script.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

SCANCEL_TIMEOUT_S = 30
# How long an sbatch that hpceval left running may take (hpceval's own limit on it: 60 s).
SBATCH_WAIT_S = 90


def running_with(argument: str) -> bool:
    """Whether a process has `argument` in its argv (an sbatch still submitting SCRIPT)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argument.encode() in argv:
            return True
    return False


def jobs_of(scripts: set[str]) -> list[str]:
    """Ids of the queued jobs whose command is one of `scripts`."""
    try:
        answer = subprocess.run(["squeue", "--noheader", "--format=%i %o"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=SCANCEL_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = (line.split(None, 1) for line in answer.stdout.splitlines())
    return [r[0] for r in rows if len(r) == 2 and r[1].strip() in scripts]


def main() -> int:
    jobs: list[str] = []
    pending: set[str] = set()  # scripts sbatch was given whose job id has not come
    clean = False
    for line in sys.stdin:
        word, _, script = line.strip().partition(" ")
        if word == "done":
            clean = True
        elif word.startswith("?") and len(word) > 1:
            pending.add(line.strip()[1:])
        elif word.startswith("+") and word[1:].isdigit():
            jobs.append(word[1:])
            pending.discard(script)
    if clean or not (jobs or pending):
        return 0
    if pending:
        deadline = time.monotonic() + SBATCH_WAIT_S
        while any(running_with(s) for s in pending) and time.monotonic() < deadline:
            time.sleep(0.2)
        jobs += jobs_of(pending)
    if not jobs:
        return 0
    try:
        subprocess.run(["scancel", *jobs], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=SCANCEL_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
