"""Access to the recorded tool outputs under tests/data/ (see record_fixtures.sh)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture
def recorded() -> Callable[[str, str], tuple[str, str]]:
    """recorded("ping", "ok") → (stdout, stderr) of that recording."""

    def load(tool: str, name: str) -> tuple[str, str]:
        base = DATA / tool / name
        return base.with_suffix(".stdout").read_text(), base.with_suffix(".stderr").read_text()

    return load


@pytest.fixture
def exit_status() -> Callable[[str, str], int]:
    """exit_status("ping", "no-route") → the tool's exit status when it was recorded."""

    def load(tool: str, name: str) -> int:
        last = (DATA / tool / f"{name}.cmd").read_text().splitlines()[-1]
        assert last.startswith("exit ")
        return int(last.split()[1])

    return load
