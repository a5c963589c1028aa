"""`netrig doctor`: what this host can and cannot do for netrig, and how to fix it."""

from __future__ import annotations

import json
import os
import sys
import time

import click
from rich.console import Console
from rich.table import Table

from netrig.cli.group import cli
from netrig.doctor.declared import declare_plugin_programs
from netrig.doctor.report import Summary, as_json, summarise
from netrig.host import features as feat_mod
from netrig.host import tools as tool_mod
from netrig.host.features import FeatureResult, probe_features
from netrig.host.tools import ToolResult, probe_tools

STYLES = {"✔": "green", "✘": "red", "?": "yellow"}


def _split_only(only: tuple[str, ...]) -> tuple[list[str] | None, list[str] | None]:
    """Sort --only names into features and tools (a name may be both, e.g. iptables)."""
    if not only:
        return None, None
    features: list[str] = []
    tools: list[str] = []
    for raw in only:
        for name in filter(None, (part.strip() for part in raw.split(","))):
            hits = 0
            errors = []
            for resolve, into in ((feat_mod.resolve, features), (tool_mod.resolve, tools)):
                try:
                    into.append(resolve(name))
                    hits += 1
                except KeyError as exc:
                    errors.append(str(exc.args[0]))
            if not hits:
                raise click.BadParameter("; ".join(errors), param_hint="--only")
    return list(dict.fromkeys(features)), list(dict.fromkeys(tools))


def _features_table(results: dict[str, FeatureResult]) -> Table:
    table = Table(
        title="Kernel features (each tried in a throwaway namespace)", title_justify="left"
    )
    table.add_column("", no_wrap=True)
    table.add_column("feature", no_wrap=True)
    table.add_column("what the kernel said", ratio=3)
    table.add_column("fix", ratio=2)
    for res in results.values():
        mark = f"[{STYLES[res.mark]}]{res.mark}[/]"
        table.add_row(mark, res.name, res.detail, res.fix)
    return table


def _tools_table(results: dict[str, ToolResult]) -> Table:
    table = Table(title="Tools, Python packages, privileges", title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("version", ratio=2)
    table.add_column("path", ratio=2)
    table.add_column("package", no_wrap=True)
    table.add_column("fix", ratio=2)
    for res in results.values():
        mark = f"[{STYLES[res.mark]}]{res.mark}[/]"
        label = res.name + (" (optional)" if res.optional else "")
        path = " ".join(res.paths.values())
        table.add_row(mark, label, res.version, path, res.package, res.fix)
    return table


def _print_summary(console: Console, summary: Summary, seconds: float) -> None:
    for line in summary.degrades:
        console.print(f"[yellow]degrades:[/] {line}")
    for line in summary.cannot:
        console.print(f"[red]cannot:[/] {line}")
    style = "green" if summary.ok else "red"
    console.print(f"[{style}]{summary.line()}[/] ({seconds:.2f} s)")


@cli.command("doctor")
@click.option("--json", "as_json_flag", is_flag=True, help="Print one JSON document, no tables.")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="NAME[,NAME…]",
    help="Check only these features/tools (repeatable or comma-separated), e.g. "
    "--only netem,veth --only iperf3.",
)
def doctor(as_json_flag: bool, only: tuple[str, ...]) -> None:
    """Show which kernel features and tools this host has, and how to get the missing ones.

    Every kernel feature is really tried (a veth made, a netem qdisc added, an XDP program
    attached …) inside a throwaway network namespace that vanishes afterwards; nothing is
    created in the host's namespace. Tools are looked up on PATH with their versions.

    \b
    Examples:
      netrig doctor                      both tables and a summary
      netrig doctor --only netem,htb     just these (features or tools)
      netrig doctor --json | jq .cannot  machine-readable

    As another user than root, kernel features are not tried (making a namespace needs
    root): tools are checked, and the summary says to run `sudo netrig doctor`.

    Exit status: 0 when the core works (root, network namespaces, veth), 1 otherwise
    (also when not run as root), 2 for an unknown --only name.
    """
    declare_plugin_programs()
    feature_names, tool_names = _split_only(only)
    not_tried = []
    if os.geteuid() != 0 and feature_names != []:
        # each feature is tried in a scratch namespace, which only root may make: as
        # another user every try would only say EPERM (34 rows of it)
        not_tried = feature_names or list(feat_mod.FEATURES)
        feature_names = []
    start = time.perf_counter()
    features = probe_features(feature_names) if feature_names != [] else {}
    tools = probe_tools(tool_names) if tool_names != [] else {}
    summary = summarise(features, tools)
    seconds = time.perf_counter() - start
    if as_json_flag:
        doc = as_json(features, tools, summary, seconds)
        if not_tried:
            doc["features_not_tried"] = not_tried
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        # a pipe or CI log gets a wide table rather than rich's 80-column default
        console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
        if not_tried:
            console.print(f"[yellow]not root:[/] the kernel's features ({len(not_tried)}) were "
                          "not tried: each is tried in a throwaway namespace, which only root "
                          "may make; `sudo netrig doctor` tries them")
        if features:
            console.print(_features_table(features))
        if tools:
            console.print(_tools_table(tools))
        _print_summary(console, summary, seconds)
    sys.exit(0 if summary.ok else 1)
