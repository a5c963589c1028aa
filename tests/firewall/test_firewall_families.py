"""`filler_rules` means the same in every engine and family: that many fillers of each
family, each packet walking its own family's list only (an IPv6 seed 002 compares like with
like: ip6tables got none, nftables' inet table made IPv6 walk IPv4's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from netrig import firewall
from netrig.rig import Lab
from tests.conftest import netrig_cli, new_lab_name, requires_root

ENGINES = ["iptables", "nftables", "xdp"]


@requires_root
@pytest.mark.root
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("ipv4", "expected"), [(True, {4: 42, 6: 42}), (False, {4: 40, 6: 42})])
def test_each_engine_installs_the_fillers_in_each_family(
    engine: str, ipv4: bool, expected: dict[int, int], make_lab: Callable[..., Lab]
) -> None:
    """40 fillers per family, then n1's two addresses (loopback, link) of each family it has."""
    lab = make_lab(
        {
            "topology": {"kind": "pair"},
            "addressing": {} if ipv4 else {"ipv4": False},
            "nodes": [{"name": "n2", "firewall": {"engine": engine, "filler_rules": 40,
                                                  "rules": [{"src": "n1"}]}}],
            "check": {"reachability": "none"},
        }
    )  # fmt: skip
    assert firewall.get(engine).counts(lab, "n2") == expected
    ping = lab.exec("n1", ["ping", "-c1", "-W1", lab.addr("n2", 6)], capture_output=True)
    assert ping.returncode != 0  # the rule after the IPv6 fillers is walked to, and drops


LAB = """\
name: {name}
topology: {{kind: pair}}
addressing: {{ipv6: "3fff:ff0:1::/48"}}
nodes:
  - name: n2
    firewall:
      engine: nftables
      filler_rules: {filler}
"""


def test_a_lab_address_among_the_fillers_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(LAB.format(name=new_lab_name("ff"), filler=8))
    done = netrig_cli("validate", str(path))
    assert done.returncode == 2, done.stderr
    assert f"{path}:8:" in done.stderr and "3fff:ff0::/32" in done.stderr
    path.write_text(LAB.format(name=new_lab_name("ff"), filler=0))
    assert netrig_cli("validate", str(path)).returncode == 0
