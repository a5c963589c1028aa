"""The ledger: every namespace and process netrig makes is written down before it exists.

It lives in /run/netrig (tmpfs: it goes when the namespaces go, at reboot) as SQLite, so a
`kill -9` at any point leaves a record that `netrig clean` can act on, and nothing that
is not in it is ever removed. Rows move intent → created → gone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from netrig.base.sqlitefile import connect_readonly, track, writable_sqlite

STATE_DIR = os.environ.get("NETRIG_STATE_DIR", "/run/netrig")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS labs (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,            -- building | up | down
    created REAL NOT NULL,
    nodes INTEGER NOT NULL,
    source TEXT,                    -- the lab file, if any
    pid INTEGER NOT NULL,           -- the netrig process that built it (and may still use it)
    starttime INTEGER               -- its start time, so a reused pid is not mistaken for it
);
CREATE TABLE IF NOT EXISTS objects (
    id INTEGER PRIMARY KEY,
    lab TEXT NOT NULL,
    kind TEXT NOT NULL,             -- netns | process
    name TEXT NOT NULL,             -- namespace name, or a process label
    node TEXT,
    state TEXT NOT NULL,            -- intent | created
    at REAL NOT NULL,               -- when the intent was recorded
    inode INTEGER,                  -- netns: nsfs inode once created
    pid INTEGER,                    -- process: pid and start time (guards against pid reuse)
    starttime INTEGER,
    UNIQUE (kind, name)
);
"""


class LabRecord(NamedTuple):
    name: str
    state: str
    created: float
    nodes: int
    source: str | None
    pid: int
    starttime: int | None = None

    def builder_alive(self) -> bool:
        """The process that built the lab still runs (e.g. `netrig run` using it)."""
        return self.starttime is not None and process_alive(self.pid, self.starttime)

    def shown_state(self) -> str:
        """The state as `netrig status` says it: a lab still `building` whose builder has
        died (`kill -9` of `up`) will never be up, and says how to remove what it left."""
        if self.state == "building" and not self.builder_alive():
            return f"interrupted (builder gone): netrig clean {self.name}"
        return self.state


class ObjectRecord(NamedTuple):
    id: int
    lab: str
    kind: str
    name: str
    node: str | None
    state: str
    at: float
    inode: int | None
    pid: int | None
    starttime: int | None


def _can_create(folder: str) -> bool:
    """Could this process create a file in `folder` (or the folder itself)?"""
    while not os.path.exists(folder):
        folder = os.path.dirname(folder) or "."
    return os.access(folder, os.W_OK)


class LedgerDamaged(RuntimeError):
    """The ledger file is there but SQLite cannot read it: netrig cannot know what it
    created, so it creates and removes nothing (exit 1, one line saying what to do)."""


