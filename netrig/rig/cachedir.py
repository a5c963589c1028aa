"""Where netrig keeps what it remembers between runs: the plans of lab files
(netrig.rig.plancache) and the namespace counts of command lines (netrig.rig.ahead).

A module of its own with nothing but `os`, so `netrig up` can look there first thing,
before it imports anything heavier.
"""

from __future__ import annotations

import contextlib
import os
from stat import S_ISREG

# a temporary file being written there (an entry or the hints); one a killed writer left
# is pruned by plancache
TMP_PREFIX = "netrig-plan-"


def cache_dir() -> str | None:
    """Where entries live, or None when remembering is turned off (NETRIG_PLAN_CACHE=off)."""
    chosen = os.environ.get("NETRIG_PLAN_CACHE")
    if chosen is not None:
        return None if chosen in ("", "off", "0") else chosen
    if os.geteuid() == 0:
        return "/var/cache/netrig/plans"
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative: ignored, as the XDG spec says
        base = os.path.expanduser("~/.cache")
    if not os.path.isabs(base):  # no home (no HOME, no passwd entry): keep none
        return None
    return os.path.join(base, "netrig", "plans")


def open_own(path: str) -> int | None:
    """A descriptor of the plain file at `path` if this user alone could have written it
    (owned, not group- or other-writable), else None. Not through a symlink, and not
    blocking: a FIFO put there must not stall `up`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    st = os.fstat(fd)
    if S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
        return fd
    os.close(fd)
    return None


def replace_own(directory: str, name: str, data: bytes) -> bool:
    """Write `name` in `directory` whole (a reader sees the old file or the new one),
    readable by this user alone; False, writing nothing, when others could write to the
    directory (it is made 0700 if missing)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.stat(directory)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return False  # a directory others can write to is not where we keep anything
    # named by PID, not by tempfile (whose import costs more than the write, ~3 ms)
    tmp = os.path.join(directory, f"{TMP_PREFIX}{os.getpid()}_{name.replace('.', '_')}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # one left by a killed process that had this PID
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True
