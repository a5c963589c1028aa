"""Make a plan real: namespaces, veth pairs, bridges, addresses and routes, in batches.

Order, and why:
1. the ledger records every namespace (one transaction) before the first exists;
2. worker threads create the namespaces (unshare + bind mount) and set their sysctls,
   writing each one's identity to the ledger as they go;
3. one host socket creates every veth pair with both ends born in their namespaces, with
   fixed ifindexes, in a few system calls;
4. each namespace gets one batch (lo and ports up, bridges, addresses, routes), sent from
   inside it by worker threads, a netlink socket per namespace: one thread's kernel work
   overlaps another's Python.
Rate limits (tc) follow through pyroute2, one call per limited interface.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from netrig.base import stopsignals
from netrig.base.values import counted
from netrig.lab import netns, nlwire
from netrig.lab.ledger import Ledger
from netrig.plan.model import LabPlan, LinkPlan, NodePlan

T = TypeVar("T")
R = TypeVar("R")


class LabError(Exception):
    """A runtime failure while building or using a lab (exit code 1)."""

    exit_code = 1


class BadInput(LabError):
    """The request cannot be honoured as given (exit code 2)."""

    exit_code = 2


@dataclass
class BuildTimings:
    namespaces: float = 0.0
    links: float = 0.0
    config: float = 0.0
    tc: float = 0.0
    total: float = 0.0
    routes: int = 0
    messages: int = 0
    extra: dict[str, float] = field(default_factory=dict)


Progress = Callable[[str], None]


def preflight(plan: LabPlan, ledger: Ledger) -> None:
    """Refuse before creating anything: not root, lab already up, or a name taken."""
    if os.geteuid() != 0:
        raise BadInput("netrig must run as root to create network namespaces")
    existing = ledger.lab(plan.name)
    if existing is not None:
        alive = existing.builder_alive()
        if existing.state == "building" and not alive:
            raise BadInput(  # kill -9 (or a crash) in the middle of `up`
                f"lab {plan.name!r} was being built by netrig process {existing.pid}, which "
                f"ended before it finished; nothing changed. `netrig clean {plan.name}` "
                "removes what it left"
            )
        if alive:  # `down` would pull it from under that process
            raise BadInput(
                f"lab {plan.name!r} is already {existing.state} and in use by netrig process "
                f"{existing.pid} (an experiment, or a lab being built); nothing changed. "
                "Choose another name (--name), or wait for that process to end"
            )
        raise BadInput(
            f"lab {plan.name!r} is already {existing.state} (built by pid {existing.pid}); "
            f"nothing changed. `netrig down {plan.name}` removes it"
        )
    taken = [n.ns for n in plan.nodes.values() if netns.exists(n.ns)]
    if taken:
        owner = ledger.netns_owner(taken[0])
        raise BadInput(
            f"namespace {taken[0]!r} belongs to node {owner[1]} of lab {owner[0]!r}: the "
            "names collide (lab name - node name). Choose another lab name"
            if owner
            else f"namespace {taken[0]!r} already exists and is not part of a netrig lab; "
            "netrig will not touch it. Choose another lab name"
        )


def build(
    plan: LabPlan,
    ledger: Ledger,
    progress: Progress | None = None,
    spare: netns.SpareNamespaces | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> BuildTimings:
    """Create everything in the plan; on any failure the caller tears down from the ledger.
    spare: namespaces made ahead (unnamed) to name instead of making new ones; the caller
    closes it. meanwhile: the caller's own Python work (reading the plan only), run while
    the kernel makes the veth pairs."""
    say = progress or (lambda _msg: None)
    t = BuildTimings()
    start = time.perf_counter()
    netns.prepare_run_dir()
    nodes = plan.namespace_nodes()
    _record_names(plan.name, nodes, ledger)

    say(f"creating {counted(len(nodes), 'namespace')}")
    _create_namespaces(plan, nodes, ledger.state_dir, spare)
    t.namespaces = time.perf_counter() - start
    say(f"creating {counted(len(plan.links), 'link')}")
    mark = time.perf_counter()
    # the veth pairs are one batch, the kernel's work: this thread waits in the kernel
    # without the GIL, and a helper takes the routes over from their planner (a forked
    # child, if the plan says so), packs every namespace's batch and runs `meanwhile`
    packing = _Beside(lambda: _pack_batches(plan, nodes, meanwhile))
    _create_links(plan)
    t.links = time.perf_counter() - mark
    say("configuring addresses and routes")
    mark = time.perf_counter()
    batches = packing.result()
    t.extra["waited for batches"] = time.perf_counter() - mark
    mark = time.perf_counter()
    t.messages, t.routes = _configure(nodes, batches)
    t.config = time.perf_counter() - mark
    mark = time.perf_counter()
    _apply_tc(plan)
    t.tc = time.perf_counter() - mark
    t.total = time.perf_counter() - start
    return t


class _Beside(Generic[R]):
    """fn() in a thread of its own while the caller goes on; result() waits and re-raises.
    A caller that fails meanwhile need not wait: the thread only computes (daemon)."""

    def __init__(self, fn: Callable[[], R]) -> None:
        self._box: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], R]) -> None:
        try:
            self._box["value"] = fn()
        except BaseException as exc:  # re-raised by result()
            self._box["error"] = exc

    def result(self) -> R:
        self._thread.join()
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


def _pack_batches(
    plan: LabPlan, nodes: list[NodePlan], meanwhile: Callable[[], None] | None
) -> dict[str, list[nlwire.PackedChunk]]:
    plan.finish_routes()  # planned meanwhile in a forked child, if the plan says so
    forwarding4 = ipv4_forwarding(plan)
    batches = {n.ns: nlwire.pack_batch(node_requests(n, forwarding4)) for n in nodes}
    if meanwhile is not None:
        meanwhile()
    return batches


def workers(count: int) -> int:
    """Worker threads for `count` namespaces: one per core (the kernel work of one overlaps
    the Python of another; more only contend for the kernel's locks), none idle."""
    return max(1, min(count // 16 or 1, os.cpu_count() or 1, 8))


def in_workers(items: list[T], fn: Callable[[list[T], threading.Event], R]) -> list[R]:
    """fn over interleaved shares of items, each share in its own thread (which may setns
    and unshare freely). If the caller is interrupted while waiting (Ctrl-C), the workers
    are told to stop and waited for, so nothing is created behind the clean-up's back."""
    count = workers(len(items))
    cancel = threading.Event()
    all_started = threading.Event()
    results: list[R | None] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            # started with the stop signals blocked: unblocked here, so nothing this thread
            # starts inherits a mask that would keep SIGTERM from it; only once every
            # worker runs (a signal this thread took earlier would be raised in the main
            # thread between two starts, and a worker started then would go unjoined)
            all_started.wait()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stopsignals.STOP_SIGNALS)
            results[i] = fn(items[i::count], cancel)
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)
            cancel.set()

    threads = [threading.Thread(target=run, args=(i,), name="netrig-build") for i in range(count)]
    started: list[threading.Thread] = []
    try:
        # a signal landing inside Thread.start() would leave that thread running unjoined
        # (and creating namespaces behind the clean-up): held until all have started
        try:
            with stopsignals.held():
                for thread in threads:
                    thread.start()
                    started.append(thread)
        except BaseException:
            cancel.set()  # before they go on
            raise
        finally:
            all_started.set()
        for thread in started:
            thread.join()
    except BaseException:
        cancel.set()
        for thread in started:
            thread.join()
        raise
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]


