"""netrig validate FILE: check a lab file without creating anything."""

from __future__ import annotations

import click

from netrig.cli import cli
from netrig.cli.common import console, reports_errors
from netrig.model import load
from netrig.plan.build import build_plan


@cli.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@reports_errors
def validate(file: str) -> None:
    """Check FILE: keys, types, node references, names, addresses, kernel features.

    Prints a one-line summary of what `netrig up` would build; exit 2 and
    file:line:col messages if anything is wrong. Needs no root.
    """
    plan = build_plan(load.load_file(file))
    hosts = len(plan.hosts())
    switches = len(plan.nodes) - hosts
    parts = [f"{hosts} hosts"] + ([f"{switches} switches"] if switches else [])
    console.print(
        f"[green]ok[/] {file}: lab [bold]{plan.name}[/]: {', '.join(parts)}, "
        f"{len(plan.links)} links, routing {plan.protocol}, {plan.route_count()} routes"
    )
