"""`netrig up/down/exec/status --cluster ADDR`: one lab over several hosts (client side).

    up:     place the nodes (placement.partition), split the plan (parts.split), build
            every host's part at once (a Dask task per host), then ping across every
            tunnel and between sampled pairs of nodes on different hosts;
    down:   every host removes its part (all hosts are asked: no state on the client);
    exec:   the command runs on the host that has the node;
    link:   each end on its host (a cut link: both tunnel ends, then their routes);
    status: each host's labs.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netrig.cluster import nodeops, parts, placement
from netrig.cluster.host import FACTS_KEY, RESOURCE
from netrig.cluster.sweep import connect, hosts_of
from netrig.lab.build import BadInput, LabError
from netrig.plan.model import LabPlan

SAMPLED_PAIRS = 8


@dataclass
class SpreadLab:
    name: str
    where: dict[str, str]  # node → host
    cut: int  # links that are tunnels
    built: list[dict[str, Any]]
    checked: list[str]  # "n1 → n31 (h1 → h2)"
    check_seconds: float = 0.0

    @property
    def build_seconds(self) -> float:
        """The slowest host's build (its part and its tunnels)."""
        return max((b.get("seconds", {}).get("total", 0.0) for b in self.built), default=0.0)


def _result(future: Any) -> Any:
    """A task's result; an error on a host (not netrig's own) as a LabError naming it."""
    try:
        return future.result()
    except LabError:
        raise
    except Exception as exc:
        raise LabError(f"on the cluster: {type(exc).__name__}: {exc}") from None


def _pinned(client: Any, fn: Callable[..., Any], address: str, *args: Any) -> Any:
    return client.submit(fn, *args, workers=[address], allow_other_workers=False,
                         resources={RESOURCE: 1}, pure=False)


def up(plan: LabPlan, address: str, hosts: int | None = None,
       say: Callable[[str], None] = lambda _m: None, check: bool = True,
       pins: dict[str, str] | None = None) -> SpreadLab:
    """Build PLAN over `hosts` of the cluster's hosts (all of them by default); PINS: nodes
    that go to a named host (`host:` in the lab file)."""
    with connect(address) as client:
        return up_with(client, plan, address, hosts, say, check, pins)


def up_with(client: Any, plan: LabPlan, address: str, hosts: int | None = None,
            say: Callable[[str], None] = lambda _m: None, check: bool = True,
            pins: dict[str, str] | None = None, lease: str | None = None) -> SpreadLab:
    """`up` through a client that is connected already (`netrig run --cluster`); LEASE:
    the sweep's key at the scheduler (`tasks.take_lease`): each host removes its part
    once the key is gone (the client died)."""
    address_of = {name: addr for addr, name in hosts_of(client).items()}
    names = sorted(address_of)
    if not names:
        raise BadInput(f"no netrig worker is connected to {address}")
    wanted = hosts or len(names)
    if wanted > len(names):
        raise BadInput(f"placement asks for {wanted} hosts; {address} has {len(names)}: "
                       f"{', '.join(names)}")
    unknown = sorted({h for h in (pins or {}).values() if h not in address_of})
    if unknown:
        raise BadInput(f"host: {', '.join(unknown)} is no host of {address} (it has "
                       f"{', '.join(names)})")
    names = sorted(set(names[:wanted]) | set((pins or {}).values()))
    taken = sorted(h for h, there in _labs(client).items()
                   if any(lab[0] == plan.name for lab in there))
    if taken:  # refused before anything is built: a failed build below removes its parts
        raise BadInput(f"lab {plan.name} is already up on {', '.join(taken)}; nothing "
                       f"changed. `netrig down {plan.name} --cluster {address}` removes it")
    facts = client.get_metadata([FACTS_KEY], default={})
    try:
        where = placement.place(list(plan.nodes), [(lk.a, lk.b) for lk in plan.links], names,
                                pins)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    split = parts.split(plan, where)
    for part in split.values():
        features = facts.get(part.host, {}).get("features", {})
        if part.tunnels and features.get("vxlan", "present") != "present":
            raise BadInput(f"host {part.host} has no VXLAN in its kernel (netrig doctor "
                           "there); a lab across hosts needs it for its cut links")
        for tunnel in part.tunnels:
            tunnel.remote = str(facts.get(tunnel.remote_host, {}).get("underlay_addr") or "")
            if not tunnel.remote:
                raise LabError(f"host {tunnel.remote_host} published no underlay address")
    cut = placement.cut_links([(lk.a, lk.b) for lk in plan.links], where)
    say(f"{len(plan.nodes)} nodes on {len(split)} hosts, {cut} links cut (VXLAN tunnels)")
    # each part straight to its host (scattered, not inside the task: the scheduler
    # would unpickle and pickle again every part's routes, 2.4 MB each at 2,000 nodes)
    shipped = {h: client.scatter(p, workers=[address_of[h]], direct=True, hash=False)
               for h, p in split.items()}
    futures = {h: _pinned(client, parts.build_part, address_of[h], shipped[h], lease)
               for h in split}
    built, errors = [], []
    for host, future in futures.items():
        try:
            built.append(future.result())
        except Exception as exc:  # one host failed (and removed what it had built):
            errors.append(f"{host}: {exc}")  # the other hosts' parts must go too
    if errors:
        _down(client, {b["host"]: address_of[b["host"]] for b in built}, plan.name)
        raise LabError(f"lab {plan.name} could not be built: {'; '.join(errors)}")
    lab = SpreadLab(plan.name, where, cut, built, [])
    if check:
        try:
            started = time.monotonic()
            lab.checked = _check(client, address_of, plan, where)
            lab.check_seconds = time.monotonic() - started
        except LabError:
            _down(client, address_of, plan.name)
            raise
    return lab