LEDGER_EVERY = 0.05  # s: how often a worker writes the identities of the namespaces it made


PER_INTERFACE = ("net.ipv4.ip_forward", "net.ipv4.conf.all.forwarding")
INIT_NET_INODE = 0xEFFFFFF9  # the host's initial namespace (PROC_NET_INIT_INO: fixed by the
#                              kernel; /proc/1/ns/net may not be readable, e.g. in a VM's init)
DAEMONLESS = ("static", "ecmp")  # protocols whose nodes get no interface netrig did not make


def ipv4_forwarding(plan: LabPlan) -> bool | None:
    """IPv4 forwarding as the plan's sysctls want it (None: not said): every interface
    netrig brings up gets it (nlwire.set_link), as it would from `ip_forward`."""
    value = plan.sysctls.get("net.ipv4.conf.all.forwarding", plan.sysctls.get(PER_INTERFACE[0]))
    return None if value is None else str(value) == "1"


def namespace_sysctls(plan: LabPlan) -> list[tuple[str, str]]:
    """The sysctls each new namespace needs written. The first write under a family's
    /proc/sys/net directory in a new namespace costs ~0.1 ms, growing with the number of
    namespaces (its lookup compares the namespaces' directory entries one by one; see
    netns.SysctlWriter, which keeps that short for the writes that remain): so
    nothing is written that the namespace starts with (IPv4's conf/all and conf/default
    come from the host's), and in a lab whose nodes run no daemon IPv4 forwarding is
    switched on per interface as each comes up, not by `ip_forward` (which then reads 0
    while every lab interface forwards)."""
    inherited = _inherited(plan)
    per_interface = plan.protocol in DAEMONLESS and ipv4_forwarding(plan)
    return [
        (key, str(value))
        for key, value in plan.sysctls.items()
        if inherited.get(key) != str(value) and not (per_interface and key in PER_INTERFACE)
    ]


