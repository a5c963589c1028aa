"""netrig link / node: faults by hand on a running lab, to poke it and watch it heal.

netrig link ring n3 n4 down      # both ends of the n3–n4 link
netrig node ring n5 stop         # n5's routing daemon(s), by PID
"""

from __future__ import annotations

import time

import click

from netrig.cli.common import complete_lab, complete_node, console, reports_errors, require_root
from netrig.cli.group import cli
from netrig.lab import faults
from netrig.rig import Lab


@cli.command("link")
@click.argument("lab", shell_complete=complete_lab)
@click.argument("a", shell_complete=complete_node)
@click.argument("b", shell_complete=complete_node)
@click.argument("state", type=click.Choice(["down", "up"]))
@click.option("--cluster", metavar="tcp://HOST:PORT", help="LAB is spread over this Dask "
              "scheduler's hosts (`netrig up --cluster`): each end on its host.")
@reports_errors
def link(lab: str, a: str, b: str, state: str, cluster: str | None) -> None:
    """Set the link between nodes A and B of LAB down or up (both of its ends).

    Bringing it up restores what the kernel dropped with it (IPv6 addresses, fixed
    neighbour entries, and a static or ecmp lab's routes through it); a routing daemon
    relearns its own. An end on a switch: `up` returns once its port forwards. With
    --cluster, a link between two hosts (a VXLAN tunnel) goes down or up at both of its
    ends.
    """
    if cluster:
        _link_on_cluster(lab, a, b, state, cluster)
        return
    require_root("link")
    running = Lab.attach(lab)
    running.protocol  # noqa: B018 -- its plugin's import (~0.2 s) is not the link's time
    started = time.perf_counter()
    found = faults.set_link(running, a, b, up=state == "up")
    ms = (time.perf_counter() - started) * 1000
    ends = [f"{found.a}:{found.a_iface}", f"{found.b}:{found.b_iface}"]
    if found.a != a:  # in the order the command names them, as with --cluster
        ends.reverse()
    console.print(f"lab {lab}: link {' – '.join(ends)} {state} ({ms:.1f} ms)")


def _link_on_cluster(lab: str, a: str, b: str, state: str, address: str) -> None:
    from netrig.cluster import labs

    started = time.perf_counter()
    change = labs.link(lab, a, b, state == "up", address)
    ms = (time.perf_counter() - started) * 1000
    ends = " – ".join(f"{end} ({host})" for host, end in change.ends)
    kind = "VXLAN tunnel" if change.tunnel else "within one host"
    console.print(f"lab {lab}: link {ends} {state} ({kind}; {ms:.1f} ms)", soft_wrap=True)


@cli.command("node")
@click.argument("lab", shell_complete=complete_lab)
@click.argument("node", shell_complete=complete_node)
@click.argument("action", type=click.Choice(["stop", "start"]))
@reports_errors
def node(lab: str, node: str, action: str) -> None:
    """Stop or start again the daemons of NODE in LAB: its routing daemon(s), services
    (nginx, haproxy, pen…) and cmd.

    Stop ends them by PID (SIGTERM, then SIGKILL after a grace period); start runs them
    again with the configuration they had. Links and addresses stay as they are. The same
    as an experiment's `node N stop|start @ T` event, except that starting an Open vSwitch
    switch node here returns once it forwards again, as `up` does (with STP ~8 s; if it
    does not within 20 s, this says so).
    """
    require_root("node")
    running = Lab.attach(lab)
    if action == "stop":
        stopped = faults.stop_node(running, node)
        console.print(f"lab {lab}: stopped {', '.join(stopped) or 'nothing (none running)'}")
        return
    begun = time.perf_counter()
    started, skipped = faults.start_node(running, node)
    forwards = ""
    if running.plan.node(node).ovs is not None:
        from netrig.switch import ovs

        # as `up` does: returns once the switch forwards again (with STP, ~8 s)
        settling = ovs.wait_restarted(running, node, ovs.RESTART_WAIT)
        took = time.perf_counter() - begun
        if settling:
            forwards = (
                f"; it does not forward yet: spanning tree still settling after "
                f"{ovs.RESTART_WAIT:g} s ({', '.join(settling[:5])})"
            )
        else:
            forwards = f"; {node} forwards ({took:.1f} s)"
    if started:
        console.print(f"lab {lab}: started {', '.join(started)}{forwards}", soft_wrap=True)
    if skipped:
        console.print(
            f"lab {lab}: already running: {', '.join(skipped)}{'' if started else forwards}",
            soft_wrap=True,
        )
