"""Bad lab files: one clear message each, pointing at file:line:col (golden messages)."""

from __future__ import annotations

import textwrap
import time

import pytest

from netrig.model.load import SpecError
from netrig.model.yamlmarks import YamlSyntaxError
from netrig.plan.lab import build_plan
from netrig.rig.prepare import load_text, plan_lab


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        plan_lab(load_text(textwrap.dedent(text), "lab.yaml"))
    return [str(p) for p in info.value.problems]


def test_minimal_sketch_file_is_valid() -> None:
    plan = build_plan(
        load_text("name: r\ntopology: {kind: ring, nodes: 100}\nrouting: {protocol: static}\n")
    )
    assert len(plan.nodes) == 100 and plan.route_count() > 0


def test_unknown_key_with_suggestion() -> None:
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: 4}
        routnig: {protocol: static}
        """) == ["lab.yaml:3:1: unknown key 'routnig' (did you mean 'routing'?)"]


def test_a_typo_of_protocol_in_routing_is_suggested() -> None:
    assert problems("""\
        name: r
        topology: {kind: pair}
        routing: {protocl: static}
        """) == ["lab.yaml:3:11: unknown key 'protocl' (did you mean 'protocol'?)"]


def test_another_protocol_s_name_of_a_timer_is_suggested() -> None:
    """IS-IS's `hello_interval` (babel's name for it) was answered "did you mean
    'spf_interval'?"; it is IS-IS's `hello`."""
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: 4}
        routing: {protocol: isis, hello_interval: 1}
        """) == ["lab.yaml:3:27: unknown key 'hello_interval' (did you mean 'hello'?)"]
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: 4}
        routing: {protocol: babel, hello: 1}
        """) == ["lab.yaml:3:28: unknown key 'hello' (did you mean 'hello_interval'?)"]


def test_an_experiment_file_read_as_a_lab_file_says_so() -> None:
    """A lab file's `measure:` (an experiment named by `lab:`) was answered "did you mean
    'measure', a key of experiment files?", the very key written."""
    found = problems("""\
        name: r
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        """)
    assert len(found) == 1 and found[0].startswith("lab.yaml:3:1: unknown key 'measure': ")
    assert "did you mean" not in found[0] and "`lab:` names a lab file" in found[0]


def test_unknown_nested_key_lists_known_keys() -> None:
    (msg,) = problems("""\
        name: r
        topology: {kind: pair}
        links:
          - {a: n1, b: n2, colour: red}
        """)
    assert msg.startswith("lab.yaml:4:20: unknown key 'colour'; known keys: mtu, rate,")


