"""Java and MPJ Express: finding them, a working MPJ_HOME, compiling Java benchmark programs.

Debian's libmpj-java (MPJ Express 0.44) installs its jars in /usr/share/mpj/lib, but their
manifests name `log4j-1.2.jar` beside them (Class-Path), which Debian keeps in /usr/share/java:
`mpjrun` then dies of NoClassDefFoundError (org/apache/log4j/Layout) in the starter, and the
multicore device's ranks die the same way in MPI.Init. hpceval therefore runs MPJ from its own
MPJ_HOME in the build cache: copies of the jars (the manifests resolve against the real file,
so links do not do) with log4j beside them, and `conf` pointing at the system configuration.
It starts the starter with `java -cp ... runtime.starter.MPJRun` (what the `mpjrun` shell
script does, without the shell).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpceval.build import BUILD_TIMEOUT_S, cache_root
from hpceval.config import LauncherConfig, PlatformConfig
from hpceval.errors import ToolMissing, UserError

SYSTEM_MPJ_HOME = Path("/usr/share/mpj")
DEBIAN_LOG4J = Path("/usr/share/java/log4j-1.2.jar")
# What the daemon's manifest names beside it (Debian: libcommons-{codec,io}-java, in
# /usr/share/java); the niodev device needs the daemon.
DEBIAN_DAEMON_JARS = (
    Path("/usr/share/java/commons-codec.jar"),
    Path("/usr/share/java/commons-io.jar"),
)
# MPJ's daemon port (its conf's mpjexpress.mpjdaemon.port.1, which MPJRun reads too).
DEFAULT_DAEMON_PORT = 40055
STARTER_CLASS = "runtime.starter.MPJRun"
# hpceval's starter of MPJRun (hpceval.launch.starters.mpjrun): a platform that names it runs
# Java ranks on MPJ Express.
MPJ_STARTER = "mpjrun"
# Jars the starter JVM needs on its class path (the ranks' JVMs find the rest in MPJ_HOME).
STARTER_JARS = ("starter.jar", "runtimecommon.jar", "log4j-1.2.jar")
JDK_REMEDY = "install Java (Debian: apt-get install default-jdk-headless)"
MPJ_REMEDY = "install MPJ Express (Debian: apt-get install libmpj-java)"


def runs_java(platform: PlatformConfig) -> bool:
    """The platform's launcher starts Java ranks (kind mpj, or a scheduler with mpjrun)."""
    return platform.launcher.kind == "mpj" or platform.launcher.starter == MPJ_STARTER


def java_platform(platform: PlatformConfig) -> PlatformConfig | None:
    """Where a suite's Java cases run on `platform`: the platform itself when its launcher
    starts Java ranks; on `local` (this machine, C MPI) the same machine on MPJ Express's
    multicore device (ranks are threads of one JVM, as on local-mpj), so one suite run on
    `local` measures C and Java side by side (the implementation keeps them apart); None on
    the other platforms: Java across nodes needs an MPJ daemon per node, which a platform
    of its own sets up (netns-2x2-mpj, or the mpjrun starter on hostfile and Slurm)."""
    if runs_java(platform):
        return platform
    if platform.launcher.kind != "local" or platform.nodes != 1:
        return None
    launcher = LauncherConfig.model_validate(
        {
            "kind": "mpj",
            "device": "multicore",
            "oversubscribe": platform.launcher.oversubscribe,
            "max_ranks_per_core": platform.launcher.max_ranks_per_core,
        }
    )
    return platform.model_copy(update={"launcher": launcher})


def mpj_mpi_facts(device: str, c_mpi: Any) -> dict[str, Any]:
    """The provenance's "mpi" of a run of Java ranks: MPJ Express, its device, the JVM (the
    machine's C MPI, which built nothing of it, kept under "c_mpi")."""
    facts: dict[str, Any] = {
        "implementation": "MPJ Express",
        "version": None,
        "device": device,
        "jvm": None,
        "consistent": True,
        "c_mpi": c_mpi,
    }
    try:
        mpj = installation()
    except ToolMissing:
        return facts
    return {**facts, "version": mpj.version, "jvm": java_version(mpj.java), "home": str(mpj.home)}


