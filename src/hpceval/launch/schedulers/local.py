"""`local`: the ranks run on this machine, started as one child process group.

The group is killed (SIGTERM, then SIGKILL) on every exit path: the case's time limit,
Ctrl-C, an error, and hpceval's own death (the child gets SIGTERM when its parent dies).
With the `smpirun` starter (`kind = "smpi"`) the nodes are simulated ones: one smpirun
process on this machine simulates them all.
"""

from __future__ import annotations

from hpceval.errors import UserError
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.base import Scheduler
from hpceval.model import Origin, Placement


@register
class LocalScheduler(Scheduler):
    name = "local"

    def check_placement(self, placement: Placement) -> None:
        if placement.nodes != 1 and self.starter.origin is not Origin.SIMULATED:
            raise UserError(
                f"the local launcher runs on one node; placement {placement.label()} "
                f"asks for {placement.nodes}"
            )
        super().check_placement(placement)
