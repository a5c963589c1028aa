"""Mininet topology files read with netrig's own Topo API (no Mininet installed), and run."""

from __future__ import annotations

import json
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from netrig.host import features
from netrig.model import mininet
from netrig.model.load import SpecError
from netrig.model.problems import Note
from netrig.rig import Lab
from netrig.rig.prepare import load_file, plan_lab
from tests.conftest import netrig_cli, new_lab_name, requires_root, requires_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def write(tmp_path: Path, text: str, name: str = "topo.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_example_ports_names_addresses_and_rates() -> None:
    plan = plan_lab(load_file(str(EXAMPLES / "mininet-bw.py")))
    assert plan.name == "mininet-bw"
    assert {n: p.kind for n, p in plan.nodes.items()} == {
        "h1": "host", "h2": "host", "h3": "host", "h4": "host", "s1": "switch", "s2": "switch",
    }  # fmt: skip
    assert plan.nodes["s1"].bridge is not None
    assert [i.name for i in plan.nodes["s1"].ifaces] == ["s1-eth1", "s1-eth2", "s1-eth3"]
    assert plan.nodes["h3"].iface("h3-eth0").addrs == ["198.18.0.3/15"]
    core = next(link for link in plan.links if {link.a, link.b} == {"s1", "s2"})
    assert core.rate == 50_000_000
    assert {link.rate for link in plan.links} == {50_000_000, 200_000_000}
    every = [a for n in plan.nodes.values() for i in n.ifaces for a in i.addrs]
    assert every and all(a.startswith("198.18.") for a in every)  # never Mininet's 10/8
    assert not any(name.startswith("mininet") for name in sys.modules)  # shims were scoped


def test_old_style_topo_with_ips_ports_names_and_default_route(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        from mininet.topo import Topo
        from mininet.node import Node

        class Routed(Topo):
            def __init__(self):
                Topo.__init__(self)
                r0 = self.addNode("r0", cls=Node, ip="192.0.2.1/26")
                h10 = self.addHost("h10", ip="192.0.2.10/26", defaultRoute="via 192.0.2.1")
                h2 = self.addHost("h2", ip="192.0.2.70/26", defaultRoute="via 192.0.2.65")
                self.addLink(h10, r0, intfName2="r0-left")
                self.addLink(h2, r0, port1=3, intfName2="r0-right",
                             params2={"ip": "192.0.2.65/26"})
        """,
    )
    plan = plan_lab(load_file(path))
    r0, h2 = plan.nodes["r0"], plan.nodes["h2"]
    assert r0.iface("r0-left").addrs == ["192.0.2.1/26"]  # ip= on its default interface
    assert r0.iface("r0-right").addrs == ["192.0.2.65/26"]  # params2 ip
    assert h2.iface("h2-eth3").addrs == ["192.0.2.70/26"]  # port1=3
    assert h2.exec == [["ip", "route", "add", "default", "via", "192.0.2.65"]]


def test_a_params_ip_on_the_default_interface_yields_to_the_hosts_with_a_note(
    tmp_path: Path,
) -> None:
    """As Mininet's configHosts: the host's ip (given or automatic) goes on its default
    interface; a params ip there is replaced, now with a note saying so."""
    path = write(
        tmp_path,
        """\
        from mininet.topo import Topo
        class P(Topo):
            def build(self):
                h1, h2 = self.addHost("h1"), self.addHost("h2")
                self.addLink(h1, h2, params1={"ip": "198.51.100.9/24"})
        """,
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plan = plan_lab(load_file(path))
    assert plan.nodes["h1"].iface("h1-eth0").addrs == ["198.18.0.1/15"]
    notes = [str(w.message) for w in seen if issubclass(w.category, Note)]
    assert any(
        "h1: its default interface h1-eth0 gets the host's address 198.18.0.1/15, not "
        "params ip 198.51.100.9/24" in n and ":5:" in n for n in notes  # the addLink
    ), notes


def test_hosts_numbered_in_natural_order_from_netrigs_pool(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        from mininet.topo import Topo
        class Many(Topo):
            def build(self):
                s = self.addSwitch("s1")
                for name in ("h10", "h2", "h1"):
                    self.addLink(self.addHost(name), s)
        """,
    )
    plan = plan_lab(load_file(path))
    addr = {n: plan.nodes[n].ifaces[0].addrs for n in ("h1", "h2", "h10")}
    assert addr == {"h1": ["198.18.0.1/15"], "h2": ["198.18.0.2/15"], "h10": ["198.18.0.3/15"]}


def test_topo_choice_builtin_and_arguments(tmp_path: Path) -> None:
    tree = plan_lab(load_file(str(EXAMPLES / "mininet-bw.py"), topo="tree,2"))
    assert sorted(tree.nodes) == ["h1", "h2", "h3", "h4", "s1", "s2", "s3"]
    same = plan_lab(load_file(str(EXAMPLES / "mininet-bw.py"), topo="tree,depth=2"))
    assert sorted(same.nodes) == sorted(tree.nodes)  # Mininet's keywords, as `mn --topo`
    wide = plan_lab(load_file(str(EXAMPLES / "mininet-bw.py"), topo="dumbbell,3,20"))
    assert len(wide.hosts()) == 6 and 20_000_000 in {link.rate for link in wide.links}
    with pytest.raises(SpecError, match="no topology 'nope'"):
        load_file(str(EXAMPLES / "mininet-bw.py"), topo="nope")
    two = write(tmp_path, "from mininet.topo import Topo\ntopos = {'a': Topo, 'b': Topo}\n")
    with pytest.raises(SpecError, match="pick one with --topo"):
        load_file(two)


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("class T(Topo):\n    def build(self):\n        self.addHost(1/0)\n", 5, "ZeroDivision"),
        ("net = Mininet(topo=None)\n", 3, "netrig builds the lab itself"),
        (
            "class T(Topo):\n    def build(self):\n        self.addHost('bad name')\n",
            5,
            "node name 'bad name'",
        ),
        ("class T(Topo):\n    pass\n# \0\n", 5, "not Python source: a NUL byte here"),
        # `up` had exited 0 with no lab: the exit was the file's, while netrig read it
        ("import sys\nsys.exit(0)\n", 4, "the file called exit (0)"),
        # a ValueError traceback, and a bare KeyError: 'h9'
        (
            "class T(Topo):\n    def build(self):\n        a, b = self.addHost('a'), "
            "self.addHost('b')\n        self.addLink(a, b, bw='fast')\n",
            6,
            "bw='fast': a number (Mbit/s) is needed",
        ),
        (
            "class T(Topo):\n    def build(self):\n        a = self.addHost('a')\n"
            "        self.addLink(a, 'h9')\n",
            6,
            "addLink: no node 'h9'",
        ),
        ("class T(Topo): pass\nclass U(Topo): pass\n", 0, "topos = {'mine': MyTopo}"),
        (  # Mininet's Topo is a multigraph: this had been "duplicate link h1–s1"
            "class T(Topo):\n    def build(self):\n        s, h = self.addSwitch('s1'), "
            "self.addHost('h1')\n        self.addLink(h, s)\n        self.addLink(h, s)\n",
            7,
            "a second link h1–s1 (the first is on line 6): netrig builds one link between two "
            "nodes; put a switch node (Mininet: addSwitch) on the second, or leave it out",
        ),
    ],
)
def test_errors_point_at_the_files_line(tmp_path: Path, body: str, line: int, words: str) -> None:
    path = write(
        tmp_path, "from mininet.topo import Topo\nfrom mininet.net import Mininet\n" + body
    )
    with pytest.raises(SpecError) as exc:
        plan_lab(load_file(path))
    problem = str(exc.value.problems[0])
    assert problem.startswith(f"{path}:{line}" if line else path) and words in problem, problem


