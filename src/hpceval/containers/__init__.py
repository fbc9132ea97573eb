"""Container runtimes as a platform: podman options, the flags that make it start here,
local image builds (never a registry pull), and the provenance of a containerized run."""

from __future__ import annotations

from hpceval.containers.podman import (
    NPROC_CEILING,
    ContainerOptions,
    build_image,
    check_runtime,
    container_facts,
    image_reference,
    run_prefix,
    ulimit_flags,
)

__all__ = [
    "NPROC_CEILING",
    "ContainerOptions",
    "build_image",
    "check_runtime",
    "container_facts",
    "image_reference",
    "run_prefix",
    "ulimit_flags",
]
