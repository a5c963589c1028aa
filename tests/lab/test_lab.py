"""The lab engine on real namespaces: reachability, ECMP, STP, rate limits, two labs."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from netrig.lab import netns
from netrig.lab.trace import Tracer, count_paths
from netrig.rig import Lab
from tests.conftest import requires_root, requires_tool

pytestmark = requires_root


@requires_tool("ping")
def test_ping_across_8_hops_of_a_static_ring(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "ring", "nodes": 16}, "routing": {"protocol": "static"}})
    assert lab.check_result is not None and lab.check_result.pairs == 16 * 15 * 2
    out = lab.exec("n1", ["ping", "-c1", "-W2", lab.addr("n9")], capture_output=True)
    assert out.returncode == 0, out.stderr
    ttl = int(re.search(r"ttl=(\d+)", out.stdout).group(1))  # type: ignore[union-attr]
    assert ttl == 64 - 7  # 8 links, 7 forwarding routers in between
    out6 = lab.exec("n1", ["ping", "-6", "-c1", "-W2", lab.addr("n9", 6)], capture_output=True)
    assert out6.returncode == 0, out6.stderr
    with Tracer(lab.plan) as tracer:
        path = tracer.trace("n1", lab.addr("n9"))
    assert path.reached and len(path.hops) == 9


def test_ecmp_routes_hold_both_next_hops_and_flows_use_both(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "ring", "nodes": 8}, "routing": {"protocol": "ecmp"}})
    out = lab.exec("n1", ["ip", "-j", "route", "show", lab.addr("n5")], capture_output=True)
    routes = json.loads(out.stdout)
    assert len(routes) == 1 and len(routes[0]["nexthops"]) == 2
    assert {h["dev"] for h in routes[0]["nexthops"]} == {"eth0", "eth1"}
    counts = count_paths(lab.plan, "n1", lab.addr("n5"), 64)
    assert len(counts) == 2 and all(p.reached and len(p.hops) == 5 for p in counts)
    assert min(counts.values()) >= 8  # an L4 hash spreads 64 flows over both paths


def test_ecmp_l3_hash_keeps_one_path_per_address_pair(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab(
        {"topology": {"kind": "ring", "nodes": 8}, "routing": {"protocol": "ecmp", "hash": "l3"}}
    )
    assert len(count_paths(lab.plan, "n1", lab.addr("n5"), 32)) == 1


@requires_tool("bridge")
def test_switch_loop_with_stp_stays_usable(make_lab) -> None:  # type: ignore[no-untyped-def]
    switches = [{"name": f"s{i}", "kind": "switch", "stp": True} for i in (1, 2, 3)]
    hosts = [{"name": f"h{i}"} for i in (1, 2, 3)]
    links = [{"a": "s1", "b": "s2"}, {"a": "s2", "b": "s3"}, {"a": "s3", "b": "s1"}]
    links += [{"a": f"h{i}", "b": f"s{i}"} for i in (1, 2, 3)]
    lab = make_lab({"nodes": switches + hosts, "links": links})
    states = []
    for sw in ("s1", "s2", "s3"):
        out = lab.exec(sw, ["bridge", "-j", "link"], capture_output=True)
        states += [p["state"] for p in json.loads(out.stdout)]
    assert states.count("blocking") == 1  # the loop is cut exactly once
    out = lab.exec("h1", ["ping", "-c3", "-i0.2", "-W1", lab.addr("h3")], capture_output=True)
    assert out.returncode == 0 and " 0% packet loss" in out.stdout


def test_rate_limit_and_mtu_are_applied(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab(
        {
            "topology": {"kind": "pair"},
            "links": [{"a": "n1", "b": "n2", "rate": "50mbit", "mtu": 9000}],
        }
    )
    for node in ("n1", "n2"):
        qdisc = lab.exec(node, ["tc", "-j", "qdisc", "show", "dev", "eth0"], capture_output=True)
        (tbf,) = [q for q in json.loads(qdisc.stdout) if q["kind"] == "tbf"]
        assert tbf["options"]["rate"] == 50_000_000 // 8
        link = lab.exec(node, ["ip", "-j", "link", "show", "eth0"], capture_output=True)
        assert json.loads(link.stdout)[0]["mtu"] == 9000


def test_two_labs_side_by_side(make_lab) -> None:  # type: ignore[no-untyped-def]
    a = make_lab({"topology": {"kind": "chain", "nodes": 3}})
    b = make_lab({"topology": {"kind": "chain", "nodes": 3}})
    assert a.addr("n3") == b.addr("n3")  # same addresses, separate namespaces
    a.down()
    assert not any(netns.exists(n.ns) for n in a.plan.nodes.values())
    assert b.exists()
    out = b.exec("n1", ["ping", "-c1", "-W1", b.addr("n3")], capture_output=True)
    assert out.returncode == 0


def test_private_run_directory_per_node(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "pair"}})
    lab.plan.private_run = True  # what a daemon plugin such as batman asks for
    lab.exec("n1", ["sh", "-c", "echo one > /run/marker"], check=True)
    lab.exec("n2", ["sh", "-c", "echo two > /run/marker"], check=True)
    assert lab.exec("n1", ["cat", "/var/run/marker"], capture_output=True).stdout == "one\n"
    assert lab.exec("n2", ["cat", "/run/marker"], capture_output=True).stdout == "two\n"
    sysfs = lab.exec("n1", ["ls", "/sys/class/net"], capture_output=True).stdout.split()
    assert sorted(sysfs) == ["eth0", "lo"]


def test_python_api_context_manager(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "lab.yaml"
    path.write_text(f"name: {lab_name}\ntopology: {{kind: chain, nodes: 4}}\n")
    with Lab.from_file(str(path)) as lab:
        result = lab.exec("n1", ["ping", "-c1", "-W1", lab.addr("n4")], capture_output=True)
        assert result.returncode == 0
        namespaces = [n.ns for n in lab.plan.nodes.values()]
        assert all(netns.exists(ns) for ns in namespaces)
    assert not any(netns.exists(ns) for ns in namespaces)


def test_a_with_block_uses_a_running_lab_only_if_it_is_this_layout(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    """A lab of the name with other nodes had been taken as it was: exec in a node it
    lacks failed with 125 and addr() gave an address nowhere."""
    import pytest

    from netrig.lab.build import BadInput

    chain = {"name": lab_name, "topology": {"kind": "chain", "nodes": 3}}
    with Lab.from_spec(chain) as first:
        with Lab.from_spec(chain) as same:  # this layout: used, and left up on exit
            assert same.exec("n1", ["true"]).returncode == 0
        assert first.exists()
        bigger = {"name": lab_name, "topology": {"kind": "chain", "nodes": 5}}
        with pytest.raises(BadInput, match="already up with another layout"), Lab.from_spec(bigger):
            pass
        renumbered = {**chain, "addressing": {"ipv4": "198.51.100.0/24"}}  # its addresses
        with pytest.raises(BadInput, match="already up with another layout"), Lab.from_spec(
            renumbered
        ):
            pass
        assert first.exists()


def test_api_mistakes_are_named(make_lab) -> None:  # type: ignore[no-untyped-def]
    import pytest

    lab = make_lab({"topology": {"kind": "pair"}}, check=False)
    with pytest.raises(TypeError, match=r"list of words, e.g. \['ip', '-br', 'addr'\]"):
        lab.exec("n1", "ip -br addr")
    with pytest.raises(ValueError, match="empty command"):
        lab.exec("n1", [])
    with pytest.raises(TypeError, match=r"Lab\.from_file"):
        Lab.from_spec("examples/ring16.yaml")  # type: ignore[arg-type]


def test_popen_is_recorded_and_ended_by_down(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "pair"}})
    proc = lab.popen("n1", ["sleep", "300"])
    recorded = [o for o in lab.ledger.objects(lab.name, "process") if o.pid == proc.pid]
    assert len(recorded) == 1
    report = lab.down()
    assert report.processes >= 1
    assert proc.wait(timeout=5) is not None
    assert subprocess.run(["kill", "-0", str(proc.pid)], capture_output=True).returncode != 0


def test_daemon_logs_and_crash_detection(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "pair"}})
    steady = lab.start_daemon("n1", ["sleep", "300"], "sleeper")
    crashing = lab.start_daemon("n2", ["sh", "-c", "echo config error on line 3; exit 3"], "bad")
    crashing.wait(timeout=5)
    failures = lab.daemon_failures()
    assert [label for label, _ in failures] == ["n2/bad"]
    assert "config error on line 3" in failures[0][1]
    assert steady.poll() is None
    lab.down()
    assert steady.wait(timeout=5) is not None


def test_lab_routes_never_leave_the_lab(make_lab) -> None:  # type: ignore[no-untyped-def]
    """No default route, and every gateway is an address of another lab node."""
    lab = make_lab({"topology": {"kind": "grid", "rows": 2, "cols": 3}, "routing": {"protocol": "ecmp"}})
    lab_addrs = {a for n in lab.plan.nodes.values() for a in n.addresses(4) + n.addresses(6)}
    for node in lab.nodes():
        for family in ("-4", "-6"):
            out = lab.exec(node, ["ip", "-j", family, "route", "show"], capture_output=True)
            for route in json.loads(out.stdout):
                assert route["dst"] != "default"
                hops = route.get("nexthops", [route])
                for hop in hops:
                    if "gateway" in hop:
                        assert hop["gateway"] in lab_addrs


def test_shell_runs_in_the_node(make_lab) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import netrig_cli

    lab = make_lab({"topology": {"kind": "pair"}})
    out = netrig_cli("shell", lab.name, "n2", input="ip -br addr show dev lo; echo $NETRIG_NODE\n")
    assert out.returncode == 0
    assert "198.18.0.2/32" in out.stdout and "n2" in out.stdout


def test_aliases_are_on_both_ends_and_answer(make_lab) -> None:  # type: ignore[no-untyped-def]
    """Seed 001's set-up: extra addresses on one link, each one reachable."""
    lab = make_lab({"topology": {"kind": "pair"}, "links": [{"a": "n1", "b": "n2", "aliases": 3}]})
    assert len(lab.plan.links) == 1  # the explicit link set the generated one's attributes
    out = lab.exec("n2", ["ip", "-j", "-4", "addr", "show", "dev", "eth0"], capture_output=True)
    v4 = [a["local"] for a in json.loads(out.stdout)[0]["addr_info"]]
    assert len(v4) == 4
    for addr in v4:
        ping = lab.exec("n1", ["ping", "-c1", "-W1", addr], capture_output=True)
        assert ping.returncode == 0, addr


