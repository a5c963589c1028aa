"""netrig exec / shell: run commands inside a lab node."""

from __future__ import annotations

import os
import sys

import click

from netrig.cli.common import complete_lab, complete_node, reports_errors, require_root
from netrig.cli.group import cli
from netrig.lab.runtime import LabRuntime  # not the rig's Lab: no model, YAML or plugin


@cli.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("lab", shell_complete=complete_lab)
@click.argument("node", shell_complete=complete_node)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--cluster", metavar="tcp://HOST:PORT", help="LAB is spread over this Dask "
              "scheduler's hosts: run on the host that has NODE (output when it ends).")
@reports_errors
def exec_(lab: str, node: str, command: tuple[str, ...], cluster: str | None) -> None:
    """Run COMMAND in NODE of LAB; exits with the command's exit code.

    Example: netrig exec ring n1 -- ping -c1 198.18.0.5
    """
    if cluster:
        from netrig.cluster import labs

        _host, code, out, err = labs.exec_on(lab, node, list(command), cluster)
        sys.stdout.write(out)
        sys.stderr.write(err)
        sys.exit(shell_status(code))
    require_root("exec")
    running = LabRuntime.attach(lab)
    running.plan.node(node)  # a clear error for an unknown node
    try:
        result = running.exec(node, list(command), text=False)
    except FileNotFoundError:
        click.echo(f"netrig: {command[0]}: command not found", err=True)
        sys.exit(127)
    sys.exit(shell_status(result.returncode))


@cli.command("shell")
@click.argument("lab", shell_complete=complete_lab)
@click.argument("node", shell_complete=complete_node)
@reports_errors
def shell(lab: str, node: str) -> None:
    """Open an interactive shell in NODE of LAB (exit it to return)."""
    require_root("shell")
    running = LabRuntime.attach(lab)
    running.plan.node(node)
    env = dict(os.environ, NETRIG_LAB=lab, NETRIG_NODE=node, PS1=f"[{lab}:{node}] \\w# ")
    sh = os.environ.get("SHELL", "/bin/bash")
    result = running.exec(
        node, [sh, "--norc", "-i"] if sh.endswith("bash") else [sh], env=env, text=False
    )
    sys.exit(shell_status(result.returncode))


def shell_status(returncode: int) -> int:
    """A command's exit status as a shell gives it: 128 + N for one ended by signal N
    (Python's -N had become 247 for SIGKILL, where scripts test for 137)."""
    return 128 - returncode if returncode < 0 else returncode
