"""Daemons that need another's socket start once it answers, and start again so."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netrig.lab import daemons, faults
from tests.conftest import requires_root

pytestmark = requires_root


def listening(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen()
    return sock


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def seconds_until_done(call: Callable[[], object], then: Callable[[], object]) -> float:
    """How long CALL takes while THEN runs DELAY seconds after it began (in a thread: the
    lab's ledger belongs to this one)."""
    timer = threading.Timer(DELAY, then)
    start = time.monotonic()
    timer.start()
    try:
        call()
    finally:
        timer.cancel()
    return time.monotonic() - start


DELAY = 0.5


def test_a_daemon_starts_and_starts_again_once_the_sockets_it_needs_answer(  # type: ignore[no-untyped-def]
    make_lab, tmp_path: Path, sockets: list[socket.socket]
) -> None:
    """FRR's watchfrr, started again by `netrig node … start` before its daemons answered
    (their old socket files stay), restarted them as its own; the wait was FRR's alone, in
    the fault code. What a daemon needs is now kept with its command line."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 2}}, check=False)
    path = tmp_path / "peer.sock"
    took = seconds_until_done(
        lambda: daemons.start(lab, "n1", "waiter", ["sleep", "60"], [str(path)]),
        lambda: sockets.append(listening(path)),
    )
    assert DELAY <= took < DELAY + 3 and "waiter" in daemons.running(lab, "n1")

    assert daemons.stop(lab, "n1") == ["n1/waiter"]
    sockets.pop().close()  # the peer is gone; its socket file stays, answering nothing
    assert path.exists()

    def listen_again() -> None:
        path.unlink()
        sockets.append(listening(path))

    took = seconds_until_done(lambda: faults.start_node(lab, "n1"), listen_again)
    assert DELAY <= took < DELAY + 3 and "waiter" in daemons.running(lab, "n1")


def test_a_daemon_whose_socket_never_answers_fails_its_start_by_name(make_lab, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 2}}, check=False)
    daemons.SOCKET_WAIT, saved = 0.3, daemons.SOCKET_WAIT
    try:
        with pytest.raises(Exception, match=r"n1: waiter waits for .*peer.sock: nothing answered"):
            daemons.start(lab, "n1", "waiter", ["sleep", "60"], [str(tmp_path / "peer.sock")])
    finally:
        daemons.SOCKET_WAIT = saved
    assert "waiter" not in daemons.running(lab, "n1")


def test_daemons_recorded_by_a_netrig_before_needs_still_start_again(make_lab) -> None:  # type: ignore[no-untyped-def]
    """A lab built before `needs` kept name → command line in daemons.json."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 2}}, check=False)
    with open(os.path.join(lab.node_dir("n1"), daemons.DAEMONS_FILE), "w") as fh:
        json.dump({"old": ["sleep", "60"]}, fh)
    assert daemons.recorded(lab, "n1") == {"old": ["sleep", "60"]}
    assert faults.start_node(lab, "n1") == (["n1/old"], [])
    assert "old" in daemons.running(lab, "n1")


def test_what_runs_after_a_daemon_starts_runs_again_at_every_start(make_lab, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """FRR's `vtysh -b` (frr.conf into the running daemons) ran once, at `up`: `netrig node
    N start` brought the daemons back with no configuration. `then` is kept with the
    command line: it runs at each start of its daemon, and again when only the daemons
    beside it were started (the one it belongs to ran on); a failing one fails the start."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 2}}, check=False)
    marks = tmp_path / "marks"
    then = ["sh", "-c", f"echo loaded >> {marks}"]
    daemons.start(lab, "n1", "zebra", ["sleep", "60"])
    daemons.start(lab, "n1", "watch", ["sleep", "60"], then=then)
    assert marks.read_text() == "loaded\n"
    daemons.stop(lab, "n1")
    assert faults.start_node(lab, "n1") == (["n1/zebra", "n1/watch"], [])
    assert marks.read_text() == "loaded\n" * 2  # once: with its daemon, not again after
    daemons.stop(lab, "n1", names={"zebra"})
    assert faults.start_node(lab, "n1")[0] == ["n1/zebra"]
    assert marks.read_text() == "loaded\n" * 3  # watch ran on; its `then` ran again
    daemons.stop(lab, "n1")
    with pytest.raises(Exception, match=r"n1/watch: false failed \(exit 1\)"):
        daemons.start(lab, "n1", "watch", ["sleep", "60"], then=["false"])