@dataclass(frozen=True)
class MpjInstallation:
    """A usable MPJ Express: its MPJ_HOME (hpceval's copy), version, and the JVM that runs it."""

    home: Path
    version: str
    java: str

    @property
    def mpj_jar(self) -> Path:
        return self.home / "lib" / "mpj.jar"

    def ports(self) -> dict[int, str]:
        """The ports MPJ listens on with this installation's conf ({port: who})."""
        conf = self.home / "conf" / "mpjexpress.conf"
        try:
            text = conf.read_text(errors="replace")
        except OSError:
            text = ""
        return parse_mpj_ports(text)

    def daemon_argv(self, port: int, home: Path | None = None) -> list[str]:
        """One MPJ daemon on this host (what `mpjdaemon -boot` starts over SSH); `home`: the
        home directory it keeps its jobs' files in (~/.mpj_users), if not the user's."""
        own_home = [f"-Duser.home={home}"] if home is not None else []
        return [self.java, *own_home, "-jar", str(self.home / "lib" / "daemon.jar"), str(port)]


def system_mpj_home() -> Path:
    """$MPJ_HOME if it holds an MPJ Express (lib/mpj.jar), else Debian's /usr/share/mpj."""
    env = os.environ.get("MPJ_HOME")
    if env and (Path(env) / "lib" / "mpj.jar").is_file():
        return Path(env)
    return SYSTEM_MPJ_HOME


# The TCP ports MPJ Express listens on, by their keys in its conf (defaults of MPJ 0.44's
# conf): the daemon's, the daemon's port manager (which hands the rank JVMs their ports) and
# MPJRun's own (the ranks' output comes back to it).
MPJ_PORT_KEYS = {
    "mpjexpress.mpjdaemon.port.1": ("the MPJ daemon", DEFAULT_DAEMON_PORT),
    "mpjexpress.mpjdaemon.port.2": ("the MPJ daemon's port manager", 40052),
    "mpjexpress.mpjrun.port.1": ("MPJRun", 40002),
}


def parse_mpj_ports(conf_text: str) -> dict[int, str]:
    """{port: who listens on it} from MPJ's conf/mpjexpress.conf text, MPJ's defaults for
    keys it does not set (pure)."""
    ports = {}
    for key, (who, default) in MPJ_PORT_KEYS.items():
        match = re.search(rf"^{re.escape(key)}\s*=\s*(\d+)\s*$", conf_text, re.MULTILINE)
        port = int(match.group(1)) if match else default
        ports[port if 0 < port < 65536 else default] = who
    return ports


def parse_mpj_version(conf_text: str) -> str | None:
    """`mpjexpress.version=0.44` from MPJ's conf/mpjexpress.conf."""
    match = re.search(r"^mpjexpress\.version\s*=\s*(\S+)", conf_text, re.MULTILINE)
    return match.group(1) if match else None


def parse_java_version(output: str) -> str | None:
    """The first line of `java -version` (stderr): `openjdk version "17.0.15" 2025-04-15`."""
    match = re.search(r'^(\S+) version "([^"]+)"', output, re.MULTILINE)
    return f"{match.group(1)} {match.group(2)}" if match else None


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ToolMissing(f"java not found on PATH: {JDK_REMEDY}")
    return java


def find_javac() -> str:
    javac = shutil.which("javac")
    if javac is None:
        raise ToolMissing(f"javac not found on PATH: {JDK_REMEDY}")
    return javac