@requires_tool("ping")
def test_a_switched_lab_without_routing_carries_traffic_when_up_returns(make_lab) -> None:  # type: ignore[no-untyped-def]
    """routing: none has no pair to ping, so `up` had waited for nothing: the switch's
    ports dropped the first ~0.5 s of traffic. And `link … up` returns once the link
    carries traffic again."""
    from netrig.lab import faults

    lab = make_lab(
        {
            "nodes": [{"name": "sw", "kind": "switch"}, {"name": "a"}, {"name": "b"}],
            "links": [{"a": "a", "b": "sw"}, {"a": "b", "b": "sw"}],
            "routing": {"protocol": "none"},
            "addressing": {"mode": "shared-subnet"},
        }
    )
    target = lab.plan.node("b").iface("eth0").addrs[0].split("/")[0]
    ping = ["ping", "-c", "10", "-i", "0.05", "-W", "1", target]
    first = lab.exec("a", ping, capture_output=True)
    assert " 0% packet loss" in first.stdout, first.stdout
    faults.set_link(lab, "b", "sw", up=False)
    faults.set_link(lab, "b", "sw", up=True)
    again = lab.exec("a", ping, capture_output=True)
    assert " 0% packet loss" in again.stdout, again.stdout


def test_link_up_puts_back_the_routes_of_exec_lines(make_lab) -> None:  # type: ignore[no-untyped-def]
    """A containerlab file's routes are its exec lines, which no plan has: `link … up` had
    left them dropped (a ring exported and read back lost 3 of n1's 9 routes)."""
    from netrig.lab import faults

    lab = make_lab(
        {
            "topology": {"kind": "chain", "nodes": 3},
            "routing": {"protocol": "none"},
            "nodes": [{"name": "n1", "exec": ["ip route add 203.0.113.0/24 dev eth0"]}],
        },
        check=False,
    )

    def extra() -> str:
        return lab.exec("n1", ["ip", "route", "show", "203.0.113.0/24"], capture_output=True).stdout

    assert "dev eth0" in extra()
    faults.set_link(lab, "n1", "n2", up=False)
    assert extra() == ""  # the kernel dropped it with the link
    faults.set_link(lab, "n1", "n2", up=True)
    assert "dev eth0" in extra()


