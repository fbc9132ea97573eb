"""Real smpirun executions through `hpceval simulate`: mpibench and NPB CG projected and
stored, bad input refused in one line, projections overlaid in the report.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from hpceval.build import cache_root
from hpceval.cli import app
from hpceval.model import Origin
from hpceval.report.sections.collectives import size_sweep_points
from hpceval.store import open_store
from tests.test_simulate import requires_smpi


def simulate_ok(db: Path, *args: str) -> str:
    """`hpceval simulate ARGS --db DB`, which must succeed; its output."""
    result = CliRunner().invoke(app, ["simulate", *args, "--db", str(db)])
    assert result.exit_code == 0, result.output
    return result.output


@requires_smpi
def test_simulate_mpibench_pingpong_from_a_profile(tmp_path: Path) -> None:
    db = tmp_path / "sim.db"
    simulate_ok(
        db, "--profile", "ec2-cc1", "--bench", "mpibench", "--pattern", "pingpong",
        "--ranks", "2", "--sizes", "0,1KiB,64KiB,1MiB,4MiB",
    )  # fmt: skip
    with open_store(str(db)) as store:
        (calibration,) = store.calibrations()
        assert calibration.converged and calibration.max_residual <= 0.10
        (run,) = store.runs()
        assert run.origin is Origin.SIMULATED and run.launcher == "smpi"
        assert run.suite_config["calibration"]["uid"] == calibration.uid
        assert run.suite_config["smpi_config"]["smpi/simulate-computation"] == "no"
        ms = store.measurements(run.id, metric="latency")
        assert {m.measurement.parameters["pair"] for m in ms} == {"intra-node", "inter-node"}
        assert all(m.measurement.origin is Origin.SIMULATED for m in ms)
        inter = {
            m.measurement.parameters["size"]: m.measurement.value
            for m in ms
            if m.measurement.parameters["pair"] == "inter-node"
        }
        # The published 55 µs and 4.9 Gbps, within the calibration's tolerance.
        assert inter[0] == pytest.approx(55, rel=0.10)
        assert inter[4194304] == pytest.approx(55 + 4194304 / 612.5, rel=0.10)
    # The calibration's scratch platform files went with it.
    assert list((cache_root() / "simulate").glob("calibrating-*")) == []
    # The same inputs again: the calibration is reused, a second simulated run is added.
    again = simulate_ok(
        db, "--profile", "ec2-cc1", "--bench", "mpibench", "--pattern", "allreduce",
        "--ranks", "4", "--ppn", "2", "--sizes", "4,1KiB", "--validate",
    )  # fmt: skip
    assert "reused calibration 1" in again
    text = " ".join(again.split())
    # What the output says of the model: selector, topology, no rings, the core speed.
    assert "collectives: openmpi selector (EC2-CC's latency and bandwidth are Open MPI's" in text
    assert "network: single switch (fat-pipe backbone) (EC2-CC: 10 GbE, full bisection" in text
    assert "contention: no rings measured" in text
    # A profile has nothing measured and no published allreduce: counted, not guessed.
    assert re.search(r"validation of run 2: 0 figures held against measurements; [1-9]\d* "
                     "without a measured counterpart", text)  # fmt: skip
    with open_store(str(db)) as store:
        assert len(store.calibrations()) == 1
        run = store.runs()[0]
        times = store.measurements(run.id, metric="time")
        assert {m.measurement.parameters["nodes"] for m in times} == {2}
    # An algorithm forced instead of Open MPI's: the same calibration, another result, and
    # the run and the output say what was forced.
    alltoall = ["--bench", "mpibench", "--pattern", "alltoall", "--ranks", "16", "--sizes",
                "64KiB"]  # fmt: skip
    simulate_ok(db, "--profile", "ec2-cc1", *alltoall)
    forced = simulate_ok(db, "--profile", "ec2-cc1", *alltoall, "--collective", "alltoall=pair")
    assert "reused calibration 1" in forced
    assert "collectives forced to SMPI's alltoall pair: not the MPI library's choice" in (
        " ".join(forced.split()))  # fmt: skip
    with open_store(str(db)) as store:
        library, pair = sorted(store.runs()[:2], key=lambda r: r.id)
        assert "smpi/alltoall" not in library.suite_config["smpi_config"]
        assert pair.suite_config["smpi_config"]["smpi/alltoall"] == "pair"
        assert pair.suite_config["simulate"]["collectives"] == {"alltoall": "pair"}
        assert "collectives forced to SMPI's alltoall pair" in (pair.note or "")
        values = [store.measurements(r.id, metric="time")[0].measurement.value
                  for r in (library, pair)]  # fmt: skip
        assert values[0] != pytest.approx(values[1], rel=0.01)


@requires_smpi
def test_simulate_npb_cg_class_s_on_16_ranks(tmp_path: Path) -> None:
    db = tmp_path / "sim.db"
    simulate_ok(
        db, "--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "S",
        "--ranks", "16",
    )  # fmt: skip
    with open_store(str(db)) as store:
        run = store.runs()[0]
        (time_s,) = store.measurements(run.id, metric="time")
        m = time_s.measurement
        assert m.origin is Origin.SIMULATED
        assert (m.parameters["ranks"], m.parameters["nodes"], m.parameters["class"]) == (16, 2, "S")
        assert math.isfinite(m.value) and m.value > 0
        assert (m.parameters["smpi_sampling"], m.parameters["smpi_memory_folding"]) == (
            False, False)  # fmt: skip
        assert [q["passed"] for q in m.details["verification"]] == [True]
    # Sampled and folded (asked): accepted as not checked, and it says so.
    result = simulate_ok(
        db, "--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "S",
        "--ranks", "4", "--sampling", "--folding",
    )  # fmt: skip
    assert "NPB build: computation sampling and memory folding (verification not checked)" in (
        " ".join(result.split()))  # fmt: skip
    with open_store(str(db)) as store:
        run = store.runs()[0]
        assert "computation sampling and memory folding" in (run.note or "")
        assert run.suite_config["smpi_build"]["sampling"] is True
        (time_s,) = store.measurements(run.id, metric="time")
        m = time_s.measurement
        assert (m.parameters["smpi_sampling"], m.parameters["smpi_memory_folding"]) == (
            True, True)  # fmt: skip
        assert m.details["verification"] == (
            "not checked (computation sampling and memory folding)")  # fmt: skip
        assert m.details["smpi"]["sampled"] is True and m.details["smpi"]["folded_bytes"] > 0
    shown = CliRunner().invoke(app, ["show", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "NPB kernels, SIMULATED" in text
    assert "verified no: not checked (computation sampling and memory folding)" in text
    # Iteration sampling: 3 of class S's 15 iterations timed, the time extrapolated.
    simulate_ok(
        db, "--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "S",
        "--ranks", "4", "--iterations", "3",
    )  # fmt: skip
    with open_store(str(db)) as store:
        run = store.runs()[0]
        assert run.suite_config["smpi_build"]["iterations"] == 3
        (time_s,) = store.measurements(run.id, metric="time")
        m = time_s.measurement
        assert m.parameters["smpi_timed_iterations"] == 3
        assert m.details["verification"] == "not checked (iteration sampling (3 of 15))"
        assert m.details["smpi"]["iterations_run"] == 3 and m.details["iterations"] == 15
        assert math.isfinite(m.value) and m.value > 0
    # Replayed twice (--repeat 2): two verified repetitions of the one case.
    simulate_ok(db, "--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "S", "--ranks", "4",
                "--repeat", "2")  # fmt: skip
    with open_store(str(db)) as store:
        run = store.runs()[0]
        assert run.suite_config["simulate"]["repeat"] == 2
        times = store.measurements(run.id, metric="time")
        assert sorted(sm.point_key for sm in times) == ["rep=1", "rep=2"]
        assert all(sm.measurement.details["verification"][0]["passed"] for sm in times)


@requires_smpi
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "S", "--ranks", "64",
          "--nodes", "4"], "64 ranks at 8 per node need 8 nodes"),
        (["--profile", "ec2-cc1", "--bench", "npb.cg", "--class", "S", "--ranks", "6",
          "--ppn", "2"], "power-of-two"),
        (["--profile", "bare-metal-10gbe", "--bench", "npb.cg", "--class", "S", "--ranks", "4"],
         "gives no cores per node; pass --ppn"),
        (["--profile", "nowhere", "--bench", "mpibench", "--pattern", "pingpong", "--ranks", "2"],
         "unknown profile 'nowhere'"),
        (["--platform", "unmeasured", "--bench", "mpibench", "--pattern", "pingpong",
          "--ranks", "2"], "platform 'unmeasured' has no measurements"),
        (["--profile", "ec2-cc1", "--bench", "npb.ft", "--class", "S", "--ranks", "4",
          "--collective", "alltoall=linear"], "SimGrid's alltoall has no algorithm 'linear'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_stores_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    db = tmp_path / "sim.db"
    open_store(str(db)).close()
    result = CliRunner().invoke(app, ["simulate", *args, "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    with open_store(str(db)) as store:
        assert store.runs() == [] and store.calibrations() == []


def test_report_overlays_a_projection_at_the_measured_rank_count() -> None:
    points = pd.DataFrame(
        {
            "platform": ["local"] * 5 + ["other"],
            "origin": ["measured", "measured", "simulated", "simulated", "simulated",
                       "simulated"],
            "ranks": [2, 2, 2, 4, 4, 8],
            "size": [8, 0, 8, 8, 0, 8],
        }
    )  # fmt: skip
    top = size_sweep_points(points)
    # measured 2 ranks, simulated at the measured 2 ranks and at its own largest (4); sizes
    # above 0; a platform without measurements: its largest only.
    assert list(zip(top["origin"], top["ranks"], strict=True)) == [
        ("measured", 2), ("simulated", 2), ("simulated", 4), ("simulated", 8)]  # fmt: skip