def test_delay_needs_netem_refused_at_the_addlink_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        from mininet.topo import Topo
        class Slow(Topo):
            def build(self):
                h1, h2 = self.addHost("h1"), self.addHost("h2")
                self.addLink(h1, h2, bw=10, delay="5ms", loss=1)
        """,
    )
    if features.has_feature("netem"):
        plan = plan_lab(load_file(path))
        assert plan.links[0].delay == pytest.approx(0.005)
        return
    result = netrig_cli("validate", path)
    assert result.returncode == 2
    assert f"{path}:5:" in result.stderr and "netem" in result.stderr
    assert "delay, loss" in result.stderr


def test_the_shim_is_netrigs_topo() -> None:
    assert mininet.natural("h10") > mininet.natural("h2")


@requires_root
@requires_tool("iperf3")
def test_example_up_with_bw_limits_carrying_traffic() -> None:
    """Across the 50 Mbit/s core, iperf3 gets a fraction of what it gets across one switch
    (200 Mbit/s host links): a ratio, not an absolute rate."""
    name = new_lab_name("mn")
    lab = Lab.from_file(str(EXAMPLES / "mininet-bw.py"), name=name)
    try:
        lab.up()
        ping = lab.exec("h1", ["ping", "-c1", "-w5", "198.18.0.4"], capture_output=True)
        assert ping.returncode == 0, ping.stdout
        rates = {}
        for server, address in (("h2", "198.18.0.2"), ("h3", "198.18.0.3")):
            proc = lab.popen(server, ["iperf3", "-s", "-1"], stdout=None, stderr=None)
            time.sleep(0.3)
            run = lab.exec("h1", ["iperf3", "-J", "-t", "2", "-c", address], capture_output=True)
            proc.wait(timeout=10)
            assert run.returncode == 0, run.stdout[-500:]
            rates[server] = json.loads(run.stdout)["end"]["sum_received"]["bits_per_second"]
        assert rates["h3"] < 0.5 * rates["h2"], rates
        assert rates["h3"] > 0.1 * rates["h2"], rates  # limited, not broken
    finally:
        lab.down()


TWO_TOPOS = """\
    from mininet.topo import Topo

    class Line(Topo):
        def build(self, k=2):
            last = None
            for i in range(1, k + 1):
                s, h = self.addSwitch(f"s{i}"), self.addHost(f"h{i}")
                self.addLink(h, s)
                if last:
                    self.addLink(last, s)
                last = s

    topos = {"line": Line, "one": lambda: Line(k=1)}
    """


def test_an_experiment_picks_a_mininet_files_topo_and_its_arguments(tmp_path: Path) -> None:
    """The message said "pick one with --topo NAME", which `netrig run` does not have, and
    a `topo:` key was an unknown key: such a file could not be measured."""
    write(tmp_path, TWO_TOPOS, "two.py")
    exp = tmp_path / "exp.yaml"

    def validate(body: str) -> tuple[int, str, str]:
        exp.write_text(f"name: mx\nlab: two.py\n{body}measure:\n"
                       "  - ping: {src: h1, dst: h2, count: 1}\n")  # fmt: skip
        done = netrig_cli("validate", str(exp))
        return done.returncode, done.stdout, done.stderr

    code, _out, err = validate("")
    assert code == 2 and err.startswith(f"{exp}:2:6: lab {tmp_path}/two.py: the file's topos "
                                        "are line, one: pick one with `topo: NAME` beside "
                                        "`lab:`"), err  # fmt: skip
    code, out, err = validate('topo: "line,{k}"\nvary: {k: [2, 3]}\n')  # a sweep over its args
    assert code == 0 and "2 sweep points × 1 run, 2 labs" in out, err
    code, _out, err = validate("topo: nope\n")
    assert code == 2 and err.startswith(f"{exp}:3:7: lab {tmp_path}/two.py: no topology 'nope'")
    exp.write_text("name: mx\ntopology: {kind: pair}\ntopo: line\nmeasure:\n"
                   "  - ping: {src: n1, dst: n2, count: 1}\n")  # fmt: skip
    done = netrig_cli("validate", str(exp))
    assert done.returncode == 2 and done.stderr.startswith(f"{exp}:3:1: topo: picks the topology")
