"""`netrig export --format clab`: a netrig lab as a containerlab file, and back."""

from __future__ import annotations

from pathlib import Path

import yaml

from netrig.plan.export_clab import to_clab
from netrig.plan.lab import build_plan
from netrig.rig import Lab
from netrig.rig.prepare import load_file
from tests.conftest import netrig_cli, new_lab_name, requires_root

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_ring_exported_in_containerlabs_grammar(tmp_path: Path) -> None:
    plan = build_plan(load_file(str(EXAMPLES / "ring16.yaml")))
    data = yaml.safe_load(to_clab(plan, "ring16.yaml"))
    assert set(data) == {"name", "topology"} and data["name"] == "ring16"
    topo = data["topology"]
    assert topo["defaults"]["kind"] == "linux"
    assert set(topo["nodes"]) == set(plan.nodes)
    assert all(n["network-mode"] == "none" for n in topo["nodes"].values())  # eth0 is ours
    assert topo["links"][0] == {"endpoints": ["n1:eth0", "n2:eth0"]}
    n1 = topo["nodes"]["n1"]["exec"]
    assert "ip addr add 198.18.0.1/32 dev lo" in n1
    assert any(line.startswith("ip route add 198.18.0.9/32 src 198.18.0.1 nexthop") for line in n1)


