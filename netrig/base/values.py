"""A sweep parameter's value as the lab file writes it, wherever netrig shows one."""

from __future__ import annotations

from typing import Any


def render(value: Any) -> str:
    """A parameter's value as it reads in a file: 8.0 → '8', True → 'true' (a summary had
    said bfd=False where the dry run said bfd=false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
