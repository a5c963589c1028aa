"""netrig plan FILE: what a lab or experiment file would build and run, as any user."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from netrig.cli.common import SET_OPTION, console, counted, parse_overrides, reports_errors
from netrig.cli.group import cli

if TYPE_CHECKING:
    from netrig.plan.model import LabPlan


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
        from netrig.cli.bringup import node_table

        shown: set[str] = set()
        for point in exp.points:
            steps = ", ".join(f"{s.name} ({s.kind})" for s in point.steps)
            console.print(f"[bold]point {escape(point.label)}[/]: measures {escape(steps)}")
            for event in point.events:
                console.print(f"  event: {event}", markup=False)
            if point.network not in shown:
                shown.add(point.network)
                console.print(node_table(point.plan))
                _print_details(point.plan)
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
    from netrig.cli.bringup import node_table

    console.print(node_table(plan, limit=10**9))
    _print_details(plan)


def _print_details(plan: LabPlan) -> None:
    """What the node table leaves out, node by node: routes (all of them: `--json`), the
    routing daemon, the firewall and its rules, services, the node's own programs; then
    the lab's routing in a line."""
    from netrig.plan.firewall import FirewallPlan
    from netrig.rig.prepare import routing_programs

    packages = sorted(set(routing_programs(plan).values()))  # bird2, frr: whose daemon
    daemon = f"{plan.protocol} daemon ({', '.join(packages)})"
    for node in plan.nodes.values():
        extras = []
        if node.routes:
            extras.append(counted(len(node.routes), "route"))
        if plan.routing_daemons and node.kind == "host":
            extras.append(daemon)
        if node.firewall:
            fw = FirewallPlan.from_dict(node.firewall)
            filler = f" + {fw.filler_rules} filler" if fw.filler_rules else ""
            extras.append(f"firewall {fw.engine}: {counted(len(fw.rules), 'rule')}{filler}")
        extras += [f"service {s.kind} on port {s.port}" for s in node.services]
        if node.exec:
            extras.append(counted(len(node.exec), "exec line"))
        if node.cmd:
            extras.append(f"cmd {shlex.join(node.cmd)}")
        if extras:
            console.print(f"{node.name}: {', '.join(extras)}", soft_wrap=True, highlight=False,
                          markup=False)  # fmt: skip
    routes = (f"routes by {plan.protocol}'s daemons" if plan.routing_daemons else
              f"routing {plan.protocol}, {counted(plan.route_count(), 'route')}")  # fmt: skip
    console.print(f"{routes}, {counted(len(plan.networks), 'subnet')}", highlight=False)
