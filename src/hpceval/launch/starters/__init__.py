"""MPI starter registry: name -> class. A starter builds the argv and environment that
start a program's ranks (`base.Starter`); adding one is adding a module here with a
`@register`ed class.
"""

from __future__ import annotations

from hpceval.errors import UserError
from hpceval.launch.starters.base import Starter
from hpceval.registry import Registry, import_modules

_REGISTRY: Registry[Starter] = Registry("starter")
register = _REGISTRY.register
starter_names = _REGISTRY.names


def get_starter_class(name: str) -> type[Starter]:
    cls = _REGISTRY.find(name)
    if cls is None:
        raise UserError(f"unknown starter {name!r} (known: {', '.join(starter_names())})")
    return cls


def starter_for_implementation(implementation: str) -> type[Starter] | None:
    """The starter an MPI implementation ships (Open MPI: mpirun; MPICH: Hydra's mpiexec)."""
    own = [
        cls
        for cls in _REGISTRY.classes()
        if cls.implementations is not None and implementation in cls.implementations
    ]
    return own[0] if len(own) == 1 else None


import_modules(__name__, __path__)

__all__ = [
    "Starter",
    "get_starter_class",
    "register",
    "starter_for_implementation",
    "starter_names",
]