def test_wrong_type() -> None:
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: many}
        """) == [
        "lab.yaml:2:31: topology.nodes: Input should be a valid integer, unable to parse "
        "string as an integer (got 'many')"
    ]


def test_link_to_unknown_node() -> None:
    assert problems("""\
        name: r
        topology: {kind: chain, nodes: 3}
        links:
          - {a: n1, b: n33}
        """) == ["lab.yaml:4:16: link to unknown node 'n33' (did you mean 'n3'?)"]


def test_duplicate_node_and_self_loop() -> None:
    found = problems("""\
        name: r
        nodes:
          - {name: a}
          - {name: a}
        links:
          - {a: a, b: a}
        """)
    assert found == ["lab.yaml:6:5: link from 'a' to itself: a self-loop is not a link"]
    assert problems("""\
        name: r
        nodes:
          - {name: a}
          - {name: a}
        """) == ["lab.yaml:4:12: duplicate node 'a'"]


def test_a_second_link_between_two_nodes_says_what_netrig_builds_and_what_to_do() -> None:
    """It was "duplicate link a–b", though its interfaces differ (containerlab topologies
    routinely have parallel links; netrig's plan has one link per pair of nodes)."""
    assert problems("""\
        name: r
        nodes: [{name: a}, {name: b}]
        links:
          - {a: a, b: b}
          - {a: b, b: a, a_ifname: e2, b_ifname: e2}
        """) == ["lab.yaml:5:5: a second link b–a (the first is on line 4): netrig builds one "
                 "link between two nodes; put a switch node (kind: switch) on the second, or "
                 "leave it out"]  # fmt: skip


def test_interface_name_too_long() -> None:
    assert problems("""\
        name: r
        topology: {kind: pair}
        links:
          - {a: n1, b: n2, a_ifname: uplink-to-the-core}
        """) == [
        "lab.yaml:4:30: interface name 'uplink-to-the-core' is 18 characters; "
        "the kernel allows at most 15"
    ]


def test_interface_name_with_refused_character() -> None:
    (msg,) = problems("""\
        name: r
        topology: {kind: pair}
        links:
          - {a: n1, b: n2, b_ifname: "eth/0"}
        """)
    assert msg == "lab.yaml:4:30: interface name 'eth/0' contains '/', which the kernel refuses"
    (msg,) = problems("""\
        name: r
        topology: {kind: pair}
        links:
          - {a: n1, b: n2, a_ifname: all}
        """)
    assert msg == "lab.yaml:4:30: interface name 'all' is the kernel's own (its sysctl folders)"


def test_lab_name_rules() -> None:
    assert problems("name: my lab\ntopology: {kind: pair}\n") == [
        "lab.yaml:1:7: lab name 'my lab' may hold only letters, digits, '_', '.', '-' "
        "and must start with a letter or digit"
    ]
    assert problems("name: a-very-long-lab-name-indeed\ntopology: {kind: pair}\n") == [
        "lab.yaml:1:7: lab name 'a-very-long-lab-name-indeed' is 27 characters; at most 20"
    ]


def test_pool_too_small() -> None:
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: 20}
        addressing: {ipv4: 198.18.0.0/28, ipv6: false}
        """) == ["lab.yaml:3:13: address pool 198.18.0.0/28 too small for 20 loopbacks: they take "
                 "its first half, 198.18.0.0/29 (7 usable), links the second; give a larger "
                 "pool, or addressing: {loopbacks: false}"]


def test_pool_too_small_for_the_links_says_what_fits() -> None:
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: 20}
        addressing: {ipv4: 198.18.0.0/26, loopbacks: false}
        """) == [
        "lab.yaml:3:13: address pool 198.18.0.0/26 too small for the lab's 20 links and "
        "segments: they take its second half, 198.18.0.32/27 (a link a /31); give a larger "
        "pool, or route the other family only (addressing: {ipv4: false})"
    ]


def test_topology_parameters() -> None:
    assert problems("name: r\ntopology: {kind: grid, rows: 3}\n") == [
        "lab.yaml:2:11: topology 'grid' needs cols"
    ]
    assert problems("name: r\ntopology: {kind: ring, nodes: 2}\n") == [
        "lab.yaml:2:11: a ring needs at least 3 nodes"
    ]


@pytest.mark.parametrize(
    ("topology", "nodes", "links"),
    [
        ("{kind: tree, depth: 2, fanout: 100}", "10,101", "10,100"),  # 100**2 nodes below n1
        ("{kind: grid, rows: 200, cols: 200}", "40,000", "79,600"),
        ("{kind: full-mesh, nodes: 317}", "317", "50,086"),  # few nodes, too many links
        ("{kind: clos, spines: 1000, leaves: 100, hosts_per_leaf: 1}", "1,200", "100,100"),
    ],
)
def test_a_generated_topology_too_large_is_refused_before_it_is_made(
    topology: str, nodes: str, links: str
) -> None:
    kind = topology.split(",")[0].removeprefix("{kind: ")
    assert problems(f"name: r\ntopology: {topology}\n") == [
        f"lab.yaml:2:11: {kind} too large: {nodes} nodes and {links} links"
        " (at most 10,000 nodes and 50,000 links)"
    ]


def test_unknown_protocol_and_option() -> None:
    assert problems("name: r\ntopology: {kind: pair}\nrouting: {protocol: ecpm}\n") == [
        "lab.yaml:3:21: unknown routing protocol 'ecpm' (did you mean 'ecmp'?); "
        "known: babel, batman, bgp, bridge, ecmp, isis, none, ospf, static"
    ]
    assert problems("name: r\ntopology: {kind: pair}\nrouting: {protocol: ecmp, hash: l5}\n") == [
        "lab.yaml:3:33: routing.hash: Input should be 'l3' or 'l4' (got 'l5')"
    ]


