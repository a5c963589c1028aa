"""The seed 002 example end to end through the command line, at a small scale."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.results.store import ResultStore
from tests.conftest import netrig_cli, requires_root

pytestmark = [requires_root, pytest.mark.root]
EXAMPLE = Path(__file__).parents[2] / "examples" / "seed002-firewall-latency.yaml"


def test_seed002_example_runs_and_stat_reads_it(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    sets = ["count=50", "engine=[iptables,xdp]", "rules=[0,64]"]
    args = [a for s in sets for a in ("--set", s)]
    out = netrig_cli("run", str(EXAMPLE), "--db", str(db), "--repeat", "3", "-q", *args)
    assert out.returncode == 0, out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        runs = store.runs(e.id)
        assert [r.status for r in runs] == ["ok"] * 12
        for run in runs:
            samples = [s for _, s in store.samples(run.id)]
            counts = {s.metric: s.value for s in samples if s.t is None}
            per_packet = [s for s in samples if s.metric == "latency" and s.t is not None]
            assert counts["sent"] == 50
            assert len(per_packet) == counts["received"] - counts["unstamped"]
    stat = netrig_cli(
        "stat",
        "--db",
        str(db),
        "--experiment",
        "seed002-fw:engine=iptables",
        "--metric",
        "latency_min",
        "--by",
        "rules",
    )
    assert stat.returncode == 0, stat.stderr
    assert "rules=0" in stat.stdout and "rules=64" in stat.stdout and "N " in stat.stdout
    assert not [ns for ns in netns.list_names() if ns.startswith(e.name + "-")]
