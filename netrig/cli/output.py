"""What every command prints and how it ends, without click: error reporting with exit
codes, and the console. `netrig down LAB…` runs on these alone (netrig.cli.quick), so a
command that only removes labs does not wait for click to load."""

from __future__ import annotations

import functools
import gc
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from netrig.base.values import counted  # noqa: F401  (the commands import it from here)

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


class _LazyConsole:
    """rich's Console, made on first use: a command that prints nothing through it (`--help`,
    shell completion) does not import rich."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._console: Console | None = None

    def real(self) -> Console:
        """The Console itself, for what rich takes as one (a Progress, a Live display)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._kwargs)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    # Python looks these up on the class, past __getattr__: rich's Live enters its console
    # (a progress bar on a terminal raised "'_LazyConsole' object does not support the
    # context manager protocol")
    def __enter__(self) -> Console:
        return self.real().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.real().__exit__(*exc)


def real_console(console: Console) -> Console:
    """The Console behind `console` or `err_console` (either may be a lazy stand-in)."""
    return console.real() if isinstance(console, _LazyConsole) else console


console: Console = _LazyConsole(highlight=False)  # type: ignore[assignment]
err_console: Console = _LazyConsole(stderr=True, highlight=False)  # type: ignore[assignment]

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def fail(message: str, code: int) -> NoReturn:
    """MESSAGE on stderr as it is (a `[...]` in it is text, not rich markup), exit CODE."""
    from rich.markup import escape

    err_console.print(f"[bold red]netrig:[/] {escape(message)}", soft_wrap=True)
    sys.exit(code)


def store_exit_code(error: Exception) -> int:
    """The exit code of a results store's error, the same in every command: a file that is
    not netrig's results database (NotAStore) is bad input, 2; any other (a file netrig may
    not write or upgrade) a failure, 1."""
    from netrig.results.store import NotAStore

    return EXIT_BAD_INPUT if isinstance(error, NotAStore) else EXIT_FAILURE


def require_root(command: str) -> None:
    """Commands that make, enter or remove namespaces say so at once when not root, before
    touching anything (the ledger included): one line, exit 2."""
    import os

    if os.geteuid() != 0:
        fail(
            f"netrig {command} needs root (it makes, enters or removes network namespaces); "
            "run it as root, e.g. with sudo",
            EXIT_BAD_INPUT,
        )


def _where_line(where: str, message: str, tag: str = "") -> str:
    """`file:line:col: message` as rich markup, the user's own text escaped (a key `a[b]`
    or a file `[x].yaml` must show as written)."""
    from rich.markup import escape

    return f"[bold]{escape(where)}[/]: {tag}{escape(message)}"


def reports_errors(fn: F) -> F:
    """Turn netrig's exceptions into one clear message and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # imported here, not at the top: `netrig stat` and `--help` should not pay for them
        from netrig.model.problems import Note, SpecError

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", Note)
                warnings.showwarning = _show_notes(warnings.showwarning)
                return fn(*args, **kwargs)
        except SpecError as exc:
            for problem in exc.problems:
                err_console.print(_where_line(problem.where, problem.message), soft_wrap=True)
            sys.exit(EXIT_BAD_INPUT)
        except Exception as exc:
            # the others exist only once their modules are imported (YAML's reader, the lab
            # core, the plan), which `netrig down` or `validate` may never do: they are looked
            # for there rather than imported for every command
            yamlmarks = sys.modules.get("netrig.model.yamlmarks")
            build = sys.modules.get("netrig.lab.build")
            plan = sys.modules.get("netrig.plan.model")
            ledger = sys.modules.get("netrig.lab.ledger")
            if ledger is not None and isinstance(exc, ledger.LedgerDamaged):
                fail(str(exc), EXIT_FAILURE)
            if yamlmarks is not None and isinstance(exc, yamlmarks.YamlSyntaxError):
                err_console.print(_where_line(exc.where, exc.message), soft_wrap=True)
                sys.exit(EXIT_BAD_INPUT)
            if build is not None and isinstance(exc, build.LabError):
                fail(str(exc), exc.exit_code)
            if plan is not None and isinstance(exc, plan.UnknownName):
                fail(str(exc), EXIT_BAD_INPUT)
            raise
        except KeyboardInterrupt:
            fail("interrupted; everything this command created was removed", 130)

    return wrapper  # type: ignore[return-value]


def without_collector(fn: F) -> F:
    """For a command that only reads and checks: Python's cyclic garbage collector does not
    run while it does (its passes over the models and plans, which live to the end anyway,
    cost ~5% of `netrig validate` of a 100-node ring). Switched back on afterwards, for a
    caller that runs the command in its own process (tests)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return wrapper  # type: ignore[return-value]


@contextmanager
def frozen_heap() -> Iterator[None]:
    """What exists now (the modules, a lab's plan: every node, address and route) is left
    out of the collector's passes until the block ends; what is made inside is collected as
    ever (the collector is on inside, even if the command started with it off, see
    netrig.cli.main). One full pass over a 100-node ring's plan took ~30 ms of its `up`."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()
        gc.unfreeze()


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
            err_console.print(_where_line(where, rest, "[yellow]note:[/] "), soft_wrap=True)

    return show
