"""A node's own programs: its `cmd` (a supervised daemon) and its `exec` lines (run in order).

They run once the lab is up (links, addresses, routing, services), as containerlab runs a
node's exec lines once the node has booted and its links exist; each sees the node's binds
and private /run. A failing exec line fails `up` with its output, and the lab goes away.

    start(lab, say)     # every node's cmd, then every node's exec lines, in node order
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from typing import Any

from netrig.lab import daemons
from netrig.lab.build import LabError
from netrig.lab.runtime import LabRuntime, log_tail

EXEC_TIMEOUT = 120.0  # seconds one exec line may take
CMD_NAME = "cmd"  # the daemon name of a node's cmd (its log: <node dir>/cmd.log)


def start(lab: LabRuntime, say: Callable[[str], None]) -> None:
    nodes = list(lab.plan.nodes.values())
    started: dict[str, subprocess.Popen[Any]] = {}
    for node in nodes:
        if node.cmd:
            say(f"starting {node.name}'s cmd: {shlex.join(node.cmd)}")
            try:
                started[node.name] = daemons.start(lab, node.name, CMD_NAME, node.cmd)
            except OSError as exc:
                raise LabError(f"{node.name}: cmd {shlex.join(node.cmd)}: {exc}") from exc
    lines = sum(len(n.exec) for n in nodes)
    if lines:
        say(f"running {lines} exec lines")
    for node in nodes:
        for argv in node.exec:
            run_line(lab, node.name, argv)
    # a cmd that failed already (a typo, `sh -c 'exit 3'`) fails `up`, as an exec line
    # does: `up` had said the lab was up. One that ended well is left be: containerlab
    # files name a shell (`cmd: bash`), which a container keeps on its terminal and which
    # ends at once here, reading no input
    for name, proc in started.items():
        code = proc.poll()
        if code:
            tail = log_tail(os.path.join(lab.node_dir(name), f"{CMD_NAME}.log"), 20).strip()
            cmd = shlex.join(lab.plan.node(name).cmd or [])
            raise LabError(
                f"{name}: cmd {cmd} exited with {code} right after it started"
                + (f"; last log lines:\n{tail}" if tail else " (it wrote nothing)")
            )


def run_line(lab: LabRuntime, node: str, argv: list[str]) -> str:
    """One exec line in NODE; its output, or LabError with it."""
    text = shlex.join(argv)
    try:
        done = lab.exec(
            node,
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=EXEC_TIMEOUT,
        )
    except FileNotFoundError:
        raise LabError(f"{node}: exec {text}: {argv[0]!r} not found on this host") from None
    except subprocess.TimeoutExpired:
        raise LabError(f"{node}: exec {text}: still running after {EXEC_TIMEOUT:g} s") from None
    except OSError as exc:
        raise LabError(f"{node}: exec {text}: {exc}") from exc
    if done.returncode != 0:
        output = (done.stdout or "").strip()
        raise LabError(
            f"{node}: exec {text} exited with {done.returncode}" + (f": {output}" if output else "")
        )
    return done.stdout or ""