def java_version(java: str) -> str:
    proc = subprocess.run(
        [java, "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    return parse_java_version(proc.stderr + proc.stdout) or "unknown"


def missing_java_tools() -> str | None:
    """Why Java benchmarks cannot run here (one line with the remedy), or None."""
    for name, remedy in (("java", JDK_REMEDY), ("javac", JDK_REMEDY)):
        if shutil.which(name) is None:
            return f"{name} not found on PATH: {remedy}"
    if not (system_mpj_home() / "lib" / "mpj.jar").is_file():
        return f"MPJ Express not found (no {system_mpj_home()}/lib/mpj.jar): {MPJ_REMEDY}"
    return None


def _log4j_for(source_lib: Path) -> Path:
    beside = source_lib / "log4j-1.2.jar"
    if beside.is_file():
        return beside
    if DEBIAN_LOG4J.is_file():
        return DEBIAN_LOG4J
    raise ToolMissing(
        f"log4j 1.2 not found ({beside} nor {DEBIAN_LOG4J}): "
        "install Debian package liblog4j1.2-java"
    )


def installation(cache: Path | None = None) -> MpjInstallation:
    """hpceval's MPJ_HOME for the system's MPJ Express, made once per set of jars."""
    java = find_java()
    source = system_mpj_home()
    lib = source / "lib"
    if not (lib / "mpj.jar").is_file():
        raise ToolMissing(f"MPJ Express not found (no {lib}/mpj.jar): {MPJ_REMEDY}")
    conf = source / "conf" / "mpjexpress.conf"
    version = parse_mpj_version(conf.read_text()) if conf.is_file() else None
    jars = sorted(p for p in lib.glob("*.jar") if not p.is_symlink() or p.resolve().is_file())
    jars.append(_log4j_for(lib))
    jars += [j for j in DEBIAN_DAEMON_JARS if j.is_file() and not (lib / j.name).is_file()]
    h = hashlib.sha256()
    for jar in jars:
        st = jar.resolve().stat()
        h.update(f"{jar.name}\0{jar.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    home = (cache or cache_root()) / "mpj" / f"mpj-{version or 'unknown'}-{h.hexdigest()[:16]}"
    if not (home / "lib" / "mpj.jar").is_file():
        # Built in a temporary directory and renamed: a concurrent run never sees half a copy.
        home.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".mpj-", dir=home.parent))
        try:
            (staging / "lib").mkdir()
            for jar in jars:
                shutil.copyfile(jar, staging / "lib" / jar.name)
            if (source / "conf").is_dir():
                (staging / "conf").symlink_to((source / "conf").resolve())
            try:
                staging.rename(home)
            except OSError:
                if not (home / "lib" / "mpj.jar").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return MpjInstallation(home, version or "unknown", java)


def compile_java_program(
    name: str,
    sources: Sequence[Path],
    main_class: str,
    mpj: MpjInstallation,
    *,
    javac_flags: Sequence[str] = (),
    cache: Path | None = None,
) -> Path:
    """Compile `sources` against mpj.jar into an executable jar, cached by source hash.

    The key covers the sources, the javac (its path and version), the flags and mpj.jar.
    """
    javac = find_javac()
    h = hashlib.sha256()
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    javac_version = subprocess.run(
        [javac, "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    h.update(f"{Path(javac).resolve()}\0{javac_version.stdout}{javac_version.stderr}\0".encode())
    h.update("\0".join(javac_flags).encode() + b"\0")
    h.update(f"{mpj.version}\0{mpj.mpj_jar.stat().st_size}".encode())
    target_dir = (cache or cache_root()) / "build" / f"{name}-{h.hexdigest()[:24]}"
    jar = target_dir / f"{name}.jar"
    if jar.is_file():
        return jar
    target_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target_dir))
    try:
        classes = work / "classes"
        classes.mkdir()
        argv = [javac, *javac_flags, "-cp", str(mpj.mpj_jar), "-d", str(classes)]
        argv += [str(s) for s in sources]
        _run_build(name, argv)
        tmp_jar = work / jar.name
        jar_tool = str(Path(javac).with_name("jar"))
        if not Path(jar_tool).is_file():
            jar_tool = shutil.which("jar") or "jar"
        _run_build(
            name, [jar_tool, "--create", "--file", str(tmp_jar), "--main-class", main_class,
                   "-C", str(classes), "."],
        )  # fmt: skip
        os.replace(tmp_jar, jar)
        (target_dir / "build.txt").write_text(" ".join(argv) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return jar


def _run_build(name: str, argv: Sequence[str]) -> None:
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise UserError(f"building {name} took more than {BUILD_TIMEOUT_S} s") from e
    except FileNotFoundError as e:
        raise ToolMissing(f"{argv[0]} not found: {JDK_REMEDY}") from e
    if proc.returncode != 0:
        # javac diagnostics read "File.java:LINE: error: cause".
        first = next((ln for ln in proc.stderr.splitlines() if ": error:" in ln), "")
        first = first or (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"building {name} failed ({Path(argv[0]).name}): {first}")
