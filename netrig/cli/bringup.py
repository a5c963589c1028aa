"""`netrig up FILE` without click: the command's body, which click's `up` command
(netrig.cli.cmd_up) and the quick path (netrig.cli.quick, a plain command line) both run.

Loading click takes ~15 ms, a tenth of `up --no-check` of a 100-node ring built before
(issue 12: >= 2x the iproute2-batch build).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from netrig.cli.output import (
    console,
    counted,
    err_console,
    fail,
    frozen_heap,
    require_root,
)

if TYPE_CHECKING:
    from rich.table import Table

    from netrig.experiment.interrupt import StopSignal
    from netrig.plan.model import LabPlan
    from netrig.rig import Lab
    from netrig.rig.plancache import Lookup

TABLE_ROWS = 24


def up_lab(
    file: str,
    no_check: bool = False,
    quiet: bool = False,
    name: str | None = None,
    topo: str | None = None,
    cluster: str | None = None,
) -> None:
    """Build the lab of FILE and print it (see `netrig up --help`)."""
    if not cluster:  # with --cluster the hosts of the scheduler make the namespaces
        require_root("up")
    from netrig.experiment.interrupt import StopSignal
    from netrig.rig import ahead, plancache

    # the plan of this file as it is now, if an earlier `up` made it (netrig.rig.plancache)
    found = None if cluster else plancache.lookup(file, name, topo)
    if found is not None and found.nodes is not None:
        count = found.nodes
    elif cluster:
        count = 0
    else:  # a changed or new file: its count (PyYAML is needed anyway), else the hint
        from netrig.model.nodecount import lab_file_nodes

        count = lab_file_nodes(file) or ahead.hinted()
    # namespaces made ahead by a thread of their own while the file is read and checked
    # (not for --cluster), begun before click was imported if this command line ran before
    # (netrig.rig.ahead); those the build does not name are freed when `up` ends
    with ahead.spares(count) as spare:
        lab = _lab_of(file, name, topo, up_next=not cluster, found=found)

        def progress(msg: str) -> None:
            if msg.startswith("warning:"):  # what will not work as written: -q hid it
                err_console.print(msg, soft_wrap=True, style="yellow", markup=False)
            elif not quiet:
                err_console.print(f"… {msg}", style="dim", markup=False)

        if cluster:
            _up_on_cluster(lab.plan, file, cluster, not no_check, progress)
            return

        started = time.perf_counter()
        with frozen_heap(), StopSignal() as stop:  # SIGTERM and SIGHUP end `up` as Ctrl-C does
            try:
                with stop.armed():
                    timings = lab.up(
                        check_reachability=not no_check, progress=progress, spare=spare
                    )
            except Exception:
                if not stop.requested:
                    raise
                # the signal's KeyboardInterrupt came out wrapped (Python 3.11 wraps one raised
                # while a class is created, e.g. during a lazy import, in a RuntimeError)
                _interrupted(lab, stop)
            except KeyboardInterrupt:
                _interrupted(lab, stop)
            # how many namespaces the next run of this command line starts making at once
            # (here, where a signal still removes the lab)
            ahead.learn(len(lab.plan.namespace_nodes()))
            if stop.requested:  # came while up() was finishing: the user still wants no lab
                lab.down()
                fail(f"interrupted ({stop.name}); the lab was removed", stop.exit_code)
        wall = time.perf_counter() - started
        if not quiet:
            console.print(node_table(lab.plan))
        plan = lab.plan
        details = [f"build {timings.total:.3f} s"]
        if "converged" in timings.extra:  # the daemons' routes: the check waits for them first
            details.append(f"{plan.protocol} converged in {timings.extra['converged']:.2f} s")
        if result := lab.check_result:
            if result.pairs:
                details.append(f"{result.pairs} pairs reachable in {result.seconds:.2f} s")
            else:  # "0 pairs reachable" read as "nothing is reachable"
                details.append("no pairs to check: the routing promises none")
            if result.blocked:
                details.append(f"{result.blocked} pairs the firewalls drop, not checked")
        # a routing daemon installs its own routes: netrig counts only those it installed
        daemons_route = plan.routing_daemons and not timings.routes
        routes = f"routes by {plan.protocol}" if daemons_route else counted(timings.routes, "route")
        # not rich: `up -q` prints this line only and should not pay for importing it
        _echo(
            _green(f"lab {lab.name} is up")
            + f" in {wall:.2f} s: {counted(len(plan.nodes), 'node')}, "
            f"{counted(len(plan.links), 'link')}, {routes} ({'; '.join(details)})"
        )


def _interrupted(lab: Lab, stop: StopSignal) -> NoReturn:
    _remove_if_ours(lab)
    fail(f"interrupted ({stop.name or 'SIGINT'}); the partial lab was removed", stop.exit_code)


def _remove_if_ours(lab: Lab) -> None:
    """Lab.up removes what it built when interrupted; a signal landing just before its
    clean-up could start (between the ledger's lab row and the `try`) is covered here."""
    record = lab.ledger.lab(lab.name)
    if record is not None and record.pid == os.getpid() and record.state == "building":
        lab.down()


def _up_on_cluster(
    plan: LabPlan, file: str, address: str, check: bool, progress: Callable[[str], None]
) -> None:
    """netrig up --cluster: the lab's nodes over several hosts (netrig.cluster.labs)."""
    import yaml

    from netrig.cluster import labs
    from netrig.cluster.sweep import Placed, placed

    try:  # a netrig lab file says it (a containerlab or Mininet file does not)
        with open(file) as fh:
            doc = yaml.safe_load(fh)
    except yaml.YAMLError:
        doc = None
    placement = placed(doc) or Placed()
    started = time.perf_counter()
    spread = labs.up(plan, address, placement.hosts or None, progress, check, placement.pins)
    per_host: dict[str, int] = {}
    for host in spread.where.values():
        per_host[host] = per_host.get(host, 0) + 1
    console.print(
        f"[green]lab {spread.name} is up[/] in {time.perf_counter() - started:.2f} s on "
        f"{len(per_host)} hosts ({', '.join(f'{h}: {n} nodes' for h, n in per_host.items())}); "
        f"{spread.cut} links are VXLAN tunnels; {len(spread.checked)} pairs across hosts "
        f"reachable (slowest host's build {spread.build_seconds:.2f} s, check "
        f"{spread.check_seconds:.2f} s)",
        soft_wrap=True,
    )


def _lab_of(
    file: str,
    name: str | None = None,
    topo: str | None = None,
    up_next: bool = False,
    found: Lookup | None = None,
) -> Lab:
    """A lab file's lab (its plan remembered or to be remembered when `found`), or the lab
    of an experiment file's first sweep point."""
    from netrig.rig.lab import Lab

    if found is not None and found.nodes is not None:
        return Lab.from_lookup(found)
    from netrig.rig import prepare

    if not prepare.is_experiment_file(file):
        # a file that does not parse is reported here
        if found is not None:
            return Lab.from_lookup(found, up_next=up_next)
        return Lab.from_lab_file(file, name, topo, up_next=up_next)
    point = prepare.first_point(file, name)
    if point.values:
        err_console.print(f"[dim]experiment file: the lab of its first point ({point.label})[/]")
    return Lab(point.plan)


def node_table(plan: LabPlan, limit: int = TABLE_ROWS) -> Table:
    from rich.table import Table  # not for `up -q`, which prints no table

    table = Table(title=f"lab {plan.name} ({plan.protocol})", title_justify="left")
    for column in ("node", "kind", "interface", "peer", "addresses"):
        table.add_column(column)
    for rows, node in enumerate(plan.nodes.values()):
        if rows >= limit:
            table.add_row(
                f"… {len(plan.nodes) - list(plan.nodes).index(node.name)} more nodes",
                "",
                "",
                "",
                "",
            )
            break
        if node.loopbacks:
            table.add_row(node.name, node.kind, "lo", "", " ".join(node.loopbacks))
        if node.bridge:
            ports = ", ".join(i.name for i in node.ifaces)
            stp = " stp" if node.bridge.stp else ""
            table.add_row(
                node.name,
                node.kind,
                node.bridge.name,
                f"[{ports}]{stp}",
                " ".join(node.bridge.addrs),
            )
        for iface in node.ifaces:
            peer = f"{iface.peer}:{iface.peer_iface}"
            table.add_row(
                node.name,
                node.kind,
                iface.name,
                peer,
                " ".join(iface.addrs[:2]) + (" …" if len(iface.addrs) > 2 else ""),
            )
    return table


def _green(text: str) -> str:
    """TEXT in green on a terminal, as click.style(fg="green") and click.echo show it."""
    return f"\x1b[32m{text}\x1b[0m" if sys.stdout.isatty() else text


def _echo(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
