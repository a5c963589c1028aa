"""A worker's session per sweep (netrig.cluster.tasks.HostSession)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from netrig.cluster.host import HostConfig
from netrig.cluster.tasks import HostSession
from netrig.rig.prepare import load_experiment

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_closing_a_session_closes_its_hosts_ledger(tmp_path: Path) -> None:
    """A released sweep leaves no SQLite connection open on the worker (its `close` had
    slipped out of the class, into a function's body, and never ran)."""
    exp = load_experiment(str(EXAMPLES / "seed000-static.yaml"))
    session = HostSession(exp, HostConfig(name="h1", state_dir=str(tmp_path), ns_prefix="hs1-"))
    ledger = session.ledger
    assert ledger.db.execute("SELECT 1").fetchone() == (1,)
    session.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        ledger.db.execute("SELECT 1")
