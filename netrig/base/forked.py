"""Pure CPU work in a forked child, for a second core while this process does other work.

    pending = forked.start(lambda: walk(tables))   # None: not safe to fork here
    ... ping meanwhile ...
    result = pending.result()                      # the child's return value, unpickled

The child inherits everything as it is (no pickling of inputs), returns its value pickled
through a pipe and leaves by os._exit (no atexit handlers, no flushing of the parent's
buffers). Forking is only safe where no other thread may hold a lock the child would need,
so `start` refuses (None) while this process has other threads, but those marked `quiet`. A child that fails fails
the result; `cancel` ends it (SIGKILL, by its PID) and reaps it; it dies with this process
(PR_SET_PDEATHSIG), so even kill -9 of this one leaves no child computing.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Generic, NoReturn, TypeVar

from netrig.base import stopsignals

T = TypeVar("T")


class ChildFailed(RuntimeError):
    """The forked child raised or died before returning its value."""


class Pending(Generic[T]):
    """A child computing a value: `result()` waits for it, `cancel()` ends it."""

    def __init__(self, pid: int, read_fd: int) -> None:
        self.pid = pid
        self._read_fd: int | None = read_fd

    def result(self) -> T:
        data = b""
        try:
            with os.fdopen(self._take_fd(), "rb") as inp:
                data = inp.read()
        except BaseException:  # e.g. Ctrl-C while waiting: the child is not waited for
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            raise
        finally:
            status = self._reap()
        if not data:
            raise ChildFailed(f"process {self.pid} died (wait status {status})")
        ok, value = pickle.loads(data)
        if not ok:
            raise ChildFailed(f"process {self.pid}: {value}")
        return value

    def result_or(self, here: Callable[[], T]) -> T:
        """The child's value; if the child failed (an error, a kill, no memory), `here()`
        computes it in this process instead, and raises what it raises."""
        try:
            return self.result()
        except ChildFailed:
            return here()

    def cancel(self) -> None:
        if self._read_fd is None:
            return
        os.close(self._take_fd())
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def _take_fd(self) -> int:
        fd, self._read_fd = self._read_fd, None
        if fd is None:
            raise ChildFailed(f"process {self.pid}: its result was taken already")
        return fd

    def _reap(self) -> int:
        while True:
            try:
                return os.waitpid(self.pid, 0)[1]
            except InterruptedError:
                continue
            except ChildProcessError:
                return -1


_QUIET: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def quiet(thread: threading.Thread) -> threading.Thread:
    """Mark a thread (before it starts) that only makes system calls: it takes no lock a
    forked child could need and imports nothing, so `start` forks beside it (the child has
    no copy of it). Returns the thread."""
    _QUIET.add(thread)
    return thread


def alone() -> bool:
    """No thread runs here but the calling one and quiet ones."""
    me = threading.current_thread()
    return all(t is me or t in _QUIET for t in threading.enumerate())


def start(work: Callable[[], T]) -> Pending[T] | None:
    """work() in a forked child; None when other threads make forking unsafe."""
    if not alone():
        return None
    read, write = os.pipe()
    parent = os.getpid()
    # the signals that stop netrig wait until the fork is done: one handled inside it (in
    # the at-fork hooks modules such as logging register) would be printed and dropped
    pending: Pending[T] | None = None
    write_open = True
    try:
        with stopsignals.held():
            pid = os.fork()
            if pid == 0:  # still holding them: the parent ends the child, by SIGKILL, if it must
                _child(work, read, write, parent)
            pending = Pending(pid, read)
            os.close(write)
            write_open = False
    except BaseException:  # the fork failed, or a signal came while they were held
        if pending is not None:
            pending.cancel()  # kills and reaps the child, closes `read`
        else:
            os.close(read)
        if write_open:
            os.close(write)
        raise
    return pending


def _child(work: Callable[[], object], read: int, write: int, parent: int) -> NoReturn:
    """Compute, write, leave without the parent's clean-ups."""
    code = 1
    try:
        os.close(read)
        _die_with(parent)
        gc.disable()  # collection would copy pages shared with the parent, for nothing
        try:
            reply: tuple[bool, object] = (True, work())
        except Exception as exc:  # reported to the parent, which raises ChildFailed
            reply = (False, f"{type(exc).__name__}: {exc}")
        with os.fdopen(write, "wb") as out:
            out.write(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        code = 0
    finally:  # KeyboardInterrupt too: the parent sees no data and a failed child
        os._exit(code)


PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """The kernel ends this child when its parent dies (kill -9 included), so it never
    computes on for nobody; gone already: leave now."""
    import ctypes

    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
