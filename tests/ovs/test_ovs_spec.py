"""Open vSwitch switch nodes in lab files: the keys, their errors at file:line, the plan
(no root needed), and the one message for a host without Open vSwitch."""

from __future__ import annotations

import os
import shutil
import textwrap

import pytest

from netrig.lab import netns
from netrig.model.load import SpecError
from netrig.plan.model import LabPlan
from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import netrig_cli, new_lab_name

HAS_OVS = shutil.which("ovs-vswitchd") is not None and shutil.which("ovsdb-server") is not None
requires_ovs = pytest.mark.skipif(not HAS_OVS, reason="openvswitch-switch is not installed")

STAR = """\
name: o1
topology: {kind: star, leaves: 2}
nodes:
  - {name: n1, kind: switch, switch: ovs%s}
"""


def problems(text: str) -> str:
    with pytest.raises(SpecError) as info:
        plan_lab(load_text(textwrap.dedent(text), "lab.yaml"))
    return str(info.value)


def test_dpid_must_be_16_hex_digits_in_quotes() -> None:
    msg = problems(STAR % ", dpid: 1")
    assert msg.startswith("lab.yaml:4:")
    assert "16 hex digits" in msg and '"0000000000000001"' in msg
    assert "lab.yaml:4:" in problems(STAR % ', dpid: "00000000000000zz"')


def test_controller_forms() -> None:
    msg = problems(STAR % ", controller: udp:1.2.3.4")
    assert msg.startswith("lab.yaml:4:") and "tcp:IP[:PORT]" in msg
    assert "not an IP address" in problems(STAR % ', controller: "tcp:1.2.3.999:6653"')


def test_ovs_keys_only_on_ovs_switches() -> None:
    text = "name: o1\nnodes:\n  - {name: a, dpid: '0000000000000001'}\n"
    assert "switch nodes (kind: switch)" in problems(text)
    text = "name: o1\nnodes:\n  - {name: a, kind: switch, controller: standalone}\n"
    assert "switch: ovs" in problems(text)
    assert "switch" in problems(STAR.replace("switch: ovs", "switch: openflow") % "")


@requires_ovs
def test_dpid_unique_per_lab() -> None:
    text = """\
    name: o1
    nodes:
      - {name: s1, kind: switch, switch: ovs, dpid: "00000000000000AB"}
      - {name: s2, kind: switch, switch: ovs, dpid: "00000000000000ab"}
    links: [{a: s1, b: s2}]
    """
    msg = problems(text)
    assert msg.startswith("lab.yaml:4:") and "also s1's" in msg
    # a default dpid (the node's position) collides with an explicit one: said so
    text = """\
    name: o1
    nodes:
      - {name: s1, kind: switch, switch: ovs, dpid: "0000000000000002"}
      - {name: s2, kind: switch, switch: ovs}
    links: [{a: s1, b: s2}]
    """
    assert "its default" in problems(text)


@requires_ovs
def test_plan_carries_ovs_and_no_linux_bridge() -> None:
    text = STAR % ', dpid: "00000000000000Aa", stp: true, controller: "tcp:127.0.0.1:6633"'
    plan = plan_lab(load_text(text, "lab.yaml"))
    n1 = plan.node("n1")
    assert n1.bridge is None and n1.ovs is not None
    assert (n1.ovs.dpid, n1.ovs.stp, n1.ovs.controller) == ("00000000000000aa", True,
                                                             "tcp:127.0.0.1:6633")  # fmt: skip
    assert all(i.master is None for i in n1.ifaces)
    assert LabPlan.from_json(plan.to_json()).node("n1").ovs == n1.ovs  # what attach() reads
    # hosts on the switch share one subnet, as with a Linux-bridge switch
    assert len(plan.networks) == 1 and len(plan.networks[0].members) == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="`up` needs root to get as far as the plan")
def test_missing_open_vswitch_is_one_message_exit_2(tmp_path: os.PathLike[str]) -> None:
    """Open vSwitch is installed here, so its absence is simulated by a PATH without it."""
    name = new_lab_name("ov")
    path = os.path.join(tmp_path, "lab.yaml")
    with open(path, "w") as fh:
        fh.write((STAR % "").replace("name: o1", f"name: {name}"))
    empty = os.path.join(tmp_path, "bin")
    os.mkdir(empty)
    for command in ("validate", "up"):
        done = netrig_cli(command, path, env={**os.environ, "PATH": empty})
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{path}:4:"), lines
        assert "apt-get install -y openvswitch-switch" in lines[0]
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{name}-")]
