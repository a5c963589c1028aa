"""`netrig report EXPERIMENT -o report.html`: one self-contained HTML report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from netrig.cli.cmd_compare import DB_OPTION, CommandError, open_store, reported_errors
from netrig.cli.group import cli


@cli.command("report")
@click.argument("ref", metavar="EXPERIMENT")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="HTML file to write ('-' for stdout).",
)
@DB_OPTION
def report_command(ref: str, output: str, db: str) -> None:
    """Write an HTML report of a stored experiment (id, or name: the newest of that name).

    One file with everything inside (plots as images, no script, nothing to fetch),
    so it opens offline: the experiment file, the host it ran on and its tool
    versions, per sweep point N, median, min, max and stddev, the failed runs with
    their reasons, the plots, and comparisons between sweep points.

    \b
      netrig report ring-hops -o ring-hops.html

    Exit codes: 0 written, 2 bad input (unknown experiment or database; filters such
    as EXPERIMENT:hops=5, which a report of the whole experiment does not take).
    """
    from netrig.report.html import render
    from netrig.stats.stored import load, parse_selector

    with reported_errors():
        with open_store(db) as store:
            selector = parse_selector(ref)
            if selector.filters and store.find_experiment(ref) is None:
                # `report EXP:hops=7` had said "no experiment 'EXP:hops=7'"
                raise CommandError(
                    f"{ref!r}: a report covers a whole experiment and takes no filters; "
                    f"write netrig report {selector.experiment or 'EXPERIMENT'}"
                )
            data = load(store, ref)
        text = render(data)
    if output == "-":
        sys.stdout.write(text)
        return
    with reported_errors():  # an output path that cannot be written: one line, exit 1
        Path(output).write_text(text, encoding="utf-8")
    size = len(text.encode()) / 1024
    click.echo(f"{output} written ({size:.0f} KiB, self-contained)")