@pytest.mark.parametrize("protocol", ["ecmp", "static"])
def test_a_link_up_while_the_node_s_other_link_is_down(make_lab, protocol: str) -> None:  # type: ignore[no-untyped-def]
    """`link n1 n2 up` while n1–n4 was still down failed with ENETUNREACH (the planned routes
    out of the link still down were sent too): `netrig link` exited 1 with half the routes
    back, and a run whose events cut both links was aborted. The routes come back as far as
    the links that are up allow, and whole once the last one is up."""
    from netrig.lab import faults

    lab = make_lab({"topology": {"kind": "ring", "nodes": 4}, "routing": {"protocol": protocol}})

    def routes(family: int) -> list[dict[str, object]]:
        out = lab.exec("n1", ["ip", "-j", f"-{family}", "route", "show", "proto", "static"],
                       capture_output=True)  # fmt: skip
        return json.loads(out.stdout)

    whole = {family: routes(family) for family in (4, 6)}
    faults.set_link(lab, "n1", "n2", up=False)
    faults.set_link(lab, "n1", "n4", up=False)
    faults.set_link(lab, "n1", "n2", up=True)
    for family in (4, 6):
        half = routes(family)
        assert half and all(r.get("dev") == "eth0" for r in half), half  # one next hop each
    out = lab.exec("n1", ["ping", "-c1", "-W2", lab.addr("n2")], capture_output=True)
    assert out.returncode == 0, out.stdout
    faults.set_link(lab, "n1", "n4", up=True)
    assert {family: routes(family) for family in (4, 6)} == whole


