"""Tool, Python package and privilege checks against this machine's real installation."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from netrig.host import tools
from netrig.host.tools import TOOLS, has_tool, probe_tools

# Installed here and by setup.sh, so found on every netrig machine of this kind.
FOUND = ["root", "iperf3", "ping", "fping", "batmand", "babeld", "bird", "xdp-loader",
         "clang", "ministat", "nft", "iptables-legacy-restore", "ip", "tc", "tcpdump", "ethtool",
         "pyroute2", "pydantic", "yaml", "click", "rich", "numpy", "scipy", "chromium",
         "matplotlib", "ovs", "ovs-testcontroller", "trafgen", "gcc",
         "wrk", "ab", "haproxy", "nginx", "pen"]
# Neither installed here nor by setup.sh.
NOT_FOUND: list[str] = []


@pytest.fixture(scope="module")
def results() -> dict[str, tools.ToolResult]:
    return probe_tools(fresh=True)


def _dpkg_installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", package],
                          capture_output=True, text=True, check=False)
    return done.stdout.endswith("ok installed")


def _importable(module: str) -> bool:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          check=False)
    return done.returncode == 0


def test_every_entry_is_reported(results: dict) -> None:
    assert list(results) == list(TOOLS)
    assert set(FOUND + NOT_FOUND) <= set(TOOLS)


@pytest.mark.parametrize("name", list(TOOLS))
def test_agrees_with_the_package_database(results: dict, name: str) -> None:
    """An independent witness: dpkg for programs, a fresh interpreter for Python modules."""
    res = results[name]
    if res.kind == "tool":
        assert res.found == _dpkg_installed(res.package), res
    elif res.kind == "python":
        assert res.found == _importable(name), res
    else:
        assert res.found == (os.geteuid() == 0)
    if not res.found and res.kind != "privilege":
        installer = "pip install" if res.kind == "python" else "apt-get install -y"
        assert res.fix == f"{installer} {res.package}"


@pytest.mark.parametrize("name", FOUND)
def test_found_with_a_version(results: dict, name: str) -> None:
    res = results[name]
    assert res.found, res
    assert res.version and res.fix == ""
    if res.kind == "tool":
        assert all(path.startswith("/") for path in res.paths.values()) and res.paths


@pytest.mark.parametrize("name", NOT_FOUND)
def test_missing_with_the_installing_command(results: dict, name: str) -> None:
    res = results[name]
    assert not res.found
    installer = "pip install" if res.kind == "python" else "apt-get install -y"
    assert res.fix == f"{installer} {res.package}"


def test_versions_and_packages_are_the_real_ones(results: dict) -> None:
    assert results["iperf3"].version.startswith("iperf 3.")
    assert results["bird"].version.startswith("BIRD version 2")
    assert results["bird"].package == "bird2"
    assert results["xdp-loader"].version.startswith("xdp-tools ")  # no flag: dpkg's version
    assert results["ovs"].package == "openvswitch-switch"
    assert results["ab"].package == "apache2-utils"
    assert results["trafgen"].package == "netsniff-ng"
    assert TOOLS["matplotlib"].optional and not TOOLS["pyroute2"].optional
    assert results["root"].version == "euid 0"


def test_lookup_by_command_package_or_name() -> None:
    assert tools.resolve("ovs-vswitchd") == "ovs"
    assert tools.resolve("netsniff-ng") == "trafgen"
    assert has_tool("iperf3") and not any(has_tool(name) for name in NOT_FOUND)
    with pytest.raises(KeyError, match="did you mean 'iperf3'"):
        tools.resolve("iperf")


def test_a_hanging_version_flag_is_cut_short() -> None:
    start = time.perf_counter()
    assert tools._version_line(["sleep", "5"], timeout=0.2) == ""
    assert time.perf_counter() - start < 2.5  # well before the 5 s the program would take


def test_not_root_is_reported_with_a_fix(monkeypatch) -> None:
    monkeypatch.setattr(tools.os, "geteuid", lambda: 1000)
    res = tools._check_root(TOOLS["root"])
    assert not res.found and "root" in res.fix
