"""Open vSwitch switch nodes in real namespaces with real ovsdb-server and ovs-vswitchd
(userspace datapath): hosts reach each other and carry TCP through the switch, OVS's own
database shows the dpid and STP the file asked for, and `down` leaves no OVS process of
the lab and no namespace behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from netrig.lab import netns
from netrig.lab.ledger import process_alive
from netrig.lab.procs import listening_ports
from netrig.rig import Lab
from netrig.switch import ovs
from tests.conftest import netrig_cli, new_lab_name, requires_root

OVS_READY = not ovs.missing_tools(controller=True)
pytestmark = [
    requires_root,
    pytest.mark.skipif(not OVS_READY, reason=ovs.missing_tools(controller=True) or "ok"),
]


@pytest.fixture
def ovs_lab() -> Iterator[Callable[[dict], Lab]]:
    """Labs from dicts, removed after the test; afterwards none of the processes they ever
    recorded is alive and none of their namespaces exists."""
    built: list[Lab] = []
    seen: dict[int, int | None] = {}

    def make(spec: dict) -> Lab:
        lab = Lab.from_spec({"name": new_lab_name("ov"), **spec})
        built.append(lab)
        lab.up()
        for obj in lab.ledger.objects(lab.name, "process"):
            seen[obj.pid] = obj.starttime
        return lab

    yield make
    for lab in built:
        lab.down()
    assert not [pid for pid, start in seen.items() if process_alive(pid, start)]
    for lab in built:
        assert not any(netns.exists(n.ns) for n in lab.plan.nodes.values())


def daemons(lab: Lab, node: str) -> dict[str, tuple[int, int | None]]:
    """name → (pid, start time) of the lab's recorded processes in NODE."""
    out = {}
    for obj in lab.ledger.objects(lab.name, "process"):
        if obj.node == node:
            out[obj.name.removeprefix(f"{lab.name}/{node}/")] = (obj.pid, obj.starttime)
    return out


