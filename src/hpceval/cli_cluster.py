"""`hpceval cluster`: clusters hpceval starts on this machine to try schedulers for real
(registered in cli.py as the `cluster` group)."""

from __future__ import annotations

from typing import Annotated

import typer

from hpceval.cli_common import console, user_errors

cluster_app = typer.Typer(
    name="cluster",
    help="Clusters on this machine for trying schedulers (network-namespace nodes).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
slurm_app = typer.Typer(
    help="A Slurm cluster: slurmctld plus one slurmd per network-namespace node (needs root).",
    no_args_is_help=True,
)
cluster_app.add_typer(slurm_app, name="slurm")

out = console()  # prints every string as it is (markup off)

NameOption = Annotated[str, typer.Option("--name", help="The cluster's name.")]


@slurm_app.command("up")
@user_errors
def slurm_up(
    nodes: Annotated[int, typer.Option("--nodes", "-n", help="Nodes (one slurmd each).")] = 2,
    link: Annotated[
        str,
        typer.Option("--link", help='Link shaping: "none", "1GbE", "10GbE" or a rate ("100mbit").'),
    ] = "none",
    name: NameOption = "default",
) -> None:
    """Build the nodes' namespaces and start munged, slurmctld and the slurmds."""
    from hpceval.clusters import slurm_netns

    cluster = slurm_netns.up(name, nodes, link, report=lambda line: out.print(line))
    out.print(
        f"Slurm cluster {name!r} up: {nodes} nodes "
        f"({', '.join(cluster.node_names())}), link {link}, "
        f"partition {slurm_netns.PARTITION}",
        highlight=False,
    )
    out.print(f"export SLURM_CONF={cluster.conf}", highlight=False)


@slurm_app.command("down")
@user_errors
def slurm_down(name: NameOption = "default") -> None:
    """Cancel the cluster's jobs, stop its daemons, remove its namespaces and files."""
    from hpceval.clusters import slurm_netns

    slurm_netns.check_name(name)
    done = slurm_netns.down(name)
    out.print(
        f"stopped and removed: {', '.join(done)}" if done else "nothing to stop",
        highlight=False,
    )


@slurm_app.command("status")
@user_errors
def slurm_status(name: NameOption = "default") -> None:
    """The cluster's daemons and nodes; exit status 1 when it is not (fully) up."""
    from hpceval.clusters import slurm_netns

    slurm_netns.check_name(name)
    cluster = slurm_netns.load(name)
    if cluster is None:
        out.print(f"Slurm cluster {name!r}: not up", highlight=False)
        raise typer.Exit(1)
    alive = cluster.alive()
    out.print(
        f"Slurm cluster {name!r}: {cluster.nodes} nodes, link {cluster.link}, "
        f"SLURM_CONF={cluster.conf}",
        highlight=False,
    )
    for daemon, running in alive.items():
        out.print(f"  {daemon}: {'running' if running else 'STOPPED'}", highlight=False)
    states = cluster.node_states() if alive.get("slurmctld") else {}
    for node in cluster.node_names():
        out.print(f"  node {node}: {states.get(node, 'unknown')}", highlight=False)
    if not all(alive.values()):
        raise typer.Exit(1)
