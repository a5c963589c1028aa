"""How the netrig process ends, with or without click: Ctrl-C as exit 130 however it comes
out, and a quick exit for commands whose work is all done when they return."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, NoReturn, cast

if TYPE_CHECKING:
    import types
    from importlib.abc import Loader


class Interrupts:
    """Python's own Ctrl-C handler (KeyboardInterrupt), remembering that it ran: code that
    turns the interrupt into another error on its way out (pydantic-core raised SchemaError
    "…KeyboardInterrupt" when Ctrl-C came while it built a model's validator; Python 3.11
    wraps one raised while a class is made in RuntimeError) must still end as Ctrl-C does."""

    seen = False

    @classmethod
    def install(cls) -> None:
        import signal

        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, cls._handle)

    @classmethod
    def _handle(cls, signum: int, frame: object) -> None:
        cls.seen = True
        raise KeyboardInterrupt


# Commands whose work is all done (joined, committed) when they return: they leave without
# Python's tear-down of every module and object (~25 ms for a 100-node plan), see leave.
QUICK_EXIT = {"up", "down", "validate", "plan", "status"}


def run_command(command: Callable[[], object], args: list[str]) -> NoReturn:
    """Run `netrig ARGS` (command: click's group, or netrig.cli.quick's `down`) and exit
    with its code: 130 for Ctrl-C however it came out, quickly for a QUICK_EXIT command."""
    quick = quick_exit_command(args)
    Interrupts.install()
    if quick:
        # a short command: no cyclic collection while it imports and reads its file (its
        # passes over pydantic's and the plan's objects cost ~25 ms of `up` of 100 nodes);
        # `up` collects again while it builds (cli.output.frozen_heap)
        gc.disable()
    code: object = 0
    try:
        command()
    except KeyboardInterrupt:  # Ctrl-C while a command's modules load, before it created anything
        sys.stderr.write("netrig: interrupted\n")
        sys.exit(130)
    except BrokenPipeError:  # as click's main: the reader of the output is gone (`| head`)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (Python flushes it at exit)
        code = 1
    except Exception:
        if not Interrupts.seen:  # a real error
            raise
        sys.stderr.write("netrig: interrupted\n")  # and came out as another error
        sys.exit(130)
    except SystemExit as done:  # click ends every command so, success included
        code = done.code
        if Interrupts.seen and code == 1:
            # click's own "Aborted!" (exit 1): Ctrl-C came outside a command's handler,
            # while click loaded or parsed it
            sys.stderr.write("netrig: interrupted\n")
            code = 130
    if quick:
        leave(code)
    raise SystemExit(code)


def quick_exit_command(args: list[str]) -> bool:
    """The command is one of QUICK_EXIT, not acting over a cluster (whose client's threads
    and connections shut down in Python's own exit), and no profiler waits for main to
    return."""
    if sys.getprofile() is not None:  # python -m cProfile writes its stats after main
        return False
    words = [a for a in args if not a.startswith("-")]
    return bool(words) and words[0] in QUICK_EXIT and "--cluster" not in args


def leave(code: object) -> None:
    """Exit as Python would, less freeing every object: the atexit handlers run (they also
    close the databases, see base.sqlitefile.track), the output is flushed, then os._exit."""
    import atexit

    status = exit_status(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # e.g. a closed pipe: Python ignores it too
            stream.flush()
    os._exit(status)


def exit_status(code: object) -> int:
    """A SystemExit's code as the process's status, as Python gives it: None is 0, a
    message (written to stderr here, as Python would) 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


class NoPydanticPlugins:
    """pydantic looks for plugins of its own (package entry points) when it builds its first
    model, and imports importlib.metadata to do so (~15 ms at every start, as much as the
    rest of YAML and netrig's lab model together). The netrig command uses none: when
    pydantic imports its plugin loader, it gets one that finds none. Only in the command's
    own process (`main`): a program that imports netrig's API keeps pydantic's own loader."""

    NAME = "pydantic.plugin._loader"

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        if name != self.NAME:
            return None
        from importlib.machinery import ModuleSpec

        # a loader by its methods: subclassing importlib.abc.Loader would import it at every start
        return ModuleSpec(name, cast("Loader", self))

    def create_module(self, spec: Any) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        module.get_plugins = lambda: ()  # type: ignore[attr-defined]
        # a pydantic that asks its loader for anything else gets the real module's (PEP 562
        # reads a module's __getattr__ from its dict: ModuleType has no such method to assign)
        vars(module)["__getattr__"] = self._forward

    def _forward(self, name: str) -> Any:
        if name.startswith("__"):  # what import machinery and inspect probe modules for
            raise AttributeError(name)
        return getattr(self._real(), name)

    def _real(self) -> types.ModuleType:
        """pydantic's own loader module, loaded beside ours under its own name."""
        import importlib.util
        from importlib.machinery import PathFinder

        import pydantic.plugin

        spec = PathFinder.find_spec(self.NAME, pydantic.plugin.__path__)
        assert spec is not None and spec.loader is not None
        real = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(real)
        return real


def without_pydantic_plugins() -> None:
    """Install NoPydanticPlugins (once) in this process: the netrig command's, not the API's."""
    if not any(isinstance(f, NoPydanticPlugins) for f in sys.meta_path):
        sys.meta_path.insert(0, NoPydanticPlugins())
