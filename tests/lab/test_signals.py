"""SIGTERM (timeout(1), systemd, CI runners) and SIGHUP (a closed terminal) do what Ctrl-C
does, at any moment of `netrig up` of a 400-node ring and of `netrig run`: the partial lab
goes, finished runs stay, the exit code is 128 + the signal's number."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netrig.lab import netns
from netrig.lab.ledger import STATE_DIR, Ledger
from tests.conftest import requires_root

pytestmark = [requires_root, pytest.mark.slow]

RING = 400
SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]
EACH_SIGNAL = pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)


def namespaces_of(name: str) -> list[str]:
    return [ns for ns in netns.list_names() if ns.startswith(name + "-")]


def mounted(name: str) -> int:
    """Namespaces of the lab made so far (their names all come first, see
    netns.make_mount_points)."""
    return sum(1 for ns in namespaces_of(name) if netns.ns_inode(ns))


def assert_nothing_left(name: str) -> None:
    """No namespace, no ledger row (lab or object), no state directory of the lab."""
    assert namespaces_of(name) == []
    ledger = Ledger()
    try:
        assert name not in ledger.all_lab_names()
    finally:
        ledger.close()
    assert not os.path.exists(os.path.join(STATE_DIR, "labs", name))


class StderrLines:
    """The lines a child writes to stderr, collected by a thread as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line)

    def seen(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def text(self) -> str:
        self._thread.join(10)
        return "".join(self.lines)


def wait_for(condition, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.002)
    return False


def signal_at(
    argv: list[str],
    moment: str,
    reached: Callable[[StderrLines], bool],
    sig: int,
    before: Callable[[], Any] = lambda: None,
) -> tuple[int, str, Any]:
    """Start `netrig ARGV`, wait until reached() says the moment came, note before(), send
    sig; (exit code, stderr, what before() said)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = StderrLines(proc)
    try:
        came = wait_for(lambda: reached(err) or proc.poll() is not None)
        assert came and proc.poll() is None, f"never reached {moment}: {err.text()}"
        noted = before()
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err.text(), noted


# moments of `netrig up`: while namespaces are being made; once all exist (links, addresses
# and routes); while the reachability check pings
UP_MOMENTS = {
    "namespaces": lambda name, err: 0 < mounted(name) < RING,
    "links": lambda name, err: err.seen(f"creating {RING} links"),
    "check": lambda name, err: err.seen("checking reachability"),
}


@pytest.mark.parametrize("moment", list(UP_MOMENTS))
@EACH_SIGNAL
def test_signal_during_up_removes_the_partial_lab(
    tmp_path: Path, lab_name: str, sig: int, moment: str
) -> None:
    ring = f"name: {lab_name}\ntopology: {{kind: ring, nodes: {RING}}}\n"
    (tmp_path / "ring.yaml").write_text(ring)
    code, stderr, made = signal_at(
        ["up", str(tmp_path / "ring.yaml")], moment, lambda err: UP_MOMENTS[moment](lab_name, err), sig,
        lambda: len(namespaces_of(lab_name)),
    )  # fmt: skip
    assert made > 0, "the signal did not land while the lab was being built"
    assert code == 128 + sig, stderr
    assert "Traceback" not in stderr
    assert signal.Signals(sig).name in stderr and "removed" in stderr
    assert_nothing_left(lab_name)


def stored(db: Path) -> list[str]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return [s for (s,) in conn.execute("SELECT status FROM runs ORDER BY id")]
    except sqlite3.OperationalError:
        return []


def experiment_status(db: Path) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        return [s for (s,) in conn.execute("SELECT status FROM experiments")]


# moments of `netrig run`: while its lab is built, while the second run measures, during the
# cool-down between runs
RUN_MOMENTS = {
    "build": lambda name, db: 0 < mounted(name) < RING,
    "measure": lambda name, db: len(stored(db)) == 1,
    "cooldown": lambda name, db: len(stored(db)) == 2,
}


@pytest.mark.parametrize("moment", list(RUN_MOMENTS))
@EACH_SIGNAL
def test_signal_during_run_keeps_finished_runs_and_removes_the_lab(
    tmp_path: Path, lab_name: str, sig: int, moment: str
) -> None:
    path = tmp_path / "exp.yaml"
    cooldown = "cooldown: 3\n" if moment == "cooldown" else ""
    path.write_text(
        f"name: {lab_name}\ntopology: {{kind: ring, nodes: {RING}}}\n"
        "measure:\n  - command: {node: n1, cmd: 'sleep 0.6; echo took 1 s', metrics: true}\n"
        f"repeat: 4\n{cooldown}"
    )
    db = tmp_path / "r.db"

    def noted() -> list[str]:
        if moment == "measure":
            time.sleep(0.2)  # into the second run's command
        return stored(db)

    code, stderr, before = signal_at(
        ["run", str(path), "--db", str(db), "-q"], moment,
        lambda err: RUN_MOMENTS[moment](lab_name, db), sig, noted,
    )  # fmt: skip
    assert code == 128 + sig, stderr
    assert "Traceback" not in stderr
    assert f"interrupted ({signal.Signals(sig).name})" in stderr and "--resume" in stderr
    runs = stored(db)
    assert runs[: len(before)] == before and before.count("ok") == len(before)
    assert runs.count("ok") == len(before), "a finished run was lost or one ran after the signal"
    assert set(runs[len(before) :]) <= {"interrupted"}
    assert experiment_status(db) == ["interrupted"]
    assert_nothing_left(lab_name)
