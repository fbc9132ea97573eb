from __future__ import annotations

from pathlib import Path

import pytest

from hpceval.campaign import load_platform, load_suite
from hpceval.config import parse_size, parse_sizes, shipped_names
from hpceval.errors import ConfigError, UserError

from .conftest import write


def test_shipped_suites_and_platforms_load() -> None:
    assert {"quick", "p2p", "collectives", "smoke", "npb-quick", "npb-standard"} <= set(
        shipped_names("suites")
    )
    assert "local" in shipped_names("platforms")
    for name in shipped_names("suites"):
        assert load_suite(name).config.benchmark
    local = load_platform("local")
    assert local.config.launcher.kind == "local"
    assert local.source == "platforms/local.toml"


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(UserError, match=r"unknown suite 'nope' \(shipped: .*quick"):
        load_suite("nope")
    with pytest.raises(UserError, match="unknown platform 'nope'"):
        load_platform("nope")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"missing\.toml: no such suite file"):
        load_suite(str(tmp_path / "missing.toml"))


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.toml", "name = 'x'\n[[benchmark]\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: malformed TOML"):
        load_suite(str(f))


@pytest.mark.parametrize(
    ("body", "field", "cause"),
    [
        ("[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\n", "name", "required field"),
        ("name='x'\n[[benchmark]]\nname='nosuch'\n", "benchmark[0].name", "unknown benchmark"),
        (
            "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpang']\n",
            "benchmark[0].patterns[0]",
            "Input should be",
        ),
        (
            "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nsizes='1..x'\n",
            "benchmark[0].sizes",
            "invalid size",
        ),
        (
            "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nranks=[1]\n",
            "benchmark[0].ranks",
            "pingpong needs at least 2 ranks",
        ),
        (
            "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['allreduce']\nsizes=[6]\n",
            "benchmark[0].sizes",
            "not a multiple of 4",
        ),
        (
            "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nbudget=1\n",
            "benchmark[0].budget",
            "unknown field",
        ),
        (
            "name='x'\n[[benchmark]]\nname='mpibench'\npatterns=['pingpong']\nranks=[0]\n",
            "benchmark[0].ranks",
            "0 is not a valid rank count",
        ),
        ("name='x'\nbenchmark=[]\n", "benchmark", "at least 1"),
    ],
)
def test_suite_errors_name_file_and_field(
    tmp_path: Path, body: str, field: str, cause: str
) -> None:
    f = write(tmp_path / "s.toml", body)
    with pytest.raises(ConfigError) as info:
        load_suite(str(f))
    message = str(info.value)
    assert message.startswith(f"{f}: {field}:"), message
    assert cause in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("description='no name'\n", "name"),
        ("name='x'\nnodes=0\n", "nodes"),
        ("name='x'\ncores_per_node=0\n", "cores_per_node"),
        ("name='x'\n[launcher]\nkind='teleport'\n", "launcher.kind"),
        ("name='x'\nnodes=2\nhosts=['a']\n", "hosts"),
        ("name='x'\n[launcher]\nmpirunn='x'\n", "launcher.mpirunn"),
        ("name='x'\n[interconnect]\nkind='carrier-pigeon'\n", "interconnect.kind"),
        ("name='x'\n[price]\ncurrency='EUR'\n", "price.per_node_hour"),
    ],
)
def test_platform_errors_name_file_and_field(tmp_path: Path, body: str, field: str) -> None:
    f = write(tmp_path / "p.toml", body)
    with pytest.raises(ConfigError) as info:
        load_platform(str(f))
    assert str(info.value).startswith(f"{f}: {field}:"), str(info.value)


def test_platform_interconnect_shorthand_and_price(tmp_path: Path) -> None:
    f = write(
        tmp_path / "p.toml",
        "name='x'\ninterconnect='10 GbE'\n[price]\nper_node_hour=2.4\nsource='EC2 2012'\n",
    )
    p = load_platform(str(f)).config
    assert p.interconnect.name == "10 GbE"
    assert p.price is not None and p.price.per_node_hour == 2.4 and p.price.currency == "USD"


def test_sizes() -> None:
    assert parse_size("4KiB") == 4096
    assert parse_size("2MB") == 2_000_000
    assert parse_size(7) == 7
    assert parse_sizes("0..8") == [0, 1, 2, 4, 8]
    assert parse_sizes("3..16") == [4, 8, 16]
    assert parse_sizes("0..4MiB")[-1] == 4 * 1024 * 1024
    assert len(parse_sizes("0..4MiB")) == 24
    assert parse_sizes([8, "1KiB"]) == [8, 1024]
    for bad in ("8..1", "x..4", "1024"):
        with pytest.raises(ValueError):
            parse_sizes(bad)
    with pytest.raises(ValueError, match="repeat"):
        parse_sizes([8, 8])
    with pytest.raises(ValueError, match="negative"):
        parse_size(-1)
