"""`slurm-netns`: the slurm launcher on the emulated Slurm cluster `hpceval cluster slurm up`
starts on this machine (slurmd per network-namespace node, see hpceval.clusters.slurm_netns).

Jobs are submitted and followed exactly as by the `slurm` launcher; this one finds the
cluster's slurm.conf by the cluster's name, says how to start the cluster when it is not up,
and labels what it measures emulated (the nodes share this machine's cores and memory; only
the links between them are real veths, shaped as the cluster was started)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import field_validator, model_validator

from hpceval.clusters import slurm_netns as cluster_mod
from hpceval.errors import UserError
from hpceval.launch.schedulers import register
from hpceval.launch.schedulers.netns import emulated_rank_env, machine_cores
from hpceval.launch.schedulers.slurm import SlurmScheduler
from hpceval.launch.schedulers.slurm_client import SlurmOptions
from hpceval.launch.starters.base import StartRequest
from hpceval.model import Origin, Placement


class SlurmNetnsOptions(SlurmOptions):
    """The slurm launcher's keys, plus the name of the emulated cluster."""

    cluster: str = "default"  # as given to `hpceval cluster slurm up --name`

    @field_validator("cluster")
    @classmethod
    def _cluster_name(cls, v: str) -> str:
        try:
            return cluster_mod.check_name(v)
        except UserError as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="before")
    @classmethod
    def _conf_of_the_cluster(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("slurm_conf") is not None:
            raise ValueError("slurm_conf: set by the cluster's name (launcher.cluster)")
        if isinstance(data, dict):
            name = data.get("cluster", "default")
            if isinstance(name, str) and cluster_mod.CLUSTER_NAME.match(name):
                data = {**data, "slurm_conf": str(cluster_mod.conf_path(name))}
        return data


@register
class SlurmNetnsScheduler(SlurmScheduler):
    name = "slurm-netns"
    origin = Origin.EMULATED
    options_model = SlurmNetnsOptions

    def preflight(self) -> None:
        options: SlurmNetnsOptions = self.options()
        cluster = cluster_mod.load(options.cluster)
        down = [d for d, alive in (cluster.alive() if cluster else {}).items() if not alive]
        if cluster is None or down:
            state = "is not up" if cluster is None else f"has stopped daemons ({', '.join(down)})"
            raise UserError(
                f"platform {self.platform.name!r}: Slurm cluster {options.cluster!r} {state}; "
                f"start it with: hpceval cluster slurm up --name {options.cluster} "
                f"--nodes {self.platform.nodes}"
            )
        super().preflight()

    def oversubscribed(self, placement: Placement) -> bool:
        # The emulated nodes share this machine's cores.
        used = placement.ranks * placement.threads_per_rank
        return super().oversubscribed(placement) or used > machine_cores()

    def start_request(self, placement: Placement, program: Sequence[str]) -> StartRequest:
        request = super().start_request(placement, program)
        # Ranks of all nodes share the cores with the veths' traffic: busy-polling ranks
        # starve it (see the netns scheduler), so they yield, as there. MPICH's ranks and
        # proxies need to be pointed at the emulated links, as there.
        return replace(
            request,
            yield_when_idle=True,
            rank_env={**emulated_rank_env(self.runtime.implementation), **request.rank_env},
        )
