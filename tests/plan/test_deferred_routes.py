"""Routes planned in a forked child while `netrig up` builds (build_plan(defer_routes=True)):
the same routes as planned at once, the child ended when they are given up, and never left
computing when its parent dies (kill -9 included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import requires_root, running


def ring(nodes: int, protocol: str = "static") -> str:
    return (
        f"name: dr\ntopology: {{kind: ring, nodes: {nodes}}}\nrouting: {{protocol: {protocol}}}\n"
    )


def child_of(plan) -> int:  # type: ignore[no-untyped-def]
    """The PID of the child planning the plan's routes."""
    _finish, cancel = plan.__dict__["_routes_later"]
    return cancel.__self__.pid  # type: ignore[no-any-return]


def test_deferred_routes_are_the_routes_planned_at_once() -> None:
    for text in (ring(30), ring(120), ring(500, "ecmp")):  # both planners, forked shares too
        at_once = plan_lab(load_text(text, "<test>"))
        later = plan_lab(load_text(text, "<test>"), defer_routes=True)
        pid = child_of(later)
        assert all(not n.routes for n in later.nodes.values())  # not yet: in the child
        later.finish_routes()
        assert "_routes_later" not in later.__dict__
        assert not running(pid)  # reaped
        assert later.to_dict() == at_once.to_dict()
        assert later.route_count() == at_once.route_count() > 0


def test_a_protocol_that_plans_no_routes_forks_nothing() -> None:
    plan = plan_lab(load_text(ring(5, "bridge"), "<test>"), defer_routes=True)
    assert "_routes_later" not in plan.__dict__


def test_route_count_and_json_wait_for_the_child() -> None:
    plan = plan_lab(load_text(ring(40), "<test>"), defer_routes=True)
    assert plan.route_count() > 0  # waited, not 0
    plan2 = plan_lab(load_text(ring(40), "<test>"), defer_routes=True)
    assert '"routes": [{' in plan2.to_json(with_routes=True)


def test_cancelled_routes_end_their_child() -> None:
    plan = plan_lab(load_text(ring(1000), "<test>"), defer_routes=True)
    pid = child_of(plan)
    assert running(pid)
    plan.cancel_routes()
    assert not running(pid)
    assert plan.route_count() == 0  # given up: nothing is waited for any more


def test_the_child_dies_with_its_parent_killed() -> None:
    script = textwrap.dedent(f"""
        import sys, time
        from netrig.rig.prepare import load_text, plan_lab
        plan = plan_lab(load_text({ring(4000)!r}, "<t>"), defer_routes=True)
        print(plan.__dict__["_routes_later"][1].__self__.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        assert running(pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 0.5  # planning 4,000 nodes would take seconds
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(pid)
    finally:
        proc.kill()
        proc.wait()


@requires_root
def test_up_refused_before_building_ends_the_child(make_lab) -> None:  # type: ignore[no-untyped-def]
    from netrig.lab.build import LabError
    from netrig.rig import Lab

    lab = make_lab({"topology": {"kind": "ring", "nodes": 3}}, check=False)
    again = Lab(plan_lab(load_text(ring(300).replace("name: dr", f"name: {lab.name}"), "<t>"),
                         defer_routes=True))  # fmt: skip
    pid = child_of(again.plan)
    try:
        again.up()
    except LabError as exc:
        assert "already" in str(exc)
    else:
        raise AssertionError("a second lab of the same name was built")
    assert not running(pid)
