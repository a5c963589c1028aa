"""Routing plugins without root: what they ask of the plan, the configs and command lines
they generate, and the fault events they read."""

from __future__ import annotations

import re
from ipaddress import ip_interface
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from netrig.model.load import SpecError
from netrig.plan import events as plan_events
from netrig.plan.lab import build_plan
from netrig.plan.model import LabPlan, UnknownName
from netrig.rig.prepare import load_experiment, load_text
from netrig.routing import make
from netrig.routing.babel import Babel
from netrig.routing.batman import Batman
from netrig.routing.ospf import Ospf

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plan_of(spec: dict[str, Any]) -> LabPlan:
    return build_plan(load_text(yaml.safe_dump({"name": "rp", **spec}), "lab.yaml"))


def fake_lab(plan: LabPlan, tmp_path: Any = None) -> Any:
    """What the config generators read of a lab: its plan, name and node directories."""
    return SimpleNamespace(
        plan=plan, name=plan.name, node_dir=lambda node: str(tmp_path / node) if tmp_path else ""
    )


def test_batman_forces_one_ipv4_subnet_with_broadcast_and_a_private_run() -> None:
    plan = plan_of({"topology": {"kind": "chain", "nodes": 3}, "routing": {"protocol": "batman"}})
    addrs = [ip_interface(a) for n in plan.nodes.values() for i in n.ifaces for a in i.addrs]
    assert len(addrs) == 4  # n1:eth0, n2:eth0+eth1, n3:eth0, IPv4 only
    assert {a.network for a in addrs} == {addrs[0].network} and addrs[0].network.prefixlen < 31
    assert all(a.version == 4 for a in addrs)
    assert all(":" not in lb for n in plan.nodes.values() for lb in n.loopbacks)
    assert plan.private_run


def test_batman_refuses_an_explicit_p2p_mode_with_file_and_line() -> None:
    with pytest.raises(SpecError) as err:
        plan_of(
            {
                "topology": {"kind": "pair"},
                "routing": {"protocol": "batman"},
                "addressing": {"mode": "p2p"},
            }
        )
    assert "lab.yaml:" in str(err.value) and "needs addressing mode 'shared-subnet'" in str(
        err.value
    )


def test_batman_with_ipv4_off_is_refused() -> None:
    with pytest.raises(SpecError, match="routes only IPv4"):
        plan_of(
            {
                "topology": {"kind": "pair"},
                "routing": {"protocol": "batman"},
                "addressing": {"ipv4": False},
            }
        )


@pytest.mark.parametrize("protocol", ["babel", "ospf"])
def test_babel_and_ospf_refuse_shared_subnet(protocol: str) -> None:
    with pytest.raises(SpecError, match="cannot use addressing mode 'shared-subnet'"):
        plan_of(
            {
                "topology": {"kind": "ring", "nodes": 4},
                "routing": {"protocol": protocol},
                "addressing": {"mode": "shared-subnet"},
            }
        )


def test_batmand_command_line_carries_options_loopback_and_interfaces() -> None:
    plan = plan_of({"topology": {"kind": "chain", "nodes": 3}, "routing": {"protocol": "batman"}})
    proto = make("batman", {"originator_interval": 250, "hop_penalty": 20, "routing_class": 1})
    assert isinstance(proto, Batman)
    argv = proto.batmand_argv(fake_lab(plan), "n2")
    assert argv[:2] == ["batmand", "--no-detach"]
    assert argv[argv.index("-o") + 1] == "250"
    assert argv[argv.index("--hop-penalty") + 1] == "20"
    assert argv[argv.index("-r") + 1] == "1"
    assert argv[argv.index("-a") + 1] == "198.18.0.2/32"
    assert argv[-2:] == ["eth0", "eth1"]


def test_batman_options_are_checked() -> None:
    with pytest.raises(ValidationError):
        make("batman", {"originator_interval": 0})
    with pytest.raises(ValidationError):
        make("batman", {"implementation": "kernel"})


