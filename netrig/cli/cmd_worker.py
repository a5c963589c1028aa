"""netrig worker --scheduler ADDR: serve as one lab host of a Dask cluster."""

from __future__ import annotations

import click

from netrig.cli.common import reports_errors
from netrig.cli.group import cli


@cli.command("worker")
@click.option("--scheduler", required=True, envvar="NETRIG_CLUSTER", metavar="tcp://HOST:PORT",
              help="The Dask scheduler to join.")
@click.option("--name", envvar="NETRIG_HOST_NAME", help="This host's name in results "
              "(default: the host name).")
@click.option("--state-dir", envvar="NETRIG_STATE_DIR", type=click.Path(file_okay=False),
              help="Where this host keeps its ledger and node folders (default /run/netrig).")
@click.option("--ns-prefix", envvar="NETRIG_NS_PREFIX", default="", help="Put in front of every "
              "namespace this host creates (several simulated hosts on one machine).")
@click.option("--underlay-ns", envvar="NETRIG_UNDERLAY_NS", help="The namespace holding this "
              "host's underlay address (a simulated host); default: the host's own.")
@click.option("--underlay-addr", envvar="NETRIG_UNDERLAY_ADDR", help="The address tunnels to "
              "other hosts leave from.")
@click.option("--listen", metavar="ADDR", help="Listen on this address only (default: "
              "the interface Dask picks to reach the scheduler).")
@click.option("--nthreads", type=click.IntRange(1), default=2, show_default=True,
              help="Dask threads; runs still go one at a time (resource netrig-host=1).")
@click.option("--join-timeout", type=click.FloatRange(min=0, min_open=True), default=60,
              show_default=True, metavar="SECONDS",
              help="How long to wait for the scheduler (a worker may start before it).")
@reports_errors
def worker(scheduler: str, name: str | None, state_dir: str | None, ns_prefix: str,
           underlay_ns: str | None, underlay_addr: str | None, listen: str | None,
           nthreads: int, join_timeout: float) -> None:
    """Serve as one lab host of a Dask cluster, until SIGTERM or Ctrl-C.

    Runs one run (or one lab part) at a time, as root, with this host's own ledger;
    publishes its facts (kernel, CPU, tool versions, netrig doctor's kernel features)
    to the scheduler; removes what an earlier worker of the same state dir left; tears
    its sweeps' labs down when it stops (its parts of labs from `netrig up --cluster`
    stay until `netrig down --cluster`, or until the next worker of this state dir
    starts). Start one per host: `netrig worker --scheduler tcp://H:8786 --listen ADDR`.
    """
    import os
    import socket

    from netrig.cluster.host import HostConfig
    from netrig.cluster.worker import run_worker
    from netrig.lab.build import BadInput
    from netrig.lab.ledger import STATE_DIR

    if os.geteuid() != 0:
        raise BadInput("netrig worker must run as root to create network namespaces")
    from netrig.cluster.sweep import scheduler_host_port

    try:
        scheduler_host_port(scheduler)
    except ValueError as exc:
        raise BadInput(f"--scheduler {scheduler}: {exc} (e.g. tcp://HOST:8786)") from None
    config = HostConfig(
        name=name or socket.gethostname(),
        state_dir=os.path.abspath(state_dir) if state_dir else STATE_DIR,
        ns_prefix=ns_prefix,
        underlay_ns=underlay_ns,
        underlay_addr=underlay_addr,
    )
    run_worker(scheduler, config, listen, nthreads, join_timeout)
