"""Firewall engines and the stage_latency measurement in real namespaces with the real tools."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from netrig import firewall, measure
from netrig.base.sample import MeasurementFailed, Sample
from netrig.firewall import xdp
from netrig.lab import netns
from netrig.lab.teardown import pids_in_namespaces
from netrig.rig import Lab
from tests.conftest import requires_root

pytestmark = [requires_root, pytest.mark.root]
ENGINES = ["iptables", "nftables", "xdp"]


def pair(fw: dict[str, Any]) -> dict[str, Any]:
    return {
        "topology": {"kind": "pair"},
        "nodes": [{"name": "n2", "firewall": fw}],
        "check": {"reachability": "none"},
    }


def latency(lab: Lab, **extra: Any) -> list[Sample]:
    plugin = measure.get("stage_latency")
    opts = plugin.Options.model_validate({"sender": "n1", "receiver": "n2", **extra})
    assert plugin.check(opts, lab.plan) == []
    try:
        return [s for s in plugin.run(lab, opts, plugin.timeout(opts)) if isinstance(s, Sample)]
    finally:
        inode = netns.ns_inode(lab.ns("n2"))
        assert inode and pids_in_namespaces({inode}) == [], "the receiver was left running"


def summary(samples: list[Sample]) -> dict[str, float]:
    return {s.metric: s.value for s in samples if s.t is None}


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_installs_fillers_and_a_matching_rule_drops(
    engine: str, make_lab: Callable[..., Lab]
) -> None:
    lab = make_lab(pair({"engine": engine, "filler_rules": 300, "rules": [{"src": "n1"}]}))
    # n1 has 2 addresses per family (loopback and link): 2 rules after each family's 300 fillers
    assert firewall.get(engine).counts(lab, "n2") == {4: 302, 6: 302}
    ping = lab.exec("n1", ["ping", "-c2", "-i0.1", "-W1", lab.addr("n2")], capture_output=True)
    assert ping.returncode != 0 and " 0 received" in ping.stdout
    back = lab.exec("n2", ["ping", "-c1", "-W1", lab.addr("n1")], capture_output=True)
    assert back.returncode != 0  # replies from n1 are dropped too: the rule is on the source


@pytest.mark.parametrize("engine", ENGINES)
def test_fillers_never_match_lab_traffic(engine: str, make_lab: Callable[..., Lab]) -> None:
    lab = make_lab(pair({"engine": engine, "filler_rules": 64}))
    assert firewall.get(engine).count(lab, "n2") == 128  # 64 per family
    ping = lab.exec("n1", ["ping", "-c2", "-i0.1", "-W1", lab.addr("n2")], capture_output=True)
    assert ping.returncode == 0


def test_latency_samples_per_packet_and_summary(make_lab: Callable[..., Lab]) -> None:
    lab = make_lab({"topology": {"kind": "pair"}})
    samples = latency(lab, count=300, interval=0.0005)
    per_packet = [s for s in samples if s.t is not None]
    total = summary(samples)
    assert total["sent"] == 300
    assert len(per_packet) == total["sent"] - total["lost"] - total["unstamped"]
    assert all(s.value > 0 and s.unit == "us" for s in per_packet)
    times = [s.t for s in per_packet]
    assert times == sorted(times) and times[0] == 0.0
    assert total["latency_min"] <= total["latency_median"] <= total["latency_p99"]
    assert total["latency_p99"] <= total["latency_max"]
    # the interface is as before: no XDP program left behind
    link = lab.exec("n2", ["ip", "link", "show", "eth0"], capture_output=True).stdout
    assert "xdp" not in link


def test_stamp_is_taken_before_the_xdp_filter(make_lab: Callable[..., Lab]) -> None:
    lab = make_lab(pair({"engine": "xdp", "filler_rules": 10, "rules": [{"src": "n1"}]}))
    with pytest.raises(MeasurementFailed) as failed:
        latency(lab, count=50, interval=0.0005)
    counts = {s.metric: s.value for s in failed.value.samples}
    assert counts["sent"] == 50 and counts["received"] == 0
    assert counts["stamped_dropped"] == 50  # stamped by XDP, then dropped by the filter
    assert xdp.dropped(lab, "n2", "eth0") == 50
    # the filter is back on its own after the measurement, still dropping
    assert firewall.get("xdp").counts(lab, "n2") == {4: 12, 6: 12}
    link = lab.exec("n2", ["ip", "link", "show", "eth0"], capture_output=True).stdout
    assert "netrig_filter" in link


@pytest.mark.parametrize(
    ("engine", "low", "high"),
    [("iptables", 1.5, None), ("nftables", 1.5, None), ("xdp", None, 2.0)],
)
def test_rule_lists_cost_latency_the_xdp_trie_does_not(
    engine: str, low: float | None, high: float | None, make_lab: Callable[..., Lab]
) -> None:
    """Linear rule lists make the fastest packet slower with 2000 fillers (about 6× here for
    iptables, 17× for nftables); the XDP filter's trie does not (about 1.1×)."""
    few = make_lab(pair({"engine": engine, "filler_rules": 0}))
    base = summary(latency(few, count=400, interval=0.0005))
    many = make_lab(pair({"engine": engine, "filler_rules": 2000}))
    loaded = summary(latency(many, count=400, interval=0.0005))
    ratio = loaded["latency_min"] / base["latency_min"]
    if low is not None:
        assert ratio > low
    if high is not None:
        assert ratio < high


@pytest.mark.parametrize("engine", ENGINES)
def test_firewall_on_a_router_drops_forwarded_traffic(
    engine: str, make_lab: Callable[..., Lab]
) -> None:
    lab = make_lab(
        {
            "topology": {"kind": "chain", "nodes": 3},
            "nodes": [{"name": "n2", "firewall": {"engine": engine, "rules": [{"src": "n1"}]}}],
            "check": {"reachability": "none"},
        }
    )
    through = lab.exec("n1", ["ping", "-c1", "-W1", lab.addr("n3")], capture_output=True)
    assert through.returncode != 0
    other = lab.exec("n3", ["ping", "-c1", "-W1", lab.addr("n2")], capture_output=True)
    assert other.returncode == 0


def test_a_killed_receiver_leaves_nothing_the_next_one_cannot_undo(
    make_lab: Callable[..., Lab],
) -> None:
    """SIGKILL skips the receiver's restore; the next measurement removes the leftover and
    puts the XDP firewall back (the kernel emptied the leftover's program array)."""
    from netrig.native import compile as native_compile

    lab = make_lab(pair({"engine": "xdp", "filler_rules": 3}))
    argv = [native_compile.helper(), "stamp-recv", "eth0", "9000", "10", native_compile.bpf_object("xdp_stamp")]
    rx = lab.popen("n2", argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
    rx.kill()
    rx.wait()
    link = lab.exec("n2", ["ip", "link", "show", "eth0"], capture_output=True).stdout
    assert "netrig_stamp" in link  # the leftover
    total = summary(latency(lab, count=50, interval=0.0005))
    assert total["received"] == 50 and total["unstamped"] == 0
    link = lab.exec("n2", ["ip", "link", "show", "eth0"], capture_output=True).stdout
    assert "netrig_filter" in link and "netrig_stamp" not in link
    assert firewall.get("xdp").count(lab, "n2") == 6
