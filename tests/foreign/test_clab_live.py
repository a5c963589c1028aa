"""containerlab files up for real: linux nodes on a bridge, FRR with bound files, exec, cmd,
binds, a shared namespace, and one file up twice under two names."""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.lab.build import LabError
from netrig.lab.ledger import Ledger, process_alive
from netrig.lab.teardown import teardown
from netrig.rig import Lab
from tests.conftest import netrig_cli, new_lab_name, requires_root, requires_tool

pytestmark = requires_root
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _down(name: str) -> None:
    ledger = Ledger()
    if name in ledger.all_lab_names():
        teardown(ledger, name)
    ledger.close()


def test_bridge_example_up_twice_under_two_names_and_pinging() -> None:
    names = [new_lab_name("cb"), new_lab_name("cb")]
    path = str(EXAMPLES / "clab-bridge.clab.yml")
    try:
        for name in names:
            up = netrig_cli("up", path, "--name", name)
            assert up.returncode == 0, up.stderr
            assert f"lab {name} is up" in up.stdout and "198.51.100.3/24" in up.stdout
            assert "package install skipped" in up.stderr
        for name in names:
            ping = netrig_cli("exec", name, "h1", "--", "ping", "-c1", "-w5", "198.51.100.3")
            assert ping.returncode == 0 and "1 received" in ping.stdout, ping.stdout
            mtu = netrig_cli("exec", name, "h3", "--", "cat", "/sys/class/net/eth1/mtu")
            assert mtu.stdout.strip() == "9000"
    finally:
        for name in names:
            netrig_cli("down", name)
    assert not any(ns.startswith(tuple(f"{n}-" for n in names)) for ns in netns.list_names())


@requires_tool("vtysh")
def test_frr_node_runs_with_exactly_its_bound_files_and_carries_traffic() -> None:
    name = new_lab_name("cf")
    lab = Lab.from_file(str(EXAMPLES / "clab-frr" / "frr.clab.yml"), name=name)
    try:
        lab.up()  # h2's last exec line waits until OSPF carries h1 ↔ h2
        seen = lab.exec("r1", ["cat", "/etc/frr/frr.conf"], capture_output=True).stdout
        assert seen == (EXAMPLES / "clab-frr" / "r1" / "frr.conf").read_text()
        ping = lab.exec("h1", ["ping", "-c3", "-i0.2", "-W2", "203.0.113.70"], capture_output=True)
        assert ping.returncode == 0 and "3 received" in ping.stdout
        route = lab.exec("r1", ["ip", "route", "show", "203.0.113.64/26"], capture_output=True)
        assert "proto ospf" in route.stdout  # learnt by r1's ospfd, from r2
        neighbors = lab.exec("r2", ["vtysh", "-c", "show ip ospf neighbor"], capture_output=True)
        assert "192.0.2.1" in neighbors.stdout and "Full" in neighbors.stdout
        pids = [(o.pid, o.starttime) for o in lab.ledger.objects(name, "process") if o.pid]
        assert len(pids) >= 8  # zebra, ospfd, staticd and watchfrr in each router
        # FRR's crash buffers (/var/tmp/frr/watchfrr.PID) had piled up on the host, one per
        # start: they are in the node's own /var/tmp, gone with the lab
        # stopped and started again, the daemons are netrig's: a second stop stops them all
        # (watchfrr had found their old sockets unanswered and restarted them as its own)
        for verb in ("stop", "start", "stop"):
            done = netrig_cli("node", name, "r1", verb)
            assert done.returncode == 0, done.stderr
        inside = subprocess.run(["ip", "netns", "pids", f"{name}-r1"], capture_output=True,
                                text=True, check=True).stdout.split()  # fmt: skip
        assert inside == [], inside
        kept = os.listdir(os.path.join(lab.node_dir("r1"), "var-tmp", "frr"))
        assert any(entry.startswith("watchfrr.") for entry in kept), kept
        on_host = set(os.listdir("/var/tmp/frr")) if os.path.isdir("/var/tmp/frr") else set()
        assert not on_host & set(kept), on_host & set(kept)
    finally:
        lab.down()
    assert not any(process_alive(pid, start) for pid, start in pids)


