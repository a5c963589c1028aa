"""What every subcommand shares: error reporting with exit codes, and the console."""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def fail(message: str, code: int) -> None:
    err_console.print(f"[bold red]netrig:[/] {message}", soft_wrap=True)
    sys.exit(code)


def reports_errors(fn: F) -> F:
    """Turn netrig's exceptions into one clear message and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # imported here, not at the top: `netrig stat` and `--help` should not pay for them
        from netrig.lab.build import LabError
        from netrig.model.load import SpecError
        from netrig.model.problems import Note
        from netrig.model.yamlmarks import YamlSyntaxError
        from netrig.plan.model import UnknownName

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", Note)
                warnings.showwarning = _show_notes(warnings.showwarning)
                return fn(*args, **kwargs)
        except SpecError as exc:
            for problem in exc.problems:
                err_console.print(f"[bold]{problem.where}[/]: {problem.message}", soft_wrap=True)
            sys.exit(EXIT_BAD_INPUT)
        except YamlSyntaxError as exc:
            err_console.print(f"[bold]{exc.where}[/]: {exc.message}", soft_wrap=True)
            sys.exit(EXIT_BAD_INPUT)
        except LabError as exc:
            fail(str(exc), exc.exit_code)
        except UnknownName as exc:
            fail(str(exc), EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            fail("interrupted; everything this command created was removed", 130)

    return wrapper  # type: ignore[return-value]


def _show_notes(fallback: Callable[..., None]) -> Callable[..., None]:
    """Notes of other tools' file readers (netrig.model.problems.Note): each once, as
    `file:line:col: note: …`; other warnings as Python shows them."""
    from netrig.model.problems import Note

    shown: set[str] = set()

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if not issubclass(category, Note):
            fallback(message, category, *args, **kwargs)
            return
        text = str(message)
        if text not in shown:
            shown.add(text)
            where, _, rest = text.partition(": ")
            err_console.print(f"[bold]{where}[/]: [yellow]note:[/] {rest}", soft_wrap=True)

    return show


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
