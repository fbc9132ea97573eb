"""Runs written straight into a store: what a campaign would have stored, for the tests of
what reads it (the simulator's calibration sources, --validate)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hpceval.model import Environment, Measurement, Origin
from hpceval.store import Store


def add_run(
    store: Store,
    points: Sequence[tuple[str, Measurement]],
    facts: Mapping[str, Any],
    *,
    platform: str = "emu",
    platform_config: Mapping[str, Any] | None = None,
    origin: Origin = Origin.EMULATED,
    launcher: str = "netns",
) -> int:
    """A run of `platform` on an environment of `facts` with `points` (case, measurement)."""
    import hpceval

    # One environment per distinct facts, as a campaign's fingerprint gives.
    env = store.add_environment(Environment(facts=dict(facts), fingerprint=repr(sorted(
        (k, repr(v)) for k, v in facts.items()))))  # fmt: skip
    cases = sorted({case for case, _ in points})
    run_id = store.create_run(
        suite_name="s", suite_config={},
        platform_id=store.add_platform(platform, dict(platform_config or {"name": platform})),
        environment_id=env, launcher=launcher, cases=[(c, "mpibench", {}) for c in cases],
        hpceval_version=hpceval.__version__, git_revision=None, origin=origin, host="h",
        pid=1, note=None,
    )  # fmt: skip
    for i, (case, m) in enumerate(points):
        store.add_measurement(run_id, None, case, f"p{i}", m)
    return run_id
