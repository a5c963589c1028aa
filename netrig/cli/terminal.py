"""The width ministat would draw at, shared by `stat` and `compare`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import BinaryIO


def terminal_width(stdout: BinaryIO, environ: Mapping[str, str]) -> int:
    """ministat's default width: 74, or $COLUMNS / the window size - 2 on a terminal."""
    from netrig.stats.ministat import DEFAULT_WIDTH, atoi

    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return DEFAULT_WIDTH
    if not os.isatty(fd):
        return DEFAULT_WIDTH
    columns = environ.get("COLUMNS", "")
    if columns:
        return atoi(os.fsencode(columns))
    try:
        cols = os.get_terminal_size(fd).columns
    except OSError:
        return DEFAULT_WIDTH
    return cols - 2 if cols > 0 else DEFAULT_WIDTH
