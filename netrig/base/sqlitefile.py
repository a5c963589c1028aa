"""Opening SQLite files that another user owns: the ledger and the results database are
root's, and the commands that only read them (status, results, stat, report) run as anyone."""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
import weakref
from contextlib import suppress


def track(holder: object, db: sqlite3.Connection) -> None:
    """Close `db` when its holder is freed, or at the latest in the atexit handlers (which
    also run when netrig leaves by os._exit): a connection whose holder is gone may wait for
    the cyclic garbage collector, and SQLite checkpoints and removes its WAL file only on
    the last close."""
    weakref.finalize(holder, _close, db)


def _close(db: sqlite3.Connection) -> None:
    """Close, never raising (this runs in a finalizer or at exit). A connection of another
    thread cannot be closed from this one: SQLite closes it as the process ends."""
    with suppress(sqlite3.Error):
        db.close()


def writable_sqlite(path: str) -> bool:
    """Can this process write the database at `path` (and its -wal/-shm beside it)?
    A file not there yet counts as writable: opening it creates it."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(path):
        return True
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK)


def connect_readonly(path: str) -> sqlite3.Connection:
    """A read-only connection. A WAL database whose -shm file is missing in a folder we
    cannot write is opened as immutable (SQLite cannot share its index otherwise)."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    db = sqlite3.connect(uri + "?mode=ro", uri=True, isolation_level=None, timeout=10.0)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
    return sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None)