def _inherited(plan: LabPlan) -> dict[str, str]:
    """Values of the plan's sysctls that a new namespace copies from the host's: IPv4's
    conf/all, conf/default and ip_forward (also IPv6's with net.core.devconf_inherit_init_net
    1), read from here when this process is in the host's initial namespace."""
    try:
        if os.stat("/proc/self/ns/net").st_ino != INIT_NET_INODE:
            return {}
        mode = netns.read_sysctl("net.core.devconf_inherit_init_net")
    except OSError:
        return {}
    families = {"0": ("ipv4",), "1": ("ipv4", "ipv6")}.get(mode, ())
    copied = tuple(f"net.{f}.conf.{which}." for f in families for which in ("all", "default"))
    out = {}
    for key in plan.sysctls:
        if key.startswith(copied) or (key == PER_INTERFACE[0] and "ipv4" in families):
            with suppress(OSError):
                out[key] = netns.read_sysctl(key)
    return out


def _create_namespaces(
    plan: LabPlan,
    nodes: list[NodePlan],
    state_dir: str,
    spare: netns.SpareNamespaces | None = None,
) -> None:
    """Each namespace (a spare one named, else a new one) and its sysctls, spread over
    worker threads. Each worker writes the identities (nsfs inodes) of what it made to the
    ledger every LEDGER_EVERY seconds; until then the ledger's intent rows name them
    (trusted by name: the names were free)."""
    sysctls = namespace_sysctls(plan)
    if spare is not None:
        spare.stop()  # no more made behind the workers' backs

    def work(share: list[NodePlan], cancel: threading.Event) -> None:
        ledger = Ledger(state_dir)  # the thread's own connection
        writer = netns.SysctlWriter()
        made: dict[str, int] = {}
        last = time.monotonic()
        try:
            for node in share:
                if cancel.is_set():
                    raise KeyboardInterrupt
                fd = spare.take() if spare is not None else None
                if fd is None:
                    netns.unshare(netns.CLONE_NEWNET)
                else:
                    netns.adopt(fd)
                netns.mount_here(node.ns)
                made[node.ns] = netns.ns_inode(node.ns) or 0
                writer.new_namespace()
                for key, value in sysctls:
                    try:
                        writer.write(key, value)
                    except FileNotFoundError:
                        if "ipv6" not in key:  # IPv6 may be disabled on the host
                            raise
                if time.monotonic() - last > LEDGER_EVERY:
                    ledger.created_netns(made)
                    made, last = {}, time.monotonic()
        finally:
            writer.close()
            if made:
                ledger.created_netns(made)
            ledger.close()

    try:
        in_workers(nodes, work)
    except OSError as exc:
        raise LabError(f"creating namespaces: {exc}") from exc


def _record_names(lab: str, nodes: list[NodePlan], ledger: Ledger) -> None:
    """Record every namespace of the lab, then make its name (the file it will be mounted
    on: netns.make_mount_points), with the stop signals held. Until a namespace's identity
    is recorded the clean-up trusts its row by name, so no row may outlive a name we did not
    make: those not made (taken by someone else since preflight looked, or a failure) are
    forgotten again before any signal can start the clean-up."""
    names = [n.ns for n in nodes]
    made: list[str] = []
    with stopsignals.held():
        try:
            ledger.intend_netns(lab, [(n.ns, n.name) for n in nodes])
        except sqlite3.IntegrityError:  # another lab recorded one of these names meanwhile
            raise BadInput(
                f"a namespace of lab {lab!r} was taken by another lab built at the same "
                "moment: their names collide (lab name - node name). Choose another lab name"
            ) from None
        try:
            netns.make_mount_points(names, made)
        except BaseException as exc:
            unmade = set(names[len(made) :])
            for record in ledger.objects(lab, "netns"):
                if record.name in unmade and record.state == "intent":
                    ledger.forget_object(record.id)
            if isinstance(exc, FileExistsError):  # preflight found it free
                taken = os.path.basename(exc.filename2 or exc.filename or "")
                raise LabError(f"creating namespaces: {taken} exists") from None
            if isinstance(exc, OSError):
                raise LabError(f"creating namespaces: {exc}") from exc
            raise


