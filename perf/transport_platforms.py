"""The transport each shipped platform's MPI really takes on this machine: the transport
probe (hpceval.transport) run through every shipped platform's own launcher, per pair class,
with the probe's 8 B latency. A platform that cannot run here (no Slurm cluster up, no hosts,
not an MPI of C programs) is listed with the reason.

    python perf/transport_platforms.py [PLATFORM ...]
"""

from __future__ import annotations

import sys

from hpceval.campaign import load_platform
from hpceval.campaign.prepare import toolchain_and_launcher
from hpceval.config import shipped_names
from hpceval.errors import UserError
from hpceval.transport import describe_transport, probe_transports


def main() -> None:
    names = sys.argv[1:] or shipped_names("platforms")
    for name in names:
        config = load_platform(name).config
        try:
            toolchain, launcher = toolchain_and_launcher(config)
            launcher.preflight()
            with launcher.session():
                facts = probe_transports(launcher, toolchain, config)
        except (UserError, OSError) as e:
            print(f"{name:<20} not run here: {str(e)[:150]}")
            continue
        print(f"{name:<20} {describe_transport(facts)}", flush=True)


if __name__ == "__main__":
    main()
