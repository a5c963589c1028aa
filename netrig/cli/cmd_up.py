"""netrig up FILE: build a lab and print its nodes, interfaces and addresses (the body is
netrig.cli.bringup's, which a plain command line runs without click: netrig.cli.quick)."""

from __future__ import annotations

import click

from netrig.cli.bringup import up_lab
from netrig.cli.common import reports_errors
from netrig.cli.group import cli


@cli.command("up")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--no-check", is_flag=True, help="Skip the reachability check (ping between nodes).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary line.")
@click.option(
    "--cluster",
    metavar="tcp://HOST:PORT",
    help="Build the lab over the hosts of "
    "this Dask scheduler (`placement: {hosts: N}` in FILE, else all of them; a node's "
    "`host: NAME` puts it on that host).",
)
@click.option(
    "--name",
    metavar="NAME",
    help="Name the lab NAME instead of the file's name, so one file can be up twice.",
)
@click.option(
    "--topo",
    metavar="NAME[,ARG…]",
    help="Mininet file: the entry of its `topos` dict to build, with arguments (tree,2).",
)
@reports_errors
def up(
    file: str,
    no_check: bool,
    quiet: bool,
    name: str | None,
    topo: str | None,
    cluster: str | None,
) -> None:
    """Build the lab described in FILE and wait until it is usable.

    Usable means: links up, addresses and routes installed, spanning tree settled,
    and (unless --no-check) every pair of nodes the routing promises to connect
    answering pings, firewalls in place (pairs their written rules drop are not
    expected to answer). The lab stays up until `netrig down NAME`.

    Ctrl-C, SIGTERM or SIGHUP removes the partial lab (exit 130, 143, 129).

    A lab file built or validated before, unchanged, is built from its remembered plan
    (what it needs from this host is checked again), and a command line run before starts
    making as many namespaces as it built then, first thing; NETRIG_PLAN_CACHE=off keeps
    neither.

    FILE may also be an experiment file (with `measure:`): its lab is built as for the
    first point of its sweep, and nothing is measured (that is `netrig run`). It may be a
    containerlab topology (*.clab.yml: linux nodes, bridges, links, exec lines, binds) or
    a Mininet topology (*.py, its Topo class), run as namespaces with the host's programs.
    """
    up_lab(file, no_check, quiet, name, topo, cluster)
