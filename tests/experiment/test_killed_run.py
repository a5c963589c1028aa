"""`kill -9` of `netrig run`: the experiment reads as interrupted (not running for ever) once
no live process owns it, and `--resume` owns it again."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from netrig.results.store import ResultStore
from tests.conftest import netrig_cli, requires_root

pytestmark = requires_root


def _status_column(listing: str) -> list[str]:
    """The `status` cells of `netrig results list`'s table."""
    rows = [line.split("│") for line in listing.splitlines() if line.startswith("│")]
    return [cells[4].strip() for cells in rows]


def test_killed_run_is_interrupted_once_its_process_is_gone(tmp_path: Path, lab_name: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: {lab_name}\ntopology: {{kind: pair}}\n"
        "measure:\n  - command: {node: n1, cmd: 'sleep 0.1; echo took 1 s', metrics: true}\n"
        "repeat: 30\n"
    )
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", "run", str(path), "--db", str(db), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                    if conn.execute("SELECT count(*) FROM runs").fetchone()[0] >= 1:
                        break
            except sqlite3.OperationalError:
                pass
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        alive = netrig_cli("results", "list", "--db", str(db))
        assert _status_column(alive.stdout) == ["running"], alive.stdout
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    listing = netrig_cli("results", "list", "--db", str(db))
    assert listing.returncode == 0, listing.stderr
    assert _status_column(listing.stdout) == ["interrupted"], listing.stdout
    with ResultStore(db) as store:
        (e,) = store.experiments()
        assert e.status == "interrupted"
    # the lab the killed process left: removed as `netrig clean` would (kill -9 skips clean-up)
    assert netrig_cli("clean", lab_name).returncode == 0
    resumed = netrig_cli("run", str(path), "--db", str(db), "--resume", "-q")
    assert resumed.returncode == 0, resumed.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        assert e.status == "ok"
        assert sum(r.status == "ok" for r in store.runs(e.id)) == 30


def test_resume_owns_the_experiment_again(tmp_path: Path) -> None:
    """A resumed experiment is running (owned by the resuming process), not interrupted."""
    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        eid = store.begin_experiment("x", "name: x\n", {})
        store.finish_experiment(eid, "interrupted")
        store.resume_experiment(eid)
        assert store.experiment(eid).status == "running"
        assert store.experiment(eid).ended is None