def _ping_until(lab: Lab, src: str, dst: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.exec(src, ["ping", "-c1", "-W1", dst], capture_output=True).returncode == 0:
            return True
        time.sleep(0.2)
    return False


@requires_tool("vtysh")
def test_frr_node_stopped_and_started_by_hand_loads_its_frr_conf_again() -> None:
    """`netrig node LAB r2 start` had restarted zebra, ospfd and staticd with no
    configuration (no `vtysh -b`): no `router ospf`, h1 never reached h2 again."""
    name = new_lab_name("cs")
    lab = Lab.from_file(str(EXAMPLES / "clab-frr" / "frr.clab.yml"), name=name)
    try:
        lab.up()
        for verb in ("stop", "start"):
            done = netrig_cli("node", name, "r2", verb)
            assert done.returncode == 0, done.stderr
        shown = lab.exec("r2", ["vtysh", "-c", "show running-config"], capture_output=True)
        assert "router ospf" in shown.stdout and "ospf router-id 192.0.2.2" in shown.stdout
        assert _ping_until(lab, "h1", "203.0.113.70", 30), "h1 does not reach h2 after start"
        neighbors = lab.exec("r2", ["vtysh", "-c", "show ip ospf neighbor"], capture_output=True)
        assert "192.0.2.1" in neighbors.stdout and "Full" in neighbors.stdout, neighbors.stdout
    finally:
        lab.down()


@requires_tool("vtysh")
@requires_tool("fping")
def test_node_events_on_a_clab_frr_lab_heal_before_the_next_run(tmp_path: Path) -> None:
    """`events: [node r2 stop, node r2 start]` on the FRR example: both runs measure, and
    the second starts once h1 and h2 reach each other again (netrig does not watch the
    lab's own OSPF: it waits for the measured traffic). The second run had started on a
    lab whose r2 ran FRR with no configuration and failed "no reply from h2"."""
    from netrig.results.store import ResultStore

    name = new_lab_name("ch")
    exp = tmp_path / "exp.yaml"
    exp.write_text(textwrap.dedent(f"""\
        lab: {EXAMPLES / "clab-frr" / "frr.clab.yml"}
        name: {name}
        measure:
          - ping: {{src: h1, dst: h2, count: 100, interval: 10ms, per_probe: true}}
        events: [node r2 stop @ 0.3s, node r2 start @ 0.6s]
        repeat: 2
        """))  # fmt: skip
    db = str(tmp_path / "r.db")
    try:
        done = netrig_cli("run", str(exp), "--db", db, "-q", timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    finally:
        _down(name)
    with ResultStore(db) as store:
        (experiment,) = store.experiments()
        runs = store.runs(experiment.id)
        assert [r.status for r in runs] == ["ok", "ok"], [(r.status, r.reason) for r in runs]
        texts = {name: t for step, name, t in store.outputs(runs[1].id) if step == "events"}
        before = texts["paths"].split("when the measurements ended:")[0]
        assert "h1 → h2: h1 (eth1) → r1" in before and "✘" not in before, texts["paths"]


def test_a_cmd_that_fails_at_once_fails_up_with_its_output(tmp_path: Path) -> None:
    """`cmd: sh -c 'echo no config; exit 3'` had given "lab is up" with a node whose
    program was gone; `up` now fails with its log, and nothing is left."""
    path = tmp_path / "dead.clab.yml"
    path.write_text("name: dead\ntopology:\n  nodes:\n    a:\n      kind: linux\n"
                    "      cmd: sh -c 'echo no config here; exit 3'\n"
                    "      exec: ['sleep 0.3']\n")  # fmt: skip
    name = new_lab_name("cd")
    done = netrig_cli("up", str(path), "--name", name)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a: cmd sh -c 'echo no config here; exit 3' exited with 3 right after it started" in (
        done.stderr
    ) and "no config here" in done.stderr, done.stderr
    assert not [ns for ns in netns.list_names() if ns.startswith(f"{name}-")]
    # a shell that ends well (`cmd: bash`, which a container keeps on its terminal) is fine
    path.write_text(path.read_text().replace("exit 3", "exit 0"))
    shell = netrig_cli("up", str(path), "--name", name)
    try:
        assert shell.returncode == 0, shell.stderr
    finally:
        netrig_cli("down", name)


def test_cmd_binds_read_only_and_shared_namespace(tmp_path: Path) -> None:
    (tmp_path / "motd").write_text("bound\n")
    path = tmp_path / "side.clab.yml"
    path.write_text(
        textwrap.dedent(
            """\
            name: side
            topology:
              nodes:
                main:
                  kind: linux
                  cmd: sleep 600
                  binds: ["motd:/etc/motd:ro"]
                  exec: ["ip addr add 192.0.2.1/24 dev eth1"]
                peer:
                  kind: linux
                  exec: ["ip addr add 192.0.2.2/24 dev eth1"]
                sidecar:
                  kind: linux
                  network-mode: container:main
                  exec: ["ping -c1 -w5 192.0.2.2"]
              links:
                - endpoints: ["main:eth1", "peer:eth1"]
            """
        )
    )
    name = new_lab_name("cs")
    lab = Lab.from_file(str(path), name=name)
    try:
        lab.up()  # the sidecar's ping ran in main's namespace, through main's eth1
        assert len(netns.list_names()) == len(set(netns.list_names()))
        assert not netns.exists(f"{name}-sidecar") and netns.exists(f"{name}-main")
        motd = lab.exec("main", ["cat", "/etc/motd"], capture_output=True)
        assert motd.stdout == "bound\n"
        assert lab.exec("peer", ["cat", "/etc/motd"], capture_output=True).stdout != "bound\n"
        write = lab.exec("main", ["sh", "-c", "echo x > /etc/motd"], capture_output=True)
        assert write.returncode != 0 and "Read-only" in write.stderr
        links = lab.exec("sidecar", ["ip", "-br", "link"], capture_output=True).stdout
        assert "eth1" in links
        cmd = [o for o in lab.ledger.objects(name, "process") if o.name.endswith("/main/cmd")]
        assert len(cmd) == 1 and process_alive(cmd[0].pid, cmd[0].starttime)
    finally:
        lab.down()
    assert not process_alive(cmd[0].pid, cmd[0].starttime)
    assert (tmp_path / "motd").read_text() == "bound\n"


def test_failing_exec_line_fails_up_and_removes_the_lab(tmp_path: Path) -> None:
    path = tmp_path / "fail.clab.yml"
    path.write_text(
        "name: fail\ntopology:\n  nodes:\n    a:\n      kind: linux\n"
        '      exec: ["ip link set nosuch up"]\n'
    )
    name = new_lab_name("cx")
    try:
        with pytest.raises(LabError, match="a: exec ip link set nosuch up exited with"):
            Lab.from_file(str(path), name=name).up()
        assert not netns.exists(f"{name}-a")
    finally:
        _down(name)


def test_experiment_on_a_containerlab_lab(tmp_path: Path) -> None:
    name = new_lab_name("ce")
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        f"lab: {EXAMPLES / 'clab-bridge.clab.yml'}\nname: {name}\n"
        "measure:\n  - ping: {src: h1, dst: h3, count: 3, interval: 0.1}\n"
    )
    db = tmp_path / "r.db"
    started = time.monotonic()
    try:
        wide = {**os.environ, "COLUMNS": "200"}
        result = netrig_cli("run", str(exp), "--db", str(db), "-q", env=wide)
        assert result.returncode == 0, result.stderr
        assert "loss_percent" in result.stdout and "rtt_avg" in result.stdout
    finally:
        _down(name)
    assert time.monotonic() - started < 120
    assert os.path.exists(db)


