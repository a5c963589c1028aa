"""`netrig doctor` as a user runs it: tables, --json, --only, exit codes, no leftovers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import netrig.cli.cmd_doctor  # noqa: F401  (registers the command)
from netrig.cli.group import cli
from netrig.host import features, tools
from tests.unprivileged import as_nobody, nobody_dir

__all__ = ["nobody_dir"]  # the fixture

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: probes make namespaces"),
]


def test_json_run_in_a_fresh_process(unchanged_host) -> None:
    done = subprocess.run([sys.executable, "-m", "netrig", "doctor", "--json"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] is True and doc["format"] == 1
    assert doc["seconds"] < 30  # a generous bound: the probes run in parallel, ~1 s idle
    assert doc["host"]["kernel"] == os.uname().release
    assert set(doc["features"]) == set(features.FEATURES)
    assert set(doc["tools"]) == set(tools.TOOLS)
    assert doc["features"]["veth"]["present"] is True
    assert doc["features"]["netem"]["status"] == "missing"
    assert doc["tools"]["iperf3"]["found"] is True
    assert "batman-adv missing → BATMAN labs use the userspace batmand" in doc["degrades"]
    assert any(line.startswith("openvswitch missing → OVS switch nodes use the userspace datapath")
               for line in doc["degrades"])  # fmt: skip
    assert any(line.startswith("netem missing → delay/loss") for line in doc["cannot"])
    unchanged_host()


def test_tables_show_marks_details_and_fixes(unchanged_host) -> None:
    # a program this machine lacks (setup.sh installs more of them over time)
    absent = next((t for t in tools.TOOLS.values() if t.package and t.commands
                   and not tools.has_tool(t.name)), None)  # fmt: skip
    if absent is None:
        pytest.skip("every program doctor knows is installed here")
    result = CliRunner().invoke(cli, ["doctor", "--only", "netem,veth", "--only", absent.name])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Kernel features" in out and "Tools" in out
    assert "✔ │ veth" in out and "✘ │ netem" in out and f"✘ │ {absent.name}" in out
    assert "CONFIG_NET_SCH_NETEM" in out and f"apt-get install -y {absent.package}" in out
    assert "htb" not in out  # --only limits the tables
    assert "cannot: netem missing → delay/loss emulation unavailable" in out
    assert out.rstrip().splitlines()[-1].startswith("core OK")
    unchanged_host()


def test_only_a_tool_prints_no_feature_table() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--only", "iperf3", "--json"])
    doc = json.loads(result.output)
    assert doc["features"] == {} and list(doc["tools"]) == ["iperf3"]


def test_unknown_name_is_bad_input() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--only", "netme"])
    assert result.exit_code == 2
    assert "did you mean 'netem'" in result.output


def test_core_missing_exits_1(nobody_dir) -> None:  # type: ignore[no-untyped-def]
    """A real unprivileged user (setpriv), not a patched os.geteuid."""
    result = as_nobody("doctor", "--only", "root", "--json", cwd=nobody_dir)
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["ok"] is False


def test_help_explains_exit_codes() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--help"])
    assert result.exit_code == 0
    assert "Exit status: 0" in result.output and "--only" in result.output


def test_without_net_admin_nothing_is_claimed_and_exit_is_1(unchanged_host) -> None:
    """Dropping CAP_NET_ADMIN must give 'untested' with a root fix, never a false verdict."""
    drop = ["setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin"]
    done = subprocess.run([*drop, sys.executable, "-m", "netrig", "doctor", "--json",
                           "--only", "veth,netem"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] is False
    for name in ("veth", "netem"):
        assert doc["features"][name]["status"] == "untested"
        assert doc["features"][name]["fix"].startswith("run netrig as root")
    unchanged_host()


def test_what_netrig_never_uses_is_told_apart_from_what_it_refuses() -> None:
    """doctor's "cannot" had said "VLAN-tagged sub-interfaces are refused", "VRF nodes …
    are refused" of features no lab file has, and "rate limits use the HTB shaper" where
    netrig shapes with TBF only."""
    done = subprocess.run([sys.executable, "-m", "netrig", "doctor", "--json", "--only",
                           "vlan,vrf,htb,tbf,netem"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    doc = json.loads(done.stdout)
    assert {"vlan", "vrf"} <= set(doc["absent_unused"])
    assert not [line for line in doc["cannot"] + doc["degrades"] if "vlan" in line or "vrf" in line]
    assert all(not f["used"] for n, f in doc["features"].items() if n in ("vlan", "vrf", "htb"))
    assert doc["features"]["tbf"]["used"] and doc["features"]["netem"]["used"]
    assert any(line.startswith("netem missing → ") for line in doc["cannot"])
    assert not [line for line in doc["degrades"] if "HTB" in line]
