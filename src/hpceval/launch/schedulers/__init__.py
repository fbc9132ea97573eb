"""Scheduler registry: name -> class. A scheduler starts and follows jobs
(`base.Scheduler`); adding one is adding a module here with a `@register`ed class.
"""

from __future__ import annotations

from hpceval.launch.schedulers.base import Scheduler
from hpceval.registry import Registry, import_modules

_REGISTRY: Registry[Scheduler] = Registry("scheduler")
register = _REGISTRY.register
scheduler_names = _REGISTRY.names
find_scheduler_class = _REGISTRY.find

import_modules(__name__, __path__)

__all__ = ["Scheduler", "find_scheduler_class", "register", "scheduler_names"]
