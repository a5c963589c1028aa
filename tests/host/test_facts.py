"""Host facts: versions of present, missing and odd tools; CPU model; the basic facts."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

import pytest

import netrig
from netrig.host.facts import collect_host_facts, cpu_model, tool_version
from tests.conftest import requires_tool


def fake_tool(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only fake tools, so the answers do not depend on the host."""
    fake_tool(tmp_path, "modern", 'echo "modern 3.12 (cJSON 1.7.15)"; echo "Linux vm"')
    # Like iputils ping: --version is an error, -V works.
    fake_tool(tmp_path, "oldstyle", '[ "$1" = "-V" ] || { echo "invalid option" >&2; exit 2; }\n'
                                     'echo "oldstyle from iputils 20221126"')
    fake_tool(tmp_path, "stderronly", 'echo "stderronly: Version 5.1" >&2')
    fake_tool(tmp_path, "mute", "exit 0")
    fake_tool(tmp_path, "slow", "sleep 5")
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path


def test_version_from_version_flag(tools: Path) -> None:
    assert tool_version("modern") == "modern 3.12 (cJSON 1.7.15)"


def test_version_from_capital_v_when_version_flag_fails(tools: Path) -> None:
    assert tool_version("oldstyle") == "oldstyle from iputils 20221126"


def test_version_printed_on_stderr(tools: Path) -> None:
    assert tool_version("stderronly") == "stderronly: Version 5.1"


def test_missing_tool_is_none_and_silent_tool_unknown(tools: Path) -> None:
    assert tool_version("absent") is None
    assert tool_version("mute") == "unknown"
    assert tool_version("slow", timeout=0.1) == "unknown"


def test_cpu_model_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\n"
                       "model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\n")
    assert cpu_model(cpuinfo) == "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"
    assert cpu_model(tmp_path / "missing") == (platform.processor() or platform.machine())


def test_collected_facts(tools: Path) -> None:
    facts = collect_host_facts(["modern", "absent"])
    assert facts["kernel"] == platform.release()
    assert facts["netrig_version"] == netrig.__version__
    assert facts["cpu_count"] == os.cpu_count()
    assert 1 <= facts["cpu_usable"] <= facts["cpu_count"]
    assert facts["cpu_model"]
    assert facts["tool_versions"] == {"modern": "modern 3.12 (cJSON 1.7.15)", "absent": None}


@requires_tool("wrk")
def test_wrk_version_although_it_exits_1() -> None:
    """`wrk -v` prints its version line, then its usage, and exits 1: still its version."""
    version = tool_version("wrk")
    assert version is not None and version.startswith("wrk ") and "4." in version



@pytest.mark.skipif(shutil.which("vtysh") is None or shutil.which("dpkg-query") is None,
                    reason="needs FRR's vtysh and dpkg")  # fmt: skip
def test_a_tool_that_prints_no_version_is_recorded_by_its_package_s() -> None:
    """vtysh and pen had been recorded "unknown" where `netrig doctor` showed FRR's and
    pen's package versions."""
    versions = collect_host_facts({"vtysh": "frr"})["tool_versions"]
    assert versions["vtysh"].startswith("frr ") and versions["vtysh"] != "frr unknown"
