"""The `netrig` command: one small module per subcommand, registered on one click group."""

from __future__ import annotations

import click

from netrig import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="netrig")
def cli() -> None:
    """Reproducible network experiments in Linux network namespaces.

    Exit codes: 0 ok, 1 runtime failure, 2 bad input.
    """


def _register() -> None:
    """Import subcommand modules; each adds itself to `cli` with @cli.command."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{info.name}")


def main() -> None:
    """Import only the module named after the command when there is one (`netrig stat` →
    cmd_stat), so a command does not pay for every other command's imports."""
    import importlib
    import importlib.util
    import sys

    name = sys.argv[1] if len(sys.argv) > 1 else ""
    module = f"{__name__}.cmd_{name}"
    if name.isidentifier() and importlib.util.find_spec(module) is not None:
        importlib.import_module(module)
        if name in cli.commands:
            cli(prog_name="netrig")  # also names the completion variable
            return
    _register()
    cli(prog_name="netrig")
