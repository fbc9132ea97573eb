"""A simulated cluster and its SimGrid platform file (XML, version 4.1).

The platform is one SimGrid `<cluster>`: `nodes` hosts of `cores_per_node` cores, each core
computing at `speed_flops`; every host has its own link to the switch (the inter-node path:
a message crosses the sender's link, the backbone and the receiver's link) and a loopback
link for ranks on the same host (the shared-memory path). The backbone is either a fat pipe
(full bisection: every flow gets the whole backbone bandwidth, as in an EC2 placement group;
written as no backbone at all when it would limit nothing) or shared (all inter-node flows
divide `backbone_bandwidth_Bps`: contention). Node links are full duplex (SPLITDUPLEX) unless
`link_sharing` is "shared".

Shared memory path (`memory_copy_Bps`): SimGrid makes a cluster's loopback a fat pipe, so
every intra-node flow of a node got the whole loopback bandwidth at once: 8 ranks of a node
exchanging 2 MB with both neighbours (HPCC's natural ring) each moved as fast as a lone
PingPong (measured under smpirun, 4 nodes x 8: 8.0 GB/s per process on a 4 GB/s loopback),
while on hardware their copies share the node's memory (issue 21: natural-ring bandwidth
+57 % to +217 % on the Magellan profiles). With `memory_copy_Bps` set, every intra-node
message crosses, beside its node's fat-pipe loopback (a lone flow's bound), a SHARED link of
that capacity: the node's message copies divide it. SimGrid's cluster cannot put a shared
link on its loopback route, so the flat topology is then written as a Floyd zone of the
same hosts, node links (SPLITDUPLEX or shared), backbone and one switch (identical routes
between nodes, golden-file tested); fat trees and tori keep the cluster and refuse it.

Topology (`topology`): "flat" is the single switch above; "fat_tree" a two-level fat tree
(SimGrid's FAT_TREE cluster): leaf switches of `leaf_nodes` nodes, each with
`leaf_nodes / oversubscription` up-links to as many top switches (oversubscription 1: full
bisection, 4: a leaf's nodes share a quarter of their bandwidth going up); nodes are
padded to whole leaves. "torus" is SimGrid's TORUS cluster of `torus_dims` (their product
is the node count). The links of a fat tree or torus are the node link's; a backbone does
not apply. Where the choice comes from is `topology_source`.

SMPI's network model multiplies a route's latency and bandwidth by the calibrated factors
(hpceval.simulate.calibrate), so the figures here are nominal: the route latency of the
inter-node path is 2 x `link.latency_s` (+ `backbone_latency_s`), that of the intra-node
path `loopback.latency_s`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal
from xml.sax.saxutils import quoteattr

from hpceval.errors import UserError
from hpceval.launch.starters.smpirun import SIMULATED_HOST_PREFIX, simulated_host
from hpceval.model import Placement
from hpceval.simulate.token_bucket import TokenBucket

PLATFORM_DTD = "https://simgrid.org/simgrid.dtd"


@dataclass(frozen=True)
class LinkSpec:
    """A link: latency in seconds, bandwidth in bytes per second."""

    latency_s: float
    bandwidth_Bps: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.latency_s) and self.latency_s >= 0):
            raise ValueError(f"link latency {self.latency_s!r} s is not a valid latency")
        if not (math.isfinite(self.bandwidth_Bps) and self.bandwidth_Bps > 0):
            raise ValueError(f"link bandwidth {self.bandwidth_Bps!r} B/s is not positive")


@dataclass(frozen=True)
class PlatformSpec:
    name: str
    nodes: int
    cores_per_node: int
    speed_flops: float  # per core
    link: LinkSpec  # each node's link to the switch
    loopback: LinkSpec  # ranks on the same node (shared memory)
    backbone: Literal["fatpipe", "shared"] = "fatpipe"
    backbone_bandwidth_Bps: float | None = None  # required for a shared backbone
    backbone_latency_s: float = 0.0
    link_sharing: Literal["splitduplex", "shared"] = "splitduplex"
    description: str = ""
    topology: Literal["flat", "fat_tree", "torus"] = "flat"
    leaf_nodes: int | None = None  # fat tree: nodes per leaf switch
    oversubscription: float = 1.0  # fat tree: leaf down-links per up-link
    torus_dims: tuple[int, ...] = ()
    topology_source: str = ""
    # Intra-node message throughput of a node, shared by its ranks' flows (None: unshared).
    memory_copy_Bps: float | None = None
    # Node links shaped by a token bucket (hpceval.simulate.token_bucket); `link` then runs
    # at the bucket's peak while it holds tokens, and the SMPI plugin drops it to the rate.
    token_bucket: TokenBucket | None = None

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError(f"nodes: {self.nodes} is not a valid node count")
        if self.cores_per_node < 1:
            raise ValueError(f"cores_per_node: {self.cores_per_node} is not a valid core count")
        if not (math.isfinite(self.speed_flops) and self.speed_flops > 0):
            raise ValueError(f"speed: {self.speed_flops!r} flop/s is not positive")
        if self.backbone == "shared" and not self.backbone_bandwidth_Bps:
            raise ValueError("backbone: a shared backbone needs its bandwidth")
        if self.backbone_bandwidth_Bps is not None and not self.backbone_bandwidth_Bps > 0:
            raise ValueError("backbone bandwidth must be positive")
        if self.topology == "fat_tree":
            if not self.leaf_nodes or self.leaf_nodes < 1:
                raise ValueError("topology: a fat tree needs leaf_nodes >= 1")
            ups = self.leaf_nodes / self.oversubscription
            if self.oversubscription < 1 or ups != int(ups):
                raise ValueError(
                    f"topology: oversubscription {self.oversubscription:g} must be >= 1 and "
                    f"divide the {self.leaf_nodes} nodes of a leaf into whole up-links"
                )
        if self.topology == "torus" and (
            not self.torus_dims or any(d < 1 for d in self.torus_dims)
            or math.prod(self.torus_dims) < self.nodes
        ):  # fmt: skip
            raise ValueError(f"topology: torus {self.torus_dims} does not hold {self.nodes} nodes")
        if self.memory_copy_Bps is not None:
            if not (math.isfinite(self.memory_copy_Bps) and self.memory_copy_Bps > 0):
                raise ValueError(f"memory copy bandwidth {self.memory_copy_Bps!r} B/s is not "
                                 "positive")  # fmt: skip
            if self.topology != "flat":
                raise ValueError("a shared intra-node memory path is modelled on the flat "
                                 f"topology only, not on {self.topology}")  # fmt: skip
        if self.token_bucket is not None and (
                self.topology != "flat" or self.link_sharing != "splitduplex"):
            raise ValueError("a token bucket shapes the node links of a single switch, each "
                             "direction apart (flat topology, splitduplex links)")  # fmt: skip

    @property
    def host_count(self) -> int:
        """Hosts in the platform file: the nodes, padded to whole leaves or the torus."""
        if self.topology == "fat_tree" and self.leaf_nodes:
            return -(-self.nodes // self.leaf_nodes) * self.leaf_nodes
        if self.topology == "torus":
            return math.prod(self.torus_dims)
        return self.nodes

    def topology_attributes(self) -> list[tuple[str, str]]:
        """SimGrid's cluster `topology` and `topo_parameters` ([] for the flat switch)."""
        if self.topology == "fat_tree" and self.leaf_nodes:
            leaves = self.host_count // self.leaf_nodes
            ups = int(self.leaf_nodes / self.oversubscription)
            # levels; down-links per switch (leaf, top); parents per node, per leaf; links.
            return [("topology", "FAT_TREE"),
                    ("topo_parameters", f"2;{self.leaf_nodes},{leaves};1,{ups};1,1")]  # fmt: skip
        if self.topology == "torus":
            return [("topology", "TORUS"),
                    ("topo_parameters", ",".join(str(d) for d in self.torus_dims))]  # fmt: skip
        return []

    def describe_topology(self) -> str:
        if self.topology == "fat_tree":
            shape = f"two-level fat tree, {self.leaf_nodes} nodes per leaf, " + (
                "full bisection" if self.oversubscription == 1
                else f"{self.oversubscription:g}:1 oversubscribed")  # fmt: skip
        elif self.topology == "torus":
            shape = "torus " + "x".join(str(d) for d in self.torus_dims)
        else:
            shape = (
                "single switch ("
                + ("fat-pipe backbone" if self.backbone == "fatpipe" else "shared backbone")
                + ")"
            )
        shape += f" ({self.topology_source})" if self.topology_source else ""
        if self.token_bucket is not None:
            shape += f"; token-bucket link model: {self.token_bucket.describe()}"
        return shape

    @property
    def cores(self) -> int:
        return self.nodes * self.cores_per_node

    @property
    def inter_node_latency_s(self) -> float:
        """The nominal latency of the inter-node route (before SMPI's latency factor)."""
        return 2 * self.link.latency_s + self.backbone_latency_s

    @property
    def inter_node_bandwidth_Bps(self) -> float:
        """The nominal bandwidth of one inter-node flow alone (before the bandwidth factor)."""
        return min(self.link.bandwidth_Bps, self.backbone_bandwidth_Bps or math.inf)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PlatformSpec:
        bucket = d.get("token_bucket")
        shaped = TokenBucket.from_dict(bucket) if bucket else None
        return cls(**{**d, "link": LinkSpec(**d["link"]), "loopback": LinkSpec(**d["loopback"]),
                      "torus_dims": tuple(d.get("torus_dims", ())),
                      "token_bucket": shaped})  # fmt: skip


