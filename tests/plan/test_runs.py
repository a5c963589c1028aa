"""Planning the runs of an experiment: sweep points, order, warm-ups, resuming."""

from __future__ import annotations

import pytest

from netrig.plan.runs import PlannedRun, measured, plan_runs, remaining, sweep_points


def pairs(runs: list[PlannedRun]) -> list[tuple[int, int, bool]]:
    return [(r.point, r.repetition, r.warmup) for r in runs]


def test_sweep_points_are_the_product_first_parameter_slowest() -> None:
    points = sweep_points({"hops": [1, 5, 8], "proto": ["tcp", "udp"]})
    assert len(points) == 6
    assert points[0] == {"hops": 1, "proto": "tcp"}
    assert points[1] == {"hops": 1, "proto": "udp"}
    assert points[-1] == {"hops": 8, "proto": "udp"}
    assert sweep_points({}) == [{}]


def test_a_list_of_points_is_taken_as_written() -> None:
    cases = [{"shape": "chain", "size": 2}, {"shape": "ring", "size": 3}]
    assert sweep_points(cases) == cases


def test_sequential_runs_each_point_to_the_end() -> None:
    assert pairs(plan_runs(2, 3, "sequential")) == [
        (0, 1, False),
        (0, 2, False),
        (0, 3, False),
        (1, 1, False),
        (1, 2, False),
        (1, 3, False),
    ]


def test_interleaved_alternates_points() -> None:
    assert pairs(plan_runs(3, 2, "interleaved")) == [
        (0, 1, False),
        (1, 1, False),
        (2, 1, False),
        (0, 2, False),
        (1, 2, False),
        (2, 2, False),
    ]


def test_warmups_come_first_per_point_or_as_first_rounds() -> None:
    assert pairs(plan_runs(2, 2, "sequential", warmup=1)) == [
        (0, 1, True),
        (0, 1, False),
        (0, 2, False),
        (1, 1, True),
        (1, 1, False),
        (1, 2, False),
    ]
    assert pairs(plan_runs(2, 1, "interleaved", warmup=2)) == [
        (0, 1, True),
        (1, 1, True),
        (0, 2, True),
        (1, 2, True),
        (0, 1, False),
        (1, 1, False),
    ]
    assert measured(plan_runs(3, 4, "interleaved", warmup=2)) == 12


@pytest.mark.parametrize("order", ["sequential", "interleaved"])
def test_every_point_and_repetition_exactly_once(order: str) -> None:
    runs = plan_runs(4, 5, order, warmup=1)  # type: ignore[arg-type]
    stored = [(r.point, r.repetition) for r in runs if not r.warmup]
    assert sorted(stored) == [(p, r) for p in range(4) for r in range(1, 6)]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        plan_runs(0, 1)
    with pytest.raises(ValueError):
        plan_runs(1, 0)
    with pytest.raises(ValueError):
        plan_runs(1, 1, "random")  # type: ignore[arg-type]


def test_remaining_skips_stored_runs_and_useless_warmups() -> None:
    runs = plan_runs(2, 2, "sequential", warmup=1)
    done = {(0, 1), (0, 2), (1, 1)}
    assert pairs(remaining(runs, done)) == [(1, 1, True), (1, 2, False)]
    assert remaining(runs, {(p, r) for p in range(2) for r in (1, 2)}) == []
    assert remaining(runs, set()) == runs


def test_remaining_keeps_the_interleaved_order() -> None:
    runs = plan_runs(2, 3, "interleaved")
    assert pairs(remaining(runs, {(0, 1), (1, 1), (0, 2)})) == [
        (1, 2, False),
        (0, 3, False),
        (1, 3, False),
    ]
