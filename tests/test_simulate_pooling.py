"""Issue 21 (measurement noise): the calibration inputs that were still the latest run's, the
concurrent pairs (NIC gap and scales) and the node's STREAM figure, are pooled over the runs
as the others are; and runs measured on another setup (MPI, compiler, CPU, kernel,
transport, network shaping) than the latest run are pooled neither by the calibration nor
by --validate, and the calibration says which and why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpceval.model import Measurement, Origin
from hpceval.provenance.setup import setup_differences
from hpceval.simulate.flows import store_flows
from hpceval.simulate.memory import STREAM_METRIC, store_memory
from hpceval.simulate.sources import store_target
from hpceval.simulate.validate import measured_figures
from hpceval.store import Store, open_store

from .store_helpers import add_run

FACTS: dict[str, Any] = {
    "mpi": {"implementation": "Open MPI", "version": "4.1.4", "mpirun": "/usr/bin/mpirun"},
    "compiler": {"command": "gcc", "version": "gcc 12.2.0",
                 "cflags": ["mpibench: -O2 -std=c11", "npb: -O3 -march=native"]},
    "cpu": {"model": "Xeon", "sockets": 1, "cores": 2, "threads": 2},
    "os": {"kernel": "6.1.0", "hostname": "vm"},
    "transport": {"inter-node": {"library": "Open MPI", "kind": "tcp", "components": ["tcp"],
                                 "pml": "ob1", "latency_8B_us": 11.1, "hosts": ["n0", "n1"]}},
    "emulation": {"kind": "network namespaces", "rate_bit_s": 1_000_000_000,
                  "burst_bytes": 250000, "limits": ["the nodes share 2 cores"]},
    "hpceval": {"revision": "abc", "dirty": True},
}  # fmt: skip


def _with(path: str, value: Any, facts: dict[str, Any] = FACTS) -> dict[str, Any]:
    """`facts` with the dotted `path` set to `value` (None: removed)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in facts.items()}
    *sections, key = path.split(".")
    node = out
    for name in sections:
        node[name] = dict(node.get(name, {}))
        node = node[name]
    if value is None:
        node.pop(key, None)
    else:
        node[key] = value
    return out


def test_the_facts_that_change_the_figures_are_differences() -> None:
    assert setup_differences(FACTS, FACTS) == []
    assert setup_differences(_with("mpi.version", "4.1.2"), FACTS) == ["mpi.version 4.1.2 (4.1.4)"]
    assert setup_differences(_with("emulation.rate_bit_s", 10**10), FACTS) == [
        f"emulation.rate_bit_s {10**10} (1000000000)"]  # fmt: skip
    assert setup_differences(_with("cpu.cores", 4), FACTS) == ["cpu.cores 4 (2)"]
    assert setup_differences(_with("os.kernel", "6.18"), FACTS) == ["os.kernel 6.18 (6.1.0)"]
    assert setup_differences(
        _with("transport.inter-node", {**FACTS["transport"]["inter-node"], "kind": "openib",
                                       "components": ["openib"]}), FACTS) == [
        "transport.inter-node.kind openib (tcp)",
        "transport.inter-node.components openib (tcp)"]  # fmt: skip
    npb = _with("compiler.cflags", ["mpibench: -O2 -std=c11", "npb: -O2"])
    assert setup_differences(npb, FACTS) == ["compiler.cflags[npb] -O2 (-O3 -march=native)"]


def test_what_changes_from_run_to_run_or_was_not_recorded_is_no_difference() -> None:
    same = _with("transport.inter-node", {**FACTS["transport"]["inter-node"],
                                          "latency_8B_us": 9.6, "hosts": ["n2", "n3"]})  # fmt: skip
    same = _with("hpceval.revision", "def", _with("os.hostname", "other", same))
    same = _with("emulation.limits", ["other words"], same)
    assert setup_differences(same, FACTS) == []
    # An older provenance without the kernel, a run that built only mpibench.
    older = _with("os.kernel", None, _with("compiler.cflags", ["mpibench: -O2 -std=c11"]))
    assert setup_differences(older, FACTS) == [] == setup_differences(FACTS, older)


scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["", "a", "b: c"]), st.none())
# The real sections and keys (so that the comparisons are reached) and some that are not.
names = st.sampled_from(["implementation", "version", "kernel", "cores", "cflags",
                         "inter-node", "kind", "components", "limits", "x"])  # fmt: skip
leaves = st.one_of(scalars, st.lists(scalars, max_size=3))
facts_strategy = st.dictionaries(
    st.sampled_from(["mpi", "compiler", "cpu", "os", "transport", "emulation", "junk"]),
    st.one_of(leaves, st.dictionaries(names, st.one_of(
        leaves, st.dictionaries(names, leaves, max_size=3)), max_size=4)),
    max_size=6)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(facts_strategy, facts_strategy)
def test_any_stored_facts_compare_without_error(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert setup_differences(a, a) == []
    assert all(isinstance(d, str) for d in setup_differences(a, b))
    assert len(setup_differences(a, b)) == len(setup_differences(b, a))


# ----------------------------------------------------------------------------- the store


def _run(store: Store, points: list[tuple[str, Measurement]],
         facts: dict[str, Any] = FACTS) -> int:  # fmt: skip
    return add_run(store, points, facts)


def _m(benchmark: str, metric: str, value: float, unit: str, **params: Any) -> Measurement:
    return Measurement(benchmark, metric, value, unit, params, (value * 0.99, value, value * 1.01),
                       origin=Origin.EMULATED)  # fmt: skip


def _scaled(points: list[tuple[str, Measurement]], k: float) -> list[tuple[str, Measurement]]:
    return [(case, replace(m, value=m.value * k, samples=tuple(s * k for s in m.samples)))
            for case, m in points]  # fmt: skip


def _pingpong() -> list[tuple[str, Measurement]]:
    return [("pp", _m("mpibench", "latency", 30.0 + s / 110.0, "us", pattern="pingpong",
                      size=s, ranks=2, nodes=2, pair="inter-node"))
            for s in (8, 1024, 65536, 1048576)]  # fmt: skip


def _pairs() -> list[tuple[str, Measurement]]:
    out = []
    for pairs, lat, bw in ((1, 30.0, 110.0), (2, 35.0, 55.0)):
        for metric, size, value, unit in (("latency", 8, lat, "us"),
                                          ("bandwidth", 1048576, bw, "MB/s")):  # fmt: skip
            out.append((f"mp{pairs}", _m("mpibench", metric, value, unit,
                                         pattern="multi_pingpong", pairs=pairs, size=size,
                                         ranks=2 * pairs, nodes=2)))  # fmt: skip
    return out


def _stream() -> list[tuple[str, Measurement]]:
    return [("stream", _m("stream", STREAM_METRIC, mb_s, "MB/s", ranks=ranks, nodes=1,
                          array_bytes=2**28)) for ranks, mb_s in ((1, 9000.0), (2, 15000.0))]


def test_the_pairs_and_the_memory_figure_are_the_median_over_the_runs(tmp_path: Path) -> None:
    """Three rounds, x1, x0.5 and x2: the pairs' latencies and bandwidths and the STREAM
    figures are the x1 round's, said to come from the three; the latest alone: x2."""
    base = _pingpong() + _pairs() + _stream()
    with open_store(str(tmp_path / "p.db")) as store:
        ids = [_run(store, _scaled(base, k)) for k in (1.0, 0.5, 2.0)]
        runs = {r.id: r for r in store.runs()}
        flows = store_flows(store, runs)
        latest_flows = store_flows(store, runs, pool_runs=1)
        memory = store_memory(store, set(runs))
        latest_memory = store_memory(store, set(runs), pool_runs=1)
        target = store_target(store, "emu")
    every = ", ".join(map(str, ids))
    assert flows is not None and (flows.pairs, flows.small, flows.large) == ((1, 2), 8, 1048576)
    assert flows.latency_us == pytest.approx((30.0, 35.0))
    assert flows.bandwidth_mb_s == pytest.approx((110.0, 55.0))
    assert flows.origin == f"emulated runs {every}"
    assert latest_flows is not None and latest_flows.latency_us == pytest.approx((60.0, 70.0))
    assert latest_flows.origin == f"emulated run {ids[-1]}"
    assert memory is not None and memory.bandwidth_Bps == pytest.approx(15000e6)
    assert memory.single_process_Bps == pytest.approx(9000e6)
    assert memory.source.startswith(f"STREAM Triad of runs {every}, 2 processes")
    assert latest_memory is not None and latest_memory.bandwidth_Bps == pytest.approx(30000e6)
    assert latest_memory.source.startswith(f"STREAM Triad of run {ids[-1]}, 2 processes")
    assert target.flows == flows and target.memory == memory


def test_a_run_of_another_setup_is_not_pooled_and_the_calibration_says_so(tmp_path: Path) -> None:
    """Runs 1 and 2 with Open MPI 4.1.2 at x4, run 3 (the latest) with 4.1.4, run 4 at x1
    with 4.1.4 and another hpceval revision and transport latency (no difference): the
    calibration and --validate's reference pool runs 3 and 4 only, and the calibration
    names runs 1 and 2 and the difference."""
    base = _pingpong() + _pairs() + _stream()
    old = _with("mpi.version", "4.1.2")
    again = _with("hpceval.revision", "def", _with("transport.inter-node", {
        **FACTS["transport"]["inter-node"], "latency_8B_us": 9.0}))  # fmt: skip
    with open_store(str(tmp_path / "s.db")) as store:
        first = [_run(store, _scaled(base, 4.0), old) for _ in range(2)]
        kept = [_run(store, _scaled(base, 2.0)), _run(store, base, again)]
        target = store_target(store, "emu")
        reference = measured_figures(store, "emu")
    assert target.run_ids == tuple(kept)
    curve = target.curves["inter-node"]
    assert curve.times_us[0] == pytest.approx(1.5 * (30.0 + 8 / 110.0))  # median of x2, x1
    assert target.flows is not None and target.flows.latency_us[0] == pytest.approx(45.0)
    assert target.memory is not None and target.memory.bandwidth_Bps == pytest.approx(22500e6)
    (note,) = [a for a in target.assumed if "not pooled" in a]
    assert note == (f"emulated runs {first[0]}, {first[1]} not pooled: measured on another "
                    f"setup than run {kept[-1]} (run {first[1]}: mpi.version 4.1.2 (4.1.4); "
                    f"run {kept[-1]}'s in brackets)")  # fmt: skip
    pingpong_8 = next(r for k, r in reference.items() if k[2] == "pingpong" and k[3] == 8)
    assert pingpong_8.run_values == pytest.approx((2 * (30.0 + 8 / 110.0), 30.0 + 8 / 110.0))
    # With one setup throughout nothing is set aside and nothing is said.
    with open_store(str(tmp_path / "one.db")) as store:
        _run(store, base)
        _run(store, base, again)
        assert not [a for a in store_target(store, "emu").assumed if "not pooled" in a]


def test_the_calibration_prints_what_it_assumed_and_set_aside() -> None:
    """The target's assumptions (stored with the calibration) are printed with it, as they
    are, markup-looking text included (`simulate` and `calibrations --id`)."""
    from types import SimpleNamespace

    from hpceval.cli_simulate import contention_lines

    note = "emulated run 1 not pooled: measured on another setup than run 3 (run 1: [red]x)"
    row = SimpleNamespace(parameters={"assumed": [note]}, residuals=[])
    assert f"assumed: {note}" in contention_lines(row)
