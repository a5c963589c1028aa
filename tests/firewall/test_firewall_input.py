"""Bad firewall input: one message at file:line, exit 2, nothing created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from netrig.base.sample import MeasurementFailed
from netrig.firewall import FirewallPlan
from netrig.firewall.iptables import ruleset as iptables_ruleset
from netrig.firewall.nftables import ruleset as nft_ruleset
from netrig.lab import netns
from netrig.measure.stage_latency import percentile, samples
from tests.conftest import netrig_cli, new_lab_name, requires_root

LAB = """\
name: {name}
topology: {{kind: pair}}
nodes:
  - name: n2
    firewall:
      engine: {engine}
      filler_rules: {filler}
      rules: [{{src: {src}}}]
"""


def write(tmp_path: Path, engine: str = "iptables", filler: object = 8, src: str = "n1") -> Path:
    name = new_lab_name("f")
    path = tmp_path / "lab.yaml"
    path.write_text(LAB.format(name=name, engine=engine, filler=filler, src=src))
    return path


@pytest.mark.parametrize(
    ("fields", "line", "words"),
    [
        ({"engine": "iptable"}, 6, "unknown firewall engine 'iptable' (did you mean 'iptables'?)"),
        ({"filler": -1}, 7, "greater than or equal to 0"),
        ({"filler": 20000}, 7, "less than or equal to 10000"),
        ({"filler": "many"}, 7, "valid integer"),
        ({"src": "n3"}, 8, "src 'n3' is neither a node"),
        ({"src": "300.1.2.3/8"}, 8, "neither a node nor a CIDR"),
    ],
)
def test_bad_firewall_is_exit_2_at_file_line(
    tmp_path: Path, fields: dict[str, object], line: int, words: str
) -> None:
    path = write(tmp_path, **fields)  # type: ignore[arg-type]
    done = netrig_cli("validate", str(path))
    assert done.returncode == 2, done.stderr
    assert f"{path}:{line}:" in done.stderr
    assert words in done.stderr


@requires_root
def test_missing_tool_names_the_package_and_creates_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, engine="nftables")
    name = path.read_text().splitlines()[0].split()[1]
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}  # no nft (nor anything else)
    done = netrig_cli("up", str(path), env=env)
    assert done.returncode == 2, done.stderr
    assert "apt-get install nftables" in done.stderr
    assert not any(ns.startswith(name + "-") for ns in netns.list_names())


def test_rulesets_put_fillers_first() -> None:
    fw = FirewallPlan("iptables", 2, [("drop", "198.18.0.1/32")])
    text = iptables_ruleset(fw.family_rules(4))
    lines = [ln for ln in text.splitlines() if ln.startswith("-A INPUT")]
    assert lines == [
        "-A INPUT -s 240.0.0.1/32 -j DROP",
        "-A INPUT -s 240.0.0.2/32 -j DROP",
        "-A INPUT -s 198.18.0.1/32 -j DROP",
    ]
    nft = nft_ruleset(FirewallPlan("nftables", 1, [("accept", "2001:2::1/128")]).family_rules(6), 6)
    assert "table ip6 netrig" in nft and "ip6 saddr 2001:2::1/128 accept" in nft
    assert nft.index("ip6 saddr 3fff:ff0::1/128 drop") < nft.index("2001:2::1/128")


def test_lost_packets_are_counted_never_zero_latency() -> None:
    sent = {0: 1000, 1: 2000, 2: 3000, 3: 0}  # seq 3 could not be sent
    got = {0: (1500, 4500), 1: (2500, 0), 2: (0, 0)}
    result = samples(sent, got)
    per_packet = [s for s in result if s.t is not None]
    counts = {s.metric: s.value for s in result if s.t is None}
    assert [(s.value, s.t) for s in per_packet] == [(3.0, 0.0)]
    assert counts["sent"] == 3 and counts["received"] == 1 and counts["lost"] == 2
    assert counts["stamped_dropped"] == 1
    with pytest.raises(MeasurementFailed):
        samples({0: 1000}, {0: (1500, 0)})


def test_percentile_nearest_rank() -> None:
    values = [float(i) for i in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0


def test_a_path_without_sbin_still_finds_nft() -> None:
    """A non-login root shell's PATH may lack /usr/sbin: netrig looks there too."""
    done = subprocess.run(
        [sys.executable, "-c", "import netrig, shutil; print(shutil.which('nft'))"],
        env={**os.environ, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() in ("/usr/sbin/nft", "/sbin/nft")


SHARED = """\
name: {name}
topology: {{kind: pair}}
nodes:
  - name: n2{owner}
  - name: n2side
    netns: n2
    firewall: {{engine: {engine}, rules: [{{src: n1}}]}}
"""


@pytest.mark.parametrize(
    ("engine", "owner"),
    [("xdp", ""), ("iptables", "\n    firewall: {engine: iptables, rules: [{src: n1}]}")],
)
def test_a_firewall_in_a_shared_namespace_is_refused(
    tmp_path: Path, engine: str, owner: str
) -> None:
    """Its rules were applied to no interface (XDP) or replaced the owner's (iptables)."""
    name = new_lab_name("fs")
    path = tmp_path / "lab.yaml"
    path.write_text(SHARED.format(name=name, engine=engine, owner=owner))
    line = 7 + owner.count("\n")
    for command in ("validate", "up") if os.geteuid() == 0 else ("validate",):
        done = netrig_cli(command, str(path))
        assert done.returncode == 2, done.stderr
        assert f"{path}:{line}:" in done.stderr
        assert "runs in n2's network namespace" in done.stderr and "on n2" in done.stderr
    assert not any(ns.startswith(name + "-") for ns in netns.list_names())


@pytest.mark.parametrize(
    ("node", "why"),
    [("{name: n1s, netns: n1}", "it shares n1's namespace: name n1"),
     ("{name: n1s, kind: switch}", "it is a switch")],
)
def test_a_rule_naming_a_node_without_an_address_is_refused(
    tmp_path: Path, node: str, why: str
) -> None:
    """Such a rule had become no rule at all (`plan`: 0 rules), without a word."""
    path = tmp_path / "lab.yaml"
    path.write_text(f"name: t\ntopology: {{kind: chain, nodes: 3}}\nnodes:\n  - {node}\n"
                    "  - {name: n2, firewall: {engine: nftables, rules: [{src: n1s}]}}\n"
                    + ("links: [{a: n1s, b: n1}]\n" if "switch" in node else ""))  # fmt: skip
    done = netrig_cli("validate", str(path), env={**os.environ, "NETRIG_PLAN_CACHE": "off"})
    assert done.returncode == 2
    assert f"{path}:5:" in done.stderr and f"n1s has no address of its own to match ({why})" in (
        done.stderr), done.stderr


def test_native_xdp_on_a_link_above_a_veth_s_xdp_mtu_is_refused(tmp_path: Path) -> None:
    """A 9000 link with an xdp firewall (or the XDP stamp of stage_latency) had validated
    ok and failed at attach ("Peer MTU is too large to set XDP")."""
    env = {**os.environ, "NETRIG_PLAN_CACHE": "off"}
    firewall = ("name: t\ntopology: {{kind: pair}}\nlink_defaults: {{mtu: {mtu}}}\nnodes: [{{name:"
                " n2, firewall: {{engine: xdp, {mode}rules: [{{src: 203.0.113.0/24}}]}}}}]\n")
    stamp = ("name: t\ntopology: {{kind: pair}}\nlink_defaults: {{mtu: {mtu}}}\n"
             "measure: [{{stage_latency: {{sender: n1, receiver: n2, count: 10}}}}]\n")
    for text, said in ((firewall, "native XDP on a veth takes an MTU of at most 3506; n2:eth0 "
                                  "has 9000: lower the link's mtu, or xdp_mode: skb"),
                       (stamp, "n2:eth0 has an MTU of 9000; the XDP stamp attaches in native "
                               "mode, which a veth takes up to MTU 3506")):  # fmt: skip
        path = tmp_path / "x.yaml"
        path.write_text(text.format(mtu=9000, mode=""))
        done = netrig_cli("validate", str(path), env=env)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        path.write_text(text.format(mtu=3506, mode=""))
        assert netrig_cli("validate", str(path), env=env).returncode == 0
    path.write_text(firewall.format(mtu=9000, mode="xdp_mode: skb, "))
    assert netrig_cli("validate", str(path), env=env).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to build the lab")
def test_a_veth_takes_native_xdp_up_to_the_mtu_validate_allows(make_lab) -> None:  # type: ignore[no-untyped-def]
    """The limit VETH_XDP_MAX_MTU is this kernel's: at 3506 the filter attaches natively."""
    from netrig.plan.firewall import VETH_XDP_MAX_MTU

    lab = make_lab({"topology": {"kind": "pair"}, "link_defaults": {"mtu": VETH_XDP_MAX_MTU},
                    "nodes": [{"name": "n2", "firewall": {"engine": "xdp",
                                                          "rules": [{"src": "203.0.113.0/24"}]}}]})  # fmt: skip
    shown = lab.exec("n2", ["ip", "-d", "link", "show", "eth0"], capture_output=True).stdout
    assert f"mtu {VETH_XDP_MAX_MTU}" in shown and "prog/xdp" in shown, shown
