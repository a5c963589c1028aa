"""netrig cluster: a Dask cluster of lab hosts (simulated on this machine, or over SSH)."""

from __future__ import annotations

import click

from netrig.cli.common import console, err_console, reports_errors
from netrig.cli.group import cli

NAME_OPTION = click.option("--name", default="local", show_default=True,
                           help="Which simulated cluster (several may run side by side).")


@cli.group("cluster")
def cluster() -> None:
    """Lab hosts on Dask: `netrig run FILE --cluster ADDR` spreads a sweep over them,
    `netrig up FILE --cluster ADDR` a lab (`placement: {hosts: N}`)."""


@cluster.group("local")
def local() -> None:
    """A cluster simulated on this machine: a scheduler and N workers, each a host."""


@local.command("up")
@click.option("--hosts", type=click.IntRange(1, 240), default=3, show_default=True,
              help="Simulated hosts (workers).")
@NAME_OPTION
@reports_errors
def local_up(hosts: int, name: str) -> None:
    """Start a scheduler and HOSTS workers; print the scheduler address (last line).

    Each worker is a host of its own: its own state dir, namespace prefix and underlay
    namespace (198.51.100.0/24, joined by a bridge in a namespace netrig creates). The
    scheduler and the workers listen on 127.0.0.1 only. Use the address with
    `netrig run FILE --cluster ADDR`; `netrig cluster local down` ends it all.
    """
    from netrig.cluster import local as sim

    up = sim.up(hosts, name, say=lambda m: err_console.print(f"[dim]{m}[/]"))
    for host in up.hosts or []:
        err_console.print(f"{host.name}: underlay {host.underlay_addr}, state {host.state_dir}")
    click.echo(up.scheduler)


@local.command("status")
@NAME_OPTION
@reports_errors
def local_status(name: str) -> None:
    """One line per host: its worker's pid, whether it runs, its labs."""
    from netrig.cluster import local as sim

    up, hosts = sim.status(name)
    console.print(f"scheduler {up.scheduler}")
    for h in hosts:
        state = "running" if h.alive else "[red]not running[/]"
        labs = ", ".join(h.labs) or "no labs"
        console.print(f"{h.host.name}  pid {h.pid}  {state}  underlay {h.host.underlay_addr}  "
                      f"{labs}", soft_wrap=True)


@local.command("down")
@NAME_OPTION
@reports_errors
def local_down(name: str) -> None:
    """End the workers (each removes its labs) and the scheduler; remove the underlay."""
    from netrig.cluster import local as sim

    report = sim.down(name)
    console.print(f"cluster {name}: ended {report.processes} processes, removed "
                  f"{report.namespaces} namespaces ({report.labs} leftover labs)")


@cluster.command("ssh")
@click.argument("hosts", nargs=-1, required=True)
@click.option("--scheduler-port", type=click.IntRange(1, 65535), default=8786, show_default=True)
@click.option("--worker-port", type=click.IntRange(1, 65535), help="Fixed worker port "
              "(for a firewall); default: chosen by Dask.")
@click.option("--remote-python", help="Python with netrig installed on the hosts.")
@click.option("--user", "ssh_user", help="SSH user (root, or one whose Python runs as root).")
@reports_errors
def ssh(hosts: tuple[str, ...], scheduler_port: int, worker_port: int | None,
        remote_python: str | None, ssh_user: str | None) -> None:
    """Start a scheduler on the first of HOSTS and a netrig worker on each, over SSH
    (Dask's SSHCluster); print the scheduler address; keep them up until Ctrl-C.

    Each host needs netrig (same version) and root; this machine needs asyncssh
    (pip install 'netrig[cluster-ssh]').
    Open between the hosts: the scheduler port, the worker ports, and UDP 4789.
    """
    from netrig.cluster import ssh as remote

    up = remote.start(list(hosts), scheduler_port=scheduler_port, worker_port=worker_port,
                      remote_python=remote_python, ssh_user=ssh_user)
    remote.serve(up, click.echo)
