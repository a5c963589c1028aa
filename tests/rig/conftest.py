"""Fixtures of the rig's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory of this test's for what netrig remembers (plans, namespace hints),
    not there yet: netrig makes it as it would its own."""
    directory = tmp_path / "plans"
    monkeypatch.setenv("NETRIG_PLAN_CACHE", str(directory))
    return directory
