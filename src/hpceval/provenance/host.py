"""Reading the machine through a Host: the live system (SystemHost), a recording of it
(RecordingHost) or its replay on another machine (ReplayHost).
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hpceval.toolchain import CommandOutput, run_command


class Host(Protocol):
    """What provenance and doctor read from a machine. Every method returns None/False on
    failure instead of raising."""

    def read_text(self, path: str) -> str | None: ...
    def readlink(self, path: str) -> str | None: ...
    def listdir(self, path: str) -> list[str] | None: ...
    def exists(self, path: str) -> bool: ...
    def which(self, name: str) -> str | None: ...
    def run(self, argv: Sequence[str]) -> CommandOutput | None: ...
    def uname(self) -> tuple[str, str, str, str]: ...  # sysname, release, version, machine
    def hostname(self) -> str: ...
    def euid(self) -> int: ...


class SystemHost:
    """The machine hpceval runs on."""

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def readlink(self, path: str) -> str | None:
        try:
            return os.readlink(path)
        except OSError:
            return None

    def listdir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        return run_command(argv)

    def uname(self) -> tuple[str, str, str, str]:
        u = platform.uname()
        return u.system, u.release, u.version, u.machine

    def hostname(self) -> str:
        return socket.gethostname()

    def euid(self) -> int:
        return os.geteuid()


CAPTURE_FORMAT = 1


@dataclass
class RecordingHost:
    """Wraps a Host and remembers every answer, to save them as a replayable capture."""

    inner: Host
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str | None] = field(default_factory=dict)
    dirs: dict[str, list[str] | None] = field(default_factory=dict)
    existing: dict[str, bool] = field(default_factory=dict)
    found: dict[str, str | None] = field(default_factory=dict)
    commands: dict[str, CommandOutput | None] = field(default_factory=dict)

    def read_text(self, path: str) -> str | None:
        text = self.inner.read_text(path)
        if text is not None:
            self.files[path] = text
        return text

    def readlink(self, path: str) -> str | None:
        self.links[path] = target = self.inner.readlink(path)
        return target

    def listdir(self, path: str) -> list[str] | None:
        self.dirs[path] = entries = self.inner.listdir(path)
        return entries

    def exists(self, path: str) -> bool:
        self.existing[path] = answer = self.inner.exists(path)
        return answer

    def which(self, name: str) -> str | None:
        self.found[name] = path = self.inner.which(name)
        return path

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        self.commands[shlex.join(argv)] = result = self.inner.run(argv)
        return result

    def uname(self) -> tuple[str, str, str, str]:
        return self.inner.uname()

    def hostname(self) -> str:
        return self.inner.hostname()

    def euid(self) -> int:
        return self.inner.euid()

    def save(self, directory: Path) -> None:
        """Write files under directory/root/, command outputs under directory/commands/,
        everything else in directory/host.json."""
        for path, text in self.files.items():
            target = directory / "root" / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        commands: dict[str, Any] = {}
        for index, (line, result) in enumerate(sorted(self.commands.items())):
            if result is None:
                commands[line] = None
                continue
            name = f"{index:02d}-{Path(shlex.split(line)[0]).name}.txt"
            out = directory / "commands" / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(result.output, encoding="utf-8")
            commands[line] = {"returncode": result.returncode, "output": f"commands/{name}"}
        meta = {
            "format": CAPTURE_FORMAT,
            "uname": list(self.inner.uname()),
            "hostname": self.inner.hostname(),
            "euid": self.inner.euid(),
            "links": self.links,
            "dirs": self.dirs,
            "exists": self.existing,
            "which": self.found,
            "commands": commands,
        }
        (directory / "host.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


class ReplayHost:
    """Answers like the machine a RecordingHost capture was taken on; unknown questions get
    the answer of a machine without that file or program."""

    def __init__(self, directory: Path):
        self.directory = directory
        meta = json.loads((directory / "host.json").read_text())
        if meta.get("format") != CAPTURE_FORMAT:
            raise ValueError(f"{directory}/host.json: unknown capture format {meta.get('format')}")
        self._meta = meta

    def _file(self, path: str) -> Path:
        return self.directory / "root" / path.lstrip("/")

    def read_text(self, path: str) -> str | None:
        file = self._file(path)
        return file.read_text(encoding="utf-8") if file.is_file() else None

    def readlink(self, path: str) -> str | None:
        target: str | None = self._meta["links"].get(path)
        return target

    def listdir(self, path: str) -> list[str] | None:
        entries: list[str] | None = self._meta["dirs"].get(path)
        return entries

    def exists(self, path: str) -> bool:
        if path in self._meta["exists"]:
            return bool(self._meta["exists"][path])
        return self._file(path).exists() or self._meta["links"].get(path) is not None

    def which(self, name: str) -> str | None:
        path: str | None = self._meta["which"].get(name)
        return path

    def run(self, argv: Sequence[str]) -> CommandOutput | None:
        entry = self._meta["commands"].get(shlex.join(argv))
        if entry is None:
            return None
        output = (self.directory / entry["output"]).read_text(encoding="utf-8")
        return CommandOutput(int(entry["returncode"]), output)

    def uname(self) -> tuple[str, str, str, str]:
        sysname, release, version, machine = self._meta["uname"]
        return str(sysname), str(release), str(version), str(machine)

    def hostname(self) -> str:
        return str(self._meta["hostname"])

    def euid(self) -> int:
        return int(self._meta["euid"])
