"""The host as a block: every host runs every point, order kept; a lost host's runs spread."""

from __future__ import annotations

from collections import Counter

from netrig.cluster.blocks import assign, spread
from netrig.cluster.host import HostConfig
from netrig.plan.runs import plan_runs
from netrig.rig import Lab


def test_every_host_runs_every_point_in_the_experiments_order() -> None:
    runs = plan_runs(3, 6, "interleaved", warmup=1)
    queues = assign(runs, ["h1", "h2", "h3"])
    measured = [r for q in queues.values() for r in q if not r.warmup]
    assert sorted((r.point, r.repetition) for r in measured) == sorted(
        (r.point, r.repetition) for r in runs if not r.warmup
    )  # each measured run exactly once
    for queue in queues.values():
        points = Counter(r.point for r in queue if not r.warmup)
        assert points == {0: 2, 1: 2, 2: 2}  # every point, equally often
        warm = [r.point for r in queue if r.warmup]
        assert sorted(warm) == [0, 1, 2] and all(r.warmup for r in queue[:3])
        order = [r.point for r in queue if not r.warmup]
        assert order[:3] != [order[0]] * 3  # interleaved, not one point after another


def test_fewer_repetitions_than_hosts_still_spread_the_points() -> None:
    queues = assign(plan_runs(2, 1, "sequential"), ["h1", "h2", "h3"])
    assert [[(r.point, r.repetition) for r in queues[h]] for h in ("h1", "h2", "h3")] == [
        [(0, 1)], [(1, 1)], [],
    ]


def test_a_lost_hosts_queue_goes_round_robin_without_its_warmups() -> None:
    runs = plan_runs(2, 4, "interleaved", warmup=1)
    lost = assign(runs, ["h1", "h2", "h3"])["h2"]
    shared = spread(lost, ["h1", "h3"])
    assert sum(len(q) for q in shared.values()) == sum(1 for r in lost if not r.warmup)
    assert abs(len(shared["h1"]) - len(shared["h3"])) <= 1


def test_localize_prefixes_every_namespace_once() -> None:
    plan = Lab.from_spec({"name": "blk", "topology": {"kind": "chain", "nodes": 3}}).plan
    host = HostConfig(name="h1", state_dir="/nonexistent", ns_prefix="ch1-")
    local = host.localize(plan)
    assert [n.ns for n in local.nodes.values()] == ["ch1-blk-n1", "ch1-blk-n2", "ch1-blk-n3"]
    assert host.localize(local).nodes["n1"].ns == "ch1-blk-n1"
    assert plan.nodes["n1"].ns == "blk-n1"  # the client's plan is untouched