def test_netem_refused_where_kernel_lacks_it() -> None:
    from netrig.host import features

    if features.has_feature("netem"):
        pytest.skip("this kernel has netem")
    (msg,) = problems("""\
        name: r
        topology: {kind: pair}
        links:
          - {a: n1, b: n2, delay: 10ms}
        """)
    assert msg.startswith("lab.yaml:4:5: link n1–n2 sets delay, which needs the netem qdisc")


def test_bad_rate_unit() -> None:
    (msg,) = problems("name: r\ntopology: {kind: pair}\nlink_defaults: {rate: 10 furlongs}\n")
    assert msg.startswith("lab.yaml:3:23: '10 furlongs' is not a rate")


def test_yaml_syntax_error_points_at_line() -> None:
    with pytest.raises(YamlSyntaxError) as info:
        load_text("name: r\ntopology: {kind: pair\n", "lab.yaml")
    assert str(info.value).startswith("lab.yaml:3:1: YAML syntax error")


def test_shared_subnet_refused_by_static() -> None:
    assert problems("name: r\ntopology: {kind: pair}\naddressing: {mode: shared-subnet}\n") == [
        "lab.yaml:3:20: routing 'static' cannot use addressing mode 'shared-subnet'"
    ]


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("192.0.2.1", "'192.0.2.1' needs a prefix length, e.g. 192.0.2.1/24"),
        ("192.0.2.1/0", "'192.0.2.1/0': a /0 puts every address on this link; give its "
                        "subnet's length"),
        ("224.0.0.5/24", "'224.0.0.5/24' is in 224.0.0.0/4 (multicast): not an interface's "
                         "address"),
        ("127.0.0.2/8", "'127.0.0.2/8' is in 127.0.0.0/8 (loopback): not an interface's address"),
        ('"::1/64"', "'::1/64' is in ::/8 (loopback, unspecified and IPv4-mapped): not an "
                     "interface's address"),
    ],
)  # fmt: skip
def test_an_explicit_address_no_interface_should_have(address: str, says: str) -> None:
    links = f"links:\n  - {{a: a, b: b, a_addr: {address}}}\n"
    assert problems(f"name: r\nnodes: [{{name: a}}, {{name: b}}]\n{links}") == [
        f"lab.yaml:4:26: {says}"
    ]


def test_an_explicit_link_local_address_is_taken() -> None:
    links = 'links:\n  - {a: a, b: b, a_addr: "fe80::1/64", b_addr: "fe80::2/64"}\n'
    plan = build_plan(load_text(f"name: r\nnodes: [{{name: a}}, {{name: b}}]\n{links}"))
    assert "fe80::1/64" in str(plan.nodes["a"])


@pytest.mark.parametrize("rate", ["1tbit", "100", "35gbit"])
def test_a_rate_a_links_token_bucket_cannot_take_is_refused_at_its_line(rate: str) -> None:
    """They validated, then failed at build time in pyroute2's 32-bit fields."""
    (msg,) = problems(f"name: r\ntopology: {{kind: pair}}\nlink_defaults: {{rate: {rate}}}\n")
    written = rate if rate.isdigit() else repr(rate)  # YAML reads 100 as a number
    assert msg.startswith(
        f"lab.yaml:3:23: {written}: a link's rate limit must be between 1kbit and 34gbit"
    ), msg


