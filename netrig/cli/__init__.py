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
    _register()
    cli()
