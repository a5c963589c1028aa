"""The FRR fabric examples run with `netrig run`, at small scale: cold-start convergence of
the leaf-spine fabric under two protocols, and a leaf-spine link cut under load."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import netrig_cli, requires_root, requires_tool
from tests.experiment.test_routing_examples_live import copy, left, summaries

pytestmark = [requires_root, pytest.mark.root, requires_tool("vtysh"), requires_tool("iperf3")]


def run(tmp_path: Path, example: str, lab_name: str, *args: str) -> Path:
    """The example under the test's lab name, run once per point; returns its results."""
    db = tmp_path / "r.db"
    path = copy(tmp_path, example, lab_name)
    out = netrig_cli("run", path, "--db", str(db), *args, "--repeat", "1", "-q", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert left(lab_name) == []
    return db


def test_fabric_clos_measures_cold_start_of_bgp_and_isis(tmp_path: Path, lab_name: str) -> None:
    args = ["--set", "protocol=[bgp, isis]", "--set", "bfd=[false]", "--set", "duration=1"]
    db = run(tmp_path, "fabric-clos.yaml", lab_name, *args)
    conv = {p["protocol"]: v for p, s, v in summaries(db, "convergence", "convergence")}
    # every daemon stopped and started again: sessions, adjacencies and routes in seconds
    # (a daemon that missed zebra's socket would retry only after 10 s)
    assert set(conv) == {"bgp", "isis"}
    assert all(v is not None and 0 < v < 10 for v in conv.values()), conv
    thr = [v for _, _, v in summaries(db, "iperf3", "throughput")]
    assert all(v is not None and v > 1e8 for v in thr), thr


def test_fabric_clos_ibgp_measures_cold_start_through_the_reflectors(
    tmp_path: Path, lab_name: str
) -> None:
    args = ["--set", "bfd=[false]", "--set", "duration=1"]
    db = run(tmp_path, "fabric-clos-ibgp.yaml", lab_name, *args)
    ((_, status, conv),) = summaries(db, "convergence", "convergence")
    assert status == "ok" and conv is not None and 0 < conv < 10, conv
    ((_, _, thr),) = summaries(db, "iperf3", "throughput")
    assert thr is not None and thr > 1e8, thr


@requires_tool("fping")
def test_fabric_clos_cut_is_routed_around_well_before_the_link_returns(
    tmp_path: Path, lab_name: str
) -> None:
    args = ["--set", "protocol=[isis]", "--set", "bfd=[true]"]
    db = run(tmp_path, "fabric-clos-cut.yaml", lab_name, *args)
    ((_, status, outage),) = summaries(db, "events", "outage")
    # down at 3 s, up at 8 s: a protocol that did not reroute would lose 5 s of probes
    assert status == "ok" and outage is not None and outage < 2.0, outage
    ((_, _, during),) = summaries(db, "events", "throughput_during")
    assert during is None or during > 1e8, during  # the other spine carries on
