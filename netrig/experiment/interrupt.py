"""Ctrl-C (SIGINT), SIGTERM and SIGHUP as a clean stop, not an exception at a random line.

SIGTERM is what timeout(1), systemd and CI runners send; SIGHUP what a closed terminal or
ssh session sends: both mean the same as Ctrl-C, and the command exits 128 + the signal's
number (130, 143, 129), as a shell would report it. A signal the caller ignores (nohup's
SIGHUP, a background job's SIGINT) stays ignored.

While a measurement or a pause runs (inside `armed()`), the signal raises KeyboardInterrupt
at once: subprocess.run kills its child and each plugin ends its servers in `finally`.
Anywhere else — writing a run to the store, building or removing a lab — the signal is only
noted, and the runner stops at its next check, so no transaction or teardown is cut short.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

from netrig.base.stopsignals import STOP_SIGNALS

SIGNALS = STOP_SIGNALS


class StopSignal:
    """Context manager installing the handlers (main thread only); restores the old ones."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._armed = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopSignal:
        for sig in SIGNALS:
            # a signal the caller set to be ignored stays ignored: `nohup netrig run …` must
            # outlive the terminal's hangup, a job started with `&` the shell's Ctrl-C
            if signal.getsignal(sig) is not signal.SIG_IGN:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (130 for Ctrl-C), what a shell shows for it."""
        return 128 + (self.signum or signal.SIGINT)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if self._armed:
            self._armed = False
            raise KeyboardInterrupt

    @contextmanager
    def armed(self) -> Iterator[None]:
        """A section a signal may cut short (raises KeyboardInterrupt if one came already)."""
        if self.signum is not None:
            raise KeyboardInterrupt
        self._armed = True
        try:
            yield
        finally:
            self._armed = False
