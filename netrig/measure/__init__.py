"""Measurement plugins: one module per tool, found through one registry.

A plugin knows the options a user may write (a pydantic model that refuses unknown keys),
the programs it needs and the Debian packages that hold them (checked before any lab is
built), how to check its options against a lab plan (nodes that exist, a link with aliases),
and how to measure in a running lab: start its servers with `lab.popen`, wait until they
listen, run the client with a timeout, end its servers by PID, and return samples — or
raise `MeasurementFailed` with the reason and the tool's stderr, never a zero.

    plugin = get("iperf3")
    options = plugin.Options.model_validate({"client": "n1", "server": "n2", "duration": 1})
    samples = plugin.run(lab, options, plugin.timeout(options))

Adding a tool means adding one module here whose class is decorated with @register.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import ip_interface
from typing import IO, TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import Field

from netrig.base.options import Options
from netrig.base.plugin import Plugin
from netrig.base.registry import Registry
from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab.procs import (  # noqa: F401  (plugins use them from here)
    end_group,
    end_process,
    listening_ports,
    socket_inodes,
    wait_all,
)
from netrig.model.models import Seconds
from netrig.model.yamlmarks import KeyPath
from netrig.plan.model import LabPlan

if TYPE_CHECKING:  # a running lab is only handed in: validating an experiment loads no lab core
    from netrig.lab.runtime import LabRuntime as Lab

STDERR_KEEP = 8000  # characters of a tool's stderr kept with a failed run


@dataclass(frozen=True)
class Text:
    """A text result (a command's stdout), stored beside the run's samples."""

    name: str
    text: str


Result = list[Sample | Text]


class MeasureOptions(Options):
    """Options every measurement accepts; each plugin adds its own."""


    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="label of this measurement in the results (default: the plugin's name)",
    )
    timeout: Seconds | None = Field(None, description="give up after this long (default: derived)")


MeasureOptionsT = TypeVar("MeasureOptionsT", bound=MeasureOptions)


class Measurement(Plugin[MeasureOptionsT]):
    """Base class of a measurement plugin; stateless, options are passed to every call."""

    Options: ClassVar[type[MeasureOptions]] = MeasureOptions
    summary_metrics: ClassVar[tuple[str, ...]] = ()  # shown in the end-of-run table
    # metrics it may store only per stream, whose streams' values pool into one metric of a
    # run (stat, compare, plot, the report): ping's per-probe rtt of several pairs. Nothing
    # else pools: streams that are not alike (iperf3's parallel streams beside their total)
    # must not pass for one metric.
    pooled_metrics: ClassVar[tuple[str, ...]] = ()

    def tools(self, options: MeasureOptionsT) -> dict[str, str]:
        """Programs these options run → the Debian package of each (of `programs`)."""
        return dict(self.programs)

    def check(self, options: MeasureOptionsT, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        """Problems of the options against a lab plan: (path inside the options, message)."""
        return []

    def timeout(self, options: MeasureOptionsT) -> float:
        """How long one measurement may take before it counts as failed."""
        return float(options.timeout or 60.0)

    def endpoints(self, options: MeasureOptionsT) -> list[tuple[str, str]]:
        """The node pairs its traffic goes between (client/server, src/dst or sender/
        receiver, as the options name them): the plan refuses a pair no link joins."""
        for a, b in (("client", "server"), ("src", "dst"), ("sender", "receiver")):
            x, y = getattr(options, a, None), getattr(options, b, None)
            if isinstance(x, str) and isinstance(y, str):
                return [(x, y)]
        return []

    def udp_arrives(self, options: MeasureOptionsT) -> list[tuple[str, int]]:
        """(node, IP family) where its UDP datagrams arrive, when measurements run together
        (`events:`): beside one that counts all of a node's UDP (udp_counted) it would be
        counted too. None by default."""
        return []

    def udp_counted(self, options: MeasureOptionsT) -> tuple[str, int] | None:
        """(node, IP family) whose UDP counters it reads whole, unable to tell its own
        datagrams from others' (pps's sink); None by default."""
        return None

    def length(self, options: MeasureOptionsT) -> float | None:
        """Seconds its traffic lasts, known from the options alone (None: not known): an
        event later than every measurement's end would never happen."""
        return None

    def events_timeout(self, options: MeasureOptionsT) -> float:
        """`timeout` for a run with events (options from `during_events`): a tool that
        waits out an outage may need longer. The same by default."""
        return self.timeout(options)

    def during_events(self, options: MeasureOptionsT) -> MeasureOptionsT:
        """The options to use while a timeline of faults runs (`events:`): finer time series
        where the user left the default. Unchanged by default."""
        return options

    def run(self, lab: Lab, options: MeasureOptionsT, timeout: float) -> Result:
        raise NotImplementedError


