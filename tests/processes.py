"""Running netrig the ways a person does that pytest's pipes do not: on a terminal, and with
a signal arriving at a chosen moment inside a command."""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import subprocess
import sys
import termios


def on_terminal(
    argv: list[str], columns: int = 100, env: dict[str, str] | None = None,
    stderr_too: bool = False, timeout: float = 120,
) -> tuple[int, bytes]:
    """(exit code, what it printed) of argv run with stdout (and stderr, if stderr_too) on
    a pseudo-terminal `columns` wide."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=slave,
        stderr=slave if stderr_too else subprocess.DEVNULL, env=env,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as e:  # EIO: the terminal's last writer is gone
            if e.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks)


def signalled_inside(
    module: str, function: str, args: list[str], signum: int, times: int = 1
) -> subprocess.CompletedProcess[str]:
    """`netrig ARGS` in a new Python whose module.function first sends the process signum
    `times` times (its handler has run when the function goes on), then does its work."""
    program = (
        "import importlib, os, signal, sys\n"
        f"target = importlib.import_module({module!r})\n"
        "from netrig.__main__ import entry\n"
        f"real = target.{function}\n"
        "def hurried(*args, **kwargs):\n"
        f"    for _ in range({times}):\n"
        f"        os.kill(os.getpid(), {int(signum)})\n"
        "        signal.pthread_sigmask(signal.SIG_BLOCK, [])  # its handler runs by here\n"
        "    return real(*args, **kwargs)\n"
        f"target.{function} = hurried\n"
        f"sys.argv = ['netrig', *{args!r}]\n"
        "entry()  # as the netrig command does (`down LAB` without click, netrig.cli.quick)\n"
    )
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
