"""netrig export FILE --format clab: a lab written for another tool."""

from __future__ import annotations

import click

from netrig.cli.common import console, err_console, fail, reports_errors
from netrig.cli.group import cli


@cli.command("export")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["clab"]),
    default="clab",
    show_default=True,
    help="clab: a containerlab topology file.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here, not stdout.")
@click.option("--topo", metavar="NAME[,ARG…]", help="Mininet file: which of its `topos`.")
@reports_errors
def export(file: str, fmt: str, output: str | None, topo: str | None) -> None:
    """Write the lab of FILE (a lab file, or an experiment file's first sweep point) for
    another tool. `--format clab`: linux nodes without a management interface, veth links
    with netrig's interface names and MTUs, and exec lines for the addresses, bridges,
    routes and rate limits netrig would set; `netrig up` runs the result as well.
    Daemons netrig runs itself (routing protocols, services, firewalls) are named in the
    file's header and not exported.
    """
    from netrig.plan.export_clab import header, to_clab
    from netrig.plan.lab import build_plan
    from netrig.rig import prepare

    if prepare.is_experiment_file(file):
        plan = prepare.load_experiment(file).points[0].plan
    else:
        plan = build_plan(prepare.load_file(file, topo=topo))
    text = to_clab(plan, source=file)
    left = [line for line in header(plan, file) if line.startswith("Not exported")]
    for line in left:
        err_console.print(f"[yellow]note:[/] {line}", soft_wrap=True)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror}", 1)
    console.print(f"[green]wrote[/] {output}: lab {plan.name} as a containerlab file ({fmt})")