def vsctl(lab: Lab, node: str, *args: str) -> str:
    """ovs-vsctl pointed at that node's own database socket, as a user would run it."""
    argv = ["ovs-vsctl", f"--db={ovs.db_url(lab, node)}", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def iperf3_bytes(lab: Lab, client: str, server: str) -> int:
    """Bytes a 1 s iperf3 TCP stream from CLIENT delivered to SERVER."""
    done: subprocess.CompletedProcess[str] | None = None
    proc = lab.popen(server, ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10  # a loaded machine starts the server late
        while 5201 not in listening_ports(proc.pid) and proc.poll() is None:
            assert time.monotonic() < deadline, "iperf3 -s did not listen within 10 s"
            time.sleep(0.02)
        done = lab.exec(
            client,
            ["iperf3", "-c", lab.addr(server), "-t", "1", "--json", "--connect-timeout", "3000"],
            capture_output=True,
            timeout=20,
        )
    finally:
        if proc.poll() is None and (done is None or done.returncode != 0):
            proc.kill()  # the client never came: -1 alone would wait for ever
        proc.wait(timeout=10)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert "error" not in result, result["error"]
    return int(result["end"]["sum_received"]["bytes"])


def test_hosts_reach_each_other_through_ovs_and_down_ends_it(ovs_lab: Callable) -> None:
    lab = ovs_lab(
        {
            "nodes": [
                {"name": "h1"},
                {"name": "h2"},
                {"name": "s1", "kind": "switch", "switch": "ovs", "dpid": "00000000000000A1"},
            ],
            "links": [{"a": "h1", "b": "s1"}, {"a": "h2", "b": "s1"}],
        }
    )
    assert lab.check_result is not None and lab.check_result.ok  # `up` pinged every pair
    assert lab.plan.node("s1").bridge is None  # no Linux bridge: OVS forwards
    assert vsctl(lab, "s1", "get", "Bridge", "br0", "datapath_type") == "netdev"
    assert vsctl(lab, "s1", "get", "Bridge", "br0", "datapath_id") == '"00000000000000a1"'
    assert vsctl(lab, "s1", "get", "Bridge", "br0", "stp_enable") == "false"
    assert vsctl(lab, "s1", "list-ports", "br0").split() == ["eth0", "eth1"]
    # the switch's private /run: OVS's default paths work inside the node
    inside = lab.exec("s1", ["ovs-vsctl", "br-exists", "br0"], capture_output=True)
    assert inside.returncode == 0, inside.stderr
    # TCP too (the userspace datapath needs its own TSO on for that)
    assert iperf3_bytes(lab, "h1", "h2") > 0
    # the flow went through OVS: its datapath saw the packets
    flows = lab.exec("s1", ["ovs-ofctl", "dump-flows", "br0"], capture_output=True).stdout
    assert "actions=NORMAL" in flows and "n_packets=0," not in flows

    pids = daemons(lab, "s1")
    assert set(pids) == {"ovsdb-server", "ovs-vswitchd"}
    assert all(process_alive(pid, start) for pid, start in pids.values())
    report = lab.down()
    assert report.namespaces == 3
    assert not any(process_alive(pid, start) for pid, start in pids.values())
    assert not any(netns.exists(n.ns) for n in lab.plan.nodes.values())


def test_star_with_stp_and_standalone_controller(ovs_lab: Callable) -> None:
    lab = ovs_lab(
        {
            "topology": {"kind": "star", "leaves": 3},
            "nodes": [
                {
                    "name": "n1",
                    "kind": "switch",
                    "switch": "ovs",
                    "dpid": "0000000000000001",
                    "stp": True,
                    "controller": "standalone",
                }
            ],
        }
    )
    assert lab.check_result is not None and lab.check_result.ok
    facts = ovs.bridge_facts(lab, "n1")
    assert facts["datapath_id"] == "0000000000000001"
    assert facts["stp_enable"] is True and facts["fail_mode"] == "secure"
    assert vsctl(lab, "n1", "get", "Bridge", "br0", "other_config:datapath-id") == (
        '"0000000000000001"'
    )
    stp = lab.exec("n1", ["ovs-appctl", "stp/show", "br0"], capture_output=True).stdout
    assert stp.count("forwarding") == 3 and "This bridge is the root" in stp
    # fail_mode secure: every forwarded packet followed a flow ovs-testcontroller installed
    flows = lab.exec("n1", ["ovs-ofctl", "dump-flows", "br0"], capture_output=True).stdout
    assert "actions=output:" in flows and "NORMAL" not in flows
    assert set(daemons(lab, "n1")) == {"ovsdb-server", "ovs-testcontroller", "ovs-vswitchd"}


def test_node_start_returns_once_the_stp_switch_forwards(
    ovs_lab: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`netrig node LAB s1 start` waits, as `up` does, until the restarted switch's STP
    ports forward (it returned ~8 s before: a ping right after failed); bounded, and it
    says so when the wait runs out."""
    lab = ovs_lab(
        {
            "topology": {"kind": "star", "leaves": 2},
            "nodes": [{"name": "n1", "kind": "switch", "switch": "ovs", "stp": True}],
        }
    )
    ping = ("exec", lab.name, "n2", "--", "ping", "-c1", "-W1", lab.addr("n3"))
    stop = netrig_cli("node", lab.name, "n1", "stop")
    assert stop.returncode == 0, stop.stderr
    start = netrig_cli("node", lab.name, "n1", "start")
    assert start.returncode == 0, start.stderr
    assert "started n1/ovsdb-server, n1/ovs-vswitchd; n1 forwards (" in start.stdout
    stp = lab.exec("n1", ["ovs-appctl", "stp/show", "br0"], capture_output=True).stdout
    assert stp.count("forwarding") == 2 and "listening" not in stp and "learning" not in stp
    done = netrig_cli(*ping)
    assert done.returncode == 0, done.stdout + done.stderr  # at once, not seconds later

    # the wait is bounded: past it, the message says the switch does not forward yet
    from click.testing import CliRunner

    from netrig.cli.cmd_fault import node as node_command
    from netrig.lab import faults

    faults.stop_node(Lab.attach(lab.name), "n1")
    monkeypatch.setattr(ovs, "RESTART_WAIT", 0.5)
    result = CliRunner().invoke(node_command, [lab.name, "n1", "start"])
    assert result.exit_code == 0, result.output
    # (ports listening, or STP itself not running yet that early)
    assert "it does not forward yet: spanning tree still settling after 0.5 s (n1" in (
        result.output
    )


def test_ovs_and_linux_bridge_switches_in_one_fabric(ovs_lab: Callable) -> None:
    lab = ovs_lab(
        {
            "nodes": [
                {"name": "h1"},
                {"name": "h2"},
                {"name": "h3"},
                {"name": "ovs1", "kind": "switch", "switch": "ovs"},
                {"name": "br1", "kind": "switch"},
            ],
            "links": [
                {"a": "h1", "b": "ovs1"},
                {"a": "ovs1", "b": "br1"},
                {"a": "h2", "b": "br1"},
                {"a": "h3", "b": "br1"},
            ],
        }
    )
    assert lab.check_result is not None and lab.check_result.ok
    assert lab.plan.node("br1").bridge is not None and lab.plan.node("ovs1").ovs is not None
    # TCP from behind the Linux bridge through the OVS switch (64 KB GSO frames with
    # partial checksums reach OVS: its userspace TSO takes them as they are)
    assert iperf3_bytes(lab, "h3", "h1") > 0


@pytest.mark.skipif(shutil.which("ovs-vsctl") is None, reason="needs ovs-vsctl")
def test_cli_up_logs_down(tmp_path: os.PathLike[str]) -> None:
    name = new_lab_name("ov")
    path = os.path.join(tmp_path, "lab.yaml")
    with open(path, "w") as fh:
        fh.write(
            f"name: {name}\ntopology: {{kind: star, leaves: 2}}\n"
            "nodes:\n  - {name: n1, kind: switch, switch: ovs, "
            'controller: "tcp:198.18.9.9:6653"}\n'
        )
    try:
        up = netrig_cli("up", "-q", path)  # -q had hidden the warning
        assert up.returncode == 0, up.stderr
        assert "not on the switch's loopback" in up.stderr  # degraded, said so
        logs = netrig_cli("logs", name, "n1")
        assert logs.returncode == 0, logs.stderr
        assert "n1/ovs-vswitchd (running" in logs.stdout
        assert "n1/ovsdb-server (running" in logs.stdout
        show = netrig_cli("exec", name, "n1", "--", "ovs-vsctl", "get-controller", "br0")
        assert show.returncode == 0 and show.stdout.strip() == ""  # dropped, not configured
        # the switch fails and comes back: `netrig node` stops and restarts its daemons
        ping = ("exec", name, "n2", "--", "ping", "-c1", "-W1", "198.18.0.3")
        stop = netrig_cli("node", name, "n1", "stop")
        assert stop.returncode == 0 and "n1/ovs-vswitchd" in stop.stdout, stop.stderr
        assert netrig_cli(*ping).returncode != 0
        trace = netrig_cli("trace", name, "n2", "n3")  # routes are there; the switch is not
        assert trace.returncode == 1 and "switch n1 is stopped" in trace.stdout, trace.stdout
        start = netrig_cli("node", name, "n1", "start")
        assert start.returncode == 0 and "n1/ovs-vswitchd" in start.stdout, start.stderr
        deadline = time.monotonic() + 10
        while netrig_cli(*ping).returncode != 0:
            assert time.monotonic() < deadline, "no traffic through the restarted switch"
    finally:
        down = netrig_cli("down", name)
    assert down.returncode == 0 and "2 processes" in down.stdout
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{name}-")]
