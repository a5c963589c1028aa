"""Values as netrig writes them for people: a sweep parameter's as the lab file writes it,
and a count with its noun."""

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


def counted(count: int, word: str, plural: str | None = None) -> str:
    """'1 lab build', '2 lab builds', '0 processes' (plural: when not word + 's')."""
    return f"{count} {word if count == 1 else plural or word + 's'}"
