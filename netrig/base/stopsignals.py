"""The signals that stop netrig (Ctrl-C, SIGTERM, SIGHUP), and holding them for a moment.

Held around what a signal must not land in the middle of: starting a thread that would
inherit the mask (or be left running unjoined), a fork (logging's at-fork hooks print and
drop an exception raised in them). One that came meanwhile is delivered when they are
released, at a line where netrig handles it.

    with stopsignals.held():
        thread.start()
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def held() -> Iterator[None]:
    """Block STOP_SIGNALS in the calling thread while the block runs (in the main thread:
    Python handles signals there only, so elsewhere there is nothing to hold)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