def test_an_mtu_ipv6_cannot_run_on_is_refused_where_the_link_is_written() -> None:
    """mtu 100 validated, then the build failed after a 10 s wait with EINVAL on an IPv6
    address (the kernel turns IPv6 off below 1280)."""
    found = problems("""\
        name: r
        topology: {kind: ring, nodes: 4}
        link_defaults: {mtu: 1000}
        """)
    assert found == [
        "lab.yaml:2:11: link n1–n2: mtu 1000 is below IPv6's minimum (1280), where the kernel "
        "turns IPv6 off, yet the link has IPv6 addresses (and 3 more links); raise the mtu or "
        "route IPv4 only (addressing: {ipv6: false})"
    ]
    ipv4_only = "name: r\ntopology: {kind: ring, nodes: 4}\nlink_defaults: {mtu: 1000}\n"
    ipv4_only += "addressing: {ipv6: false}\n"
    assert plan_lab(load_text(ipv4_only, "lab.yaml")).links[0].mtu == 1000


def test_one_address_on_both_ends_of_a_link_is_refused_at_the_link() -> None:
    found = problems("""\
        name: r
        nodes: [{name: a}, {name: b}]
        links:
          - {a: a, b: b, a_addr: 203.0.113.1/24, b_addr: 203.0.113.1/24}
        """)
    assert found == [
        "lab.yaml:4:5: link a–b: both ends have address 203.0.113.1; each end needs its own"
    ]


def test_yes_no_on_off_are_no_numbers() -> None:
    """YAML reads them as booleans, and pydantic would take a boolean for 1 or 0."""
    assert problems("""\
        name: r
        topology: {kind: ring, nodes: on}
        """) == [
        "lab.yaml:2:31: true is not a number (YAML reads yes, no, on and off as true and false)"
    ]
    assert problems("""\
        name: r
        nodes: [{name: a}, {name: b}]
        links: [{a: a, b: b, mtu: no}]
        """) == [
        "lab.yaml:3:27: false is not a number (YAML reads yes, no, on and off as true and false)"
    ]


def test_a_yes_or_no_field_still_takes_yes_and_no() -> None:
    from netrig.base.options import takes_number_not_truth

    graph = load_text("name: r\ntopology: {kind: pair}\naddressing: {loopbacks: no}\n")
    assert graph.spec.addressing.loopbacks is False
    assert takes_number_not_truth(int | None) and takes_number_not_truth(float)
    assert not takes_number_not_truth(int | bool) and not takes_number_not_truth(bool)


def test_the_size_bound_holds_for_listed_nodes_and_for_a_topology_with_more() -> None:
    """It was checked on generated topologies only: 33,299 listed nodes validated (14 s,
    450 MB) and `up` would have tried them all as root."""
    listed = "name: big\nnodes:\n" + "".join(f"  - {{name: n{i}}}\n" for i in range(10_001))
    assert problems(listed) == ["lab.yaml:3:3: 10,001 nodes: a lab has at most 10,000"]
    grid_and_one = (
        "name: big\ntopology: {kind: grid, rows: 100, cols: 100}\nnodes:\n  - {name: extra}\n"
    )
    assert problems(grid_and_one) == ["lab.yaml:1:1: 10,001 nodes: a lab has at most 10,000"]