class Ledger:
    def __init__(self, state_dir: str = STATE_DIR) -> None:
        self.state_dir = state_dir
        path = os.path.join(state_dir, "ledger.sqlite")
        try:
            self._open(path)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):  # locked, no space: not damage
                raise
            raise LedgerDamaged(
                f"netrig's ledger {path} cannot be read ({exc}): it records what netrig "
                "created, so nothing is created or removed without it. Move it aside to "
                "start a new one; what the old one recorded is then left for you to remove "
                "(`ip netns list`)"
            ) from None

    def _open(self, path: str) -> None:
        state_dir = self.state_dir
        # A user who may not write root's ledger (`netrig status` as anyone) reads it as it
        # is; one with no ledger at all reads an empty one. Neither can create anything.
        self.readonly = not writable_sqlite(path) or (
            not os.path.exists(path) and not _can_create(state_dir)
        )
        if self.readonly:
            self.db = (
                connect_readonly(path)
                if os.path.exists(path)
                else sqlite3.connect(":memory:", isolation_level=None)
            )
            if not os.path.exists(path):
                self.db.executescript(_SCHEMA)
            track(self, self.db)
            return
        os.makedirs(state_dir, mode=0o755, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        track(self, self.db)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(labs)")}
        if "starttime" not in columns:  # a ledger written by an earlier netrig
            self.db.execute("ALTER TABLE labs ADD COLUMN starttime INTEGER")

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ---------------------------------------------------------------- labs

    def begin_lab(self, name: str, nodes: int, source: str | None) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO labs(name, state, created, nodes, source, pid, starttime) "
                "VALUES (?,?,?,?,?,?,?)",
                (
                    name,
                    "building",
                    time.time(),
                    nodes,
                    source,
                    os.getpid(),
                    process_starttime(os.getpid()),
                ),
            )

    def set_lab_state(self, name: str, state: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE labs SET state=? WHERE name=?", (state, name))

    def lab(self, name: str) -> LabRecord | None:
        row = self.db.execute("SELECT * FROM labs WHERE name=?", (name,)).fetchone()
        return LabRecord(*row) if row else None

    def labs(self) -> list[LabRecord]:
        return [LabRecord(*r) for r in self.db.execute("SELECT * FROM labs ORDER BY created")]

    def forget_lab(self, name: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM objects WHERE lab=?", (name,))
            db.execute("DELETE FROM labs WHERE name=?", (name,))

    def plan_path(self, name: str) -> str:
        return os.path.join(self.state_dir, "labs", name, "plan.json")

    def lab_dir(self, name: str) -> str:
        return os.path.join(self.state_dir, "labs", name)

    # ---------------------------------------------------------------- objects

    def intend_netns(self, lab: str, names: Iterable[tuple[str, str]]) -> None:
        """Record (namespace, node) pairs before any of them is created: one transaction."""
        now = time.time()
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO objects(lab, kind, name, node, state, at) VALUES (?,?,?,?,?,?)",
                [(lab, "netns", ns, node, "intent", now) for ns, node in names],
            )

    def netns_owner(self, ns: str) -> tuple[str, str] | None:
        """(lab, node) that recorded namespace NS, or None."""
        row = self.db.execute(
            "SELECT lab, node FROM objects WHERE kind='netns' AND name=?", (ns,)
        ).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def created_netns(self, inodes: dict[str, int]) -> None:
        with self.transaction() as db:
            db.executemany(
                "UPDATE objects SET state='created', inode=? WHERE kind='netns' AND name=?",
                [(ino, ns) for ns, ino in inodes.items()],
            )

    def intend_process(self, lab: str, label: str, node: str | None) -> int:
        with self.transaction() as db:
            cur = db.execute(
                "INSERT OR REPLACE INTO objects(lab, kind, name, node, state, at) "
                "VALUES (?,?,?,?,?,?)",
                (lab, "process", label, node, "intent", time.time()),
            )
            return int(cur.lastrowid or 0)

    def created_process(self, object_id: int, pid: int, starttime: int) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE objects SET state='created', pid=?, starttime=? WHERE id=?",
                (pid, starttime, object_id),
            )

    def forget_object(self, object_id: int) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM objects WHERE id=?", (object_id,))

    def objects(self, lab: str | None = None, kind: str | None = None) -> list[ObjectRecord]:
        sql, args = "SELECT * FROM objects WHERE 1=1", []
        if lab is not None:
            sql += " AND lab=?"
            args.append(lab)
        if kind is not None:
            sql += " AND kind=?"
            args.append(kind)
        return [ObjectRecord(*r) for r in self.db.execute(sql + " ORDER BY id", args)]

    def all_lab_names(self) -> list[str]:
        names = {r.name for r in self.labs()}
        names |= {r[0] for r in self.db.execute("SELECT DISTINCT lab FROM objects")}
        return sorted(names)


def process_starttime(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat: with the pid it names one process for its lifetime."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def process_alive(pid: int, starttime: int | None) -> bool:
    """The process that was recorded is still running (not reused, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0] != "Z" and int(fields[19]) == starttime


def save_json(path: str, data: object) -> None:
    save_text(path, json.dumps(data))


def save_text(path: str, text: str) -> None:
    """Write a file whole or not at all (a reader never sees half of it)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
