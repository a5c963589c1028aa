"""netrig logs LAB NODE [DAEMON]: what a node's routing daemons wrote, and whether they run."""

from __future__ import annotations

import os

import click

from netrig.cli.common import complete_lab, complete_node, console, reports_errors, require_root
from netrig.cli.group import cli
from netrig.lab.build import BadInput
from netrig.lab.ledger import process_alive
from netrig.rig import Lab


@cli.command("logs")
@click.argument("lab", shell_complete=complete_lab)
@click.argument("node", shell_complete=complete_node)
@click.argument("daemon", required=False)
@click.option(
    "-n", "--lines", type=click.IntRange(0), default=50, show_default=True,
    help="Last N lines of each log (0: all).",
)  # fmt: skip
@reports_errors
def logs(lab: str, node: str, daemon: str | None, lines: int) -> None:
    """Print the logs of NODE's daemons in LAB (or of DAEMON only), each under a header
    that says whether it is running. Lines starting with `# netrig` are netrig's own
    (starts and stops)."""
    require_root("logs")
    running = Lab.attach(lab)
    where = running.node_dir(node)
    names = sorted(f[: -len(".log")] for f in os.listdir(where) if f.endswith(".log"))
    if daemon is not None:
        if daemon not in names:
            known = ", ".join(names) or "none"
            raise BadInput(f"node {node} of lab {lab!r} has no log of {daemon!r} (logs: {known})")
        names = [daemon]
    if not names:
        console.print(
            f"node {node} of lab {lab} has no daemon logs (protocol {running.plan.protocol})"
        )
        return
    state = {}
    for obj in running.ledger.objects(lab, "process"):
        if obj.node == node and obj.pid:
            name = obj.name.removeprefix(f"{lab}/{node}/")
            alive = process_alive(obj.pid, obj.starttime)
            state[name] = f"running, pid {obj.pid}" if alive else f"exited, pid {obj.pid}"
    for name in names:
        path = os.path.join(where, f"{name}.log")
        with open(path, errors="replace") as fh:
            text = fh.readlines()
        shown = text[-lines:] if lines else text
        console.rule(f"{node}/{name} ({state.get(name, 'not running')}) {path}", align="left")
        if len(shown) < len(text):
            console.print(f"[dim]… {len(text) - len(shown)} earlier lines[/]")
        console.out("".join(shown).rstrip("\n") or "(empty)", highlight=False)
