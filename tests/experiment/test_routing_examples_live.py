"""The routing examples of issue 5 run with `netrig run`, at small scale: seed 000 with BATMAN,
the longest-chain sweep, and the ring of 16 routed four ways (cold start, cut under load)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.results.store import ResultStore
from tests.conftest import netrig_cli, requires_root, requires_tool

pytestmark = [requires_root, pytest.mark.root]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy(tmp_path: Path, example: str, name: str, **replace: str) -> str:
    """The example under a unique lab name, with some of its lines replaced (smaller scale)."""
    text = (EXAMPLES / example).read_text()
    text = re.sub(r"^name: .*$", f"name: {name}", text, count=1, flags=re.M)
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / example
    path.write_text(text)
    return str(path)


def summaries(db: Path, measurement: str, metric: str) -> list[tuple[dict, str, float | None]]:
    """(sweep point, run status, the summary value or None) of each run."""
    out = []
    with ResultStore(db) as store:
        (exp,) = store.experiments()
        for run in store.runs(exp.id):
            values = [
                s.value
                for m, s in store.samples(run.id)
                if m == measurement and s.metric == metric and s.t is None and s.stream is None
            ]
            out.append((run.point, run.status, values[0] if values else None))
    return out


def left(name: str) -> list[str]:
    return [ns for ns in netns.list_names() if ns.startswith(name + "-")]


@requires_tool("batmand")
@requires_tool("iperf3")
def test_seed000_with_batman_small_shapes(tmp_path: Path, lab_name: str) -> None:
    path = copy(tmp_path, "seed000-batman.yaml", lab_name)
    text = Path(path).read_text()
    vary = text[text.index("vary:\n") : text.index("params:")]
    small = "".join(vary.splitlines(keepends=True)[:4])  # the pair, the loop and the chain of 3
    Path(path).write_text(text.replace(vary, small))
    db = tmp_path / "r.db"
    out = netrig_cli(
        "run", path, "--db", str(db), "--set", "duration=1", "--repeat", "1", "-q", timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = summaries(db, "iperf3", "throughput")
    assert [(p["shape"], p["size"], status) for p, status, _ in rows] == [
        ("chain", 2, "ok"),
        ("ring", 3, "ok"),
        ("chain", 3, "ok"),
    ]
    assert all(
        v is not None and v > 1e8 for _, _, v in rows
    )  # > 100 Mbit/s through batmand's routes
    assert left(lab_name) == []


@requires_tool("batmand")
@requires_tool("iperf3")
def test_longest_chain_sweep_reports_no_failure_below_its_limit(
    tmp_path: Path, lab_name: str
) -> None:
    path = copy(tmp_path, "seed000-longest-chain.yaml", lab_name)
    db = tmp_path / "r.db"
    out = netrig_cli(
        "run", path, "--db", str(db), "--set", "nodes=[2, 3]", "--set", "duration=1", timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "no run failed: the limit lies beyond the last point" in out.stderr
    assert [(p["nodes"], s) for p, s, _ in summaries(db, "iperf3", "throughput")] == [
        (2, "ok"),
        (3, "ok"),
    ]


@requires_tool("babeld")
@requires_tool("iperf3")
def test_ring16_compare_measures_cold_start_then_throughput(tmp_path: Path, lab_name: str) -> None:
    path = copy(tmp_path, "compare-ring16.yaml", lab_name)
    db = tmp_path / "r.db"
    args = ["--set", "protocol=[static, babel]", "--set", "duration=1", "--repeat", "1", "-q"]
    out = netrig_cli("run", path, "--db", str(db), *args, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    conv = {p["protocol"]: v for p, s, v in summaries(db, "convergence", "convergence")}
    assert conv["static"] is not None and conv["babel"] is not None
    # netlink puts 16 nodes' routes in at once; babeld must exchange hellos and updates
    assert 0 < conv["static"] < conv["babel"], conv
    thr = [v for _, _, v in summaries(db, "iperf3", "throughput")]
    assert all(v is not None and v > 1e8 for v in thr), thr
    assert left(lab_name) == []


@requires_tool("fping")
@requires_tool("iperf3")
def test_ring16_cut_with_static_routes_is_down_until_the_link_returns(
    tmp_path: Path, lab_name: str
) -> None:
    path = copy(tmp_path, "compare-ring16-cut.yaml", lab_name)
    db = tmp_path / "r.db"
    # 12 s: TCP's retransmission backoff (0.2 + 0.4 + … + 3.2 s) resumes the flow ~1 s after
    # the link returns at 8 s; the probes see it back at once
    args = ["--set", "protocol=static", "--repeat", "1", "-q"]
    out = netrig_cli("run", path, "--db", str(db), *args, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ((_, status, outage),) = summaries(db, "events", "outage")
    assert status == "ok" and outage is not None
    assert 4.5 <= outage <= 5.8, outage  # down at 3 s, up at 8 s: static routes cannot go around
    ((_, _, after),) = summaries(db, "events", "throughput_after")
    ((_, _, before),) = summaries(db, "events", "throughput_before")
    assert before is not None and after is not None and 1e8 < after < before
    assert left(lab_name) == []
