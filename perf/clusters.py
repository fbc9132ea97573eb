"""Ping-pong on the clusters hpceval starts on this machine (needs root).

1. Slurm vs hostfile on one shaped link: `hpceval cluster slurm up` starts a 2-node Slurm
   cluster of network namespaces (link shaped with tc, default 1GbE); sshd is started in
   both nodes too, so the same two nodes and the same link are reached two ways: sbatch +
   srun (platform kind slurm-netns) and mpirun over SSH (kind hostfile, hpceval run from
   node 0). Inter-node PingPong at 8 B (and 1 MiB), the two launchers interleaved
   `--repeat` times.
2. MPICH vs Open MPI on this machine (platforms local-mpich and local), interleaved: PingPong
   at 8 B and 1 MiB between two ranks.

For each (path, size) the per-run median over the samples is kept; the report gives the
median over the repeats with a 95 % bootstrap CI of that median, and the ratio of the two
paths, paired repeat by repeat (adjacent in time), with its bootstrap CI.

Usage: .venv/bin/python perf/clusters.py [--repeat 7] [--link 1GbE] [--only slurm|mpich]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_launch_hostfile import SshCluster, in_node  # noqa: E402

from hpceval.clusters import slurm_netns  # noqa: E402
from hpceval.store import open_store  # noqa: E402

SIZES = (8, 1 << 20)
SUITE = """
name = "bench-clusters"
[[benchmark]]
name = "mpibench"
patterns = ["pingpong"]
sizes = [8, "1MiB"]
ranks = [2]
ranks_per_node = [{ranks_per_node}]
budget_s = 0.5
warmup_s = 0.05
min_samples = 10
"""


def hpceval_run(
    platform: Path | str, suite: Path, db: Path, *, node: str | None = None
) -> dict[tuple[str, int], float]:
    """One `hpceval run`: the median and the best time (µs) of each PingPong size of its only
    case, keyed ("median", size) and ("best", size)."""
    argv = [sys.executable, "-m", "hpceval", "run", "--platform", str(platform),
            "--suite", str(suite), "--db", str(db)]  # fmt: skip
    if node is not None:
        argv = in_node(node, *argv)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[-6:])} failed:\n{proc.stdout}\n{proc.stderr}")
    store = open_store(str(db))
    run = store.runs()[0]  # newest first
    out = {}
    for sm in store.measurements(run.id):
        m = sm.measurement
        if m.metric == "latency" and m.statistics is not None:
            size = int(m.parameters["size"])
            out["median", size] = m.statistics.median
            out["best", size] = m.statistics.minimum
    return out


def median_ci(values: Sequence[float]) -> tuple[float, float, float]:
    data = np.asarray(values, dtype=float)
    if len(data) < 3:
        return float(np.median(data)), float("nan"), float("nan")
    res = stats.bootstrap((data,), np.median, confidence_level=0.95, n_resamples=2000,
                          method="percentile", random_state=1)  # fmt: skip
    return float(np.median(data)), res.confidence_interval.low, res.confidence_interval.high


Results = dict[str, list[dict[tuple[str, int], float]]]


def report(title: str, a: str, b: str, results: Results) -> None:
    for stat in ("median", "best"):
        print(f"\n{title} ({len(results[a])} interleaved repeats; per-run {stat} sample)")
        report_stat(stat, a, b, results)


def report_stat(stat: str, a: str, b: str, results: Results) -> None:
    for size in SIZES:
        va = [r[stat, size] for r in results[a]]
        vb = [r[stat, size] for r in results[b]]
        ratio = [x / y for x, y in zip(va, vb, strict=True)]
        for name, values in ((a, va), (b, vb)):
            med, lo, hi = median_ci(values)
            mbs = size / med if size > 8 else None
            extra = f"  = {mbs:,.1f} MB/s" if mbs else ""
            print(f"  {size:>8} B  {name:<12} {med:10.2f} µs  [95% CI {lo:.2f}-{hi:.2f}]{extra}")
        med, lo, hi = median_ci(ratio)
        print(f"  {size:>8} B  {a}/{b} = {med:.3f} [95% CI {lo:.3f}-{hi:.3f}]  "
              f"(runs: {', '.join(f'{r:.2f}' for r in ratio)})")  # fmt: skip


def slurm_vs_hostfile(repeat: int, link: str, work: Path) -> None:
    name = "bench"
    cluster = slurm_netns.up(name, 2, link, report=print)
    keys = work / "ssh"
    keys.mkdir(mode=0o700)
    sshd: SshCluster | None = None
    try:
        for key in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(keys / key)], check=True)  # fmt: skip
        (keys / "authorized_keys").write_text((keys / "user_key.pub").read_text())
        (keys / "sshd_config").write_text(
            f"HostKey {keys / 'host_key'}\nAuthorizedKeysFile {keys / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
            "StrictModes no\nPidFile none\nLogLevel ERROR\n"
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        sshd = SshCluster(cluster.layout, keys)
        sshd.start_sshd(0)
        sshd.start_sshd(1)
        layout = cluster.layout
        slurm_platform = work / "slurm.toml"
        slurm_platform.write_text(
            f'name = "slurm-netns-{link}"\nnodes = 2\n[launcher]\nkind = "slurm-netns"\n'
            f'cluster = "{name}"\npoll_s = 0.2\n'
        )
        ssh_platform = work / "ssh.toml"
        hosts = [layout.address(0), layout.address(1)]
        ssh_platform.write_text(
            f'name = "hostfile-{link}"\nnodes = 2\nhosts = {json.dumps(hosts)}\n[launcher]\n'
            f'kind = "hostfile"\nssh_args = {json.dumps(sshd.ssh_args())}\n'
            f'interface = "{layout.subnet}"\n'
            # As the slurm-netns launcher does: busy-polling ranks would starve the veths
            # (8 ms instead of ~0.1 ms here), and the launchers, not that, are compared.
            'env = { OMPI_MCA_mpi_yield_when_idle = "1" }\n'
        )
        suite = work / "suite.toml"
        suite.write_text(SUITE.format(ranks_per_node=1))
        results: Results = {"slurm": [], "hostfile": []}
        for i in range(repeat):
            order = ("slurm", "hostfile") if i % 2 == 0 else ("hostfile", "slurm")
            for path in order:
                if path == "slurm":
                    results[path].append(hpceval_run(slurm_platform, suite, work / "s.db"))
                else:
                    results[path].append(
                        hpceval_run(ssh_platform, suite, work / "h.db", node=layout.namespace(0))
                    )
            print(f"repeat {i + 1}: " + ", ".join(f"{k} 8 B {v[-1]['median', 8]:.1f} µs"
                                                  for k, v in results.items()))  # fmt: skip
        report(f"Inter-node PingPong on a {link} link: Slurm (sbatch+srun) vs hostfile (SSH)",
               "slurm", "hostfile", results)  # fmt: skip
    finally:
        if sshd is not None:
            sshd.stop()
        slurm_netns.down(name)


def mpich_vs_open_mpi(repeat: int, work: Path) -> None:
    suite = work / "local.toml"
    suite.write_text(SUITE.format(ranks_per_node=2))
    results: Results = {"MPICH": [], "Open MPI": []}
    platforms = {"MPICH": "local-mpich", "Open MPI": "local"}
    for i in range(repeat):
        order = ("MPICH", "Open MPI") if i % 2 == 0 else ("Open MPI", "MPICH")
        for impl in order:
            results[impl].append(hpceval_run(platforms[impl], suite, work / "l.db"))
        print(f"repeat {i + 1}: " + ", ".join(f"{k} 8 B {v[-1]['median', 8]:.2f} µs"
                                              for k, v in results.items()))  # fmt: skip
    report("Intra-node PingPong on this machine: MPICH vs Open MPI", "MPICH", "Open MPI", results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--link", default="1GbE")
    parser.add_argument("--only", choices=["slurm", "mpich"])
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (network namespaces, Slurm daemons)")
    os.environ.setdefault("HPCEVAL_CACHE", str(Path.home() / ".cache" / "hpceval"))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} CPUs; mpiexec.mpich: {shutil.which('mpiexec.mpich')}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="hpceval-bench-clusters-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        if args.only in (None, "mpich"):
            mpich_vs_open_mpi(args.repeat, work)
        if args.only in (None, "slurm"):
            slurm_vs_hostfile(args.repeat, args.link, work)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