def test_read_back_gives_the_same_addresses_and_links(tmp_path: Path) -> None:
    src = tmp_path / "lab.yaml"
    src.write_text(
        "name: back\nnodes: [{name: a}, {name: b}, {name: sw, kind: switch}, {name: c}]\n"
        "links:\n  - {a: a, b: b, mtu: 9000, rate: 10mbit}\n  - {a: b, b: sw}\n"
        "  - {a: c, b: sw}\n"
    )
    out = tmp_path / "back.clab.yml"
    result = netrig_cli("export", str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    original = build_plan(load_file(str(src)))
    again = build_plan(load_file(str(out)))
    for name, node in original.nodes.items():
        assert [(i.name, i.addrs) for i in node.ifaces] == [
            (i.name, i.addrs) for i in again.nodes[name].ifaces
        ]
    assert [link.mtu for link in again.links] == [9000, None, None]
    assert again.nodes["sw"].exec[0] == ["ip", "link", "add", "br0", "type", "bridge"]
    assert any(argv[:2] == ["tc", "qdisc"] for argv in again.nodes["a"].exec)


def test_exec_cmd_binds_and_shared_namespaces_read_back_the_same(tmp_path: Path) -> None:
    """A quoted exec line had been written unquoted (`sh -c echo a b > f` ran `sh -c echo`),
    `$` was left to containerlab's substitution, and cmd, binds and a node in another's
    namespace were dropped."""
    motd = tmp_path / "motd"
    motd.write_text("hi\n")
    src = tmp_path / "lab.yaml"
    src.write_text(
        "name: quoted\ntopology: {kind: pair}\nnodes:\n"
        "  - name: n1\n"
        '    exec: ["sh -c \'echo a b > /tmp/x; echo $HOME\'", "echo \'two  spaces\'"]\n'
        '    cmd: "sh -c \'sleep 1000\'"\n'
        f'    binds: ["{motd}:/etc/motd.netrig:ro"]\n'
        "  - {name: side, netns: n1, cmd: sleep 1000}\n"
    )
    out = tmp_path / "quoted.clab.yml"
    result = netrig_cli("export", str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "$$HOME" in out.read_text()
    original = build_plan(load_file(str(src)))
    again = build_plan(load_file(str(out)))
    n1, back = original.nodes["n1"], again.nodes["n1"]
    assert back.exec[-2:] == n1.exec == [
        ["sh", "-c", "echo a b > /tmp/x; echo $HOME"], ["echo", "two  spaces"]
    ]
    assert back.cmd == n1.cmd == ["sh", "-c", "sleep 1000"]
    assert back.binds == n1.binds == [(str(motd), "/etc/motd.netrig", True)]
    assert again.nodes["side"].shares == "n1" and again.nodes["side"].cmd == ["sleep", "1000"]


def test_the_sysctls_survive_the_round_trip(tmp_path: Path) -> None:
    """ring16's l4 multipath hash is a sysctl: read back, it must still be set."""
    out = tmp_path / "ring16.clab.yml"
    assert netrig_cli("export", str(EXAMPLES / "ring16.yaml"), "-o", str(out)).returncode == 0
    original = build_plan(load_file(str(EXAMPLES / "ring16.yaml")))
    again = build_plan(load_file(str(out)))
    assert original.sysctls["net.ipv4.fib_multipath_hash_policy"] == "1"
    assert again.sysctls == original.sysctls


def test_the_loopbacks_survive_the_round_trip(tmp_path: Path) -> None:
    """`ip addr add CIDR dev lo` exec lines had stayed exec lines: the plan knew no
    loopback, so lab.addr("n9") and `trace n1 n9` took n9's link address (one path, not
    the ring's ECMP split); they are the node's loopbacks again, set by the build."""
    out = tmp_path / "ring16.clab.yml"
    assert netrig_cli("export", str(EXAMPLES / "ring16.yaml"), "-o", str(out)).returncode == 0
    original = build_plan(load_file(str(EXAMPLES / "ring16.yaml")))
    again = build_plan(load_file(str(out)))
    for name, node in original.nodes.items():
        assert again.nodes[name].loopbacks == node.loopbacks
        assert again.addr(name) == original.addr(name)
        assert again.addr(name, 6) == original.addr(name, 6)
        assert not [argv for argv in again.nodes[name].exec if argv[-2:] == ["dev", "lo"]]
    assert again.addr("n9") == "198.18.0.9"


def test_a_loopback_exec_line_that_is_no_lab_address_stays_a_line(tmp_path: Path) -> None:
    src = tmp_path / "lo.clab.yml"
    src.write_text(
        "name: lo\ntopology:\n  nodes:\n"
        "    a: {kind: linux, exec: ['ip addr add 127.0.0.2/8 dev lo',"
        " 'ip addr add 192.0.2.1/32 dev lo']}\n"
        "    b: {kind: linux, network-mode: 'container:a',"
        " exec: ['ip addr add 192.0.2.2/32 dev lo']}\n"
    )
    plan = build_plan(load_file(str(src)))
    assert plan.nodes["a"].loopbacks == ["192.0.2.1/32"] and plan.addr("a") == "192.0.2.1"
    assert plan.nodes["a"].exec == [["ip", "addr", "add", "127.0.0.2/8", "dev", "lo"]]
    assert plan.nodes["b"].loopbacks == []  # a's lo: its own line adds it there
    assert plan.nodes["b"].exec == [["ip", "addr", "add", "192.0.2.2/32", "dev", "lo"]]


def test_a_written_loopback_another_node_has_is_refused_at_its_line(tmp_path: Path) -> None:
    src = tmp_path / "twice.yaml"
    src.write_text(
        "name: twice\ntopology: {kind: chain, nodes: 3}\nnodes:\n"
        "  - {name: n3, loopbacks: [198.18.0.1/32]}\n"
    )
    result = netrig_cli("validate", str(src))
    assert result.returncode == 2
    assert result.stderr.strip() == f"{src}:4:5: n3:lo and n1:lo both have address 198.18.0.1"


def test_daemons_named_in_the_header_not_exported() -> None:
    result = netrig_cli("export", str(EXAMPLES / "ospf-ring6.yaml"))
    assert result.returncode == 0
    assert "# Not exported (netrig runs them itself): routing ospf" in result.stdout
    assert "note:" in result.stderr


@requires_root
def test_exported_ring_up_routes_like_the_original(tmp_path: Path) -> None:
    out = tmp_path / "ring.clab.yml"
    assert netrig_cli("export", str(EXAMPLES / "ring16.yaml"), "-o", str(out)).returncode == 0
    lab = Lab.from_file(str(out), name=new_lab_name("ex"))
    try:
        lab.up()
        ping = lab.exec("n1", ["ping", "-c1", "-w5", "198.18.0.9"], capture_output=True)
        assert ping.returncode == 0, ping.stdout
        routes = lab.exec("n1", ["ip", "route", "show", "198.18.0.9"], capture_output=True)
        assert routes.stdout.count("nexthop via") == 2  # both ways round the ring, as netrig's
        # n9 is its loopback, as in the original: the flows split both ways round the ring
        assert lab.addr("n9") == "198.18.0.9"
        trace = netrig_cli("trace", lab.name, "n1", "n9", "--count", "64")
        assert trace.returncode == 0, trace.stdout + trace.stderr
        assert "n1 → n9 (198.18.0.9)" in trace.stdout
        assert "n1 (eth0) → n2" in trace.stdout and "n1 (eth1) → n16" in trace.stdout
    finally:
        lab.down()


STP_LAB = ("nodes: [{name: a}, {name: b}, {name: c}, {name: s1, kind: switch, stp: true},\n"
           "        {name: s2, kind: switch, stp: true}]\n"
           "links: [{a: a, b: s1}, {a: b, b: s2}, {a: s1, b: s2}, {a: c, b: s1}, {a: c, b: s2}]\n"
           "routing: {protocol: none}\n")  # fmt: skip


def test_an_stp_bridge_is_exported_with_the_timers_netrig_builds_it_with() -> None:
    """`stp_state 1` alone left the kernel's 15 s forward delay: the exported lab forwarded
    ~30 s after `up`, netrig's own build of it after ~4 s."""
    from netrig.rig.prepare import load_text

    plan = build_plan(load_text(f"name: stp\n{STP_LAB}"))
    data = yaml.safe_load(to_clab(plan, "stp.yaml"))
    assert ("ip link add br0 type bridge stp_state 1 forward_delay 200 hello_time 100 "
            "max_age 2000") in data["topology"]["nodes"]["s1"]["exec"]  # fmt: skip


@requires_root
def test_the_exported_bridge_timers_are_those_of_netrigs_own_bridge(tmp_path: Path) -> None:
    import re

    src = tmp_path / "stp.yaml"
    name = new_lab_name("st")
    src.write_text(f"name: {name}\n{STP_LAB}")
    out = tmp_path / "stp.clab.yml"
    assert netrig_cli("export", str(src), "-o", str(out)).returncode == 0
    line = next(x for x in yaml.safe_load(out.read_text())["topology"]["nodes"]["s1"]["exec"]
                if "type bridge" in x)  # fmt: skip
    exported = dict(re.findall(r"(forward_delay|hello_time|max_age) (\d+)", line))
    lab = Lab.from_file(str(src))
    try:
        lab.up(check_reachability=False)
        shown = lab.exec("s1", ["ip", "-d", "link", "show", "br0"], capture_output=True).stdout
        built = dict(re.findall(r"\b(forward_delay|hello_time|max_age) (\d+)", shown))
        assert set(built) == {"forward_delay", "hello_time", "max_age"}, shown
        assert exported == built
    finally:
        lab.down()