def test_a_mininet_topology_stops_at_the_bound_as_it_is_built() -> None:
    from pathlib import Path

    from netrig.rig.prepare import load_file

    example = Path(__file__).resolve().parents[2] / "examples" / "mininet-bw.py"
    with pytest.raises(SpecError, match="more than 10,000 nodes"):
        load_file(str(example), topo="linear,100000")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (  # two links' subnets overlap: the second's route failed with EEXIST at build time
            """\
            name: r
            nodes: [{name: a}, {name: b}, {name: c}]
            links:
              - {a: a, b: b, a_addr: 192.0.2.1/24, b_addr: 192.0.2.2/24}
              - {a: b, b: c, a_addr: 192.0.2.5/24, b_addr: 192.0.2.6/24}
            """,
            "lab.yaml:5:5: b:eth1's subnet 192.0.2.0/24 overlaps b:eth0's 192.0.2.0/24",
        ),
        (  # a link address that is another node's loopback
            """\
            name: r
            topology: {kind: chain, nodes: 3}
            links:
              - {a: n1, b: n2, a_addr: 198.18.0.2/24, b_addr: 198.18.0.9/24}
            """,
            "lab.yaml:4:5: n1:eth0 and n2:lo both have address 198.18.0.2",
        ),
        (  # the pool handed out an address a written link holds
            """\
            name: r
            topology: {kind: chain, nodes: 3}
            addressing: {ipv4: 198.51.100.0/24}
            links:
              - {a: n1, b: n2, a_addr: 198.51.100.129/25, b_addr: 198.51.100.130/25}
            """,
            "lab.yaml:5:5: n3:eth0 and n1:eth0 both have address 198.51.100.129",
        ),
        (  # one subnet on two links apart: n3 got a static route to its own connected
            # subnet, and `up` failed with a raw EEXIST (exit 1)
            """\
            name: r
            topology: {kind: chain, nodes: 4}
            links:
              - {a: n1, b: n2, a_addr: 192.0.2.1/24, b_addr: 192.0.2.2/24}
              - {a: n3, b: n4, a_addr: 192.0.2.3/24, b_addr: 192.0.2.4/24}
            """,
            "lab.yaml:5:5: link n3–n4's subnet 192.0.2.0/24 overlaps 192.0.2.0/24 of link "
            "n1–n2: under routing static each link (or switched segment) needs a subnet of "
            "its own",
        ),
        (  # overlapping, not equal; the later link is named whichever is wider
            """\
            name: r
            topology: {kind: chain, nodes: 4}
            routing: {protocol: ospf}
            links:
              - {a: n1, b: n2, a_addr: 192.0.2.1/24, b_addr: 192.0.2.2/24}
              - {a: n3, b: n4, a_addr: 192.0.2.129/25, b_addr: 192.0.2.130/25}
            """,
            "lab.yaml:6:5: link n3–n4's subnet 192.0.2.128/25 overlaps 192.0.2.0/24 of link n1–n2",
        ),
    ],
)
def test_written_addresses_that_clash_are_refused_at_their_link(text: str, says: str) -> None:
    (found,) = problems(text)
    assert found.startswith(says), found


def test_a_sysctl_value_that_is_no_sysctls_is_refused_at_its_key() -> None:
    assert problems("""\
        name: r
        topology: {kind: pair}
        sysctls:
          net.ipv4.ip_forward: "1; reboot"
        """) == ["lab.yaml:4:3: sysctl net.ipv4.ip_forward: '1; reboot' is no value a sysctl takes"]
    graph = load_text('name: r\ntopology: {kind: pair}\nsysctls: {net.ipv4.tcp_rmem: "4096 87380 6291456"}\n')
    assert graph.spec.sysctls == {"net.ipv4.tcp_rmem": "4096 87380 6291456"}


def test_small_mistakes_are_said_once_and_plainly() -> None:
    # found once per IP version, it had been said twice
    assert problems("""\
        name: r
        topology: {kind: pair}
        links:
          - {a: n1, b: n2, a_addr: 198.18.0.1/24}
        """) == [
        "lab.yaml:4:3: n2:eth0 has no explicit IPv4 address but shares a subnet with ports that "
        "do; give addresses to every end or to none"
    ]
    # "(did you mean 'n1'?)" of n1 itself
    assert problems("""\
        name: r
        nodes: [{name: n1, netns: n1}, {name: n2}]
        links: [{a: n1, b: n2}]
        """) == [
        "lab.yaml:2:27: netns: 'n1' is this node itself; name the node whose namespace it shares"
    ]
    # true had been taken for 1: "ipv4 pool 0.0.0.1/32 is too small"
    (pool,) = problems("name: r\ntopology: {kind: pair}\naddressing: {ipv4: true}\n")
    assert pool.startswith("lab.yaml:3:20: true is no pool")


def test_aliases_beyond_what_a_lab_can_hold_are_refused_before_any_is_made() -> None:
    started = time.monotonic()
    (found,) = problems("name: r\ntopology: {kind: ring, nodes: 1000}\n"
                        "link_defaults: {aliases: 1024}\n")  # fmt: skip
    assert found.endswith(
        "4,100,000 interface addresses (1024 aliases on a link): a lab has at most "
        "1,000,000; give fewer aliases or links"
    )
    assert time.monotonic() - started < 5  # a 100x100 grid so had taken 7 min and 3.6 GB


