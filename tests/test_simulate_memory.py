"""Memory bandwidth shared by a simulated node's ranks (issue 21): the traffic counts, the
roofline stretch, where the node's bandwidth comes from (a stored STREAM run, a profile's
[memory] table, nothing), a profile's published single-process figure, and real smpirun
runs of class S showing that the stretch applies."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hpceval.benchmarks import Case
from hpceval.cli import app
from hpceval.errors import ConfigError, UserError
from hpceval.model import Placement
from hpceval.simulate import runner as runner_module
from hpceval.simulate.memory import (
    NOT_MODELLED,
    MemoryDemand,
    NodeMemory,
    bytes_per_op,
    fitted_rate,
    memory_stretches,
    store_memory,
    stretch,
    stretched_config,
)
from hpceval.simulate.profiles import load_profile, profile_target
from hpceval.simulate.sources import store_target
from hpceval.store import open_store

from .cli_helpers import invoke
from .conftest import requires_mpi, write
from .test_simulate import requires_smpi

PROFILES = Path(__file__).parents[1] / "src" / "hpceval" / "data" / "profiles"


def case(ranks: int, ppn: int) -> Case:
    placement = Placement(-(-ranks // ppn), ppn, 1, "core")
    return Case(key=f"mg-{ranks}", benchmark="npb", placement=placement,
                parameters={}, points=("run",), time_limit_s=60.0)  # fmt: skip


def test_traffic_counts_follow_the_kernels_sweeps() -> None:
    # MG: 12.25 finest grids of 8 B per V-cycle, 8/7 for the coarser levels, 58 ops a point.
    assert bytes_per_op("mg", "C", 1) == pytest.approx(12.25 * 8 * 8 / 7 / 58)
    # CG class C: nonzer 15, 240 nonzeros a row at 12 B, 116 B of row and vector traffic,
    # 2 x (5 + 240) official operations per row and inner iteration.
    assert bytes_per_op("cg", "C", 4) == pytest.approx((12 * 240 + 116) / 490)
    # FT: a 1-rank run has no transpose; from 2 ranks one (1-D), beyond nz ranks two (2-D).
    ln = math.log(512**3)
    assert bytes_per_op("ft", "C", 1) == pytest.approx(152 / (5.23518 + 7.21113 * ln))
    assert bytes_per_op("ft", "C", 2) == pytest.approx(216 / (5.23518 + 7.21113 * ln))
    assert bytes_per_op("ft", "C", 1024) == pytest.approx(280 / (5.23518 + 7.21113 * ln))
    # IS class C: 2^27 keys over 2^23 key values: 24 B a key plus the prefix sums.
    assert bytes_per_op("is", "C", 8) == pytest.approx(24 + 8 / 16)
    assert bytes_per_op("ep", "C", 8) == 0.0
    assert bytes_per_op("bt", "C", 4) is None


def test_the_stretch_is_a_roofline_per_node() -> None:
    assert stretch(4e9, 1, 10e9) == 1.0  # one rank alone is under the node's bandwidth
    assert stretch(4e9, 2, 10e9) == 1.0
    assert stretch(4e9, 8, 10e9) == pytest.approx(3.2)  # 32 GB/s asked of 10
    with pytest.raises(ValueError, match="not positive"):
        stretch(1.0, 2, 0.0)
    config = {"smpi/host-speed": "1000000000f", "smpi/display-timing": "yes"}
    assert stretched_config(config, 2.5) == {
        "smpi/host-speed": "2.5e+09f", "smpi/display-timing": "yes"}  # fmt: skip


def test_stretches_per_case_and_when_nothing_applies() -> None:
    cases = [case(1, 1), case(2, 2), case(16, 8)]
    called: list[int] = []

    def fit() -> MemoryDemand:
        called.append(1)
        return MemoryDemand("mg", "C", 2000.0, "fitted: a test")

    # No figure of the node: nothing stretched, nothing fitted, and it says so.
    assert memory_stretches("npb", "mg", "C", cases, None, fit) == ({}, {"how": NOT_MODELLED})
    node = NodeMemory(20e9, None, "a test")
    # A kernel without a traffic count: not stretched, said.
    none, record = memory_stretches("npb", "bt", "C", cases, node, fit)
    assert none == {} and "no traffic count for npb bt" in record["how"] and not called
    stretches, record = memory_stretches("npb", "mg", "C", cases, node, fit)
    assert called == [1]
    demand = bytes_per_op("mg", "C", 1) * 2000e6  # type: ignore[operator]
    assert stretches == {
        "mg-1": 1.0, "mg-2": 1.0, "mg-16": pytest.approx(8 * demand / 20e9)}  # fmt: skip
    assert stretches["mg-16"] > 1.5
    assert record["cases"][2]["ranks_per_node"] == 8
    assert "x1 at 1 ranks (1/node" in record["how"] and "2000 Mop/s per rank" in record["how"]
    # MG class C at 16 ranks holds 8 x 242 MiB on a node: a 3 GiB cache keeps it (not one
    # rank's 3.8 GiB), 64 MiB does not.
    cached = NodeMemory(20e9, None, "a test", llc_bytes=3 << 30)
    stretches, record = memory_stretches("npb", "mg", "C", cases, cached, fit)
    assert stretches["mg-16"] == 1.0 and record["cases"][2]["in_cache"]
    assert "x1 at 16 ranks (8/node, in cache)" in record["how"]
    # All cases in cache: nothing to fit.
    huge = NodeMemory(20e9, None, "a test", llc_bytes=64 << 30)
    assert memory_stretches("npb", "mg", "C", cases, huge, fit)[0] == {} and len(called) == 2
    small = NodeMemory(20e9, None, "a test", llc_bytes=64 << 20)
    assert memory_stretches("npb", "mg", "C", cases, small, fit)[0]["mg-16"] > 1.5
    # A core speed fitted on a measured single-rank time already holds one rank's memory
    # cost: the stretches are relative to it (one process's 2 GB/s: x1.93 alone).
    capped = NodeMemory(20e9, 2e9, "a test")
    absolute, _ = memory_stretches("npb", "mg", "C", cases, capped, fit)
    relative, record = memory_stretches("npb", "mg", "C", cases, capped, fit, speed_fitted=True)
    assert absolute["mg-1"] == pytest.approx(demand / 2e9)
    assert relative["mg-1"] == 1.0 and record["relative_to"] == pytest.approx(demand / 2e9)
    assert relative["mg-16"] == pytest.approx(absolute["mg-16"] / absolute["mg-1"])


def test_the_op_rate_is_the_median_of_repeated_fits_and_a_wide_spread_is_refused() -> None:
    demand = fitted_rate("mg", "C", [7000.0, 6000.0, 6500.0], load=3.5)
    assert demand.mops_per_rank == 6500.0 and demand.samples == (7000.0, 6000.0, 6500.0)
    assert demand.spread == pytest.approx(1000 / 6500)
    assert demand.describe() == (
        "6500 Mop/s per rank (median of 3 fitted: simulated 1-rank npb mg class C runs, "
        "load average 3.5: 6000-7000, spread 15.4%)"
    )
    # What every projection shows: the rate used and its spread.
    _, record = memory_stretches("npb", "mg", "C", [case(16, 8)], NodeMemory(20e9, None, "t"),
                                 lambda: demand)  # fmt: skip
    assert "6500 Mop/s per rank (median of 3" in record["how"] and "spread 15.4%" in record["how"]
    assert record["demand"]["samples"] == (7000.0, 6000.0, 6500.0)
    # Issue 21's two fits under load (7633 and 4621 Mop/s) are 49 % apart: refused, every
    # sample and the load named.
    with pytest.raises(UserError, match=r"disagree by 49% \(Mop/s 7633, 4621, 6200, load "
                                        r"average 30.0\), more than 25%"):  # fmt: skip
        fitted_rate("mg", "C", [7633.0, 4621.0, 6200.0], load=30.0)
    assert fitted_rate("mg", "C", [5000.0]).describe().startswith("5000 Mop/s per rank (fitted")
    with pytest.raises(ValueError, match="not positive"):
        fitted_rate("mg", "C", [5000.0, 0.0])


def test_shipped_cc_profiles_state_an_assumed_node_bandwidth() -> None:
    for name, per_node in (("ec2-cc1", 64e9), ("ec2-cc2", 102.4e9)):
        memory = profile_target(name).memory
        assert memory is not None and memory.assumed
        assert memory.bandwidth_Bps == pytest.approx(per_node)
        assert memory.llc_bytes == {"ec2-cc1": 16, "ec2-cc2": 40}[name] << 20
        assert "assumed: Intel's specified maximum memory bandwidth" in memory.describe()
    # No figure and no assumption for the Magellan nodes: not modelled (said in outputs).
    assert profile_target("magellan-ib").memory is None


def test_profile_memory_and_compute_tables(tmp_path: Path) -> None:
    base = (PROFILES / "ec2-cc1.toml").read_text()
    bad = write(tmp_path / "bad.toml", base.replace("stream_triad = 64", "stream_triad = -1"))
    with pytest.raises(ConfigError, match=r"memory.*not a positive figure"):
        load_profile(str(bad))
    # A published single-process figure becomes the speed reference the core is fitted on.
    table = '[compute]\nkernel = "mg"\nclass = "A"\nmops = 1000.0\nsource = "a paper, Table 2"\n'
    good = write(tmp_path / "cpu.toml", base + "\n" + table)
    target = profile_target(str(good))
    reference = target.speeds[("mg", "A")]
    # MG class A: 58 x 4 iterations x 256^3 operations at 1000 Mop/s.
    assert reference.time_s == pytest.approx(58 * 4 * 256**3 / 1e9)
    assert reference.run_id is None and reference.source == "published: a paper, Table 2"


@requires_mpi
def test_the_node_bandwidth_comes_from_a_stored_stream_run(tmp_path: Path) -> None:
    """A real STREAM run on local (small arrays: the test checks where the figure is read,
    not the figure), one process and one per core; the per-core case is the node's."""
    suite = write(tmp_path / "stream.toml", 'name = "s"\ndescription = "d"\n'
                  '[[benchmark]]\nname = "stream"\nranks = [1, "per_core"]\n'
                  "llc_bytes = 1048576\n")  # fmt: skip
    db = str(tmp_path / "r.db")
    result = invoke("run", "--suite", str(suite), "--db", db)
    assert result.exit_code == 0, result.output
    with open_store(db) as store:
        by_ranks = {
            int(s.measurement.parameters["ranks"]): s.measurement.value
            for s in store.measurements(metric="triad_bandwidth")
        }
        (run,) = store.runs()
        memory = store_memory(store, {run.id})
        assert memory is not None and not memory.assumed
        most = max(by_ranks)
        assert most >= 2
        assert memory.bandwidth_Bps == pytest.approx(by_ranks[most] * 1e6)
        assert memory.single_process_Bps == pytest.approx(by_ranks[1] * 1e6)
        assert f"STREAM Triad of run {run.id}, {most} processes" in memory.source
        assert store_memory(store, set()) is None  # another platform's runs
        # Without a PingPong the platform cannot be a target; its memory is read all the same.
        with pytest.raises(Exception, match="no PingPong curve"):
            store_target(store, run.platform_name)


