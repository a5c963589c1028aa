"""containerlab files read as netrig labs, without root: what is taken, inherited, refused."""

from __future__ import annotations

import os
import textwrap
import warnings
from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.model import clab
from netrig.model.load import SpecError
from netrig.model.problems import Note
from netrig.rig.prepare import load_file
from netrig.rig.prepare import plan_lab as build_plan
from tests.conftest import netrig_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


LINKS = """\
name: links
topology:
  nodes:
    a: {kind: linux}
    b: {kind: linux}
  links:
    - endpoints: ["a:eth1", "host:a-eth1"]
    - type: macvlan
      endpoints: [{node: a, interface: eth2}, {node: b, interface: eth2}]
    - endpoints: ["a:eth3", "zz:eth3"]
"""


SIDECAR = """\
name: side
topology:
  nodes:
    main: {kind: linux}
    peer: {kind: linux}
    sidecar:
      kind: linux
      network-mode: container:main
      exec: ["ip link show eth1"]
  links:
    - endpoints: ["main:eth1", "peer:eth1"]
"""


def write(tmp_path: Path, text: str, name: str = "lab.clab.yml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def problems_of(path: str) -> list[str]:
    with pytest.raises(SpecError) as exc:
        build_plan(load_file(path))
    return [str(p) for p in exc.value.problems]


def test_bridge_example_nodes_links_mtu_and_lifted_addresses(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("H1_ADDR", raising=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plan = build_plan(load_file(str(EXAMPLES / "clab-bridge.clab.yml")))
    assert plan.name == "clab-bridge" and plan.protocol == "none"
    assert {n: p.kind for n, p in plan.nodes.items()} == {
        "h1": "host", "h2": "host", "h3": "host", "sw": "switch",
    }  # fmt: skip
    assert plan.nodes["sw"].bridge is not None
    assert [i.name for i in plan.nodes["sw"].ifaces] == ["p1", "p2", "p3"]
    assert plan.nodes["h1"].iface("eth1").addrs == ["198.51.100.1/24"]  # ${H1_ADDR:=…}
    assert plan.nodes["h3"].iface("eth1").addrs == ["198.51.100.3/24"]
    assert [link.mtu for link in plan.links] == [None, None, 9000]
    assert plan.nodes["h1"].loopbacks == []  # netrig assigns nothing of its own
    assert plan.nodes["h1"].exec == []  # the ip addr line became the address; apk skipped
    notes = [str(w.message) for w in seen if issubclass(w.category, Note)]
    assert any("package install skipped" in n and ":11:" in n for n in notes)
    assert any("image 'alpine:3' ignored" in n for n in notes)


def test_env_substitution_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("H1_ADDR", "198.51.100.9/24")
    plan = build_plan(load_file(str(EXAMPLES / "clab-bridge.clab.yml")))
    assert plan.nodes["h1"].iface("eth1").addrs == ["198.51.100.9/24"]
    env = {"SET": "x", "EMPTY": ""}
    assert clab.substitute_env("${SET:=d} ${EMPTY:-d} ${EMPTY-d} ${GONE} $SET $$SET", env) == (
        "x d   x $SET"
    )


def test_defaults_kinds_groups_inherit_as_containerlab(tmp_path: Path) -> None:
    (tmp_path / "a.conf").write_text("a\n")
    (tmp_path / "b.conf").write_text("b\n")
    path = write(
        tmp_path,
        """\
        name: inherit
        topology:
          defaults:
            kind: linux
            binds: ["a.conf:/etc/hostname"]
            exec: ["ip link set lo mtu 1500"]
          kinds:
            linux:
              cmd: sleep 1000
          groups:
            edge:
              exec: ["ip link set lo mtu 9000"]
          nodes:
            n1: {group: edge}
            n2:
              binds: ["b.conf:/etc/hostname:ro"]
            br: {kind: ovs-bridge}
          links:
            - endpoints: [n1:e1, br:p1]
            - endpoints: [n2:e1, br:p2]
        """,
    )
    graph = load_file(path)
    n1, n2, br = graph.nodes["n1"], graph.nodes["n2"], graph.nodes["br"]
    assert n1.exec == ["ip link set lo mtu 9000"]  # the group's, over the defaults'
    assert n2.exec == ["ip link set lo mtu 1500"]
    assert n1.cmd == n2.cmd == "sleep 1000"  # from the kind
    assert n1.binds == [f"{tmp_path}/a.conf:/etc/hostname"]  # relative to the file
    assert n2.binds == [f"{tmp_path}/b.conf:/etc/hostname:ro"]  # the node's wins per path
    assert br.kind == "switch" and br.switch == "ovs"


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("    r1: {kind: nokia_srlinux}\n", 4, "kind 'nokia_srlinux' is not supported"),
        ("    r1: {kind: ceos, image: ceos:4.32}\n", 4, "kind 'ceos'"),
        ("    r1: {kind: vr-sros}\n", 4, "kind 'vr-sros'"),
        ("    r1: {kind: linux, network-mode: host}\n", 4, "network-mode 'host'"),
        ("    r1: {kind: linux, binds: [/var/run/somedir]}\n", 4, "anonymous volume"),
        ("    r1: {kind: linux, flavour: x}\n", 4, "key 'flavour' is not supported"),
        (  # an interface on two links: it had been called a duplicate link
            "    a: {kind: linux}\n    b: {kind: linux}\n    c: {kind: linux}\n"
            '  links:\n    - endpoints: ["a:eth1", "b:eth1"]\n'
            '    - endpoints: ["a:eth1", "c:eth1"]\n',
            9,
            "interface a:eth1 is already an end of the link on line 8",
        ),
        (  # parallel links: they had been "duplicate link r1–r2"
            "    r1: {kind: linux}\n    r2: {kind: linux}\n"
            '  links:\n    - endpoints: ["r1:eth1", "r2:eth1"]\n'
            '    - endpoints: ["r1:eth2", "r2:eth2"]\n',
            8,
            "a second link r1–r2 (the first is on line 7): netrig builds one link between two "
            "nodes; put a switch node (containerlab: kind bridge) on the second, or leave it out",
        ),
        (  # the loopback as an endpoint had been "used twice" (it is used once)
            "    a: {kind: linux}\n    b: {kind: linux}\n"
            '  links:\n    - endpoints: ["a:lo", "b:eth1"]\n',
            7,
            "interface name 'lo' on node 'a' is the node's loopback",
        ),
    ],
)
def test_refused_at_file_line(tmp_path: Path, body: str, line: int, words: str) -> None:
    path = write(tmp_path, f"name: refuse\ntopology:\n  nodes:\n{body}")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:{line}:") and words in problem


def test_vendor_kind_from_defaults_refused_at_its_line_by_the_cli(tmp_path: Path) -> None:
    vendor = "name: vendor\ntopology:\n  defaults:\n    kind: cumulus_cvx\n  nodes:\n    sw1: {}\n"
    path = write(tmp_path, vendor)
    for command in ("validate", "up"):
        result = netrig_cli(command, path)
        assert result.returncode == 2, result.stderr
        assert f"{path}:4:" in result.stderr and "cumulus_cvx" in result.stderr
        assert "Traceback" not in result.stderr
    assert not any(ns.startswith("vendor-") for ns in netns.list_names())  # nothing created


def test_links_other_than_veth_between_nodes_refused(tmp_path: Path) -> None:
    path = write(tmp_path, LINKS)
    found = problems_of(path)
    assert any(":7:" in p and "host's network" in p for p in found)
    assert any(":8:" in p and "link type 'macvlan'" in p for p in found)
    assert any(":10:" in p and "unknown node 'zz'" in p for p in found)


def test_unrendered_template_refused_at_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: tmpl\ntopology:\n  nodes:\n{{ range $i := .nodes }}\n    n{{ $i }}: {kind: linux}\n",
    )
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:4") and "unrendered template" in problem


