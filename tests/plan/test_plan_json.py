"""The plan as JSON is lossless: read back equal, and a lab built from it is the lab."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from netrig.plan.model import LabPlan
from netrig.rig import Lab
from netrig.rig.prepare import from_spec, is_experiment_file, load_experiment, plan_file, plan_lab
from tests.conftest import netrig_cli, new_lab_name, requires_root

EXAMPLES = sorted(glob.glob("examples/*.yaml"))


def example_plans(path: str) -> list[LabPlan]:
    if is_experiment_file(path):
        return [p.plan for p in load_experiment(path).points]
    return [plan_file(path)]


@pytest.mark.parametrize("path", EXAMPLES)
def test_every_example_plan_reads_back_equal(path: str) -> None:
    for plan in example_plans(path):
        text = json.dumps(plan.to_dict())
        assert LabPlan.from_dict(json.loads(text)) == plan
        assert json.dumps(LabPlan.from_dict(json.loads(text)).to_dict()) == text
        # the fast encoder writes the same text, with and without the routes
        assert plan.to_json(with_routes=True) == text
        assert plan.to_json() == json.dumps(plan.to_dict(with_routes=False))
        assert LabPlan.from_json(plan.to_json(with_routes=True)) == plan


def test_plan_command_json_is_the_plan(tmp_path) -> None:  # type: ignore[no-untyped-def]
    done = netrig_cli("plan", "examples/ring16.yaml", "--json")
    assert done.returncode == 0, done.stderr
    assert LabPlan.from_dict(json.loads(done.stdout)) == plan_file("examples/ring16.yaml")


def test_plan_command_lists_an_experiments_runs() -> None:
    done = netrig_cli("plan", "examples/seed000-static.yaml", "--json", "--set", "hops=[1,5]")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [p["values"] for p in doc["points"]] == [{"hops": 1}, {"hops": 5}]
    assert doc["points"][0]["measure"][0]["options"]["server"] == "n2"
    assert len(doc["runs"]) == 2 * doc["repeat"]
    assert LabPlan.from_dict(doc["points"][1]["lab"]).name == doc["name"]


def test_plan_and_validate_refuse_bad_input_at_its_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\ntopology: {kind: chain, nodes: 3}\nmeasure:\n  - iperf3: {client: n1, server: n9}\n")
    for cmd in ("plan", "validate"):
        done = netrig_cli(cmd, str(bad))
        assert done.returncode == 2
        assert f"{bad}:4:" in done.stderr and "n9" in done.stderr
        assert "Traceback" not in done.stderr


def state(lab: Lab) -> dict[str, Any]:
    """What the kernel holds for each node: links (name, MAC, MTU, master), addresses, routes."""
    out = {}
    for node in lab.nodes():
        ns = lab.ns(node)
        links = json.loads(subprocess.run(["ip", "-n", ns, "-j", "link"], capture_output=True,
                                          text=True, check=True).stdout)
        addrs = json.loads(subprocess.run(["ip", "-n", ns, "-j", "addr"], capture_output=True,
                                          text=True, check=True).stdout)
        routes = [subprocess.run(["ip", "-n", ns, f"-{f}", "route", "show", "table", "all"],
                                 capture_output=True, text=True, check=True).stdout
                  for f in (4, 6)]
        out[node] = {
            "links": sorted((x["ifname"], x.get("address"), x.get("mtu"), x.get("master"))
                            for x in links),
            # link-local addresses (and their routes) are the kernel's, and come when they come
            "addrs": sorted((x["ifname"], a["local"], a["prefixlen"])
                            for x in addrs for a in x.get("addr_info", [])
                            if not a["local"].startswith("fe80:")),
            # route exceptions (PMTU, redirects) that traffic leaves behind are not the build's
            "routes": sorted(line for text in routes for line in text.splitlines()
                             if not any(w in line for w in ("expires", "cache", "fe80:"))),
        }
    return out


@requires_root
def test_a_lab_built_from_its_json_plan_is_the_lab_built_directly() -> None:
    name = new_lab_name()
    spec = {"name": name, "topology": {"kind": "ring", "nodes": 5},
            "routing": {"protocol": "ecmp"}, "links": [{"a": "n1", "b": "n2", "mtu": 9000}]}
    direct = plan_lab(from_spec(spec))
    shipped = LabPlan.from_dict(json.loads(json.dumps(direct.to_dict())))
    seen = []
    for plan in (direct, shipped):
        lab = Lab(plan)
        lab.up()
        try:
            seen.append(state(lab))
        finally:
            lab.down()
    assert seen[0] == seen[1]
    assert any(r for node in seen[0].values() for r in node["routes"] if "nexthop" in r)


def test_plan_needs_no_plugin_import_in_the_model() -> None:
    """The model and plan layers import no plugin package (the rig hands them a catalog)."""
    code = ("import sys; import netrig.plan.experiment, netrig.plan.lab; "
            "print(sorted(m for m in sys.modules if m.split('.')[1:2] and m.split('.')[1] in "
            "('routing','measure','services','firewall','switch','rig','lab')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_plan_says_each_node_s_daemon_firewall_services_and_programs(tmp_path: Path) -> None:
    """`netrig plan` promised routes, daemons, services and firewalls per node: it showed
    neither nginx nor bird, and each sweep point of seed 002 as the same table."""
    path = tmp_path / "pl.yaml"
    path.write_text(
        "name: pl\ntopology: {kind: chain, nodes: 3}\nrouting: {protocol: ospf}\nnodes:\n"
        "  - {name: n3, services: [{nginx: {files: {1k: 1024}}}], exec: ['ip addr']}\n"
        "  - {name: n2, firewall: {engine: nftables, filler_rules: 10, rules: [{src: n1}]}}\n"
    )
    env = {**os.environ, "NETRIG_PLAN_CACHE": "off", "COLUMNS": "200"}
    done = netrig_cli("plan", str(path), env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "n2: ospf daemon (bird2), firewall nftables: 4 rules + 10 filler" in lines
    assert "n3: ospf daemon (bird2), service nginx on port 80, 1 exec line" in lines
    assert lines[-1] == "routes by ospf's daemons, 2 subnets"
    seed002 = netrig_cli("plan", "examples/seed002-firewall-latency.yaml", env=env)
    fillers = [line for line in seed002.stdout.splitlines() if line.startswith("n2: ")]
    assert len(fillers) == 12 and len(set(fillers)) == 12, fillers  # one per point, each its own
