"""Kernel probes against this machine's real state (a 6.18 VM kernel, no loadable modules)."""

from __future__ import annotations

import os
import time

import pytest

from netrig.host import features
from netrig.host.features import (
    FEATURES,
    Outcome,
    Scratch,
    feature,
    has_feature,
    present,
    probe_features,
)

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: probes make namespaces"),
]

# What this machine has, as documented in the brief and checked against /proc/config.gz.
PRESENT = ["netns", "veth", "bridge", "bridge-stp", "nftables", "iptables", "multipath",
           "htb", "tbf", "vxlan", "macvlan", "xdp-native", "xdp-generic", "ifb", "ipset",
           "iptables-nft", "xdp-netrig", "af-packet"]
# MPLS was documented as present, but the kernel has CONFIG_MPLS=y without
# CONFIG_MPLS_ROUTING: no net.mpls sysctls and `ip -f mpls route add` gives EOPNOTSUPP.
MISSING = ["netem", "batman-adv", "openvswitch", "dummy", "vlan", "ipvlan", "fq", "fq_codel",
           "vrf", "wireguard", "ipvs", "pktgen", "bonding", "gre", "geneve", "mpls",
           "netns-names"]  # /run is on the VM's ext4: a name in /run/netns costs ~0.3-0.9 ms


@pytest.fixture(scope="module")
def results() -> dict[str, features.FeatureResult]:
    return probe_features(fresh=True)


def test_every_registered_probe_is_classified_here(results: dict) -> None:
    assert sorted(PRESENT + MISSING) == sorted(FEATURES)
    assert set(results) == set(FEATURES)


@pytest.mark.parametrize("name", PRESENT)
def test_present_here(results: dict, name: str) -> None:
    res = results[name]
    assert res.status == "present", f"{name}: {res.detail}"
    assert res.fix == "" and res.impact == ""


@pytest.mark.parametrize("name", MISSING)
def test_missing_here(results: dict, name: str) -> None:
    res = results[name]
    assert res.status == "missing", f"{name}: {res.detail}"
    assert res.impact and res.fix, name
    # this kernel has no module support: the fix must say so, not suggest modprobe
    assert not os.path.exists("/proc/modules")
    assert "modprobe" not in res.fix and FEATURES[name].config in res.fix


def test_details_carry_the_kernels_words(results: dict) -> None:
    assert "Unknown device type" in results["batman-adv"].detail
    assert results["netem"].detail.startswith("ENOENT")
    assert "ovs_datapath" in results["openvswitch"].detail
    assert "driver mode" in results["xdp-native"].detail
    assert "read back as 1" in results["bridge-stp"].detail
    assert "legacy" in results["iptables"].detail
    assert results["netem"].impact.startswith("delay/loss emulation unavailable")
    assert "CONFIG_NET_SCH_NETEM" in results["netem"].fix


def test_has_feature_and_aliases() -> None:
    assert has_feature("veth") is True
    assert has_feature("netem") is False
    assert has_feature("802.1Q") is False  # alias of vlan
    assert has_feature("STP") is True  # alias of bridge-stp
    with pytest.raises(KeyError, match="did you mean 'netem'"):
        has_feature("netme")


def test_full_run_is_fast_and_leaves_no_trace(unchanged_host) -> None:
    start = time.perf_counter()
    probe_features(fresh=True)
    assert time.perf_counter() - start < 30  # a generous bound: ~1 s on an idle host
    unchanged_host()


def test_cache_answers_without_probing_again() -> None:
    start = time.perf_counter()
    first = probe_features(["veth"], fresh=True)
    probing = time.perf_counter() - start
    start = time.perf_counter()
    again = probe_features(["veth"])
    cached = time.perf_counter() - start
    assert again["veth"] is first["veth"]
    assert cached < probing / 10, f"cached {cached:.4f} s vs probing {probing:.4f} s"


def test_a_probe_runs_outside_the_host_namespace(unchanged_host) -> None:
    """A registered probe sees its own namespace, and a crashing probe says it crashed."""
    host = os.stat("/proc/self/ns/net").st_ino

    def where(ns: Scratch) -> Outcome:
        inode = os.stat("/proc/thread-self/ns/net").st_ino
        child = ns.run(["readlink", "/proc/self/ns/net"]).stdout.strip()
        return present(f"{inode} {child}")

    def broken(ns: Scratch) -> Outcome:
        raise ValueError("bug in probe")

    feature("test-where", "test", impact="-")(where)
    feature("test-broken", "test", impact="-", tool="no-such-tool-xyz")(broken)
    feature("test-broken2", "test", impact="-")(broken)
    try:
        res = probe_features(["test-where", "test-broken", "test-broken2"], fresh=True)
    finally:
        for name in ("test-where", "test-broken", "test-broken2"):
            FEATURES.pop(name, None)
            features._cache.pop(name, None)
    inode, child = res["test-where"].detail.split()
    assert int(inode) != host
    assert child == f"net:[{inode}]"  # the nsenter'd child is in the same scratch ns
    assert res["test-broken"].status == "untested"
    assert res["test-broken"].fix == "apt-get install -y no-such-tool-xyz"
    assert res["test-broken2"].status == "untested"
    assert "bug in probe" in res["test-broken2"].detail
    unchanged_host()


def test_nftables_without_nft_is_untested_not_missing(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        res = probe_features(["nftables"], fresh=True)["nftables"]
    finally:
        features._cache.pop("nftables", None)
    assert res.status == "untested" and res.detail == "tool missing: nft"
    assert res.fix == "apt-get install -y nftables"


def test_registering_a_name_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        feature("netem", "again", impact="-")(lambda ns: present(""))


def test_module_state_reads_the_module_lists(tmp_path) -> None:
    (tmp_path / "modules.dep").write_text("kernel/net/sched/sch_netem.ko.xz:\n")
    (tmp_path / "modules.builtin").write_text("kernel/net/bridge/bridge.ko\n")
    assert features._module_state(str(tmp_path), "sch_netem") == "module"
    assert features._module_state(str(tmp_path), "bridge") == "builtin"
    assert features._module_state(str(tmp_path), "batman-adv") == ""
