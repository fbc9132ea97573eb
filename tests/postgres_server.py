"""A real PostgreSQL server for the tests, started from Debian's `postgresql` package.

`postgres_server` (session scope) runs initdb into a fresh directory, starts the server with
pg_ctl on a free port of 127.0.0.1 (its unix socket inside that directory, so it never meets
a system cluster), and stops it and removes everything at the end of the session.
`postgres_url` (function scope) gives each test a database of its own on that server.

The server dies with the session even when pytest is killed (SIGKILL included), which no
fixture teardown survives: a watchdog process (`python tests/postgres_server.py watch ...`,
in a session of its own) reads a pipe whose only writer is the pytest process. The pipe ends
when that process ends, however it ends; the watchdog then stops the server (immediate mode)
and removes its directory. After a normal teardown it finds nothing left to do.

PostgreSQL refuses to run as root: as root the server runs as the `postgres` system user that
the Debian package creates; as anyone else it runs as that user. A test module that needs it
declares (a plugin, so that the whole session shares one server):

    pytest_plugins = ["tests.postgres_server"]

It skips (saying why) only where no server can run: psycopg or the server binaries missing,
or root without a `postgres` user. A server that is there but fails to start is an error.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SUPERUSER = "hpceval"  # the database superuser initdb creates (trust authentication)
START_TIMEOUT_S = 60


def find_bindir() -> Path | None:
    """The directory of initdb/pg_ctl: Debian's newest /usr/lib/postgresql/N/bin, or PATH."""
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    if debian:
        return debian[-1].parent
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One throwaway PostgreSQL cluster in `root`, owned by and run as `os_user`."""

    def __init__(self, bindir: Path, root: Path, os_user: str | None):
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        self.log = root / "server.log"
        self.os_user = os_user  # None: run as the current (non-root) user
        self.port = 0
        self._names = itertools.count(1)

    # --- processes ----------------------------------------------------------------------

    def _run(
        self, *argv: str, timeout: float = START_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / argv[0]), *argv[1:]],
            cwd=self.root,
            user=self.os_user,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def init(self) -> None:
        self.socket_dir.mkdir()
        if self.os_user is not None:
            owner = pwd.getpwnam(self.os_user)
            for path in (self.root, self.socket_dir):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        done = self._run(
            "initdb",
            "--pgdata",
            str(self.data),
            "--username",
            SUPERUSER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr.strip()}")

    def _configure(self, port: int) -> None:
        """Listen on 127.0.0.1:port only; no durability work (the OS keeps the files)."""
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "max_connections": "40",
            "shared_buffers": "16MB",
            "fsync": "off",
            "full_page_writes": "off",
            "logging_collector": "off",
        }
        # postgresql.auto.conf is read last; each start rewrites it with the current port.
        (self.data / "postgresql.auto.conf").write_text(
            "".join(f"{key} = {value}\n" for key, value in settings.items())
        )

    def start(self) -> None:
        """Start on a free port (kept across restarts, so URLs stay valid)."""
        attempts = 1 if self.port else 3
        for _ in range(attempts):
            port = self.port or free_port()
            self._configure(port)
            done = self._run(
                "pg_ctl",
                "--pgdata",
                str(self.data),
                "--log",
                str(self.log),
                "--wait",
                "--timeout",
                str(START_TIMEOUT_S),
                "start",
                timeout=START_TIMEOUT_S + 10,
            )
            if done.returncode == 0:
                self.port = port
                return
            if "could not bind" not in self.log_tail():  # anything but a lost port race
                break
        raise RuntimeError(
            f"pg_ctl start failed: {done.stderr.strip()}\n--- server log ---\n{self.log_tail()}"
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: `fast` disconnects clients and shuts down cleanly."""
        self._run("pg_ctl", "--pgdata", str(self.data), "--mode", mode, "--wait", "stop")

    def running(self) -> bool:
        return self._run("pg_ctl", "--pgdata", str(self.data), "status").returncode == 0

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    # --- databases ----------------------------------------------------------------------

    def url(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"{prefix}{next(self._names)}"
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _why_not() -> str | None:
    """Why no server can be started here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e .[postgres])"
    if find_bindir() is None:
        return "PostgreSQL server binaries not found (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    return None


def start_watchdog(server: PostgresServer) -> tuple[subprocess.Popen[bytes], int]:
    """The watchdog of `server` and the write end of its pipe (close it to release it)."""
    read_end, write_end = os.pipe()  # not inheritable: no other process holds the write end
    try:
        argv = [sys.executable, __file__, "watch", str(server.bindir), str(server.root)]
        watchdog = subprocess.Popen(
            [*argv, server.os_user or ""],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to pytest's process group does not reach it
        )
    finally:
        os.close(read_end)
    return watchdog, write_end


def watch(bindir: Path, root: Path, os_user: str | None) -> None:
    """Wait for the end of stdin (the test session has ended), then stop the server and remove
    its files."""
    while os.read(0, 4096):
        pass
    server = PostgresServer(bindir, root, os_user)
    if (server.data / "postmaster.pid").exists():
        server.stop("immediate")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    reason = _why_not()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server: {reason}")
    bindir = find_bindir()
    assert bindir is not None
    # Not pytest's tmp_path: its parents are private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="hpceval-pg-"))
    server = PostgresServer(bindir, root, "postgres" if os.geteuid() == 0 else None)
    watchdog, lifeline = start_watchdog(server)
    try:
        server.init()
        started = time.monotonic()
        server.start()
        print(f"PostgreSQL started on port {server.port} in {time.monotonic() - started:.1f} s")
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop("fast")
            if server.running():
                server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
        os.close(lifeline)
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=START_TIMEOUT_S)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """postgresql://hpceval@127.0.0.1:PORT/tN: a fresh empty database for one test."""
    if not postgres_server.running():  # a test that stopped it failed before restarting it
        postgres_server.start()
    return postgres_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty results database: an SQLite file, or a database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


if __name__ == "__main__":  # the watchdog: postgres_server.py watch BINDIR ROOT [OS_USER]
    if len(sys.argv) != 5 or sys.argv[1] != "watch":
        sys.exit("usage: postgres_server.py watch BINDIR ROOT OS_USER")
    watch(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] or None)
