"""netrig plan FILE: what a lab or experiment file would build and run, as any user."""

from __future__ import annotations

import json

import click

from netrig.cli.common import SET_OPTION, console, counted, parse_overrides, reports_errors
from netrig.cli.group import cli


@cli.command("plan")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="The plan as JSON (what the lab core builds from).")
@SET_OPTION
@click.option("--topo", metavar="NAME[,ARG…]", help="Mininet file: which of its `topos`.")
@reports_errors
def plan_command(file: str, as_json: bool, overrides: tuple[str, ...], topo: str | None) -> None:
    """The plan of a lab or experiment FILE: nodes, interfaces, addresses, routes,
    daemons, services and firewalls per node; for an experiment, every sweep point's
    lab and measurements and the list of runs. Creates nothing; needs no root.

    `--json` prints the lossless form: `LabPlan.from_dict` reads each lab back equal,
    and `netrig up` builds exactly that.
    """
    from netrig.rig import prepare

    sets = parse_overrides(overrides)
    if prepare.is_experiment_file(file):
        exp = prepare.load_experiment(file, sets)
        if as_json:
            click.echo(json.dumps(exp.to_dict(), indent=1))
            return
        from netrig.cli.cmd_up import node_table

        shown: set[str] = set()
        for point in exp.points:
            steps = ", ".join(f"{s.name} ({s.kind})" for s in point.steps)
            console.print(f"[bold]point {point.label}[/]: measures {steps}")
            for event in point.events:
                console.print(f"  event: {event}")
            if point.network not in shown:
                shown.add(point.network)
                console.print(node_table(point.plan))
        runs = exp.runs()
        console.print(
            f"{counted(len(runs), 'run')} ({sum(r.warmup for r in runs)} warm-up), "
            f"order {exp.order}"
        )
        return
    if sets:
        raise click.UsageError("--set applies to experiment files (with measure:)")
    plan = prepare.plan_file(file, topo=topo)
    if as_json:
        click.echo(json.dumps(plan.to_dict(), indent=1))
        return
    from netrig.cli.cmd_up import node_table

    console.print(node_table(plan, limit=10**9))
    for node in plan.nodes.values():
        extras = []
        if node.routes:
            extras.append(f"{len(node.routes)} routes")
        if node.firewall:
            extras.append(f"firewall {node.firewall['engine']}")
        extras += [f"service {s.kind}:{s.port}" for s in node.services]
        if extras:
            console.print(f"{node.name}: {', '.join(extras)}")
    console.print(
        f"routing {plan.protocol}, {plan.route_count()} routes, "
        f"{len(plan.networks)} subnets"
    )
