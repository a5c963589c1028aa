"""netrig graph FILE|LAB -o out.svg: a picture of a lab, from its file or while it is up."""

from __future__ import annotations

import os

import click

from netrig.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    console,
    counted,
    fail,
    reports_errors,
)
from netrig.cli.group import cli
from netrig.plan.model import LabPlan


@cli.command("graph")
@click.argument("source")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Where to write the picture; .svg, .png or .dot chooses the format. "
    "Without it, the dot source goes to standard output.",
)
@click.option("--topo", metavar="NAME[,ARG…]", help="Mininet file: which of its `topos`.")
@reports_errors
def graph(source: str, output: str | None, topo: str | None) -> None:
    """Draw the lab of SOURCE: a lab file (netrig, containerlab *.clab.yml, Mininet *.py),
    an experiment file (the lab of its first sweep point), or the name of a lab that is up.

    Nodes by role (host, router, switch), each link end with its interface name and
    addresses, a link's rate, delay, loss and MTU on it; nodes grouped by machine when a
    lab spans several. Creates nothing and needs no root for a file.
    """
    from netrig.report import labgraph

    plan = _plan_of(source, topo)
    fmt = "dot"
    if output:
        fmt = os.path.splitext(output)[1].lstrip(".").lower()
        if fmt not in labgraph.FORMATS:
            fail(f"-o {output}: the name must end in .svg, .png or .dot", EXIT_BAD_INPUT)
    try:
        data = labgraph.render(plan, fmt)  # type: ignore[arg-type]
    except labgraph.GraphvizMissing as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    if output is None:
        click.echo(data.decode(), nl=False)
        return
    try:
        with open(output, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        fail(f"-o {output}: {exc.strerror}", EXIT_FAILURE)
    console.print(
        f"[green]wrote[/] {output}: lab {plan.name}, {counted(len(plan.nodes), 'node')}, "
        f"{counted(len(plan.links), 'link')}"
    )


def _plan_of(source: str, topo: str | None) -> LabPlan:
    """A file's plan (host needs not checked: a picture needs none), or a running lab's."""
    from netrig.plan.lab import build_plan
    from netrig.rig import prepare

    if not os.path.exists(source):
        if "/" in source or os.path.splitext(source)[1]:
            fail(f"{source}: no such file", EXIT_BAD_INPUT)
        from netrig.rig import Lab

        return Lab.attach(source).plan
    if prepare.is_experiment_file(source):
        from netrig.model.experiment import load_experiment_model
        from netrig.plan.experiment import plan_experiment

        return plan_experiment(load_experiment_model(source), prepare.catalog()).points[0].plan
    return build_plan(prepare.load_file(source, topo=topo))