LINKS_PER_BATCH = 512  # veth pairs per batch; bounds the namespace descriptors held open


def _create_links(plan: LabPlan) -> None:
    """Every veth pair, both ends born in their namespaces, from one host socket."""
    with nlwire.RtnlSocket() as sock:
        for first in range(0, len(plan.links), LINKS_PER_BATCH):
            links = plan.links[first : first + LINKS_PER_BATCH]
            fds: dict[str, int] = {}
            try:
                for link in links:
                    for name in (link.a, link.b):
                        if name not in fds:
                            fds[name] = netns.open_fd(plan.nodes[name].ns)
                errors = sock.send_batch([_veth(plan, link, fds) for link in links])
            finally:
                for fd in fds.values():
                    os.close(fd)
            if errors:
                raise LabError(
                    f"creating links: {errors[0]}"
                    + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else "")
                )


HUB_PORTS = 16  # a node with more interfaces is a hub (a star's centre, a Clos leaf)
# Each carrier that comes up in a namespace walks all of its IPv6 routes (the kernel's
# rt6_sync_up): a hub's ports must come up while its table is small, or building it is
# quadratic (a 1,000-leaf star: configuration 1.4-1.9 s, 0.7-0.9 s so). So a veth pair is born
# up at its end that is not a hub's, and hubs are configured after the other nodes.


def _veth(plan: LabPlan, link: LinkPlan, fds: dict[str, int]) -> nlwire.Request:
    a, b = plan.nodes[link.a], plan.nodes[link.b]
    a_name, b_name = link.a_iface, link.b_iface
    if len(a.ifaces) > max(HUB_PORTS, len(b.ifaces)):  # born up: the end that is no hub's
        a, b, a_name, b_name = b, a, b_name, a_name
    a_if, b_if = a.iface(a_name), b.iface(b_name)
    return nlwire.new_veth(
        a_name,
        b_name,
        ns_fd=fds[a.name],
        peer_ns_fd=fds[b.name],
        index=a_if.index,
        peer_index=b_if.index,
        mtu=link.mtu,
        mac=a_if.mac or None,
        peer_mac=b_if.mac or None,
        what=f"veth {link.a}:{link.a_iface} – {link.b}:{link.b_iface}",
    )


def _configure(
    nodes: list[NodePlan], batches: dict[str, list[nlwire.PackedChunk]]
) -> tuple[int, int]:
    """One batch per namespace (links up, addresses, neighbours, routes; packed before),
    sent from inside it by worker threads, each with its own netlink socket per namespace.
    Returns the counts of messages and routes."""

    def work(share: list[NodePlan], cancel: threading.Event) -> tuple[int, int]:
        messages = routes = 0
        for node in share:
            if cancel.is_set():
                raise KeyboardInterrupt
            batch = batches[node.ns]
            with netns.entered(node.ns), nlwire.RtnlSocket() as sock:
                errors = sock.send_packed(batch)
            if errors:
                more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
                raise LabError(f"in {node.ns}: {errors[0]}{more}")
            messages += sum(len(chunk.whats) for chunk in batch)
            routes += len(node.routes)
        return messages, routes

    hubs_last = sorted(nodes, key=lambda n: len(n.ifaces) > HUB_PORTS)  # see HUB_PORTS
    counts = in_workers(hubs_last, work)
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def node_requests(node: NodePlan, forwarding4: bool | None = None) -> list[nlwire.Request]:
    """Everything one namespace needs after its links exist, in dependency order; every
    interface comes up with IPv4 forwarding as `forwarding4` says (None: left alone)."""
    where = node.ns
    reqs = [nlwire.set_link(1, up=True, what=f"lo up in {where}")]
    if node.bridge:
        br = node.bridge
        reqs.append(
            nlwire.new_bridge(
                br.name, index=br.index, stp=br.stp, mac=br.mac or None, what=f"bridge in {where}"
            )
        )
        if forwarding4 is not None:
            reqs.append(
                nlwire.set_link(br.index, forwarding4=forwarding4, what=f"{br.name} in {where}")
            )
    for iface in node.ifaces:
        master = node.bridge.index if node.bridge and iface.master == node.bridge.name else None
        reqs.append(
            nlwire.set_link(
                iface.index,
                up=True,
                master=master,
                forwarding4=forwarding4,
                what=f"{iface.name} up in {where}",
            )
        )
    for cidr in node.loopbacks:
        addr, plen = cidr.split("/")
        reqs.append(nlwire.new_addr(1, addr, int(plen), what=f"address {cidr} on lo in {where}"))
    ports = [(node.bridge.index, node.bridge.addrs)] if node.bridge else []
    ports += [(i.index, i.addrs) for i in node.ifaces]
    for index, cidrs in ports:
        for cidr in cidrs:
            addr, plen = cidr.split("/")
            brd = _broadcast(addr, int(plen))
            reqs.append(
                nlwire.new_addr(
                    index, addr, int(plen), broadcast=brd, what=f"address {cidr} in {where}"
                )
            )
    for index, addr, mac in node.neighbors:
        reqs.append(nlwire.new_neighbor(index, addr, mac, what=f"neighbour {addr} in {where}"))
    return reqs + route_requests(node)


