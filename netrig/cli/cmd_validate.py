"""netrig validate FILE…: check lab and experiment files without creating anything."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from netrig.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    SET_OPTION,
    counted,
    parse_overrides,
    reports_errors,
    without_collector,
)
from netrig.cli.ending import exit_status
from netrig.cli.group import cli

if TYPE_CHECKING:
    from netrig.plan.model import LabPlan

OK = click.style("ok", fg="green")  # click.echo drops the colour when not on a terminal


@cli.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@SET_OPTION
@click.option("--topo", metavar="NAME[,ARG…]", help="Mininet files: which of their `topos`.")
@reports_errors
@without_collector
def validate(files: tuple[str, ...], overrides: tuple[str, ...], topo: str | None) -> None:
    """Check lab or experiment FILES: keys, types, node references, names, addresses,
    every sweep point's measurements and events, and what this host lacks for them.

    Prints one line per file of what `netrig up` (or `netrig run`) would do, or its
    file:line:col messages; every file is checked, and the exit is 2 if any was wrong. Needs no root. A lab file's plan is
    remembered for the next `validate` or `up` of the same, unchanged file
    (NETRIG_PLAN_CACHE=off keeps none).
    """
    sets = parse_overrides(overrides)
    worst = 0
    for file in files:  # each file is checked and said, a bad one too (a class's 30 files)
        try:
            _validate_file(file, sets, topo, alone=len(files) == 1)
        except SystemExit as done:
            code = exit_status(done.code)
            if code == 0:
                continue
            if code not in (EXIT_FAILURE, EXIT_BAD_INPUT):  # Ctrl-C (130): stop here
                raise
            worst = max(worst, code)
    if worst:
        sys.exit(worst)


@reports_errors
def _validate_file(file: str, sets: dict[str, str], topo: str | None, alone: bool) -> None:
    """Check one file and say what it is, or its problems (exit 2) as every command does.
    --set applies to experiment files: one lab file given it is refused, a lab file among
    others is checked without it (the whole command had stopped)."""
    from netrig.rig import plancache

    # a lab file validated or built before, unchanged, on a host that still has what it
    # needs: its remembered plan says the same as reading the file again would
    found = None if sets else plancache.lookup(file, topo=topo)
    if found is not None and found.plan is not None:
        _say_lab(file, found.plan)
        return
    from netrig.rig import prepare

    experiment = prepare.is_experiment_file(file)
    if experiment and topo is not None:
        prepare.plan_file(file, topo=topo)  # refuses --topo as `up` does (exit 2)
    if experiment:
        exp = prepare.load_experiment(file, sets)
        labs = len({p.network for p in exp.points})
        steps = sorted({s.kind for p in exp.points for s in p.steps})
        click.echo(  # not rich: a one-line answer should not pay for importing it
            f"{OK} {file}: experiment {click.style(exp.name, bold=True)}: "
            f"{counted(len(exp.points), 'sweep point')} × {counted(exp.repeat, 'run')}, "
            f"{counted(labs, 'lab')}, "
            f"measures {', '.join(steps)}"
        )
        return
    if sets and alone:
        raise click.UsageError("--set applies to experiment files (with measure:)")
    if sets:
        click.echo(f"note: {file} is a lab file, checked without --set (it applies to "
                   "experiment files)", err=True)
        found = plancache.lookup(file, topo=topo)
    if found is not None and (planned := prepare.plan_netrig_bytes(file, found.data)):
        plan, needs = planned  # planned from the bytes looked up: remembered by them
        _say_lab(file, plan)
        found.remember(plan, needs)
    else:
        _say_lab(file, prepare.plan_file(file, topo=topo))  # --topo: Mininet files only


def _say_lab(file: str, plan: LabPlan) -> None:
    """One line: what `netrig up` would build."""
    hosts = len(plan.hosts())
    switches = len(plan.nodes) - hosts
    parts = [counted(hosts, "host")] + ([counted(switches, "switch", "switches")] if switches else [])
    click.echo(
        f"{OK} {file}: lab {click.style(plan.name, bold=True)}: {', '.join(parts)}, "
        f"{counted(len(plan.links), 'link')}, routing {plan.protocol}, "
        f"{counted(plan.route_count(), 'route')}"
    )
