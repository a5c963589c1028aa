"""Service plugins: daemons a node runs for the experiment (web servers, load balancers).

    nodes:
      - {name: lb, services: [{haproxy: {backends: [web1, web2]}}]}
      - {name: web1, services: [{nginx: {files: {1k: 1024}}}]}

A plugin declares its options (a pydantic model that refuses unknown keys), the programs it
runs and their Debian packages, checks its options against the plan (backends that are
hosts), and starts itself in a running lab: it writes its config into the node's directory
and runs one supervised daemon through the routing daemons' helpers (netrig.lab.daemons:
PID and start time in the ledger, log in `<node dir>/<kind>.log` for `netrig logs`, command
line in daemons.json so `netrig node LAB NODE stop|start` stops and restarts it too).
`start_all` starts every service of a lab after routing converged and waits until each
listens (a crash is reported with its log tail); `stop_all` ends them by PID at `down`.

Adding a service means adding one module here whose class is decorated with @register.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable
from ipaddress import IPv4Network, ip_interface
from typing import Any, ClassVar, TypeVar

from pydantic import Field

from netrig.base.options import Options
from netrig.base.plugin import Plugin
from netrig.base.registry import Registry
from netrig.lab import daemons
from netrig.lab.build import LabError
from netrig.lab.ledger import process_alive
from netrig.lab.procs import listening_ports
from netrig.lab.runtime import LabRuntime as Lab
from netrig.lab.runtime import log_tail
from netrig.model.models import NodeName
from netrig.model.yamlmarks import KeyPath
from netrig.plan.model import LabPlan, ServicePlan

READY_TIMEOUT = 10.0  # seconds a daemon may take to listen
READY_POLL = 0.02


class ServiceOptions(Options):
    """Options every service accepts; each plugin adds its own."""

    port: int = Field(80, ge=1, le=65535, description="TCP port it serves on")


class BalancerOptions(ServiceOptions):
    """What every load balancer takes: where to send the requests."""

    backends: list[NodeName] = Field(min_length=1, description="nodes that serve the requests")
    backend_port: int = Field(80, ge=1, le=65535, description="the backends' port")
    max_connections: int = Field(
        4096, ge=1, le=1_000_000, description="client connections the balancer accepts at once"
    )


ServiceOptionsT = TypeVar("ServiceOptionsT", bound=ServiceOptions)


class Service(Plugin[ServiceOptionsT]):
    """Base class of a service plugin; stateless, options are passed to every call."""

    Options: ClassVar[type[ServiceOptions]] = ServiceOptions
    private_run: ClassVar[bool] = False  # its daemons keep sockets and pid files in /run

    def tools(self, options: ServiceOptionsT) -> dict[str, str]:
        """Programs these options run → the Debian package of each (of `programs`)."""
        return dict(self.programs)

    def check(self, options: ServiceOptionsT, plan: LabPlan, node: str) -> list[tuple[KeyPath, str]]:
        """Problems of the options against the plan: (path inside the options, message)."""
        if isinstance(options, BalancerOptions):
            return backend_problems(plan, node, options.backends)
        return []

    def backend_port(self, options: ServiceOptionsT) -> int | None:
        """The port its backends must serve on (None: it has no backends)."""
        if isinstance(options, BalancerOptions) and options.backends:
            return options.backend_port
        return None

    def address(
        self, options: ServiceOptionsT, plan: LabPlan, node: str, pool: IPv4Network | None
    ) -> str | None:
        """The address clients connect to when it is not the node's own (a VIP); a
        ValueError says why there is none to be had (reported at the service's line)."""
        return None

    def start(self, lab: Lab, node: str, options: ServiceOptionsT) -> None:
        """Write the config and start the daemon (with `daemons.start`)."""
        raise NotImplementedError

    def ready(self, lab: Lab, node: str, options: ServiceOptionsT, pid: int) -> bool:
        """True once the daemon serves: by default, it listens on its port."""

        return options.port in listening_ports(pid)


registry: Registry[Service[Any]] = Registry("service", __name__)
SERVICES = registry.classes
register = registry.register
load_plugins = registry.load


def get(name: str) -> Service:
    return registry.lookup(name)()


# ------------------------------------------------------------------ helpers for plugins


def backend_problems(plan: LabPlan, node: str, backends: list[str]) -> list[tuple[KeyPath, str]]:
    """Backends that are not hosts of the plan, or the balancer itself."""
    hosts = [n.name for n in plan.hosts()]
    problems: list[tuple[KeyPath, str]] = []
    for i, name in enumerate(backends):
        if name == node:
            problems.append((("backends", i), f"{node} cannot be its own backend"))
        elif name in plan.nodes and name not in hosts:
            problems.append((("backends", i), f"backend {name!r} is a switch, not a host"))
        elif name not in plan.nodes:
            close = difflib.get_close_matches(name, hosts, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append((("backends", i), f"backend {name!r} is not a node of the lab{hint}"))
        elif not plan.node(name).addresses(4):
            problems.append((("backends", i), f"backend {name!r} has no IPv4 address"))
    if len(set(backends)) != len(backends):
        problems.append((("backends",), "a backend is listed twice"))
    return problems


def shared_address(plan: LabPlan, node: str, other: str) -> str | None:
    """OTHER's IPv4 address on a subnet NODE is on too (a link or a switched segment)."""
    mine = [ip_interface(c).network for c in _cidrs(plan, node)]
    for cidr in _cidrs(plan, other):
        iface = ip_interface(cidr)
        if iface.version == 4 and iface.network.prefixlen < 32 and iface.network in mine:
            return str(iface.ip)
    return None


def _cidrs(plan: LabPlan, node: str) -> list[str]:
    n = plan.node(node)
    out = list(n.bridge.addrs) if n.bridge else []
    for iface in n.ifaces:
        if not iface.master:
            out += iface.addrs
    return out


def serves_ipv6(plan: LabPlan, node: str) -> bool:
    """NODE has an IPv6 address, so its services listen on IPv6 as well as IPv4: a
    measurement with `family: 6` connects to that address (they listened on 0.0.0.0 only,
    and every such run failed "Connection refused")."""
    return bool(plan.node(node).addresses(6))


def backend_address(plan: LabPlan, node: str, backend: str) -> str:
    """Where NODE reaches a backend: its address on a shared subnet, else its loopback."""
    return shared_address(plan, node, backend) or plan.addr(backend, 4)


# ------------------------------------------------------------------ the lab's services


def planned(lab: Lab) -> list[tuple[str, ServicePlan]]:
    return [(n.name, s) for n in lab.plan.nodes.values() for s in n.services]


def start_all(lab: Lab, say: Callable[[str], None] = lambda _m: None) -> None:
    """Start every service of the lab, then wait until each serves (or report its crash)."""
    todo = planned(lab)
    if not todo:
        return
    began = time.perf_counter()
    say(f"starting {len(todo)} services")
    for node, svc in todo:
        plugin = get(svc.kind)
        plugin.start(lab, node, plugin.Options.model_validate(svc.options))
    _wait_ready(lab, [(node, svc.kind) for node, svc in todo])
    say(f"services serving in {time.perf_counter() - began:.2f} s")


def _wait_ready(lab: Lab, started: list[tuple[str, str]]) -> None:
    """Until each (node, kind) serves; LabError with the log tail of one that exited."""

    waiting = []
    for node, kind in started:
        svc = next(s for s in lab.plan.node(node).services if s.kind == kind)
        plugin = get(kind)
        waiting.append((node, kind, plugin, plugin.Options.model_validate(svc.options)))
    deadline = time.monotonic() + READY_TIMEOUT
    while waiting:
        left = []
        for node, kind, plugin, options in waiting:
            pid = daemons.running(lab, node).get(kind)
            if pid is None:
                raise LabError(f"service {exit_report_of(lab, node, kind, 20)}")
            if not plugin.ready(lab, node, options, pid):
                left.append((node, kind, plugin, options))
        waiting = left
        if waiting and time.monotonic() > deadline:
            names = ", ".join(f"{n}/{k}" for n, k, _p, _o in waiting)
            raise LabError(f"services not serving after {READY_TIMEOUT:g} s: {names}")
        if waiting:
            time.sleep(READY_POLL)


def exited(lab: Lab) -> list[tuple[str, str]]:
    """(node, kind) of the lab's services that crashed: recorded, and not running. One
    stopped on purpose (`netrig node LAB NODE stop`, a fault timeline) has no record left,
    so it is neither reported nor started again behind the user's back."""

    out = []
    for node in sorted({node for node, _svc in planned(lab)}):
        kinds = {s.kind for s in lab.plan.node(node).services}
        records: dict[str, bool] = {}
        for o in daemons.processes(lab, node):
            kind = daemons.daemon_name(lab, o)
            if kind in kinds:
                alive = bool(o.pid and process_alive(o.pid, o.starttime))
                records[kind] = records.get(kind, False) or alive
        out += [(node, kind) for kind, alive in sorted(records.items()) if not alive]
    return out


def revive(lab: Lab) -> list[str]:
    """Start again, exactly as before, the services that exited (a balancer that crashed
    in an earlier run), and wait until they serve; returns `node/kind` of those.

    A measurement calls this first, so one crash fails the run it happened in, not every
    later run on the same lab. The restart is noted in the service's log."""

    dead = exited(lab)
    for node, kind in dead:
        argv = daemons.recorded(lab, node).get(kind)
        if argv is None:
            raise LabError(f"{node}/{kind} has no recorded command line to start again")
        for obj in daemons.processes(lab, node):
            if daemons.daemon_name(lab, obj) == kind:
                lab.ledger.forget_object(obj.id)  # the dead one: not a crash of the new one
        daemons.start(lab, node, kind, argv)
    if dead:
        _wait_ready(lab, [(node, kind) for node, kind in dead])
    return [f"{node}/{kind}" for node, kind in dead]


def restart(lab: Lab, node: str) -> list[str]:
    """Stop NODE's services by PID and start them again as before (after a failed run: a
    balancer wedged by an overload must not fail every later run on the same lab)."""

    kinds = {s.kind for s in lab.plan.node(node).services}
    ours = [o for o in daemons.processes(lab, node) if daemons.daemon_name(lab, o) in kinds]
    if not ours:
        return []  # none, or stopped on purpose: left as they are
    kinds_run = sorted({daemons.daemon_name(lab, o) for o in ours})
    # a routing daemon of the node keeps running
    daemons.stop(lab, node, reason="restarted after a failed run", names=set(kinds_run))
    argvs = daemons.recorded(lab, node)
    for kind in kinds_run:
        daemons.start(lab, node, kind, argvs[kind])
    _wait_ready(lab, [(node, kind) for kind in kinds_run])
    return [f"{node}/{kind}" for kind in kinds_run] + revive(lab)


def exit_report(lab: Lab, lines: int = 10) -> str:
    """`node/kind exited; last log lines: …` for each service that is not running ("" if
    all run): what a measurement raises when a balancer died under it."""
    return "".join(exit_report_of(lab, node, kind, lines) for node, kind in exited(lab))


def exit_report_of(lab: Lab, node: str, kind: str, lines: int = 10) -> str:
    """One service's exit and its log's last lines ("it wrote nothing" for an empty log,
    where the report had ended on a dangling "last lines of its log:")."""
    tail = log_tail(os.path.join(lab.node_dir(node), f"{kind}.log"), lines).rstrip()
    if not tail:
        return f"{node}/{kind} exited (its log is empty)\n"
    return f"{node}/{kind} exited; last lines of its log:\n{tail}\n"


def stop_all(lab: Lab) -> list[str]:
    """End the services' daemons gently, by PID (`node/kind` of those that were running)."""

    stopped = []
    for node in sorted({node for node, _svc in planned(lab)}):
        kinds = {s.kind for s in lab.plan.node(node).services}
        stopped += daemons.stop(lab, node, names=kinds)
    return stopped