def _seconds(value: float) -> str:
    return f"{value:.9g}s"


def _bandwidth(value: float) -> str:
    return f"{value:.9g}Bps"


def _speed(value: float) -> str:
    return f"{value:.9g}f"


def cluster_id(name: str) -> str:
    """An XML id made of the platform's name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "cluster"


def platform_xml(spec: PlatformSpec) -> str:
    """The SimGrid platform file of `spec` (deterministic: golden-file tested)."""
    if spec.memory_copy_Bps is not None:
        return _flat_zone_xml(spec)
    backbone_bw = spec.backbone_bandwidth_Bps or spec.link.bandwidth_Bps
    attributes = [
        ("id", cluster_id(spec.name)),
        ("prefix", SIMULATED_HOST_PREFIX),
        ("suffix", ""),
        ("radical", f"0-{spec.host_count - 1}"),
        ("speed", _speed(spec.speed_flops)),
        ("core", str(spec.cores_per_node)),
        ("bw", _bandwidth(spec.link.bandwidth_Bps)),
        ("lat", _seconds(spec.link.latency_s)),
        ("sharing_policy", spec.link_sharing.upper()),
        ("loopback_bw", _bandwidth(spec.loopback.bandwidth_Bps)),
        ("loopback_lat", _seconds(spec.loopback.latency_s)),
    ]
    # A fat pipe no slower than a node link, without latency, limits no flow: SimGrid's
    # cluster without a backbone is that full-bisection crossbar. Leaving it out spares the
    # network solver a constraint every inter-node flow shares (CG class B, 128 ranks, on
    # ec2-cc1: 92 s of CPU instead of 110 s; same simulated time within the host noise).
    attributes += spec.topology_attributes()
    redundant = spec.topology != "flat" or (  # a fat tree or a torus has no backbone
        spec.backbone == "fatpipe"
        and backbone_bw >= spec.link.bandwidth_Bps
        and spec.backbone_latency_s == 0
    )
    if not redundant:
        attributes += [
            ("bb_bw", _bandwidth(backbone_bw)),
            ("bb_lat", _seconds(spec.backbone_latency_s)),
            ("bb_sharing_policy", spec.backbone.upper()),
        ]
    attrs = "\n".join(f"           {key}={quoteattr(value)}" for key, value in attributes)
    return _document(spec, f"  <cluster\n{attrs}/>")


def _document(spec: PlatformSpec, body: str) -> str:
    """A SimGrid platform file around `body` (its zones), with the spec's description."""
    comment = spec.description.replace("--", "- -")
    return (
        "<?xml version='1.0'?>\n"
        f'<!DOCTYPE platform SYSTEM "{PLATFORM_DTD}">\n'
        '<platform version="4.1">\n'
        f"  <!-- generated by hpceval: {comment} -->\n"
        f"{body}\n</platform>\n"
    )


