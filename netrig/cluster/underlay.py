"""The simulated hosts' underlay: one namespace per host, joined by a bridge in a namespace
of its own (never the host's namespace), addressed from 198.51.100.0/24 (TEST-NET-2).

    bridge ns  [br0 198.51.100.1]──h1 ─── ul0 [198.51.100.11]  host 1's underlay ns
                                 └─h2 ─── ul0 [198.51.100.12]  host 2's underlay ns ...

Every namespace is recorded in the cluster's ledger before it exists; the veths and the
bridge live inside those namespaces and go with them.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from ipaddress import IPv4Network

from netrig.lab import netns
from netrig.lab.ledger import Ledger

NETWORK = IPv4Network("198.51.100.0/24")
BRIDGE_ADDR = "198.51.100.1"
FIRST_HOST = 11  # host i (1-based) gets 198.51.100.(10 + i)
MAX_HOSTS = 240
UNDERLAY_IF = "ul0"


@dataclass(frozen=True)
class Underlay:
    bridge_ns: str
    host_ns: list[str]
    host_addrs: list[str]


def plan(cluster: str, hosts: int) -> Underlay:
    if not 1 <= hosts <= MAX_HOSTS:
        raise ValueError(f"--hosts must be 1..{MAX_HOSTS}, not {hosts}")
    return Underlay(
        bridge_ns=f"nrc-{cluster}-br",
        host_ns=[f"nrc-{cluster}-h{i}" for i in range(1, hosts + 1)],
        host_addrs=[str(NETWORK[FIRST_HOST - 1 + i]) for i in range(1, hosts + 1)],
    )


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def create(underlay: Underlay, ledger: Ledger, lab: str) -> None:
    """Record, then create, the namespaces; then the bridge, veths and addresses."""
    names = [underlay.bridge_ns, *underlay.host_ns]
    taken = [n for n in names if netns.exists(n)]
    if taken:
        raise RuntimeError(f"namespace {taken[0]!r} exists already; netrig will not touch it")
    ledger.intend_netns(lab, [(n, n) for n in names])
    netns.prepare_run_dir()

    def make() -> dict[str, int]:
        made = {}
        for name in names:
            netns.create_here(name)
            made[name] = netns.ns_inode(name) or 0
        return made

    ledger.created_netns(netns.run_in_thread(make))
    br = underlay.bridge_ns
    _ip("-n", br, "link", "add", "br0", "type", "bridge")
    _ip("-n", br, "addr", "add", f"{BRIDGE_ADDR}/{NETWORK.prefixlen}", "dev", "br0")
    _ip("-n", br, "link", "set", "br0", "up")
    for i, (ns, addr) in enumerate(zip(underlay.host_ns, underlay.host_addrs, strict=True), 1):
        _ip("-n", br, "link", "add", f"h{i}", "type", "veth", "peer", "name", UNDERLAY_IF,
            "netns", ns)
        _ip("-n", br, "link", "set", f"h{i}", "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{addr}/{NETWORK.prefixlen}", "dev", UNDERLAY_IF)
        _ip("-n", ns, "link", "set", UNDERLAY_IF, "up")
        _ip("-n", ns, "link", "set", "lo", "up")


def reachable(underlay: Underlay, timeout: float = 10.0) -> list[str]:
    """Underlay addresses host 1 does not reach (empty when the underlay works). A fresh
    bridge port may drop the first packets (no carrier yet on a loaded machine): each
    address is tried again until `timeout`."""
    import time

    deadline = time.monotonic() + timeout
    missing = list(underlay.host_addrs[1:])
    while missing:
        missing = [addr for addr in missing if subprocess.run(
            ["ip", "netns", "exec", underlay.host_ns[0], "ping", "-c1", "-W1", "-q", addr],
            capture_output=True, check=False,
        ).returncode != 0]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return missing
