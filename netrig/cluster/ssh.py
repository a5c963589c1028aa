"""Workers on real hosts over SSH: Dask's SSHCluster with netrig's worker class.

    netrig cluster ssh lab1 lab2 lab3          # scheduler on lab1, a worker on each host

The first host runs the scheduler (port 8786), every host a `NetrigWorker` (as root: the
SSH user must be root or the remote Python must run as root). Each remote host needs
netrig installed (same version as here); this machine needs asyncssh, the optional
dependency `cluster-ssh` (`pip install 'netrig[cluster-ssh]'`).
Between the hosts open: the scheduler port (TCP 8786), the workers' ports (TCP, chosen
by Dask; or fix them with --worker-port), and UDP 4789 (VXLAN) for labs across hosts.
Not tested live here (no other hosts in the test environment): this is a thin wrapper.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from netrig.lab.build import BadInput

WORKER_CLASS = "netrig.cluster.worker.NetrigWorker"


def start(
    hosts: list[str],
    *,
    scheduler_port: int = 8786,
    worker_port: int | None = None,
    remote_python: str | None = None,
    ssh_user: str | None = None,
) -> Any:
    """An SSHCluster: the scheduler on hosts[0], one netrig worker on every host."""
    if not hosts:
        raise BadInput("name at least one host")
    try:
        import asyncssh  # noqa: F401  (SSHCluster needs it)
        from distributed import SSHCluster
    except ImportError:
        raise BadInput(
            "netrig cluster ssh needs asyncssh (Dask's SSHCluster starts the workers with it): "
            "pip install asyncssh (netrig's optional dependency cluster-ssh)"
        ) from None
    worker_options: dict[str, Any] = {"nthreads": 2}
    if worker_port:
        worker_options["port"] = worker_port
    return SSHCluster(
        [hosts[0], *hosts],  # SSHCluster: the first is the scheduler's, the rest workers
        connect_options={"known_hosts": None, **({"username": ssh_user} if ssh_user else {})},
        worker_options=worker_options,
        scheduler_options={"port": scheduler_port, "dashboard_address": None},
        worker_class=WORKER_CLASS,
        remote_python=remote_python,
    )


def serve(cluster: Any, say: Callable[[str], None]) -> None:
    """Keep the cluster up until Ctrl-C; then close it (workers tear down their labs)."""
    say(cluster.scheduler_address)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.close()
