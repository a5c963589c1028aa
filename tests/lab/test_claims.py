"""README claims about labs that no other test checked: nothing is created in the host's
namespace; `status` shows node counts and age; `trace -6`; `check: {reachability: sample}`."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from netrig.lab import check, netns
from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import netrig_cli, requires_root

pytestmark = requires_root


def host_state() -> str:
    """The host namespace's links (with MACs), addresses and routes, as `ip` shows them."""
    out = []
    for argv in (
        ["ip", "-o", "link"],
        ["ip", "-o", "addr"],
        ["ip", "route"],
        ["ip", "-6", "route"],
    ):
        out.append(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    return "\n".join(out)


def test_nothing_is_created_in_the_host_namespace(tmp_path: Path, lab_name: str) -> None:
    """Watched while the lab is built (`ip monitor`: even a veth end that lives a moment in
    the host namespace shows), and compared after: no link with one of the lab's MACs, no
    address or route of the lab's. Other labs on this host come and go meanwhile, so what
    is looked for is this lab's own identity, not any change at all."""
    path = tmp_path / "lab.yaml"
    path.write_text(f"name: {lab_name}\ntopology: {{kind: ring, nodes: 12}}\n")
    plan = plan_lab(load_text(path.read_text(), str(path)))
    macs = {i.mac.lower() for n in plan.nodes.values() for i in n.ifaces if i.mac}
    addrs = {a.split("/")[0] for n in plan.nodes.values() for i in n.ifaces for a in i.addrs}
    addrs |= {a.split("/")[0] for n in plan.nodes.values() for a in n.loopbacks}
    assert len(macs) == 24 and addrs
    monitor = subprocess.Popen(
        ["ip", "-o", "monitor", "link", "address", "route"], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.2)  # the monitor is listening
        up = netrig_cli("up", "-q", str(path))
        assert up.returncode == 0, up.stderr
        after = host_state()
        time.sleep(0.2)
    finally:
        monitor.terminate()
        seen, _ = monitor.communicate(timeout=10)
    for text in (seen, after):
        low = text.lower()
        assert not [m for m in macs if m in low], "a lab MAC appeared in the host namespace"
        words = set(re.split(r"[\s/]+", low))
        assert not addrs & words, "a lab address appeared in the host namespace"
    assert netrig_cli("down", lab_name).returncode == 0


def test_status_shows_node_counts_and_age(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}}, check=False)
    time.sleep(2.1)

    def row() -> list[str]:
        out = netrig_cli("status")
        assert out.returncode == 0, out.stderr
        [line] = [ln for ln in out.stdout.splitlines() if f" {lab.name} " in ln]
        return [cell.strip() for cell in line.split("│")[1:-1]]

    name, state, nodes, age, _file = row()
    assert (name, state, nodes) == (lab.name, "up", "3")
    assert re.fullmatch(r"\d+s", age) and 2 <= int(age[:-1]) < 120, age
    netns.delete(lab.ns("n2"))  # a namespace gone behind netrig's back: status says so
    assert row()[1] == "up (2/3 namespaces)"
    # a node in another's namespace has none of its own: that lab is simply up
    shared = make_lab(
        {"topology": {"kind": "pair"}, "nodes": [{"name": "n1-side", "netns": "n1"}]},
        check=False,
    )
    out = netrig_cli("status")
    [line] = [ln for ln in out.stdout.splitlines() if f" {shared.name} " in ln]
    assert [c.strip() for c in line.split("│")[1:4]] == [shared.name, "up", "3"], line


def test_trace_6_follows_the_ipv6_addresses(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 4}})
    icmp = netrig_cli("trace", lab.name, "n1", "n4", "--proto", "icmp")
    assert icmp.returncode == 0 and ", icmp: 3 hops" in icmp.stdout, icmp.stdout  # no ports
    counted = netrig_cli("trace", lab.name, "n1", "n4", "--proto", "icmp", "--count", "16")
    assert counted.returncode == 2 and "ICMP has none" in counted.stderr, counted.stderr
    v6 = netrig_cli("trace", lab.name, "n1", "n4", "-6")
    assert v6.returncode == 0, v6.stderr
    assert lab.addr("n4", 6) in v6.stdout and lab.addr("n4", 4) not in v6.stdout
    assert [n for n in ("n1", "n2", "n3", "n4") if n in v6.stdout] == ["n1", "n2", "n3", "n4"]
    v4 = netrig_cli("trace", lab.name, "n1", "n4")
    assert v4.returncode == 0 and lab.addr("n4", 4) in v4.stdout


def test_check_sample_picks_a_few_targets_per_node(tmp_path: Path, lab_name: str) -> None:
    nodes = check.AUTO_ALL_PAIRS_MAX + 22  # above the size where `auto` pings all pairs
    text = f"name: {lab_name}\ntopology: {{kind: ring, nodes: {nodes}}}\n"
    plan = plan_lab(load_text(text))
    every = check.check_pairs(plan, "all")
    sample = check.check_pairs(plan, "sample")
    assert check.check_pairs(plan, "auto") == sample  # auto samples above the threshold
    per_source: dict[str, set[str]] = {}
    for src, dst, _addr in sample:
        per_source.setdefault(src, set()).add(dst)
    assert set(per_source) == {n.name for n in plan.hosts()}
    assert all(len(d) <= check.SAMPLE_TARGETS for d in per_source.values())
    assert set(sample) < set(every) and len(sample) < len(every) / 5
    assert check.check_pairs(plan, "sample") == sample  # the same pairs every time
    path = tmp_path / "lab.yaml"
    path.write_text(text + "check: {reachability: sample}\n")
    up = netrig_cli("up", "-q", str(path))
    assert up.returncode == 0, up.stderr
    # a routed lab of hosts: every pair proven from the FIBs, links and a sample pinged
    assert f"{len(every)} pairs reachable" in up.stdout
    assert netrig_cli("down", lab_name).returncode == 0