def route_requests(
    node: NodePlan, usable: set[int] | None = None, replace: bool = False
) -> list[nlwire.Request]:
    """The node's planned routes. Also what a link brought back up needs: the kernel deletes
    the routes through an interface that goes administratively down. `usable`: only the next
    hops out of these interfaces (a route with none left is not there); `replace`: each in
    place of the node's route to its destination (one with fewer next hops)."""
    # traffic a node starts towards the lab leaves from its loopback, as on a router: replies
    # to an unbound socket then come from the address the peer asked for
    prefsrc = {":" in c: c.split("/")[0] for c in reversed(node.loopbacks)}
    reqs = []
    for route in node.routes:
        dst, plen = route.dst.split("/")
        hops = route.nexthops
        if usable is not None:
            hops = [hop for hop in hops if hop[1] in usable]
            if not hops:
                continue
        reqs.append(
            nlwire.new_route(
                dst,
                int(plen),
                hops,
                prefsrc=prefsrc.get(":" in dst),
                what=f"route {route.dst} in {node.ns}",
                replace=replace,
            )
        )
    return reqs


def _broadcast(addr: str, plen: int) -> str | None:
    """`brd +`: the subnet's broadcast address, for IPv4 subnets with one (not /31, /32)."""
    if ":" in addr or plen >= 31:
        return None
    from ipaddress import IPv4Network

    return str(IPv4Network(f"{addr}/{plen}", strict=False).broadcast_address)


def set_tbf(
    ipr: Any,
    index: int,
    rate: int,
    burst: int | None = None,
    mtu: int | None = None,
) -> None:
    """A token bucket of `rate` bit/s as the root qdisc of one interface (pyroute2 IPRoute).

    The burst is at least 5 ms at line rate, so the bucket does not starve TCP, and one
    full frame (a bucket smaller than a frame never sends one: MTU 65535 and 16 KiB)."""
    size = burst or max(16 * 1024, rate // 8 // 200, (mtu or 1500) + 14)
    ipr.tc("add", "tbf", index=index, handle="1:", rate=rate // 8, burst=size, latency=50_000)


def _apply_tc(plan: LabPlan) -> None:
    """Token bucket rate limits, on both ends of each limited link (one per direction)."""
    limited = [link for link in plan.links if link.rate]
    if not limited:
        return
    from pyroute2 import IPRoute

    by_node: dict[str, list[tuple[int, int, int | None, int | None]]] = {}
    for link in limited:
        assert link.rate is not None
        for node, ifname in ((link.a, link.a_iface), (link.b, link.b_iface)):
            index = plan.nodes[node].iface(ifname).index
            by_node.setdefault(node, []).append((index, link.rate, link.burst, link.mtu))
    for node, items in by_node.items():

        def apply(items: list[tuple[int, int, int | None, int | None]] = items) -> None:
            with IPRoute() as ipr:
                for index, rate, burst, mtu in items:
                    set_tbf(ipr, index, rate, burst, mtu=mtu)

        try:
            netns.in_netns(plan.nodes[node].ns, apply)
        except Exception as exc:  # pyroute2 raises NetlinkError, a subclass of Exception
            raise LabError(f"rate limit on {node}: {exc}") from exc
