"""netrig status: the labs that are up."""

from __future__ import annotations

import os
import time

import click
from rich.table import Table

from netrig.cli.common import console, reports_errors
from netrig.cli.group import cli
from netrig.lab import netns
from netrig.lab.ledger import STATE_DIR, Ledger


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


@cli.command("status")
@click.option("--cluster", metavar="tcp://HOST:PORT",
              help="The labs on every host of this Dask scheduler instead.")
@reports_errors
def status(cluster: str | None) -> None:
    """List labs: name, state, node count, age, and the file they came from."""
    if cluster:
        from netrig.cluster import labs as spread

        swept = False
        for host, labs_there in sorted(spread.status(cluster).items()):
            shown = ", ".join(f"{n} ({state}, {nodes} nodes{', a sweep' if kept else ''})"
                              for n, state, nodes, kept in labs_there)
            swept = swept or any(kept for *_, kept in labs_there)
            console.print(f"{host}: {shown or 'no labs'}", soft_wrap=True)
        if swept:
            console.print("(a sweep's lab is kept by a running `netrig run --cluster`; it goes "
                          "when the sweep ends, or within seconds of its client leaving the "
                          "cluster, e.g. killed)", soft_wrap=True)
        console.print("(the hosts connected now: one that has left the cluster is not asked; "
                      "`netrig status` on it lists what it keeps)", soft_wrap=True)
        return
    if not os.path.exists(os.path.join(STATE_DIR, "ledger.sqlite")):
        console.print("no labs are up")  # never made one (any user may ask; only root makes)
        return
    ledger = Ledger()
    labs = ledger.labs()
    if not labs:
        console.print("no labs are up")
        return
    table = Table()
    for column in ("lab", "state", "nodes", "age", "file"):
        table.add_column(column)
    for lab in labs:
        # against what the ledger recorded, not the node count: a node in another's
        # namespace (`netns:`, containerlab's container:X) has none of its own
        recorded = ledger.objects(lab.name, "netns")
        present = sum(1 for o in recorded if netns.exists(o.name))
        shown = lab.shown_state()
        state = (
            shown if present == len(recorded) else f"{shown} ({present}/{len(recorded)} namespaces)"
        )
        table.add_row(
            lab.name, state, str(lab.nodes), _age(time.time() - lab.created), lab.source or ""
        )
    console.print(table)
