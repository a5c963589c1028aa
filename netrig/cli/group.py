"""The `netrig` command's click group: one small module per subcommand, registered on it.

The group knows every command's name, module and short help from `COMMANDS`, so `netrig
--help` and shell completion import no command module, and `netrig NAME` imports only the
module of NAME (tests/test_startup.py checks the table against the modules).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from netrig import __version__
from netrig.cli.ending import run_command, without_pydantic_plugins

# command name → (module netrig.cli.cmd_MODULE, its short help as click makes it)
COMMANDS: dict[str, tuple[str, str]] = {
    "clean": (
        "down",
        "Remove everything netrig created on this host that is still there (or of LABS only).",
    ),
    "cluster": (
        "cluster",
        "Lab hosts on Dask: `netrig run FILE --cluster ADDR` spreads a sweep over them, "
        "`netrig up FILE --cluster ADDR` a lab (`placement: {hosts: N}`).",
    ),
    "compare": (
        "compare",
        "Is B different from A? ministat's verdict on stored runs, and what ministat lacks.",
    ),
    "doctor": (
        "doctor",
        "Show which kernel features and tools this host has, and how to get the missing ones.",
    ),
    "down": ("down", "Remove LABS: their processes, namespaces, links."),
    "exec": ("exec", "Run COMMAND in NODE of LAB; exits with the command's exit code."),
    "export": (
        "export",
        "Write the lab of FILE (a lab file, or an experiment file's first sweep point) for "
        "another tool.",
    ),
    "graph": (
        "graph",
        "Draw the lab of SOURCE: a lab file (netrig, containerlab *.clab.yml, Mininet "
        "*.py), an experiment file (the lab of its first sweep point), or the name of a lab "
        "that is up.",
    ),
    "link": ("fault", "Set the link between nodes A and B of LAB down or up (both of its ends)."),
    "logs": (
        "logs",
        "Print the logs of NODE's daemons in LAB (or of DAEMON only), each under a header "
        "that says whether it is running.",
    ),
    "node": (
        "fault",
        "Stop or start again the daemons of NODE in LAB: its routing daemon(s), services "
        "(nginx, haproxy, pen…) and cmd.",
    ),
    "plan": (
        "plan",
        "The plan of a lab or experiment FILE: nodes, interfaces, addresses, routes, "
        "daemons, services and firewalls per node; for an experiment, every sweep point's "
        "lab and measurements and the list of runs.",
    ),
    "plot": ("plot", "Plot a stored experiment."),
    "report": (
        "report",
        "Write an HTML report of a stored experiment (id, or name: the newest of that name).",
    ),
    "results": ("results", "Browse stored experiments and runs; export them as tidy CSV or JSON."),
    "run": ("run", "Run the experiment in FILE and store its results in --db."),
    "shell": ("exec", "Open an interactive shell in NODE of LAB (exit it to return)."),
    "stat": ("stat", "Summarise and compare data sets, exactly like ministat."),
    "status": ("status", "List labs: name, state, node count, age, and the file they came from."),
    "trace": ("trace", "Show the hops from node SRC to DST (a node name or an address) in LAB."),
    "up": ("up", "Build the lab described in FILE and wait until it is usable."),
    "validate": (
        "validate",
        "Check lab or experiment FILES: keys, types, node references, names, addresses, "
        "every sweep point's measurements and events, and what this host lacks for them.",
    ),
    "worker": ("worker", "Serve as one lab host of a Dask cluster, until SIGTERM or Ctrl-C."),
}
# commands with an explicit short_help=, which click shows whole however narrow the terminal
AS_WRITTEN = {"stat"}


def _short_help(name: str, limit: int) -> str:
    """What click's own command would show in `limit` columns."""
    text = COMMANDS[name][1]
    if name in AS_WRITTEN:
        return click.Command(name, short_help=text).get_short_help_str(limit)
    return click.Command(name, help=text).get_short_help_str(limit)


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C while the command's module loads, or before its own handler is in place,
        exits 130 as it does later (click would say "Aborted!" and exit 1)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            sys.stderr.write("netrig: interrupted\n")
            sys.exit(130)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"netrig.cli.cmd_{COMMANDS[cmd_name][0]}")
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own layout, from the table (a command not in it from its module)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                rows.append((name, _short_help(name, limit)))
            elif not self.commands[name].hidden:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """Command names with their short help from the table; options as click offers them."""
        from click.shell_completion import CompletionItem

        items = [
            CompletionItem(
                name,
                help=_short_help(name, 45)  # click's default width for completion
                if name in COMMANDS
                else self.commands[name].get_short_help_str(),
            )
            for name in self.list_commands(ctx)
            if name.startswith(incomplete) and (name in COMMANDS or not self.commands[name].hidden)
        ]
        return items + click.Command.shell_complete(self, ctx, incomplete)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="netrig")
def cli() -> None:
    """Reproducible network experiments in Linux network namespaces.

    Exit codes: 0 ok, 1 runtime failure, 2 bad input.
    """


def _register() -> None:
    """Import every subcommand module; each adds itself to `cli` with @cli.command."""
    for module in sorted({module for module, _ in COMMANDS.values()}):
        importlib.import_module(f"netrig.cli.cmd_{module}")


def main() -> None:
    without_pydantic_plugins()  # before pydantic is imported
    run_command(lambda: cli(prog_name="netrig"), sys.argv[1:])  # prog_name also names the
    # completion variable