def test_ospf_config_has_the_file_link_costs_both_versions_and_timers() -> None:
    plan = plan_of(
        {
            "topology": {"kind": "ring", "nodes": 4},
            "links": [{"a": "n1", "b": "n2", "cost": 7}],
            "routing": {"protocol": "ospf", "hello": 2, "dead": 9, "area": 3},
        }
    )
    proto = make("ospf", {"hello": 2, "dead": 9, "area": 3})
    assert isinstance(proto, Ospf)
    conf = proto.config(fake_lab(plan), "n1")
    to_n2 = next(i.name for i in plan.node("n1").ifaces if i.peer == "n2")
    to_n4 = next(i.name for i in plan.node("n1").ifaces if i.peer == "n4")
    assert f'interface "{to_n2}" {{ type ptp; cost 7; hello 2; dead 9; }};' in conf
    assert f'interface "{to_n4}" {{ type ptp; cost 1; hello 2; dead 9; }};' in conf
    assert "router id 198.18.0.1;" in conf
    assert "protocol ospf v2" in conf and "protocol ospf v3" in conf
    assert conf.count("area 3 {") == 2


def test_ospf_ipv4_only_lab_gets_no_ospfv3() -> None:
    plan = plan_of(
        {
            "topology": {"kind": "pair"},
            "routing": {"protocol": "ospf"},
            "addressing": {"ipv6": False},
        }
    )
    conf = Ospf(Ospf.Options()).config(fake_lab(plan), "n1")
    assert "ospf v2" in conf and "ospf v3" not in conf and "ipv6" not in conf


def test_ospf_dead_must_exceed_hello() -> None:
    with pytest.raises(ValidationError, match="must be longer than hello"):
        make("ospf", {"hello": 5, "dead": 5})


def test_babel_config_lists_interfaces_with_costs_and_keeps_files_in_the_node_dir(
    tmp_path: Any,
) -> None:
    plan = plan_of(
        {
            "topology": {"kind": "chain", "nodes": 3},
            "links": [{"a": "n2", "b": "n3", "cost": 3}],
            "routing": {"protocol": "babel", "hello_interval": 0.5},
        }
    )
    proto = make("babel", {"hello_interval": 0.5})
    assert isinstance(proto, Babel)
    conf = proto.config(fake_lab(plan, tmp_path), "n2")
    lines = conf.splitlines()
    ifaces = [line for line in lines if line.startswith("interface ")]
    assert ifaces == [
        "interface eth0 type wired hello-interval 0.5 rxcost 96 split-horizon true",
        "interface eth1 type wired hello-interval 0.5 rxcost 288 split-horizon true",
    ]
    for key in ("state-file", "pid-file", "local-path-readwrite"):
        (line,) = [x for x in lines if x.startswith(key + " ")]
        assert line.split()[1].startswith(str(tmp_path / "n2") + "/")
    assert "redistribute local" in lines


# ---------------------------------------------------------------- faults without root


def test_find_link_either_way_round_and_names_the_nodes_when_missing() -> None:
    plan = plan_of({"topology": {"kind": "ring", "nodes": 5}})
    assert plan_events.find_link(plan, "n3", "n2") is plan_events.find_link(plan, "n2", "n3")
    with pytest.raises(UnknownName, match=r"no link between n1 and n3 \(n1 is linked to n2, n5\)"):
        plan_events.find_link(plan, "n1", "n3")


@pytest.mark.parametrize(
    ("text", "event"),
    [
        ("link n3-n4 down @ 2s", plan_events.Event(2.0, "link-down", ("n3", "n4"))),
        ("link r1-r2 up @ 1500ms", plan_events.Event(1.5, "link-up", ("r1", "r2"))),
        ("link n1-n2 rate 10mbit @ 0", plan_events.Event(0.0, "link-rate", ("n1", "n2"), 10_000_000)),
        ("link n1-n2 rate off @ 3", plan_events.Event(3.0, "link-rate", ("n1", "n2"), None)),
        ("node n5 stop @ 4.5s", plan_events.Event(4.5, "node-stop", ("n5",))),
        ("  node n5 start @ 6  ", plan_events.Event(6.0, "node-start", ("n5",))),
    ],
)
def test_events_are_read(text: str, event: plan_events.Event) -> None:
    assert plan_events.parse_event(text) == event


