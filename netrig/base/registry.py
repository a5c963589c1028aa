"""One registry for every kind of plugin (measurements, routing protocols, firewall engines,
services): each is a small class in a module of its own package, decorated with the
registry's `register`, and found by name.

    _plugins = Registry[Measurement]("measurement", "netrig.measure", skip=("parse_",))
    register = _plugins.register                # @register on each plugin class
    _plugins.load()                             # {name: class}, every module imported once
    _plugins.get("iperf3")                      # Iperf3: imports netrig.measure.iperf3 only
    _plugins.lookup("iperf") → KeyError("unknown measurement 'iperf' (did you mean 'iperf3'?) …")

Adding a plugin is adding one module to the package: nothing else lists them. A plugin's
module is named after it, so finding one by name imports that module alone (a lab file
that names `static` loads neither BIRD's models nor babeld's); a name that no module
bears (a second plugin of one module) makes the registry import them all, so every plugin
has its own module (tests/test_registry.py checks it).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import pkgutil
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str, skip: tuple[str, ...] = ("_",)) -> None:
        self.kind = kind
        self.package = package
        self.skip = skip  # module name prefixes that hold no plugin (helpers, parsers)
        self.classes: dict[str, type[T]] = {}
        self._loaded = False

    def register(self, cls: type[T]) -> type[T]:
        self.classes[cls.name] = cls  # type: ignore[attr-defined]
        return cls

    def load(self) -> dict[str, type[T]]:
        """Import every plugin module of the package once, so each registers itself. A flag,
        not an empty registry, says whether that happened: importing one plugin module
        directly must not hide the others."""
        if not self._loaded:
            path: Any = importlib.import_module(self.package).__path__
            for info in pkgutil.iter_modules(path):
                if not info.name.startswith(self.skip):
                    importlib.import_module(f"{self.package}.{info.name}")
            self._loaded = True
        return self.classes

    def get(self, name: str) -> type[T] | None:
        """The class registered under `name`, importing its own module first (the one named
        after it) and every module only if that does not register it; None if none does."""
        if name not in self.classes and not self._loaded:
            module = f"{self.package}.{name}"
            if (
                name.isidentifier()
                and not name.startswith(self.skip)
                and importlib.util.find_spec(module) is not None
            ):
                importlib.import_module(module)
            if name not in self.classes:
                self.load()
        return self.classes.get(name)

    def lookup(self, name: str) -> type[T]:
        """The class registered under `name`; KeyError with a suggestion and the known names."""
        cls = self.get(name)
        if cls is None:
            plugins = self.load()
            close = difflib.get_close_matches(name, list(plugins), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(sorted(plugins))
            raise KeyError(f"unknown {self.kind} {name!r}{hint}; known: {known}")
        return cls
