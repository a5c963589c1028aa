"""netrig.base.forked: work in a forked child, its value back through a pipe."""

from __future__ import annotations

import os
import threading
import time

import pytest

from netrig.base import forked


def test_the_childs_value_comes_back() -> None:
    parent = os.getpid()
    pending = forked.start(lambda: (os.getpid(), [n * n for n in range(1000)]))
    assert pending is not None
    pid, squares = pending.result()
    assert pid != parent and pid == pending.pid
    assert squares[999] == 998001


def test_a_failing_child_fails_the_result_with_its_error() -> None:
    pending = forked.start(lambda: 1 // 0)
    assert pending is not None
    with pytest.raises(forked.ChildFailed, match="ZeroDivisionError"):
        pending.result()


def test_cancel_ends_the_child_by_its_pid() -> None:
    pending = forked.start(lambda: time.sleep(60))
    assert pending is not None
    started = time.monotonic()
    pending.cancel()
    assert time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(pending.pid, 0)  # reaped: no zombie left


def test_no_fork_while_other_threads_run() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert forked.start(lambda: 1) is None
    finally:
        stop.set()
        other.join()


def test_a_quiet_thread_does_not_keep_a_fork_from_happening() -> None:
    stop = threading.Event()
    other = forked.quiet(threading.Thread(target=stop.wait))
    loud = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert forked.alone()
        pending = forked.start(lambda: 2)
        assert pending is not None and pending.result() == 2
        loud.start()
        assert not forked.alone() and forked.start(lambda: 3) is None
    finally:
        stop.set()
        other.join()
        if loud.is_alive():
            loud.join()


def test_what_a_failed_child_did_not_return_is_computed_here() -> None:
    parent = os.getpid()
    pending = forked.start(lambda: os._exit(3))  # as if the kernel had killed it
    assert pending is not None
    assert pending.result_or(os.getpid) == parent
    pending = forked.start(lambda: 6 * 7)
    assert pending is not None
    assert pending.result_or(lambda: -1) == 42


def test_interrupted_while_waiting_the_child_is_ended_not_waited_for() -> None:
    """Ctrl-C (or SIGTERM made an exception) while result() waits: the child is killed
    and reaped at once, not computed to its end."""
    import signal

    pending = forked.start(lambda: time.sleep(60))
    assert pending is not None
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            pending.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(pending.pid, 0)
