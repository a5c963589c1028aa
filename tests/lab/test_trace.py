"""netrig trace follows what the kernels would do, also where a next hop is an IPv6
link-local address on a segment shared by several routers (as BGP unnumbered makes)."""

from __future__ import annotations

import subprocess

from netrig.lab.trace import Tracer
from tests.conftest import requires_root


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


@requires_root
def test_a_link_local_next_hop_on_a_shared_segment_is_followed(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({
        "nodes": [{"name": "n1"}, {"name": "n2"}, {"name": "n3"}, {"name": "sw", "kind": "switch"}],
        "links": [{"a": "n1", "b": "sw"}, {"a": "n2", "b": "sw"}, {"a": "n3", "b": "sw"}],
    })  # fmt: skip
    segment = next(net for net in lab.plan.networks if len(net.members) == 3)
    port = dict(segment.members)
    n3_ns, n1_ns = lab.plan.nodes["n3"].ns, lab.plan.nodes["n1"].ns
    link_local = ip("-6", "-n", n3_ns, "-o", "addr", "show", "dev", port["n3"], "scope", "link")
    gateway = link_local.split()[3].split("/")[0]
    target = lab.addr("n3", 6)
    ip("-6", "-n", n1_ns, "route", "replace", f"{target}/128", "via", gateway, "dev", port["n1"])
    with Tracer(lab.plan) as tracer:
        for proto in ("udp", "icmp"):
            path = tracer.trace("n1", target, proto=proto)
            assert path.reached, (proto, path)
            assert path.nodes() == ["n1", "n3"]
    assert gateway.startswith("fe80:")


@requires_root
def test_a_hop_through_a_switch_whose_link_is_down_is_not_reached(make_lab) -> None:  # type: ignore[no-untyped-def]
    """The FIBs of n2 and n3 still route to each other over the switch; only the switch's
    link to n3 is down. The trace said `n2 (eth0) → n3` while ping lost everything."""
    from netrig.lab import faults

    lab = make_lab({"topology": {"kind": "star", "leaves": 3},
                    "nodes": [{"name": "n1", "kind": "switch"}]})  # fmt: skip
    target = lab.addr("n3")
    with Tracer(lab.plan) as tracer:
        assert tracer.trace("n2", target).nodes() == ["n2", "n3"]
    faults.set_link(lab, "n1", "n3", up=False)
    with Tracer(lab.plan) as tracer:
        path = tracer.trace("n2", target)
    assert not path.reached and path.error == "n3:eth0 is down", path
    assert lab.exec("n2", ["ping", "-c1", "-W1", target]).returncode != 0  # what it says
    with Tracer(lab.plan, stopped=frozenset({"n1"})) as tracer:  # an OVS switch stopped
        assert tracer.trace("n2", lab.addr("n4")).error == "switch n1 is stopped: it forwards nothing"


@requires_root
def test_counting_ipv6_flows_under_an_l3_hash_says_what_it_cannot_see(make_lab) -> None:  # type: ignore[no-untyped-def]
    """Under the l3 policy the kernel hashes an IPv6 flow's label, which sockets set at
    random and route lookups do not carry: the counts cannot show how real flows spread."""
    from tests.conftest import netrig_cli

    for policy, says in (("l3", True), ("l4", False)):
        lab = make_lab({"topology": {"kind": "ring", "nodes": 4},
                        "routing": {"protocol": "ecmp", "hash": policy}})  # fmt: skip
        done = netrig_cli("trace", lab.name, "n1", "n3", "-6", "--count", "4")
        assert done.returncode == 0, done.stderr
        assert ("picks by each flow's label" in done.stdout) is says, (policy, done.stdout)
        v4 = netrig_cli("trace", lab.name, "n1", "n3", "--count", "4")
        assert "label" not in v4.stdout


def send_back(lab, at: str, to: str, dst: str):  # type: ignore[no-untyped-def]
    """AT's route to DST bent back to its neighbour TO; TO's interface toward AT."""
    facing = next(i for i in lab.plan.nodes[to].ifaces if i.peer == at)
    via = facing.addrs[0].split("/")[0]
    lab.exec(at, ["ip", "route", "replace", f"{lab.addr(dst)}/32", "via", via], check=True)
    return facing


@requires_root
def test_a_routing_loop_is_named_as_soon_as_a_lookup_repeats(make_lab) -> None:  # type: ignore[no-untyped-def]
    """Not after 64 hops as a wall of `n2 → n3 → n2 …`."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 4}, "routing": {"protocol": "static"}})
    send_back(lab, "n3", "n2", "n4")
    with Tracer(lab.plan) as tracer:
        path = tracer.trace("n1", lab.addr("n4"))
    assert not path.reached and path.error == "a routing loop: n3 → n2 → n3", path
    assert path.nodes() == ["n1", "n2", "n3", "n2", "n3"]


@requires_root
def test_a_packet_sent_back_to_its_sender_is_named_a_martian(make_lab) -> None:  # type: ignore[no-untyped-def]
    """A cut next to the sender: the neighbour's covering route sends the packet straight
    back, and the sender drops its own address coming in (the kernel's EINVAL had been
    printed as a bare 'Invalid argument')."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}, "routing": {"protocol": "static"}})
    n1_toward_n2 = send_back(lab, "n2", "n1", "n3")
    with Tracer(lab.plan) as tracer:
        path = tracer.trace("n1", lab.addr("n3"))
    assert path.nodes() == ["n1", "n2", "n1"] and not path.reached, path
    assert path.error == (
        f"n1 drops it: its own address {lab.addr('n1')} comes back in on {n1_toward_n2.name} "
        "(a martian: the hop before sends the traffic back)"
    ), path


def test_an_unused_address_of_a_connected_subnet_is_not_reached_nor_a_martian(make_lab) -> None:  # type: ignore[no-untyped-def]
    """pc1 → 192.0.2.99 on its own /24 had been traced across to r1 and back, "a martian";
    pc1 asks for the address on its link and nobody answers."""
    lab = make_lab({
        "nodes": [{"name": "pc1"}, {"name": "r1"}],
        "links": [{"a": "pc1", "b": "r1", "a_addr": "192.0.2.10/24", "b_addr": "192.0.2.1/24"}],
    })  # fmt: skip
    with Tracer(lab.plan) as tracer:
        nobody = tracer.trace("pc1", "192.0.2.99")
        r1 = tracer.trace("pc1", "192.0.2.1")
    assert nobody.nodes() == ["pc1"] and not nobody.reached
    assert nobody.error == ("192.0.2.99 is on pc1's link eth0, where no node has it: pc1 asks "
                            "for it (ARP/ND) and gets no answer")  # fmt: skip
    assert r1.reached and r1.nodes() == ["pc1", "r1"]
    ping = lab.exec("pc1", ["ping", "-c1", "-W1", "192.0.2.99"], capture_output=True)
    assert ping.returncode != 0  # as the kernel has it


DIAMOND = {
    "nodes": [{"name": n} for n in ("src", "r1", "pa", "pb", "r2", "dst")],
    "links": [{"a": "src", "b": "r1"}, {"a": "r1", "b": "pa"}, {"a": "r1", "b": "pb"},
              {"a": "pa", "b": "r2"}, {"a": "pb", "b": "r2"}, {"a": "r2", "b": "dst"}],
    "routing": {"protocol": "ecmp", "hash": "l4"},
}  # fmt: skip


@requires_root
def test_counted_flows_start_at_sport_as_the_kernel_hashes_them(make_lab) -> None:  # type: ignore[no-untyped-def]
    """pps's flows are UDP 10000… → 9: `--count` had always used 32768…, whatever --sport
    said, so its split was not theirs. Each port's path is r1's `ip route get` for it."""
    from tests.conftest import netrig_cli

    lab = make_lab(DIAMOND)
    r1 = lab.plan.nodes["r1"]
    iif = next(i.name for i in r1.ifaces if i.peer == "src")
    peer_of = {i.name: i.peer for i in r1.ifaces}
    target, source = lab.addr("dst"), lab.addr("src")
    ports = range(10000, 10016)
    kernel = {}
    for port in ports:
        said = ip("-n", r1.ns, "-o", "route", "get", target, "from", source, "iif", iif,
                  "ipproto", "udp", "sport", str(port), "dport", "9").split()  # fmt: skip
        kernel[port] = peer_of[said[said.index("dev") + 1]]
    assert set(kernel.values()) == {"pa", "pb"}, kernel  # 16 flows, both paths
    for port in ports:  # --count 1 from a port is that port's flow
        done = netrig_cli("trace", lab.name, "src", "dst", "--proto", "udp", "--dport", "9",
                          "--sport", str(port), "--count", "1")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"source port {port} → 9" in done.stdout
        assert f"→ {kernel[port]} (" in done.stdout, (port, kernel[port], done.stdout)
    done = netrig_cli("trace", lab.name, "src", "dst", "--proto", "udp", "--dport", "9",
                      "--sport", "10000", "--count", "16")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "source ports 10000–10015 → 9" in done.stdout
    rows = [line for line in done.stdout.splitlines() if "→ r1 (" in line]
    counted = {via: int(row.split("│")[1]) for row in rows for via in ("pa", "pb") if f"→ {via} (" in row}
    assert counted == {via: list(kernel.values()).count(via) for via in ("pa", "pb")}, done.stdout


def test_counted_flows_must_have_ports_within_65535() -> None:
    """Ports ran past 65535 and crashed the trace (struct.error); now refused up front,
    before any lab is looked at."""
    from tests.conftest import netrig_cli

    for args, last in ((["--count", "40000"], "72767"), (["--sport", "65000", "--count", "600"], "65599")):
        done = netrig_cli("trace", "nolab", "a", "b", *args)
        assert done.returncode == 2, done.stderr
        assert "would go past port 65535" in done.stderr and f"(the last is {last})" in done.stderr
        assert "Traceback" not in done.stderr


def test_on_a_switch_s_segment_an_unused_address_and_the_switch_itself_are_named(make_lab) -> None:  # type: ignore[no-untyped-def]
    """An unused address of a switched segment had been "outside the lab"; a trace to the
    switch itself said it "has no IPv6 address"."""
    from tests.conftest import netrig_cli

    lab = make_lab({"topology": {"kind": "star", "leaves": 3},
                    "nodes": [{"name": "n1", "kind": "switch"}]})  # fmt: skip
    with Tracer(lab.plan) as tracer:
        nobody = tracer.trace("n2", "198.19.0.5")
    assert nobody.error == ("198.19.0.5 is on n2's link eth0, where no node has it: n2 asks "
                            "for it (ARP/ND) and gets no answer"), nobody  # fmt: skip
    done = netrig_cli("trace", lab.name, "n2", "n1")
    assert done.returncode == 2
    assert "n1 is a switch, which has no address: trace to a host behind it" in done.stderr
