"""The compile cache: keyed by source, compiler, MPI and flags; atomic; clear errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hpceval.build import build_key, compile_program
from hpceval.errors import ToolMissing, UserError

from .conftest import write

needs_cc = pytest.mark.skipif(
    shutil.which("cc") is None, reason="no C compiler (./setup.sh installs gcc)"
)

HELLO = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'


def test_key_depends_on_source_compiler_and_flags(tmp_path: Path) -> None:
    src = write(tmp_path / "a.c", HELLO)
    base = build_key([src], "gcc 12", ["-O2"], [])
    assert build_key([src], "gcc 12", ["-O2"], []) == base
    assert build_key([src], "gcc 13", ["-O2"], []) != base
    assert build_key([src], "gcc 12", ["-O3"], []) != base
    assert build_key([src], "gcc 12", ["-O2"], ["-lm"]) != base
    write(src, HELLO + "/* changed */\n")
    assert build_key([src], "gcc 12", ["-O2"], []) != base


@needs_cc
def test_compiled_once_then_cached(tmp_path: Path) -> None:
    src = write(tmp_path / "hello.c", HELLO)
    cache = tmp_path / "cache"
    exe = compile_program(
        "hello", [src], compiler="cc", compiler_identity="cc", cflags=["-O2"], cache=cache
    )
    assert (
        subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout == "hello\n"
    )
    mtime = exe.stat().st_mtime_ns
    again = compile_program(
        "hello", [src], compiler="cc", compiler_identity="cc", cflags=["-O2"], cache=cache
    )
    assert again == exe and again.stat().st_mtime_ns == mtime
    assert (exe.parent / "build.txt").read_text().startswith("cc -O2 -o ")
    assert [p.name for p in exe.parent.iterdir() if p.name.startswith(".")] == []


@needs_cc
def test_compile_error_is_one_line_naming_the_cause(tmp_path: Path) -> None:
    src = write(tmp_path / "bad.c", "int main(void) { return undefined_symbol; }\n")
    with pytest.raises(UserError, match=r"building bad failed .*undefined_symbol") as info:
        compile_program(
            "bad", [src], compiler="cc", compiler_identity="cc", cflags=[], cache=tmp_path
        )
    assert "\n" not in str(info.value)
    assert not list((tmp_path / "build").glob("bad-*/bad"))


def test_missing_compiler(tmp_path: Path) -> None:
    src = write(tmp_path / "a.c", HELLO)
    with pytest.raises(ToolMissing, match="no-such-mpicc not found"):
        compile_program(
            "a", [src], compiler="no-such-mpicc", compiler_identity="x", cflags=[], cache=tmp_path
        )
