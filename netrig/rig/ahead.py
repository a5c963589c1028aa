"""Namespaces made from the first moment: `netrig up` with a command line it has run before
starts its spare-namespace thread (netrig.lab.netns.SpareNamespaces) before it imports
click and its commands, ~20 ms sooner than the lookup of the file's plan could, for as many
namespaces as that command line built last time. On two cores the kernel makes them while
Python imports: a 100-node ring's `up --no-check` of a file built before ~6-9 ms sooner
(A/B, 20-30 runs each); an edited or new file gains nothing (its namespaces are made while
pydantic loads anyway), and a command line without a hint imports nothing more.

The count is a hint, kept per command line (its arguments and working directory) in one
small file beside the remembered plans (netrig.rig.cachedir: none when that is
off) and read only when this user alone can write it. A wrong hint costs namespaces made
in vain, which the kernel frees with the process (they are unnamed and held by nothing
else); the plan decides what is built.

    ahead.start(sys.argv[1:])       # netrig.__main__, first thing
    spare = ahead.spares(100)       # cmd_up: those made ahead (now aiming at 100), or new
    ahead.learn(100)                # the hint for this command line's next run
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from netrig.rig.cachedir import cache_dir, open_own, replace_own

if TYPE_CHECKING:  # imported when there is a hint: a new command line pays for no import
    from netrig.lab.netns import SpareNamespaces

HINTS_FILE = "ahead"  # in cache_dir(): "KEY COUNT" lines, the newest last
MAX_HINTS = 64
MAX_BYTES = 64 << 10  # a longer file is not ours: ignored
MAX_DIGITS = 6  # a longer count is not ours (and int() refuses over 4,300 digits)

_early: SpareNamespaces | None = None  # started by start(), not yet claimed by spares()
_key: str | None = None  # this process's command line, when it is a `netrig up`
_hint = 0  # what the hints said for it
_aging = False  # its hint is among the older half: learn() writes it again, as the newest


def start(argv: list[str]) -> None:
    """For `netrig up …` as root, start making the namespaces this command line built last
    time (nothing for any other command, user or command line)."""
    global _early, _key, _hint, _aging
    if len(argv) < 2 or argv[0] != "up" or os.geteuid() != 0:
        return
    directory = cache_dir()
    if directory is None:
        return
    try:  # never the reason `up` fails: then it makes its namespaces as without a hint
        _key = command_key(argv)
        hints = read_hints(directory)
        _hint = hints.get(_key, 0)
        _aging = _hint > 0 and list(hints).index(_key) < len(hints) - MAX_HINTS // 2
        if _hint:
            from netrig.lab.netns import SpareNamespaces

            _early = SpareNamespaces(_hint).start()
    except (OSError, RuntimeError):  # e.g. a working directory removed; no thread allowed
        _key, _hint = None, 0


def spares(count: int) -> SpareNamespaces:
    """The spare namespaces for a build of `count`: those start() began (retargeted to
    `count`), else new ones (started by `with`)."""
    global _early
    early, _early = _early, None
    if early is None:
        from netrig.lab.netns import SpareNamespaces

        return SpareNamespaces(count)
    early.retarget(count)
    return early


def hinted() -> int:
    """What the hints said for this command line (0: nothing, or not `netrig up`)."""
    return _hint


def learn(count: int) -> None:
    """Keep `count` as the hint for this command line, if start() saw it and it changed
    (or is aging: a command line run often is not pushed out by 64 others); a failure to
    write is not an error of `up`."""
    directory = cache_dir()
    if _key is None or (count == _hint and not _aging) or directory is None:
        return
    with contextlib.suppress(OSError):
        write_hint(directory, _key, count)


def command_key(argv: list[str]) -> str:
    """The command line and where it was given (a relative FILE means another file
    elsewhere), as a short digest."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b

    h = blake2b(digest_size=16)
    for part in (os.getcwd(), *argv):
        h.update(os.fsencode(part) + b"\0")
    return h.hexdigest()


def read_hints(directory: str) -> dict[str, int]:
    """The hints, oldest first; none when the file is missing, not a plain file, not
    this user's alone, or too long."""
    fd = open_own(os.path.join(directory, HINTS_FILE))
    if fd is None:
        return {}
    try:
        if os.fstat(fd).st_size > MAX_BYTES:
            return {}
        text = os.read(fd, MAX_BYTES).decode("ascii", "replace")
    finally:
        os.close(fd)
    hints: dict[str, int] = {}
    for line in text.splitlines():
        key, _, count = line.partition(" ")
        if len(key) == 32 and count.isdigit() and len(count) <= MAX_DIGITS:
            hints.pop(key, None)  # a later line is newer
            hints[key] = int(count)
    return hints


def write_hint(directory: str, key: str, count: int) -> None:
    """Set one hint (the newest), keeping the newest MAX_HINTS, replaced whole (a reader
    sees the old file or the new one)."""
    hints = read_hints(directory)
    hints.pop(key, None)
    hints[key] = count
    kept = list(hints.items())[-MAX_HINTS:]
    text = "".join(f"{k} {c}\n" for k, c in kept)
    replace_own(directory, HINTS_FILE, text.encode("ascii"))
