"""`netrig down` returns only once every process of the lab has exited (SIGTERM, SIGKILL after
the grace period, each by PID) and its namespaces are gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from netrig.lab import netns
from netrig.lab.ledger import Ledger, process_alive, process_starttime
from netrig.lab.teardown import end_processes, teardown
from tests.conftest import netrig_cli, requires_root, requires_tool
from tests.processes import signalled_inside

IGNORES_SIGTERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + (
    "print('ready', flush=True); time.sleep(600)"
)


def started(argv: list[str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_a_process_that_ignores_sigterm_is_killed_and_waited_for() -> None:
    proc = started([sys.executable, "-c", IGNORES_SIGTERM])
    try:
        start = time.monotonic()
        assert end_processes({proc.pid: process_starttime(proc.pid)}, wait=0.3) == 1
        took = time.monotonic() - start
        assert not os.path.exists(f"/proc/{proc.pid}")  # ended and already collected
        assert 0.3 <= took < 2.0  # SIGKILL, once the grace period was over
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_honours_sigterm_ends_without_waiting_out_the_grace() -> None:
    proc = started(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(600)"]
    )
    try:
        start = time.monotonic()
        end_processes({proc.pid: process_starttime(proc.pid)}, wait=5.0)
        assert time.monotonic() - start < 1.0
        assert not os.path.exists(f"/proc/{proc.pid}")
    finally:
        proc.kill()
        proc.wait()


def test_a_pid_with_another_start_time_is_not_signalled() -> None:
    """The PID was reused: the process that holds it now is not the one recorded."""
    proc = started([sys.executable, "-c", IGNORES_SIGTERM])
    try:
        starttime = process_starttime(proc.pid)
        assert starttime is not None
        end_processes({proc.pid: starttime + 1}, wait=0.1)
        assert proc.poll() is None and process_alive(proc.pid, starttime)
    finally:
        proc.kill()
        proc.wait()


@requires_root
def test_teardown_ends_recorded_and_unrecorded_processes_of_the_lab(make_lab) -> None:  # type: ignore[no-untyped-def]
    """A recorded process that ignores SIGTERM and one found only by its namespace."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}}, check=False)
    recorded = lab.popen("n1", [sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE)
    stray = subprocess.Popen(  # not in the ledger: found by the namespace it lives in
        ["ip", "netns", "exec", lab.ns("n2"), sys.executable, "-c", IGNORES_SIGTERM],
        stdout=subprocess.PIPE,
    )
    for proc in (recorded, stray):
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    pids = {p.pid: process_starttime(p.pid) for p in (recorded, stray)}
    report = teardown(Ledger(), lab.name, wait=0.3)
    assert not [pid for pid, st in pids.items() if process_alive(pid, st)]
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)  # ours: collected too
    assert report.processes == 2 and report.namespaces == 3
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{lab.name}-")]


@requires_root
@requires_tool("ping")
@pytest.mark.slow
@pytest.mark.parametrize(
    "routing",
    [
        pytest.param("{protocol: babel, hello_interval: 1}", marks=requires_tool("babeld")),
        pytest.param("{protocol: batman}", marks=requires_tool("batmand")),
    ],
)
def test_down_returns_when_every_daemon_has_exited(tmp_path, lab_name, routing) -> None:  # type: ignore[no-untyped-def]
    """Daemons of `netrig up` outlive it (init is their parent then); `netrig down`, another
    process, must still wait until each has exited before it returns."""
    path = tmp_path / "lab.yaml"
    path.write_text(f"name: {lab_name}\ntopology: {{kind: ring, nodes: 4}}\nrouting: {routing}\n")
    up = netrig_cli("up", str(path), "--no-check")
    assert up.returncode == 0, up.stderr
    daemons = {o.pid: o.starttime for o in Ledger().objects(lab_name, "process") if o.pid}
    assert len(daemons) == 4 and all(process_alive(p, st) for p, st in daemons.items())
    assert all(process_starttime(p) for p in daemons)

    down = netrig_cli("down", lab_name)
    still = [pid for pid, st in daemons.items() if process_alive(pid, st)]
    left = [ns for ns in netns.list_names() if ns.startswith(f"{lab_name}-")]
    assert down.returncode == 0, down.stderr
    assert f"lab {lab_name}: removed 4 namespaces, 4 processes" in down.stdout
    assert still == [] and left == []


@requires_root
def test_sigterm_during_down_waits_for_the_removal(make_lab) -> None:  # type: ignore[no-untyped-def]
    """SIGTERM had killed `down` midway: 105 of 200 namespaces left, the ledger saying 'up'.
    Now the removal finishes, then `down` says so and exits 143."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 20}}, check=False)
    done = signalled_inside("netrig.cli.removal", "teardown", ["down", lab.name], signal.SIGTERM)
    assert done.returncode == 143, done.stderr
    assert "removed 20 namespaces" in done.stdout and "SIGTERM came while removing" in done.stderr
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{lab.name}-")]
    assert Ledger().lab(lab.name) is None


@requires_root
@pytest.mark.parametrize("command", [["status"], ["down", "x"], ["clean"]])
def test_a_damaged_ledger_is_one_line_and_nothing_is_touched(tmp_path, command) -> None:  # type: ignore[no-untyped-def]
    """Every command had ended in sqlite3.DatabaseError's traceback."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "ledger.sqlite").write_bytes(b"this is not an SQLite file\n" * 100)
    env = {**os.environ, "NETRIG_STATE_DIR": str(state)}
    done = subprocess.run([sys.executable, "-m", "netrig", *command], capture_output=True,
                          text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "cannot be read" in done.stderr
    assert "Move it aside" in done.stderr and len(done.stderr.strip().splitlines()) <= 3