def simulate(db: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["simulate", "--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@requires_smpi
def test_smpirun_stretches_the_computation_of_ranks_sharing_a_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ec2-cc1 with a node bandwidth far below what MG moves: the single-rank case runs
    `stretch` times slower than the unstretched fit run of the same build, and two ranks on
    one node twice that again."""
    # The subject is the stretch, not the host: class S's millisecond runs disagreed by 42 %
    # at load 1.5 in one CI run, which the product rightly refuses (the refusal has its own
    # test above). Here any spread is taken; the checks below allow host noise of 1.5x.
    monkeypatch.setattr(runner_module, "fitted_rate",
                        functools.partial(fitted_rate, max_spread=math.inf))  # fmt: skip
    # Class S fits in CC1's 16 MiB of cache: the cache is left out here so that it streams.
    text = (PROFILES / "ec2-cc1.toml").read_text().replace("stream_triad = 64",
                                                          "stream_triad = 0.05")  # fmt: skip
    slow = write(tmp_path / "slow.toml", "\n".join(
        line for line in text.splitlines() if not line.startswith("llc_mib")))  # fmt: skip
    db = tmp_path / "sim.db"
    out = simulate(db, "--profile", str(slow), "--bench", "npb.mg", "--class", "S",
                    "--ranks", "1,2", "--ppn", "2")  # fmt: skip
    assert "memory: node memory bandwidth 0.05 GB/s (assumed: Intel's" in out
    with open_store(str(db)) as store:
        (run,) = store.runs()
        record = run.suite_config["memory"]
        rows = {r["ranks"]: r for r in record["cases"]}
        assert rows[1]["stretch"] > 3 and rows[2]["stretch"] == pytest.approx(
            2 * rows[1]["stretch"])  # fmt: skip
        assert record["how"] in (run.note or "")
        mops = {
            int(s.measurement.parameters["ranks"]): s.measurement.value
            for s in store.measurements(run.id, metric="mops_total")
        }
        fitted = record["demand"]["mops_per_rank"]
        # The rate is the median of three single-rank simulations, their spread recorded.
        assert len(record["demand"]["samples"]) == 3 and "spread" in record["how"]
        assert fitted == sorted(record["demand"]["samples"])[1]
        # MG class S on one rank is all computation: its rate falls by the stretch (host
        # noise between two runs of the same computation: well inside a factor 1.5).
        ratio = fitted / mops[1]
        assert rows[1]["stretch"] / 1.5 < ratio < rows[1]["stretch"] * 1.5
        # Two ranks each stretched twice as much: the pair is no faster than one rank alone.
        assert mops[2] < 1.5 * mops[1]
        calibration = store.calibrations()[0]
        assert calibration.parameters["memory"]["bandwidth_Bps"] == pytest.approx(0.05e9)
    shown = CliRunner().invoke(app, ["calibrations", "--id", str(calibration.id), "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "memory: node memory bandwidth 0.05 GB/s" in " ".join(shown.output.split())
    assert json.dumps(record)  # the record is plain data