def test_recognised_by_content_and_network_mode_container(tmp_path: Path) -> None:
    path = write(tmp_path, SIDECAR, name="plain.yaml")
    plan = build_plan(load_file(path))
    assert plan.nodes["sidecar"].shares == "main"
    assert plan.nodes["sidecar"].ns == plan.nodes["main"].ns
    assert plan.nodes["sidecar"].exec == [["ip", "link", "show", "eth1"]]


def test_name_option_and_bad_name(tmp_path: Path) -> None:
    path = str(EXAMPLES / "clab-bridge.clab.yml")
    assert build_plan(load_file(path, name="other")).name == "other"
    with pytest.raises(SpecError) as exc:
        load_file(path, name="bad name")
    assert str(exc.value.problems[0]).startswith("--name: ")
    result = netrig_cli("validate", path, "--name", "x" * 30)
    assert result.returncode == 2 and "--name" in result.stderr


def test_experiment_names_a_containerlab_lab(tmp_path: Path) -> None:
    from netrig.rig.prepare import load_experiment

    exp = load_experiment(str(EXAMPLES / "clab-frr-ping.yaml"))
    assert exp.name == "clab-frr"
    assert exp.points[0].plan.nodes["r1"].services[0].kind == "frr"
    assert [b[1] for b in exp.points[0].plan.nodes["r1"].binds] == [
        "/etc/frr/daemons", "/etc/frr/frr.conf",
    ]  # fmt: skip
    assert os.path.isfile(exp.points[0].plan.nodes["r1"].binds[1][0])
    bad = tmp_path / "exp.yaml"
    bad.write_text("lab: missing.clab.yml\nmeasure:\n  - ping: {src: h1, dst: h2}\n")
    result = netrig_cli("run", "--dry-run", str(bad))
    missing = tmp_path / "missing.clab.yml"
    assert result.returncode == 2
    assert f"{bad}:1:6: lab {missing}: cannot read: No such file" in result.stderr


