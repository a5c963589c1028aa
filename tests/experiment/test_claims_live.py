"""Claims of the README that no other test checked: a lab whose routing does not heal after
a run's events is rebuilt; before a run with events, the traffic is waited for until it takes
shortest paths (and a note says so when it never does)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from netrig.experiment.runner import Silent, _paths, run_experiment
from netrig.lab.ledger import Ledger
from netrig.results.store import ResultStore
from netrig.rig.prepare import load_experiment_text
from tests.conftest import requires_root, requires_tool

pytestmark = requires_root


class Notes(Silent):
    """The runner's notes to its user, kept."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


@requires_tool("babeld")
def test_a_lab_whose_routing_does_not_heal_is_rebuilt(tmp_path: Path, lab_name: str) -> None:
    """The run's own measurement kills n2's babeld (by the pid file netrig wrote) and drops
    the routes it had installed: after the events are undone the routing cannot heal (a
    killed babeld leaves its routes, so they are flushed too), so the next run gets a new
    lab."""
    pid_file = os.path.join(Ledger().lab_dir(lab_name), "nodes", "n2", "babeld.pid")
    exp = load_experiment_text(
        f"name: {lab_name}\ntopology: {{kind: chain, nodes: 3}}\nrouting: {{protocol: babel}}\n"
        "measure:\n"
        f"  - command: {{node: n2, cmd: 'sleep 0.5; kill -9 $(cat {pid_file}); "
        "ip route flush proto babel; ip -6 route flush proto babel; echo took 1 s',"
        " metrics: true}\n"
        "events:\n  - link n1-n2 rate 10mbit @ 0.1s\n"
        "repeat: 2\n",
        str(tmp_path / "exp.yaml"),
    )
    notes = Notes()
    with ResultStore(tmp_path / "r.db") as store:
        outcome = run_experiment(exp, store, reporter=notes)
        runs = store.runs(outcome.experiment_id)
    assert [r.status for r in runs] == ["ok", "ok"], [r.reason for r in runs]
    assert outcome.labs_built == 2, notes.notes
    healed = [n for n in notes.notes if "did not heal after the events" in n]
    assert len(healed) == 2 and "babeld" in healed[0], notes.notes


def test_runs_with_events_wait_for_shortest_paths(make_lab) -> None:  # type: ignore[no-untyped-def]
    """n1's route to n3 is bent onto the long way round a ring of 6; the wait before the
    events returns only once it is straightened (here by hand after 1.5 s), and says so
    when it never is."""
    lab = make_lab({"topology": {"kind": "ring", "nodes": 6}}, check=False)
    exp = load_experiment_text(
        f"name: {lab.name}\ntopology: {{kind: ring, nodes: 6}}\n"
        "measure:\n  - ping: {src: n1, dst: n3, count: 1}\n"
    )
    steps = exp.points[0].steps
    target = lab.addr("n3")
    # n1's neighbours on the ring are n2 (the short way to n3) and n6 (the long way)
    n1 = lab.plan.node("n1")
    long_way = next(i for i in n1.ifaces if i.peer == "n6")
    short_way = next(i for i in n1.ifaces if i.peer == "n2")
    peer_addr = lab.plan.node("n6").iface(long_way.peer_iface).addrs[0].split("/")[0]
    short_addr = lab.plan.node("n2").iface(short_way.peer_iface).addrs[0].split("/")[0]

    def bend() -> None:
        done = lab.exec("n1", ["ip", "route", "replace", f"{target}/32", "via", peer_addr,
                               "dev", long_way.name], capture_output=True)  # fmt: skip
        assert done.returncode == 0, done.stderr

    def straighten() -> None:
        lab.exec("n1", ["ip", "route", "replace", f"{target}/32", "via", short_addr,
                        "dev", short_way.name], check=True)  # fmt: skip

    bend()
    assert "n6" in " ".join(_paths(lab, steps))  # the trace sees the detour
    fixer = threading.Timer(1.5, straighten)
    started = time.monotonic()
    fixer.start()
    lines = _paths(lab, steps, timeout=20)
    waited = time.monotonic() - started
    fixer.join()
    assert waited >= 1.5, lines
    assert not any("not on a shortest path" in line for line in lines), lines
    assert "n6" not in lines[0], lines
    # never straightened: the wait ends at its timeout with a note naming the pair
    bend()
    lines = _paths(lab, steps, timeout=1)
    assert "(not on a shortest path after 1 s: n1 → n3)" in lines, lines
