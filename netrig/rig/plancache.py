"""Plans of lab files already planned: `netrig up` of a file it has built before, unchanged,
starts from that plan instead of reading, validating and planning the file again (no YAML,
no pydantic, no plugin imported for a static lab: ~80 ms of a 100-node `up`).

An entry is found by a digest of everything its plan was made from: the file's bytes, its
path, `--name`, netrig's own source files and those of the libraries that read the file
(path, size and mtime of each), and Python's version. Only netrig's own lab files are kept
(a containerlab file reads the environment, a Mininet file runs Python, an experiment file
is planned per sweep point). What the plan needs from the host (programs, kernel features,
bind sources) is asked again on each use; when the host lacks any, the entry is not used and
the file is read as usual, so the problem is reported at its file:line.

    found = plancache.lookup("ring.yaml", name=None)
    found.nodes                     # its namespaces, or None when no plan is remembered
    found.plan                      # the plan (routes read when first asked for), or None
    found.remember(plan, needs)     # after the plan of found.data was built

Entries are pickles in a directory only this user can write (NETRIG_PLAN_CACHE, else
/var/cache/netrig/plans for root, ~/.cache/netrig/plans for others; NETRIG_PLAN_CACHE=off
keeps none); an entry owned by someone else, or writable by others, is never read. The
newest MAX_ENTRIES are kept. netrig.rig.ahead keeps its hints (`ahead`) in the same place.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netrig.model.filesize import READ_BYTES
from netrig.rig.cachedir import TMP_PREFIX, cache_dir, open_own, replace_own
from netrig.rig.hostneeds import Need, all_met

try:  # hashlib's import loads OpenSSL (~3 ms), for a BLAKE2 that is built in
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

if TYPE_CHECKING:
    from netrig.plan.model import LabPlan

FORMAT = 2
MAX_ENTRIES = 64
# plans with more routes are not kept: a 10,000-node static grid's 534,000 take 1 s to
# pickle (18 MB), more than its `up` would gain, since they are planned beside the build
MAX_ROUTES = 100_000
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the libraries whose files decide what a lab file means (parsing, validation) and what
# its routes are (big labs are routed with scipy's shortest paths)
LIBRARIES = (
    "yaml/__init__.py", "pydantic/version.py", "pydantic_core/__init__.py",
    "numpy/version.py", "scipy/version.py",
)  # fmt: skip
ENTRY_NAME = re.compile(r"[0-9a-f]{40}\.plan")  # a digest of 20 bytes
TMP_NAME = re.compile(re.escape(TMP_PREFIX) + r"\w+\.tmp")
MAX_TOTAL_BYTES = 256 << 20  # and no more than this in all (a 1000-node ring's is ~2 MB)


def cacheable(path: str, topo: str | None) -> bool:
    """Only netrig's own lab files (by name: containerlab and Mininet files are not)."""
    base = os.path.basename(path)
    return topo is None and not base.endswith((".py", ".clab.yml", ".clab.yaml"))


@dataclass
class Lookup:
    """The outcome of one lookup: the plan when found, else what to remember it by."""

    path: str
    name: str | None
    data: bytes  # the file's bytes as hashed: plan these, so the entry matches them
    digest: str
    directory: str | None
    nodes: int | None = None  # the remembered plan's namespaces (known before it is read)
    _stored: tuple[bytes, bytes] | None = field(default=None, repr=False)
    _plan: LabPlan | None = field(default=None, repr=False)

    @property
    def plan(self) -> LabPlan | None:
        """The remembered plan, read on first use (its routes when they are first asked
        for: by the build's helper thread, beside the kernel's work)."""
        if self._plan is None and self._stored is not None:
            plan_blob, routes = self._stored
            self._stored = None
            from netrig.plan.prefixes import route_plans

            self._plan = pickle.loads(plan_blob)
            self._plan.routes_later(lambda: route_plans(pickle.loads(routes)), lambda: None)
        return self._plan

    def remember(self, plan: LabPlan, needs: list[Need]) -> None:
        """Keep `plan` (its routes finished) for the next lookup of the same bytes; a
        failure to write is not an error of the command that planned it."""
        if self.directory is None:
            return
        with contextlib.suppress(OSError, pickle.PicklingError, RecursionError):
            _store(self.directory, self.digest, plan, needs)