def _flat_zone_xml(spec: PlatformSpec) -> str:
    """The flat topology as a Floyd zone: node i reaches node j through its link up (and the
    backbone when it is one that limits) and j's link down; itself through its fat-pipe
    loopback and its shared memory link."""
    assert spec.memory_copy_Bps is not None
    zone = cluster_id(spec.name)
    switch = f"{zone}-switch"
    policy = spec.link_sharing.upper()
    backbone_bw = spec.backbone_bandwidth_Bps or spec.link.bandwidth_Bps
    has_backbone = not (spec.backbone == "fatpipe" and backbone_bw >= spec.link.bandwidth_Bps
                        and spec.backbone_latency_s == 0)  # fmt: skip
    lines = [f"  <zone id={quoteattr(zone)} routing=\"Floyd\">"]
    for node in range(spec.host_count):
        lines.append(f"    <host id={quoteattr(host_name(node))} "
                     f"speed={quoteattr(_speed(spec.speed_flops))} "
                     f"core={quoteattr(str(spec.cores_per_node))}/>")  # fmt: skip
    lines.append(f"    <router id={quoteattr(switch)}/>")

    def link(name: str, bw: float, lat: float, sharing: str) -> str:
        return (f"    <link id={quoteattr(name)} bandwidth={quoteattr(_bandwidth(bw))} "
                f"latency={quoteattr(_seconds(lat))} sharing_policy={quoteattr(sharing)}/>")

    if has_backbone:
        lines.append(link(f"{zone}-backbone", backbone_bw, spec.backbone_latency_s,
                          spec.backbone.upper()))  # fmt: skip
    for node in range(spec.host_count):
        host = host_name(node)
        lines += [
            link(f"{host}-link", spec.link.bandwidth_Bps, spec.link.latency_s, policy),
            link(f"{host}-loopback", spec.loopback.bandwidth_Bps, spec.loopback.latency_s,
                 "FATPIPE"),
            link(f"{host}-memory", spec.memory_copy_Bps, 0.0, "SHARED"),
        ]  # fmt: skip
    for node in range(spec.host_count):
        host = host_name(node)
        up, down = ((' direction="UP"', ' direction="DOWN"') if policy == "SPLITDUPLEX"
                    else ("", ""))  # fmt: skip
        via = f'<link_ctn id={quoteattr(f"{zone}-backbone")}/>' if has_backbone else ""
        lines += [
            f"    <route src={quoteattr(host)} dst={quoteattr(host)} symmetrical=\"NO\">"
            f"<link_ctn id={quoteattr(f'{host}-loopback')}/>"
            f"<link_ctn id={quoteattr(f'{host}-memory')}/></route>",
            f"    <route src={quoteattr(host)} dst={quoteattr(switch)} symmetrical=\"NO\">"
            f"<link_ctn id={quoteattr(f'{host}-link')}{up}/>{via}</route>",
            f"    <route src={quoteattr(switch)} dst={quoteattr(host)} symmetrical=\"NO\">"
            f"<link_ctn id={quoteattr(f'{host}-link')}{down}/></route>",
        ]  # fmt: skip
    lines.append("  </zone>")
    return _document(spec, "\n".join(lines))


def host_name(node: int) -> str:
    """The hosts are named as the smpirun starter's hostfiles name them."""
    return simulated_host(node)


def placement_for(ranks: int, ppn: int, spec: PlatformSpec) -> Placement:
    """`ranks` at `ppn` ranks per node on the simulated platform, or a one-line UserError."""
    if ranks < 1:
        raise UserError(f"ranks: {ranks} is not a valid rank count")
    if ppn > spec.cores_per_node:
        raise UserError(
            f"ppn: {ppn} ranks per node is more than the {spec.cores_per_node} cores of a "
            f"node of {spec.name!r}"
        )
    per_node = min(ppn, ranks)
    if ranks % per_node:
        raise UserError(f"ranks: {ranks} is not a multiple of {per_node} ranks per node")
    nodes = ranks // per_node
    if nodes > spec.nodes:
        raise UserError(
            f"ranks: {ranks} ranks at {per_node} per node need {nodes} nodes; the simulated "
            f"platform {spec.name!r} has {spec.nodes} ({spec.cores} cores)"
        )
    return Placement(nodes, per_node, 1, "core")