def _pairs(plan: LabPlan, where: dict[str, str]) -> list[tuple[str, str]]:
    """Both ends of every cut link, and sampled pairs on different hosts among those the
    lab core's own check would ping: the routing connects them, and they are within reach
    of the replies' TTL. Sampled from a few sources' neighbourhoods (a search as deep as
    the TTL), not from the whole lab's pairs (1.6 s at 2,000 nodes)."""
    from collections import deque

    from netrig.lab.check import default_ttl

    pairs = [(lk.a, lk.b) for lk in plan.links if where[lk.a] != where[lk.b]]
    if plan.protocol == "none":  # only direct neighbours are connected
        return pairs
    members: dict[str, list[str]] = {}
    for net in plan.networks:
        for node, _port in net.members:
            members.setdefault(node, []).extend(m for m, _ in net.members if m != node)
    sources = sorted(n.name for n in plan.hosts() if n.addresses(4))
    reach = default_ttl(plan, 4)
    rng = random.Random(0)
    sampled: set[tuple[str, str]] = set()
    for _ in range(4 * SAMPLED_PAIRS):
        if len(sampled) >= SAMPLED_PAIRS or not sources:
            break
        src = rng.choice(sources)
        hops, queue = {src: 0}, deque([src])
        while queue:  # breadth first, no further than the replies' TTL reaches
            node = queue.popleft()
            if hops[node] + 1 >= reach:
                continue
            for peer in members.get(node, []):
                if peer not in hops:
                    hops[peer] = hops[node] + 1
                    queue.append(peer)
        far = sorted(n for n in hops if where.get(n, where[src]) != where[src]
                     and plan.nodes[n].kind == "host" and plan.nodes[n].addresses(4)
                     and (src, n) not in pairs)
        if far:
            sampled.add((src, rng.choice(far)))
    return pairs + sorted(sampled)


def _check(client: Any, address_of: dict[str, str], plan: LabPlan,
           where: dict[str, str]) -> list[str]:
    """Ping across hosts (each from the host of its source). Routing daemons converge
    after `up` returned on each host: a pair is retried until the protocol's time is up."""
    deadline = time.monotonic() + _wait_for(plan)
    checked, failed = [], []
    todo = {(a, b): f"{a} → {b} ({where[a]} → {where[b]}, {plan.addr(b)})"
            for a, b in _pairs(plan, where)}
    while todo:  # every pair at once (each ping on the host of its source), then the rest
        futures = {pair: client.submit(
            parts.exec_part, plan.name, pair[0],
            ["ping", "-c1", "-W1", "-t", "255", plan.addr(pair[1])],
            workers=[address_of[where[pair[0]]]], allow_other_workers=False, pure=False,
        ) for pair in todo}
        for pair, future in futures.items():
            result = _result(future)
            if result and result[1] == 0:
                checked.append(todo.pop(pair))
        if todo and time.monotonic() > deadline:
            failed = list(todo.values())
            break
        if todo:
            time.sleep(0.5)
    if failed:
        raise LabError(f"unreachable across hosts: {', '.join(failed[:5])}")
    return checked