def lookup(path: str, name: str | None = None, topo: str | None = None) -> Lookup | None:
    """The remembered plan of this file as it is now (Lookup.plan None if there is none);
    None when this file is not one whose plan is kept, or cannot be read (the loader says
    why)."""
    if not cacheable(path, topo):
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(READ_BYTES)  # /dev/zero, a 1 GB file: not read whole
    except OSError:
        return None
    if len(data) == READ_BYTES:  # too large to be a lab file: the loader says so
        return None
    directory = cache_dir()
    found = Lookup(path, name, data, _digest(path, name, data), directory)
    if directory is not None:
        entry = _load(directory, found.digest)
        if entry is not None:
            found.nodes, found._stored = entry[0], entry[1:]
    return found


# ------------------------------------------------------------------ entries


def _digest(path: str, name: str | None, data: bytes) -> str:
    h = blake2b(digest_size=20)
    # no --name ("\0") is not --name "" (which the loader refuses)
    given = "\0" if name is None else name
    for part in (str(FORMAT), sys.version, os.path.abspath(path), given, _code_stamp()):
        h.update(part.encode())
        h.update(b"\0")
    h.update(data)
    return h.hexdigest()


def _code_stamp() -> str:
    """Path, size and mtime of every netrig source file and the libraries' version files:
    an edited or upgraded netrig or library makes every entry stale (~1 ms)."""
    stamps: list[str] = []
    todo = [PACKAGE_DIR]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.name.endswith(".py"):
                    st = entry.stat()
                    stamps.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")
                elif entry.name != "__pycache__" and entry.is_dir():
                    todo.append(entry.path)
    for library in LIBRARIES:
        for directory in sys.path:
            try:
                st = os.stat(os.path.join(directory, library))
            except OSError:
                continue
            stamps.append(f"{directory}/{library}:{st.st_size}:{st.st_mtime_ns}")
            break
    stamps.sort()
    return "\n".join(stamps)


def _entry_name(digest: str) -> str:
    return f"{digest}.plan"


def _entry_path(directory: str, digest: str) -> str:
    return os.path.join(directory, _entry_name(digest))


def _load(directory: str, digest: str) -> tuple[int, bytes, bytes] | None:
    """The entry's namespace count and its pickled plan and routes; None if there is no usable
    entry (none, another's, torn, stale, or its needs not met here)."""
    fd = open_own(_entry_path(directory, digest))
    if fd is None:
        return None  # none, or not a file written by this user alone: never unpickled
    with os.fdopen(fd, "rb") as fh:
        try:
            version, stored, nodes, needs, plan, routes = pickle.load(fh)
        except Exception:  # a torn or foreign file is no entry
            return None
    if version != FORMAT or stored != digest or not all_met(needs):
        return None
    with contextlib.suppress(OSError):
        os.utime(_entry_path(directory, digest))  # used: kept longest by _prune
    return nodes, plan, routes


def _store(directory: str, digest: str, plan: LabPlan, needs: list[Need]) -> None:
    from netrig.plan.prefixes import plain_routes

    plan.finish_routes()
    if sum(len(node.routes) for node in plan.nodes.values()) > MAX_ROUTES:
        return
    routes = pickle.dumps(
        plain_routes({name: node.routes for name, node in plan.nodes.items()}), protocol=5
    )
    bare_blob = pickle.dumps(plan.without_routes(), protocol=5)
    namespaces = len(plan.namespace_nodes())  # made ahead
    blob = pickle.dumps((FORMAT, digest, namespaces, needs, bare_blob, routes), protocol=5)
    if replace_own(directory, _entry_name(digest), blob):
        _prune(directory)


def _prune(directory: str) -> None:
    """The newest entries stay, at most MAX_ENTRIES and MAX_TOTAL_BYTES; a temporary file a
    killed writer left is removed after an hour. Only this user's files named as this
    module names them are ever removed (the directory may be one the user chose)."""
    uid = os.geteuid()
    plans = []
    with os.scandir(directory) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid != uid or not entry.is_file(follow_symlinks=False):
                continue
            if ENTRY_NAME.fullmatch(entry.name):
                plans.append((entry, st))
            elif TMP_NAME.fullmatch(entry.name) and time.time() - st.st_mtime > 3600:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    plans.sort(key=lambda item: item[1].st_mtime_ns, reverse=True)
    kept = total = 0
    for entry, st in plans:
        total += st.st_size
        if kept < MAX_ENTRIES and total <= MAX_TOTAL_BYTES:
            kept += 1
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
