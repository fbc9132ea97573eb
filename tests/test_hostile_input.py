"""Hostile strings in suite and platform files: nothing a user types reaches a shell or a
command's option parser, and nothing printed through rich is read as markup (issue 22)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpceval.campaign.configs import load_platform, load_suite
from hpceval.config import PlatformConfig
from hpceval.errors import ConfigError
from hpceval.launch import MpiRuntime, get_launcher_class

from .conftest import requires_mpi, write
from .test_cli import hpceval, one_line_error

# --------------------------------------------------------------------------- option injection


def test_a_host_name_that_is_an_ssh_option_runs_nothing(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    platform = write(
        tmp_path / "evil.toml",
        f'name = "evil"\nnodes = 1\nhosts = ["-oProxyCommand=touch {pwned}"]\n'
        '[launcher]\nkind = "hostfile"\n',
    )
    line = one_line_error(hpceval("run", "-p", str(platform), "-s", "smoke", cwd=tmp_path))
    assert "evil.toml: hosts[0]: " in line and "not a host name" in line
    assert not pwned.exists()
    assert not (tmp_path / "hpceval.db").exists()


@pytest.mark.parametrize(
    "host",
    ["-oProxyCommand=x", "a b", "node01\nnode02 slots=999", "node;id", "", "n" * 254, "$(id)"],
)
def test_host_names_are_validated(host: str) -> None:
    with pytest.raises(ValueError, match="not a host name"):
        PlatformConfig.model_validate({"name": "x", "hosts": [host]})


@pytest.mark.parametrize(
    "host", ["node01", "node-01.cluster.example", "10.0.0.7", "::1", "fe80::1%eth0", "me@node1"]
)
def test_real_host_names_pass(host: str) -> None:
    assert PlatformConfig.model_validate({"name": "x", "hosts": [host]}).hosts == [host]


def test_ssh_options_end_before_the_host() -> None:
    platform = PlatformConfig.model_validate(
        {"name": "c", "nodes": 1, "hosts": ["node01"], "launcher": {"kind": "hostfile"}}
    )
    hf = get_launcher_class("hostfile")(platform, MpiRuntime("Open MPI", "mpirun"))
    argv = hf.ssh_argv("node01", "true")
    assert argv[argv.index("node01") - 1] == "--"


PLATFORM_HEAD = 'name = "x"\nnodes = 1\n'


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('[launcher]\nenv = { "-x" = "1" }\n', "launcher.env"),
        ('[launcher]\nenv = { "A=B" = "1" }\n', "launcher.env"),
        ('[launcher]\nmpirun = "-oProxyCommand=x"\n', "launcher.mpirun"),
        ('[launcher]\nmpicc = "--version"\n', "launcher.mpicc"),
        ('hosts = ["a"]\n[launcher]\nkind = "hostfile"\ninterface = "-x"\n', "launcher.interface"),
        ('hosts = ["a"]\n[launcher]\nkind = "hostfile"\nworkdir = "-x"\n', "launcher.workdir"),
        ('hosts = ["a"]\n[launcher]\nkind = "hostfile"\nssh = "-x"\n', "launcher.ssh"),
        ('[launcher]\nkind = "slurm"\npartition = "-x"\n', "launcher.partition"),
        ('[launcher]\nkind = "slurm"\njob_dir = "-x"\n', "launcher.job_dir"),
    ],
)
def test_option_like_platform_strings_are_refused(tmp_path: Path, body: str, field: str) -> None:
    path = write(tmp_path / "p.toml", PLATFORM_HEAD + body)
    with pytest.raises(ConfigError, match=rf"p.toml: {field}: "):
        load_platform(str(path))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('name = "fio"\ndirectory = "/tmp/a:/etc"\n', "benchmark[0].directory"),
        ('name = "fio"\ndirectory = "-x"\n', "benchmark[0].directory"),
        ('name = "gromacs"\ngmx = "-x"\n', "benchmark[0].gmx"),
        ('name = "lammps"\nlmp = "--help"\n', "benchmark[0].lmp"),
        ('name = "hpcc"\nworkdir = "-x"\n', "benchmark[0].workdir"),
    ],
)
def test_option_like_suite_strings_are_refused(tmp_path: Path, body: str, field: str) -> None:
    path = write(tmp_path / "s.toml", 'name = "s"\n[[benchmark]]\n' + body)
    with pytest.raises(ConfigError, match=re.escape(f"s.toml: {field}: ")):
        load_suite(str(path))


# --------------------------------------------------------------------------- rich markup

MARKUP_NAME = "rich[/bad] [bold red]x[/bold red]"


@requires_mpi
def test_markup_in_names_is_printed_as_it_is(tmp_path: Path) -> None:
    platform = write(
        tmp_path / "markup.toml", f'name = "{MARKUP_NAME}"\ndescription = "[/oops]"\n'
    )
    suite = write(
        tmp_path / "suite.toml",
        'name = "[/s]"\n[[benchmark]]\nname = "mpibench"\npatterns = ["pingpong"]\n'
        "sizes = [8]\nranks = [2]\nbudget_s = 0.02\nwarmup_s = 0.01\nmin_samples = 3\n",
    )
    db = str(tmp_path / "r.db")
    done = hpceval("run", "-p", str(platform), "-s", str(suite), "--db", db, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for command in (["runs"], ["show"], ["show", "--run", "1"]):
        listed = hpceval(*command, "--db", db, cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert MARKUP_NAME in listed.stdout and "[/s]" in listed.stdout


def test_markup_in_an_error_message_is_printed_as_it_is(tmp_path: Path) -> None:
    line = one_line_error(hpceval("run", "-p", "[/bad]x.toml", cwd=tmp_path))
    assert "[/bad]x.toml: no such platform file" in line


# --------------------------------------------------------------------------- rank counts


BARRIER_SUITE = 'name = "s"\n[[benchmark]]\nname = "mpibench"\npatterns = ["barrier"]\n'


def plan(tmp_path: Path, ranks: int, platform_body: str) -> list[object]:
    from hpceval.campaign import plan_cases

    platform = write(tmp_path / "p.toml", 'name = "p"\ncores_per_node = 2\n' + platform_body)
    suite = write(tmp_path / "s.toml", BARRIER_SUITE + f"ranks = [{ranks}]\n")
    return list(plan_cases(load_suite(str(suite)), load_platform(str(platform)).config))


def test_a_hundred_thousand_ranks_on_two_cores_start_nothing(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.toml", BARRIER_SUITE + "ranks = [100000]\n")
    line = one_line_error(hpceval("run", "-s", str(suite), cwd=tmp_path))
    assert "s.toml: benchmark[0]: placement 1x100000x1 needs 100000 cores" in line
    assert "launcher.max_ranks_per_core" in line
    assert not (tmp_path / "hpceval.db").exists()


def test_oversubscription_is_bounded_by_the_platform(tmp_path: Path) -> None:
    assert plan(tmp_path, 16, "[launcher]\noversubscribe = true\n")  # 8 per core: the default
    with pytest.raises(ConfigError, match=r"s.toml: benchmark\[0\]: placement 1x17x1 needs 17"):
        plan(tmp_path, 17, "[launcher]\noversubscribe = true\n")
    assert plan(tmp_path, 64, "[launcher]\nmax_ranks_per_core = 32\n")
    with pytest.raises(ConfigError, match="and oversubscribe = false"):
        plan(tmp_path, 3, "[launcher]\noversubscribe = false\n")
    with pytest.raises(ConfigError, match=r"p.toml: launcher.max_ranks_per_core: "):
        plan(tmp_path, 2, "[launcher]\nmax_ranks_per_core = 100000\n")