@pytest.mark.parametrize(
    ("line", "feature"),
    [
        ("tc qdisc add dev eth1 root netem delay 10ms", "netem"),
        ("/sbin/tc qdisc replace dev eth1 parent 1:1 handle 10: fq_codel", "fq_codel"),
        ("tc qdisc change dev eth1 root handle 1: fq", "fq"),
        ("tc qdisc add dev eth1 root tbf rate 1mbit burst 32kbit latency 400ms", "tbf"),
        ("ip link add link eth1 name eth1.10 type vlan id 10", "vlan"),
        ("ip link add d0 type dummy", "dummy"),
        ("ip link add bond0 type bond mode 802.3ad", "bonding"),
        ("ip link add red type vrf table 10", "vrf"),
        ("ip link add wg0 type wireguard", "wireguard"),
        ("ip link add t0 type gretap remote 192.0.2.2 local 192.0.2.1", "gre"),
        ("ip link add g0 type geneve id 5 remote 192.0.2.2", "geneve"),
        ("ip link add link eth1 iv0 type ipvlan mode l2", "ipvlan"),
        # what netrig cannot tell for sure: nothing
        ("tc qdisc del dev eth1 root", None),
        ("tc qdisc add dev eth1 root stab overhead 4 netem delay 1ms", None),
        ("tc -s qdisc show dev eth1", None),
        ("ip link set eth1 type vlan", None),
        ("ip addr add 192.0.2.1/24 dev eth1", None),
        ("sh -c 'tc qdisc add dev eth1 root netem delay 1ms'", None),
        ("ip link add x0 type", None),
    ],
)
def test_the_kernel_feature_an_exec_line_plainly_needs(line: str, feature: str | None) -> None:
    import shlex

    from netrig.rig.hostneeds import line_feature

    found = line_feature(shlex.split(line))
    assert (found[0] if found else None) == feature


NETEM_LINE = """\
name: c7
topology:
  nodes:
    a:
      kind: linux
      exec:
        - ip addr add 192.0.2.1/24 dev eth1
        - tc qdisc add dev eth1 root netem delay 10ms
        - ip link add red type vrf table 10
    b:
      kind: linux
      exec: [ip addr add 192.0.2.2/24 dev eth1]
  links:
    - endpoints: ["a:eth1", "b:eth1"]
"""


def test_an_exec_line_that_needs_a_kernel_feature_the_host_lacks_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate said ok; `up` failed (exit 1): "Specified qdisc kind is unknown"."""
    from netrig.host import features

    lacks = {"netem", "vrf"}
    monkeypatch.setattr(features, "has_feature", lambda name: name not in lacks)
    path = write(tmp_path, NETEM_LINE)
    assert problems_of(path) == [
        f"{path}:8:11: a: exec line tc qdisc add dev eth1 root netem delay 10ms needs the netem "
        "qdisc; this kernel has no netem (see `netrig doctor`)",
        f"{path}:9:11: a: exec line ip link add red type vrf table 10 needs VRF devices; this "
        "kernel has no vrf (see `netrig doctor`)",
    ]
    lacks.clear()
    build_plan(load_file(path))


def test_validate_refuses_a_netem_exec_line_where_the_kernel_lacks_netem(tmp_path: Path) -> None:
    from netrig.host import features

    if features.has_feature("netem"):
        pytest.skip("this kernel has netem")
    path = write(tmp_path, NETEM_LINE.replace("        - ip link add red type vrf table 10\n", ""))
    done = netrig_cli("validate", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{path}:8:11: a: exec line tc qdisc add dev eth1 root netem "
                                  "delay 10ms needs the netem qdisc"), done.stderr  # fmt: skip


def test_exec_lines_yaml_reads_as_other_than_strings_are_taken_as_written(tmp_path: Path) -> None:
    """containerlab reads exec into strings: `- true` is the command `true`. netrig had
    refused it as "'True' is not on this host's PATH"."""
    path = write(tmp_path, """\
        name: bools
        topology:
          nodes:
            a:
              kind: linux
              cmd: yes
              exec:
                - true
                - false
                - 1.50
            b: {kind: linux}
          links: [{endpoints: ["a:eth1", "b:eth1"]}]
        """)
    assert problems_of(path) == [f"{path}:10:11: a: exec line 1.50: '1.50' is not on this "
                                 "host's PATH (nodes run the host's programs)"]  # fmt: skip
    Path(path).write_text(Path(path).read_text().replace("        - 1.50\n", ""))
    plan = build_plan(load_file(path))
    assert plan.nodes["a"].exec == [["true"], ["false"]] and plan.nodes["a"].cmd == ["yes"]