def test_a_bind_over_the_nodes_proc_or_sys_is_refused() -> None:
    """It validated and came up, then every `netrig exec` in the node failed."""
    (found,) = problems("""\
        name: r
        nodes:
          - {name: n1, binds: ["/tmp:/proc/x"]}
          - {name: n2}
        links: [{a: n1, b: n2}]
        """)
    assert found.startswith("lab.yaml:3:24: bind '/tmp:/proc/x': /proc in a node is the kernel's")


@pytest.mark.parametrize(
    "text",
    [
        # one link-local address on every link of a node is usual (routers do it)
        """\
        name: r
        topology: {kind: chain, nodes: 3}
        links:
          - {a: n1, b: n2, a_addr: "fe80::2/64", b_addr: "fe80::1/64"}
          - {a: n2, b: n3, a_addr: "fe80::1/64", b_addr: "fe80::3/64"}
        """,
        # batman puts a node's mesh ports in one subnet on purpose; a written LAN address
        # elsewhere in the file had made that an "overlap"
        """\
        name: r
        topology: {kind: ring, nodes: 4}
        routing: {protocol: batman}
        nodes: [{name: lan, kind: switch}, {name: h1}]
        links:
          - {a: n1, b: lan, a_addr: 192.0.2.1/24}
          - {a: h1, b: lan, a_addr: 192.0.2.2/24}
        """,
        # without routing between them, one subnet on two links apart is the file's choice
        # (exec lines may bridge them)
        """\
        name: r
        topology: {kind: chain, nodes: 4}
        routing: {protocol: none}
        links:
          - {a: n1, b: n2, a_addr: 192.0.2.1/24, b_addr: 192.0.2.2/24}
          - {a: n3, b: n4, a_addr: 192.0.2.3/24, b_addr: 192.0.2.4/24}
        """,
    ],
)
def test_addresses_that_may_repeat_or_overlap_are_taken(text: str) -> None:
    plan_lab(load_text(textwrap.dedent(text), "lab.yaml"))


def test_a_burst_below_a_frame_or_without_a_rate_is_refused_at_its_link() -> None:
    """`burst: 100` validated and `up` said reachable (small pings pass) while every
    full-size packet was dropped; a burst without a rate sized nothing."""
    found = problems("""\
        name: b
        nodes: [{name: n1}, {name: n2}, {name: n3}]
        links:
          - {a: n1, b: n2, rate: 50mbit, burst: 100}
          - {a: n2, b: n3, burst: 4000}
          - {a: n1, b: n3, rate: 50mbit, burst: 9000, mtu: 9000}
        """)
    assert found == [
        "lab.yaml:4:5: burst 100 bytes is less than one full frame (1514 bytes with MTU 1500): "
        "such packets could never be sent; give at least 1514",
        "lab.yaml:5:5: burst 4000 without a rate: a burst sizes the token bucket of `rate:`",
        "lab.yaml:6:5: burst 9000 bytes is less than one full frame (9014 bytes with MTU 9000): "
        "such packets could never be sent; give at least 9014",
    ], found


def test_written_addresses_that_no_interface_can_hold_are_refused_at_their_link() -> None:
    """A switch port's address had been dropped without a word; an IPv4 subnet's network
    or broadcast address was taken as an interface's."""
    assert problems("""\
        name: s
        nodes: [{name: s1, kind: switch}, {name: r2}, {name: pc}]
        links:
          - {a: pc, b: s1, a_addr: 203.0.113.10/24}
          - {a: r2, b: s1, a_addr: 203.0.113.2/24, b_addr: 203.0.113.3/24}
        """) == ["lab.yaml:5:5: link r2–s1: s1 is a switch, whose ports hold no address "
                 "(203.0.113.3/24 would be dropped): give it to a host of the segment, or make "
                 "the node a host"]  # fmt: skip
    for addr, which in (("192.0.2.0/24", "network"), ("192.0.2.255/24", "broadcast")):
        assert problems(f"""\
            name: p
            topology: {{kind: pair}}
            links:
              - {{a: n1, b: n2, a_addr: {addr}, b_addr: 192.0.2.2/24}}
            """) == [f"lab.yaml:4:5: link n1–n2: {addr} is the {which} address of "
                     "192.0.2.0/24, not an interface's"]  # fmt: skip
    build_plan(load_text("name: p\ntopology: {kind: pair}\nlinks:\n  - {a: n1, b: n2, "
                         "a_addr: 192.0.2.0/31, b_addr: 192.0.2.1/31}\n"))  # fmt: skip