def test_a_sysctl_the_kernel_refuses_is_named(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    """net.core.rmem_max is the host's, not per namespace: `up` said only "[Errno 13]
    Permission denied"; it names the key and why, and leaves nothing behind."""
    from tests.conftest import netrig_cli

    path = tmp_path / "lab.yaml"
    path.write_text(f"name: {lab_name}\ntopology: {{kind: pair}}\n"
                    "sysctls: {net.core.rmem_max: 1000000}\n")  # fmt: skip
    done = netrig_cli("up", "-q", str(path))
    assert done.returncode == 1
    assert "sysctl net.core.rmem_max = 1000000: Permission denied (a key the kernel keeps" in done.stderr
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{lab_name}-")]


def test_labs_whose_namespace_names_collide_are_told_apart(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    """Lab X with node a-1 and lab X-a with node 1 both name a namespace X-a-1: the second
    had been told that namespace is 'not part of a netrig lab', and one built at the same
    moment ended in sqlite3.IntegrityError's traceback."""
    import pytest

    from netrig.lab.build import BadInput
    from netrig.lab.ledger import Ledger

    first = {"name": lab_name, "nodes": [{"name": "a-1"}, {"name": "b"}],
             "links": [{"a": "a-1", "b": "b"}]}  # fmt: skip
    second = {"name": f"{lab_name}-a", "nodes": [{"name": "1"}, {"name": "b"}],
              "links": [{"a": "1", "b": "b"}]}  # fmt: skip
    taken = f"belongs to node a-1 of lab '{lab_name}'"
    with Lab.from_spec(first), pytest.raises(BadInput, match=taken):
        Lab.from_spec(second).up()
    # the same moment: the other lab has recorded the name, not yet made it
    ledger = Ledger(str(tmp_path / "state"))
    ledger.begin_lab(lab_name, 2, None)
    ledger.intend_netns(lab_name, [(f"{lab_name}-a-1", "a-1")])
    late = Lab(Lab.from_spec(second).plan, ledger)
    with pytest.raises(BadInput, match="taken by another lab built at the same moment"):
        late.up()
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{lab_name}-")]
    assert ledger.lab(f"{lab_name}-a") is None


def test_a_link_given_ipv4_only_carries_ipv6_too(make_lab) -> None:  # type: ignore[no-untyped-def]
    """A link whose file gave IPv4 addresses only had no IPv6: its node's IPv6 loopback was
    routed round a loop and `up` failed its check (every pair, both families)."""
    lab = make_lab({
        "nodes": [{"name": n} for n in ("r1", "r2", "r3", "pc1", "pc2")],
        "links": [
            {"a": "r1", "b": "r2"}, {"a": "r2", "b": "r3"}, {"a": "r3", "b": "r1", "cost": 10},
            {"a": "pc1", "b": "r1", "a_addr": "192.0.2.10/24", "b_addr": "192.0.2.1/24"},
            {"a": "pc2", "b": "r3"},
        ],
    })  # fmt: skip
    assert lab.check_result is not None and lab.check_result.pairs == 5 * 4 * 2
    ping = lab.exec("pc2", ["ping", "-6", "-c1", "-W2", lab.addr("pc1", 6)], capture_output=True)
    assert ping.returncode == 0, ping.stdout + ping.stderr


def test_a_lab_not_up_says_so_and_an_experiment_file_gives_its_first_lab(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    """exec on a lab not up had returned 125 with netrig-nsexec's "open /run/netns/…"; an
    experiment file (which `netrig up` takes) had been refused by Lab.from_file."""
    import os

    import pytest

    from netrig.lab.build import LabError

    path = tmp_path / "exp.yaml"
    path.write_text(f"name: {lab_name}\ntopology: {{kind: chain, nodes: '{{n}}'}}\n"
                    "vary: {n: [3, 4]}\nmeasure:\n  - ping: {src: n1, dst: n2}\n")  # fmt: skip
    lab = Lab.from_file(str(path))
    assert lab.name == lab_name and sorted(lab.plan.nodes) == ["n1", "n2", "n3"]
    with pytest.raises(LabError, match=f"lab {lab_name} is not up .node n1 has no namespace"):
        lab.exec("n1", ["true"])
    with pytest.raises(LabError, match="is not up"):
        lab.popen("n1", ["sleep", "1"])
    assert not os.path.exists(lab.ledger.lab_dir(lab_name))  # nothing made for it
    with lab:
        assert lab.exec("n1", ["true"]).returncode == 0
