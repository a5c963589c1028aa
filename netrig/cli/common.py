"""What the click commands share beyond netrig.cli.output (re-exported here): shell
completion of lab and node names, the options several commands take, `--set` parsing."""

from __future__ import annotations

from typing import Any, TypeVar

import click

from netrig.cli.output import (  # noqa: F401  (re-exported: the commands import them from here)
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    console,
    counted,
    err_console,
    fail,
    frozen_heap,
    real_console,
    reports_errors,
    require_root,
    store_exit_code,
    without_collector,
)

F = TypeVar("F", bound=Any)


def complete_lab(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: the names of the labs in the ledger (read only; any user)."""
    import os
    import sqlite3

    from netrig.lab.ledger import STATE_DIR

    path = os.path.join(STATE_DIR, "ledger.sqlite")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            names = [row[0] for row in db.execute("SELECT name FROM labs ORDER BY name")]
    except sqlite3.Error:
        return []
    taken = set(ctx.params.get(param.name or "", ()) or ()) if param.nargs == -1 else set()
    return [n for n in names if n.startswith(incomplete) and n not in taken]


def complete_node(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: the nodes of the lab named before (from its saved plan)."""
    import json
    import os

    from netrig.lab.ledger import STATE_DIR

    lab = ctx.params.get("lab")
    if not lab or os.sep in lab or lab.startswith("."):
        return []
    try:
        with open(os.path.join(STATE_DIR, "labs", lab, "plan.json")) as fh:
            nodes = list(json.load(fh)["nodes"])
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [n for n in nodes if n.startswith(incomplete)]


def node_argument(fn: F) -> F:
    return click.argument("node")(fn)


DB_OPTION = click.option(
    "--db",
    default="netrig.db",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Results database (SQLite).",
)


SET_OPTION = click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a parameter of `params:`, or the values of a `vary:` parameter "
    "(--set hops=[1,8]). Repeatable.",
)


def parse_overrides(items: tuple[str, ...]) -> dict[str, str]:
    """`--set NAME=VALUE` options as a mapping; exit 2 on one without `=`."""
    overrides = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            fail(f"--set {item!r}: write NAME=VALUE", EXIT_BAD_INPUT)
        overrides[name.strip()] = value
    return overrides
