"""The plan of runs: every sweep point × repetition, in the order they will run.

Pure functions over indexes, no lab and no clock, so ordering and resuming are unit-tested.

- sequential:  A A A B B B C C C — fewest lab rebuilds when the points differ in network;
- interleaved: A B C A B C A B C — slow drift of a noisy machine spreads over every point.

Warm-up runs (`warmup: W`) come first for each point (sequential) or as the first W rounds
(interleaved); they are run and discarded. Repetitions are numbered from 1 per point.

    >>> [(r.point, r.repetition) for r in plan_runs(2, 2, "interleaved")]
    [(0, 1), (1, 1), (0, 2), (1, 2)]
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from netrig.model.experiment import sweep_points

__all__ = ["PlannedRun", "plan_runs", "point_key", "remaining", "sweep_points"]

Order = Literal["sequential", "interleaved"]


def point_key(point: Mapping[str, Any]) -> str:
    """Canonical text of a sweep point, equal for equal points whatever their key order."""
    return json.dumps(point, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class PlannedRun:
    point: int  # index of the sweep point
    repetition: int  # 1-based, per point; warm-ups are counted separately
    warmup: bool = False


def plan_runs(
    points: int, repeat: int, order: Order = "sequential", warmup: int = 0
) -> list[PlannedRun]:
    """Every run of an experiment, warm-ups included, in execution order."""
    if points < 1 or repeat < 1 or warmup < 0:
        raise ValueError(
            f"need points ≥ 1, repeat ≥ 1, warmup ≥ 0 (got {points}, {repeat}, {warmup})"
        )
    if order == "sequential":
        return [
            run
            for p in range(points)
            for run in (
                *(PlannedRun(p, w, True) for w in range(1, warmup + 1)),
                *(PlannedRun(p, r) for r in range(1, repeat + 1)),
            )
        ]
    if order == "interleaved":
        warm = [PlannedRun(p, w, True) for w in range(1, warmup + 1) for p in range(points)]
        return warm + [PlannedRun(p, r) for r in range(1, repeat + 1) for p in range(points)]
    raise ValueError(f"unknown order {order!r}")


def remaining(runs: list[PlannedRun], done: Collection[tuple[int, int]]) -> list[PlannedRun]:
    """The runs still to do when (point, repetition) pairs in `done` are stored already.

    A point's warm-ups are kept only if some measured run of that point is left.
    """
    left = [r for r in runs if r.warmup or (r.point, r.repetition) not in done]
    busy = {r.point for r in left if not r.warmup}
    return [r for r in left if not r.warmup or r.point in busy]


def measured(runs: list[PlannedRun]) -> int:
    """How many of the runs are stored (warm-ups are not)."""
    return sum(1 for r in runs if not r.warmup)