@pytest.mark.parametrize(
    ("text", "rate", "shown"),
    [
        ("link n1-n2 rate 10 mbit @ 1", 10_000_000, "link n1-n2 rate 10mbit @ 1s"),
        ("link n1-n2 rate 5mbps @ 1", 40_000_000, "link n1-n2 rate 40mbit @ 1s"),
        ("link n1-n2 rate 1500 @ 1", 1_500, "link n1-n2 rate 1500bit @ 1s"),
        ("link n1-n2 rate 34gbit @ 1", 34 * 10**9, "link n1-n2 rate 34gbit @ 1s"),
    ],
)
def test_event_rates_are_read_as_a_links_rate_and_shown_as_written(
    text: str, rate: int, shown: str
) -> None:
    event = plan_events.parse_event(text)
    assert event.rate == rate and str(event) == shown


@pytest.mark.parametrize(
    ("text", "why"),
    [  # 0 was taken as `rate off` and failed at run time (float division by zero); 1tbit and
        # 100 bit/s failed in pyroute2's 32-bit fields
        ("link n1-n2 rate 0mbit @ 1", "'0mbit' is too small a rate"),
        ("link n1-n2 rate 1tbit @ 1", "'1tbit': a link's rate limit must be between 1kbit and 34gbit"),
        ("link n1-n2 rate 100 @ 1", "'100': a link's rate limit must be between 1kbit and 34gbit"),
    ],
)
def test_event_rates_a_token_bucket_cannot_take_are_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"event {text!r}: {why}")):
        plan_events.parse_event(text)


@pytest.mark.parametrize(
    "text", ["link n3 n4 down @ 2", "link n3-n4 sideways @ 1", "node n5 stop", "reboot n1 @ 1"]
)
def test_bad_events_say_how_to_write_them(text: str) -> None:
    with pytest.raises(ValueError, match="write `link A-B down"):
        plan_events.parse_event(text)


def test_events_are_checked_against_the_plan() -> None:
    plan = plan_of({"topology": {"kind": "chain", "nodes": 3}})
    plan_events.check_events(plan, plan_events.parse_events(["link n2-n3 down @ 1", "node n1 stop @ 2"]))
    with pytest.raises(UnknownName, match="no node 'n7'"):
        plan_events.check_events(plan, [plan_events.parse_event("node n7 stop @ 1")])
    with pytest.raises(UnknownName, match="no link between n1 and n3"):
        plan_events.check_events(plan, [plan_events.parse_event("link n1-n3 down @ 1")])


def test_hyphenated_node_names_in_link_events_are_read_against_the_plan() -> None:
    plan = plan_of(
        {"nodes": [{"name": "r-1"}, {"name": "r-2"}], "links": [{"a": "r-1", "b": "r-2"}]}
    )
    (event,) = plan_events.check_events(plan, [plan_events.parse_event("link r-1-r-2 down @ 1")])
    assert event.target == ("r-1", "r-2")


@pytest.mark.parametrize("name", ["batman-ring16.yaml", "babel-ring6.yaml", "ospf-ring6.yaml"])
def test_protocol_examples_validate_as_experiments_and_their_lab_part_as_a_lab(name: str) -> None:
    path = EXAMPLES / name
    exp = load_experiment(str(path))
    protocol = name.split("-")[0]
    assert all(p.plan.protocol == protocol for p in exp.points)
    lab_part = path.read_text().split("\nmeasure:")[0]  # what the comments tell users to `up`
    assert load_text(lab_part, name).protocol.name == protocol


def test_ospf_on_a_switch_s_segment_elects_its_dr_after_two_seconds() -> None:
    """BIRD waits 4 hellos (40 s) before electing a segment's DR: a switched lab of three
    routers had not converged within 60 s."""
    plan = plan_of({
        "nodes": [{"name": "s1", "kind": "switch"}, {"name": "r1"}, {"name": "r2"}],
        "links": [{"a": "r1", "b": "s1"}, {"a": "r2", "b": "s1"}, {"a": "r1", "b": "r2"}],
        "routing": {"protocol": "ospf"},
    })  # fmt: skip
    conf = make("ospf", {}).config(fake_lab(plan), "r1")  # type: ignore[attr-defined]
    to_s1 = next(i.name for i in plan.node("r1").ifaces if i.peer == "s1")
    to_r2 = next(i.name for i in plan.node("r1").ifaces if i.peer == "r2")
    assert f'interface "{to_s1}" {{ type broadcast; cost 1; hello 10; wait 2; }};' in conf
    assert f'interface "{to_r2}" {{ type ptp; cost 1; hello 10; }};' in conf
