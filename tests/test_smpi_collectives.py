"""Collective algorithms forced on a simulation (hpceval.launch.starters.smpi_collectives):
the names hpceval accepts are the installed SimGrid's, a bad one is a one-line error, and
its command and run say that it is not the MPI library's choice."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from hpceval.errors import UserError
from hpceval.launch.starters import get_starter_class
from hpceval.launch.starters.base import StartRequest
from hpceval.launch.starters.smpi_collectives import (
    SMPI_ALGORITHMS,
    forced_config,
    forced_in,
    forced_note,
    parse_forced,
)
from hpceval.model import Placement

from .test_smpi_programs import requires_smpi, smpi_build, smpirun_process


def test_forced_algorithms_parse_into_smpi_settings() -> None:
    forced = parse_forced(["alltoall=pair", " alltoallv = pair ", "alltoall=pair"])
    assert forced == {"alltoall": "pair", "alltoallv": "pair"}
    cfg = forced_config(forced)
    assert cfg == {"smpi/alltoall": "pair", "smpi/alltoallv": "pair"}
    # The inverse ignores every other SMPI setting, the selector included.
    assert forced_in({**cfg, "smpi/coll-selector": "ompi", "smpi/os": "0:1e-6:0"}) == forced
    assert forced_note(forced) == (
        "collectives forced to SMPI's alltoall pair, alltoallv pair: not the MPI library's choice"
    )
    assert parse_forced([]) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alltoall", r"--collective 'alltoall': not COLLECTIVE=ALGORITHM"),
        ("=pair", r"not COLLECTIVE=ALGORITHM"),
        ("alltoall=", r"not COLLECTIVE=ALGORITHM"),
        ("--cfg=x", r"no collective '--cfg' in SMPI \(allgather, "),
        ("alltoall=automatic", r"SimGrid's alltoall has no algorithm 'automatic' \(2dmesh, "),
        ("alltoall=Pair", r"has no algorithm 'Pair'"),  # SimGrid's names are case-sensitive
        ("bcast=<b>x</b>", r"has no algorithm '<b>x</b>'"),
    ],
)
def test_a_bad_forced_algorithm_is_one_line(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as raised:
        parse_forced([text])
    assert "\n" not in str(raised.value)


def test_one_collective_forced_two_ways_is_refused() -> None:
    with pytest.raises(UserError, match=r"--collective: alltoall forced twice \(pair, ring\)"):
        parse_forced(["alltoall=pair", "alltoall=ring"])


def smpirun_command(
    tmp_path: Path, cfg: dict[str, str]
) -> tuple[Mapping[str, str], tuple[str, ...]]:
    starter = get_starter_class("smpirun")()
    options = starter.options_model.model_validate(  # type: ignore[union-attr]
        {"platform_file": "/p.xml", "workdir": str(tmp_path), "cfg": cfg}
    )
    cmd = starter.command(StartRequest(
        placement=Placement(2, 2), program=("/cache/ft",), implementation="SMPI",
        executable="smpirun", options=options,
    ))  # fmt: skip
    assert all(f"--cfg={k}:{v}" in cmd.argv for k, v in cfg.items())
    return cmd.env, cmd.notes


def test_every_forced_execution_says_so(tmp_path: Path) -> None:
    env, notes = smpirun_command(
        tmp_path, {"smpi/coll-selector": "ompi", "smpi/alltoall": "pair"}
    )
    assert "collectives forced to SMPI's alltoall pair: not the MPI library's choice" in notes
    # The other collectives stay the library's, Open MPI's broadcasts included.
    assert env["HPCEVAL_SMPI_BCAST"] == "openmpi"
    env, notes = smpirun_command(tmp_path, {"smpi/coll-selector": "ompi", "smpi/bcast": "NTSB"})
    assert "HPCEVAL_SMPI_BCAST" not in env  # a forced broadcast is SMPI's own
    assert not any("MPI_Bcast as Open MPI" in n for n in notes)
    assert any("forced to SMPI's bcast NTSB" in n for n in notes)
    _, notes = smpirun_command(tmp_path, {"smpi/coll-selector": "ompi"})
    assert not any("forced" in n for n in notes)


@requires_smpi
@pytest.mark.parametrize("collective", sorted(SMPI_ALGORITHMS))
def test_the_algorithms_are_the_installed_simgrids(tmp_path: Path, collective: str) -> None:
    """SimGrid refuses an unknown algorithm at start-up, listing the ones it has: the table
    must be that list (less "automatic"), or a forced name would fail only at run time."""
    program = smpi_build("mpibench")
    done = smpirun_process(program.path, [], 2, f"--cfg=smpi/{collective}:hpceval-unknown",
                           cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0
    found = re.search(r"Valid algorithms: (.*)\.$", done.stdout + done.stderr, re.MULTILINE)
    assert found, (done.stdout + done.stderr)[-2000:]
    listed = {name.strip() for name in found.group(1).split(",")}
    assert listed - {"automatic"} == set(SMPI_ALGORITHMS[collective])
