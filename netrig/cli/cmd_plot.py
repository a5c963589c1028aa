"""`netrig plot EXPERIMENT`: one figure of a stored experiment (netrig.report.plots)."""

from __future__ import annotations

import re

import click

from netrig.cli.cmd_compare import DB_OPTION, CommandError, open_store, reported_errors
from netrig.cli.group import cli

KINDS = ("line", "box", "cdf", "timeseries")


def parse_size(text: str) -> tuple[float, float]:
    """`800x450` pixels → inches at 100 dpi."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if m is None or not (100 <= int(m.group(1)) <= 10000 and 100 <= int(m.group(2)) <= 10000):
        raise click.BadParameter(f"{text!r}: write WIDTHxHEIGHT in pixels, e.g. 800x450")
    return int(m.group(1)) / 100, int(m.group(2)) / 100


@cli.command("plot")
@click.argument("ref", metavar="EXPERIMENT")
@click.option(
    "--y",
    "y",
    default="throughput",
    show_default=True,
    metavar="METRIC",
    help="Metric to plot (iperf3-2.throughput picks one measurement).",
)
@click.option(
    "--x",
    "x",
    metavar="PARAM",
    help="Sweep parameter on the x axis (line, box); default: the one varied.",
)
@click.option("--group", metavar="PARAM", help="One line (box colour) per value of PARAM.")
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="line",
    show_default=True,
    help="line: median and min–max per point; box, cdf: distributions; "
    "timeseries: per-interval samples over t.",
)
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="PARAM=VALUE",
    help="Only sweep points with this value (repeatable).",
)
@click.option("--log-x", is_flag=True, help="Logarithmic x axis.")
@click.option("--log-y", is_flag=True, help="Logarithmic y axis.")
@click.option(
    "--ci",
    is_flag=True,
    help="line: the mean with its confidence interval instead of median, min–max.",
)
@click.option(
    "--confidence",
    type=click.FloatRange(50, 99.99),
    default=95.0,
    show_default=True,
    help="Confidence level for --ci, in percent.",
)
@click.option(
    "--intervals",
    is_flag=True,
    help="Per-interval samples instead of each run's summary value (box, cdf).",
)
@click.option(
    "--median",
    "median_",
    is_flag=True,
    help="timeseries: the median across repetitions (band: min–max), not every run.",
)
@click.option("--title", help="Title instead of the experiment and metric.")
@click.option(
    "--size",
    default="800x450",
    show_default=True,
    metavar="WxH",
    help="Size in pixels (PNG at 100 dpi; SVG and PDF keep the proportions).",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="File to write: .png, .svg or .pdf.",
)
@DB_OPTION
def plot_command(
    ref: str,
    y: str,
    x: str | None,
    group: str | None,
    kind: str,
    where: tuple[str, ...],
    log_x: bool,
    log_y: bool,
    ci: bool,
    confidence: float,
    intervals: bool,
    median_: bool,
    title: str | None,
    size: str,
    output: str,
    db: str,
) -> None:
    """Plot a stored experiment. EXPERIMENT is an id or a name (the newest of that
    name), optionally with filters: ring:routing=ecmp.

    \b
      netrig plot ring --x hops --y throughput --group routing -o hops.png
      netrig plot ring --kind box --x hops --y rtt_avg -o rtt.svg
      netrig plot ring --kind cdf --y rtt_avg --where hops=5 -o rtt-cdf.pdf
      netrig plot ring --kind timeseries --y throughput --median -o during.png

    Values are shown in a readable unit (Gbit/s, Mpps, ms, µs). A sweep point
    whose runs all failed leaves a gap in its line and is marked with a red ×
    (legend: failed); it is never drawn as a zero. A plot with no value at all
    (every run failed) has no numbers on its value axis and says so.

    Exit codes: 0 written, 2 bad input (unknown experiment, parameter or metric,
    or filters that no run matches: nothing is written).
    """
    from netrig.report.plots import FORMATS, PlotRequest, figure, save
    from netrig.stats.stored import load, parse_filters, parse_selector

    suffix = output.rsplit(".", 1)[-1].lower() if "." in output else ""
    if suffix not in FORMATS:
        raise click.BadParameter(f"{output}: write .png, .svg or .pdf", param_hint="-o")
    with reported_errors():
        selector = parse_selector(ref)
        if selector.experiment is None:
            raise CommandError(f"{ref!r}: name the experiment, e.g. 3 or ring:hops=5")
        request = PlotRequest(
            kind=kind,  # type: ignore[arg-type]
            y=y,
            x=x,
            group=group,
            filters=selector.filters + parse_filters(where),
            log_x=log_x,
            log_y=log_y,
            ci=ci,
            confidence=confidence / 100,
            intervals=intervals,
            median=median_,
            title=title,
            size=parse_size(size),
        )
        with open_store(db) as store:
            data = load(store, selector.experiment)
        fig = figure(data, request)
        path = save(fig, output)
    click.echo(f"{path} written")