def test_a_port_in_another_subnet_than_its_segment_is_named_at_its_own_link() -> None:
    """It had been said at `links:` as "addresses of one link are in different subnets"."""
    assert problems("""\
        name: s
        nodes: [{name: s1, kind: switch}, {name: a}, {name: b}, {name: c}]
        links:
          - {a: a, b: s1, a_addr: 192.0.2.1/24}
          - {a: b, b: s1, a_addr: 192.0.2.2/24}
          - {a: c, b: s1, a_addr: 198.51.100.10/24}
        """) == ["lab.yaml:6:5: c:eth0 and a:eth0, ports of one segment, are in different "
                 "subnets (198.51.100.0/24 and 192.0.2.0/24); one link or switch segment is "
                 "one subnet"]  # fmt: skip


def test_routing_may_name_its_protocol_alone() -> None:
    """`routing: ospf` had been "Input should be a valid dictionary or instance of Routing"."""
    plan = build_plan(load_text("name: r\ntopology: {kind: ring, nodes: 4}\nrouting: ecmp\n"))
    assert plan.protocol == "ecmp"
    assert problems("name: r\ntopology: {kind: pair}\nrouting: nosuch\n")[0].startswith(
        "lab.yaml:3:10: "
    )
    assert problems("name: r\ntopology: {kind: pair}\nrouting: 5\n") == [
        "lab.yaml:3:10: routing: a protocol's name (routing: ospf) or a mapping (routing: "
        "{protocol: ospf, …}), not 5"
    ]


def test_an_experiment_key_misspelt_in_a_lab_file_is_pointed_at() -> None:
    """`measurements:` made the file a lab file, and the message listed only a lab's keys."""
    assert problems("name: t\ntopology: {kind: pair}\nmeasurements:\n  - ping: {src: n1}\n") == [
        "lab.yaml:3:1: unknown key 'measurements' (did you mean 'measure', a key of "
        "experiment files?)"
    ]


def test_a_sysctl_that_contradicts_the_routing_options_is_refused() -> None:
    """`hash: l4` with fib_multipath_hash_policy: 0 had run policy 0: runs labelled l4
    hashed by l3."""
    assert problems("""\
        name: t
        topology: {kind: ring, nodes: 4}
        routing: {protocol: ecmp, hash: l4}
        sysctls: {net.ipv4.fib_multipath_hash_policy: 0}
        """) == ["lab.yaml:4:47: sysctl net.ipv4.fib_multipath_hash_policy: 0 contradicts "
                 "routing ecmp, which sets it to 1 for its options; set it through `routing:` "
                 "(or leave it out)"]  # fmt: skip
    plan = build_plan(load_text("name: t\ntopology: {kind: ring, nodes: 4}\nrouting: {protocol: "
                                "ecmp, hash: l4}\nsysctls: {net.ipv4.fib_multipath_hash_policy: 1}\n"))
    assert plan.sysctls["net.ipv4.fib_multipath_hash_policy"] == "1"


def test_a_sysctl_of_one_lab_device_is_refused_with_the_key_that_works() -> None:
    """net.ipv4.conf.eth0.rp_filter passed validate; `up` set it as the namespace was made,
    before eth0 existed, and failed ("No such file or directory")."""
    assert problems("name: t\ntopology: {kind: pair}\nsysctls: {net.ipv4.conf.eth0.rp_filter: 1}\n") == [
        "lab.yaml:3:10: sysctl 'net.ipv4.conf.eth0.rp_filter': a key of one device is set "
        "before the lab's links exist; use net.ipv4.conf.default.rp_filter (every link made "
        "after takes it) or .all."
    ]
