"""Problems with a file, each at its file:line:col, and notes on what was ignored.

Every layer that reads or checks a file reports through these, so the command line prints
one message per place and exits 2.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple


class Problem(NamedTuple):  # (not a dataclass: that imports inspect, ~7 ms of `netrig down`)
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class SpecError(Exception):
    """Bad input: one or more problems, each pointing at file:line:col."""

    exit_code = 2

    def __init__(self, problems: list[Problem]) -> None:
        # one problem found twice (once per IP version, say) is said once
        problems = list(dict.fromkeys(problems))
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


class Note(UserWarning):
    """Something of another tool's file that netrig noted and ignored or skipped."""


def note(where: str, message: str) -> None:
    warnings.warn(Note(f"{where}: {message}"), stacklevel=2)
