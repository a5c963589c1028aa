"""The `netrig` command: the click group and its `main` are in netrig.cli.group, one small
module per subcommand (cmd_*.py). This package itself imports nothing, so `netrig down LAB…`
(netrig.cli.quick) runs without click; `netrig.cli.main` and `netrig.cli.cli` are still
found here, the group imported on first use."""

from __future__ import annotations

import importlib
from typing import Any

_FROM_GROUP = ("main", "cli")


def __getattr__(name: str) -> Any:
    if name not in _FROM_GROUP:  # a submodule not imported yet: the import system's to find
        raise AttributeError(f"module 'netrig.cli' has no attribute {name!r}")
    return getattr(importlib.import_module("netrig.cli.group"), name)