check_with = _check  # the pings across hosts again (a run's lab before its events)


def _wait_for(plan: LabPlan) -> float:
    """How long pairs may take to answer: the lab's check timeout, or the protocol's."""
    from netrig import routing

    proto = routing.make(plan.protocol, plan.routing_options)
    if not proto.runs_daemons():
        return plan.check_timeout
    return max(plan.check_timeout, proto.convergence_timeout)


def _down(client: Any, address_of: dict[str, str], name: str) -> list[tuple[str, int]]:
    """Every host of ADDRESS_OF removes its part of lab NAME: (host, namespaces removed)."""
    futures = [_pinned(client, nodeops.down_part, addr, name) for addr in address_of.values()]
    return [_result(f) for f in futures]


def down(name: str, address: str) -> list[tuple[str, int]]:
    """Every host removes its part of lab NAME: (host, namespaces removed)."""
    with connect(address) as client:
        return _down(client, {n: a for a, n in hosts_of(client).items()}, name)


def exec_on(name: str, node: str, argv: list[str], address: str) -> tuple[str, int, str, str]:
    """Run ARGV in NODE on whichever host has it: (host, rc, stdout, stderr)."""
    with connect(address) as client:
        futures = [client.submit(parts.exec_part, name, node, argv, workers=[addr],
                                 allow_other_workers=False, pure=False)
                   for addr in hosts_of(client)]
        for future in futures:
            found = _result(future)
            if found is not None:
                return found
    raise BadInput(f"no host of {address} has node {node!r} of a lab {name!r}")


@dataclass
class LinkChange:
    ends: list[tuple[str, str]]  # (host, "node:iface"), A's end first
    tunnel: bool  # a cut link (a VXLAN tunnel end on each of two hosts)


def link(name: str, a: str, b: str, up: bool, address: str) -> LinkChange:
    """Both ends of the A–B link of lab NAME down (or up again), each on its host."""
    with connect(address) as client:
        return link_with(client, name, a, b, up, address)


def link_with(client: Any, name: str, a: str, b: str, up: bool, address: str) -> LinkChange:
    """`link` through a client that is connected already (events of `netrig run`)."""
    workers = list(hosts_of(client))

    def on_every_host(step: str) -> list[dict[str, Any]]:
        futures = [client.submit(parts.link_part, name, a, b, up, step, workers=[w],
                                 allow_other_workers=False, pure=False) for w in workers]
        found = [r for r in (_result(f) for f in futures) if r is not None]
        errors = [r["error"] for r in found if r["error"]]
        if errors:
            raise BadInput(errors[0])
        return found

    done = on_every_host("ends")
    if not done:
        raise BadInput(f"no host of {address} has node {a!r} or {b!r} of a lab {name!r}")
    tunnel = all(r["tunnel"] for r in done)
    if tunnel and len(done) != 2:
        raise BadInput(f"lab {name}: the other end of {a}–{b} is on no host of {address}")
    if up:  # routes only once both ends are up: their nexthops are reachable
        on_every_host("routes")
    # the ends in the order the command names them (hosts answer in their own order)
    ends = sorted(((r["host"], end) for r in done for end in r["ends"]),
                  key=lambda host_end: host_end[1].partition(":")[0] != a)  # fmt: skip
    return LinkChange(ends, tunnel)


def node_addr(name: str, node: str, address: str, family: int = 4) -> str:
    """The address that stands for NODE of lab NAME (asked of the host that has it)."""
    with connect(address) as client:
        futures = [client.submit(parts.addr_part, name, node, family, workers=[w],
                                 allow_other_workers=False, pure=False)
                   for w in hosts_of(client)]
        for found in (_result(f) for f in futures):
            if found is not None:
                return str(found)
    raise BadInput(f"no host of {address} has node {node!r} (with an IPv{family} address) "
                   f"of a lab {name!r}")


