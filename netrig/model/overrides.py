"""The command line of a stored run (`--set`, `--repeat`) as a note at the end of the stored
experiment text, and read back: light (no pydantic), so the results side reads it too."""

from __future__ import annotations

import re
from collections.abc import Mapping

OVERRIDE_NOTE = "\n# netrig run "


def override_note(overrides: Mapping[str, str] | None, repeat: int | None) -> str:
    """The note `netrig run` appends to the stored file text for its --set and --repeat."""
    parts = [f"--set {k}={v}" for k, v in (overrides or {}).items()]
    if repeat is not None:
        parts.append(f"--repeat {repeat}")
    return OVERRIDE_NOTE + " ".join(parts) + "\n"


def stored_overrides(stored: str) -> tuple[str, dict[str, str], int | None]:
    """A stored experiment text taken apart again: (the file's text, its --set values, its
    --repeat), so what is planned from the store (a report's picture of the lab) is what
    ran, not the file without its command line."""
    at = stored.rfind(OVERRIDE_NOTE)
    line = stored[at + len(OVERRIDE_NOTE) : -1] if at >= 0 and stored.endswith("\n") else ""
    if not line or "\n" in line or not line.startswith("--"):
        return stored, {}, None
    overrides: dict[str, str] = {}
    repeat = None
    for part in re.split(r"(?:^| )--(?=(?:set|repeat) )", line)[1:]:
        flag, _, value = part.partition(" ")
        if flag == "repeat" and value.isdigit():
            repeat = int(value)
        elif flag == "set" and "=" in value:
            key, _, raw = value.partition("=")
            overrides[key] = raw
        else:
            return stored, {}, None  # not a note netrig wrote
    return stored[:at], overrides, repeat