def test_bind_to_a_path_the_host_lacks_is_made_in_the_node_only(tmp_path: Path) -> None:
    (tmp_path / "hello.sh").write_text("echo made-in-node\n")
    target = "/opt/netrig-bind-test/hello.sh"
    assert not os.path.exists("/opt/netrig-bind-test")
    path = tmp_path / "view.clab.yml"
    path.write_text(
        "name: view\ntopology:\n  nodes:\n    a:\n      kind: linux\n"
        f'      binds: ["hello.sh:{target}:ro"]\n'
        f'      exec: ["sh {target}", "ls {target}"]\n'
    )
    name = new_lab_name("cv")
    lab = Lab.from_file(str(path), name=name)
    try:
        lab.up()
        seen = lab.exec("a", ["cat", target], capture_output=True)
        assert seen.returncode == 0 and "made-in-node" in seen.stdout
        assert not os.path.exists("/opt/netrig-bind-test")  # the host never sees it
    finally:
        lab.down()
    assert not os.path.exists("/opt/netrig-bind-test")


def test_addresses_set_by_exec_lines_themselves_carry_traffic(tmp_path: Path) -> None:
    """`brd +` keeps these lines exec lines (netrig lifts only the plain form): the kernel
    gets the addresses from the commands, in the nodes, after the links are up."""
    path = tmp_path / "execd.clab.yml"
    path.write_text(
        textwrap.dedent(
            """\
            name: execd
            topology:
              defaults: {kind: linux}
              nodes:
                a: {exec: ["ip addr add 198.51.100.10/24 brd + dev eth1"]}
                b: {exec: ["ip addr add 198.51.100.20/24 brd + dev eth1"]}
                br: {kind: bridge}
              links:
                - endpoints: ["a:eth1", "br:a"]
                - endpoints: ["b:eth1", "br:b"]
            """
        )
    )
    lab = Lab.from_file(str(path), name=new_lab_name("cd"))
    assert lab.plan.nodes["a"].iface("eth1").addrs == []  # not netrig's: the exec line's
    try:
        lab.up()
        ping = lab.exec("a", ["ping", "-c1", "-w5", "198.51.100.20"], capture_output=True)
        assert ping.returncode == 0, ping.stdout + ping.stderr
    finally:
        lab.down()


@requires_tool("ovs-vsctl")
def test_ovs_bridge_kind_is_an_open_vswitch_switch_node(tmp_path: Path) -> None:
    path = tmp_path / "ovs.clab.yml"
    path.write_text(
        textwrap.dedent(
            """\
            name: ovs
            topology:
              nodes:
                a: {kind: linux, exec: ["ip addr add 198.51.100.1/24 dev eth1"]}
                b: {kind: linux, exec: ["ip addr add 198.51.100.2/24 dev eth1"]}
                sw: {kind: ovs-bridge}
              links:
                - endpoints: ["a:eth1", "sw:a"]
                - endpoints: ["b:eth1", "sw:b"]
            """
        )
    )
    lab = Lab.from_file(str(path), name=new_lab_name("co"))
    assert lab.plan.nodes["sw"].ovs is not None
    try:
        lab.up()
        ping = lab.exec("a", ["ping", "-c1", "-w10", "198.51.100.2"], capture_output=True)
        assert ping.returncode == 0, ping.stdout
    finally:
        lab.down()