registry: Registry[Measurement[Any]] = Registry("measurement", __name__, skip=("parse_", "_"))
MEASUREMENTS = registry.classes
register = registry.register
load_plugins = registry.load


def get(name: str) -> Measurement:
    """A plugin by name; KeyError (with a suggestion) for an unknown one."""
    return registry.lookup(name)()


def missing_tools(tools: dict[str, str]) -> dict[str, str]:
    """The programs of `tools` (program → package) that are not on PATH."""
    return {cmd: pkg for cmd, pkg in tools.items() if shutil.which(cmd) is None}


# ------------------------------------------------------------------ helpers for plugins

_started = threading.local()


def mark_started() -> float:
    """Called by a plugin just before its measuring process starts (the iperf3 client, the
    pings): the runner puts that moment at t = 0 of the measurement's samples when it lines
    them up with a timeline of events. One mark per thread, so measurements run side by side
    each keep their own. Returns the mark (monotonic clock), for a plugin that times its
    samples itself (pps) to count from it."""
    _started.at = time.monotonic()
    _started.wall = time.time()
    return float(_started.at)


def started_wall() -> float:
    """The wall-clock time of this thread's last mark (now if none): for tools that stamp
    their output with the time of day, as `fping -D` does."""
    wall = getattr(_started, "wall", None)
    return time.time() if wall is None else wall


def started_at(default: float) -> float:
    """The last mark of this thread (and clears it); `default` if the plugin set none."""
    at = getattr(_started, "at", None)
    _started.at = _started.wall = None
    return default if at is None else at


def node_problems(plan: LabPlan, refs: Sequence[tuple[KeyPath, str]]) -> list[tuple[KeyPath, str]]:
    """(path, node name) references that name no host of the plan, as problems."""
    hosts = [n.name for n in plan.hosts()]
    problems = []
    for path, name in refs:
        if name in hosts:
            continue
        if name in plan.nodes:
            problems.append((path, f"node {name!r} is a switch; measure between hosts"))
            continue
        close = difflib.get_close_matches(name, hosts, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        shown = ", ".join(hosts) if len(hosts) <= 6 else f"{hosts[0]} … {hosts[-1]}"
        problems.append((path, f"unknown node {name!r}{hint}; the lab has {shown}"))
    return problems


AddressChoice = Literal["auto", "loopback", "link"]


def link_address(plan: LabPlan, src: str, dst: str, family: int) -> str | None:
    """dst's address on a link it shares with src, or on a switched segment both are on
    (None if they share neither)."""
    dst_node = plan.node(dst)
    for iface in dst_node.ifaces:
        if iface.peer == src and not iface.master:
            for cidr in iface.addrs:
                if family_of(cidr) == family:
                    return cidr.split("/")[0]
    for net in plan.networks:  # a segment through a switch: both are its members
        ports = {node: port for node, port in net.members}
        if src in ports and dst in ports:
            for cidr in dst_node.port_addrs(ports[dst]):
                if family_of(cidr) == family:
                    return cidr.split("/")[0]
    return None


def target_address(plan: LabPlan, src: str, dst: str, family: int, choice: str = "auto") -> str:
    """The address src should use to reach dst.

    loopback: dst's own address (its loopback, else its first one); link: dst's address on
    their shared link; auto: loopback, except in a lab without routing (`protocol: none`),
    where only directly linked addresses are reachable.
    """
    if choice == "link" or (choice == "auto" and plan.protocol == "none"):
        addr = link_address(plan, src, dst, family)
        if addr is not None or choice == "link":
            if addr is None:
                raise KeyError(f"{src} and {dst} share no link with an IPv{family} address")
            return addr
    return plan.addr(dst, family)


def family_of(cidr: str) -> int:
    return ip_interface(cidr).version


def tail(text: str | bytes | None, limit: int = STDERR_KEEP) -> str:
    """The end of a tool's output, where the error usually is."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return text if len(text) <= limit else "…" + text[-limit:]


def not_installed(tool: str, package: str) -> MeasurementFailed:
    return MeasurementFailed(f"{tool} is not installed; install it with: apt-get install {package}")


def spool() -> IO[str]:
    """A file for a background process's output: unlike a pipe it never fills up and blocks."""
    return tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")


def read_spool(fh: IO[str]) -> str:
    fh.flush()
    fh.seek(0)
    return fh.read()


def in_namespace(pid: int, lab: Lab, node: str) -> bool:
    """True once the process has entered the node's namespace (it starts in ours)."""
    from netrig.lab import netns

    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == netns.ns_inode(lab.ns(node))
    except OSError:
        return False
