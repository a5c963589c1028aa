"""netrig.base.stopsignals: holding the stop signals never leaves them blocked, and what a
held block started is not lost when a signal held meanwhile is delivered at its end."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from netrig.base import forked, stopsignals
from tests.conftest import SigintStop, interrupt_main_thread


def blocked_stop_signals() -> set[int]:
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, ())) & set(stopsignals.STOP_SIGNALS)


def test_a_signal_storm_never_leaves_the_signals_blocked(sigint_raises: type[SigintStop]) -> None:
    """A handler that raises at either end of held() (Python runs handlers at the end of
    every pthread_sigmask call, and at the start of any Python function) must not leave
    them blocked: before the fix, one landing just as held() blocked left SIGINT, SIGTERM
    and SIGHUP blocked for good (tens of thousands of iterations, to the end). One landing
    as the `with` ends leaves them blocked until the generator is freed, a moment."""

    def storm() -> None:  # for a second by its own clock: the main thread may be anywhere
        time.sleep(0.05)  # once the main thread is in its loop
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C: to the process, any thread
            time.sleep(0.0002)

    sender = threading.Thread(target=storm)
    sender.start()
    stopped = 0
    blocked_run = longest = 0  # iterations in a row that began with them blocked
    while True:
        try:
            while sender.is_alive():
                blocked_run = blocked_run + 1 if blocked_stop_signals() else 0
                longest = max(longest, blocked_run)
                try:
                    with stopsignals.held():
                        pass
                except sigint_raises:
                    stopped += 1
            sender.join()
            time.sleep(0.05)  # the last one sent, if pending, is delivered here
            break
        except sigint_raises:  # landed outside the block (in the loop's own lines): go on
            continue
    assert stopped > 0  # the storm did reach the block
    assert longest < 1000 and not blocked_stop_signals()


def fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_signal_held_over_a_fork_ends_the_child_and_closes_its_pipe(
    sigint_raises: type[SigintStop], monkeypatch: pytest.MonkeyPatch
) -> None:
    children: list[int] = []
    real_fork = os.fork

    def fork_then_interrupt() -> int:
        pid = real_fork()
        if pid:
            children.append(pid)
            interrupt_main_thread()  # held: delivered as forked.start releases the signals
        return pid

    before = fds()
    monkeypatch.setattr(os, "fork", fork_then_interrupt)
    with pytest.raises(sigint_raises):
        forked.start(lambda: time.sleep(60))
    monkeypatch.undo()
    assert len(children) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(children[0], os.WNOHANG)  # killed and reaped already
    assert fds() == before  # both ends of its pipe closed