down_with = _down  # through a client connected already (`netrig run --cluster`)


def status(address: str) -> dict[str, list[tuple[str, str, int, bool]]]:
    """host → its labs (name, state, nodes, kept for a sweep of `netrig run --cluster`)."""
    with connect(address) as client:
        return _labs(client)


def _labs(client: Any) -> dict[str, list[tuple[str, str, int, bool]]]:
    futures = [client.submit(parts.labs_here, workers=[addr], allow_other_workers=False,
                             pure=False) for addr in hosts_of(client)]
    return dict(_result(f) for f in futures)


status_with = _labs  # through a client connected already


Hops = list[tuple[str, str, str | None]]  # (host, node, out interface)


def trace(name: str, src: str, dst: str, address: str, proto: str = "tcp",
          sport: int = 40000, dport: int = 5201) -> tuple[Hops, bool, str | None]:
    """The hops of one flow from SRC to the address DST across the lab's hosts:
    [(host, node, out interface)], reached, error. Each host traces its part; a hop out
    of a tunnel goes on at the peer node, on the peer's host."""
    with connect(address) as client:
        return trace_with(client, name, src, dst, proto, sport, dport)


def trace_with(client: Any, name: str, src: str, dst: str, proto: str = "tcp",
               sport: int = 40000, dport: int = 5201) -> tuple[Hops, bool, str | None]:
    """`trace` through a client connected already."""
    return trace_flows_with(client, name, src, dst, [sport], proto, dport)[0]


def trace_flows_with(client: Any, name: str, src: str, dst: str, sports: list[int],
                     proto: str = "tcp", dport: int = 5201
                     ) -> list[tuple[Hops, bool, str | None]]:
    """Each flow (one per source port) from SRC to the address DST, host by host: every
    host is asked once per round for all the flows whose next node it has (a round per
    host change, at most 64: more means a loop)."""
    workers = list(hosts_of(client))
    # flow id → [node, ingress ifindex, source address, hops so far]
    going: dict[int, list[Any]] = {i: [src, None, None, []] for i in range(len(sports))}
    done: dict[int, tuple[Hops, bool, str | None]] = {}
    for _ in range(64):
        if not going:
            break
        batch = [(i, f[0], f[1], f[2], sports[i]) for i, f in going.items()]
        futures = [client.submit(parts.trace_flows, name, dst, proto, dport, batch,
                                 workers=[w], allow_other_workers=False, pure=False)
                   for w in workers]
        answers: dict[int, tuple[str, dict[str, Any]]] = {}
        for found in (_result(f) for f in futures):
            if found is not None:
                answers.update({i: (found["host"], r) for i, r in found["flows"].items()})
        for i, flow in list(going.items()):
            if i not in answers:
                done[i] = (flow[3], False, f"no host has node {flow[0]!r} of a lab {name!r}")
                del going[i]
                continue
            host, part = answers[i]
            flow[3] += [(host, n, out) for n, out in part["hops"]]
            flow[2] = flow[2] or part["from"]  # the flow keeps the address its source chose
            if part["next"] is None:
                done[i] = (flow[3], part["reached"], part["error"])
                del going[i]
            else:
                flow[0], flow[1], _host = part["next"]
    for i, flow in going.items():
        done[i] = (flow[3], False, "the path changes hosts more than 64 times (a loop?)")
    return [done[i] for i in range(len(sports))]


PathKey = tuple[tuple[tuple[str, str, str | None], ...], bool, str | None]


def count_paths(name: str, src: str, dst: str, flows: int, address: str, proto: str = "tcp",
                dport: int = 5201, first_sport: int = 32768) -> Counter[PathKey]:
    """How many of FLOWS flows (source ports first_sport…) take each path across hosts:
    (hops, reached, error) → flows."""
    with connect(address) as client:
        traced = trace_flows_with(client, name, src, dst,
                                  [first_sport + i for i in range(flows)], proto, dport)
    return Counter((tuple(hops), reached, error) for hops, reached, error in traced)
