"""Which host runs which run: the host as a statistical block.

Pure, so it is unit-tested. The k-th measured run of sweep point p goes to host
(k + p) mod H, so every host runs every point as often as the repetitions allow (a
difference between points is then not a difference between hosts), and each host keeps the
experiment's order (interleaved: A B C A B C) over its own share. A host gets the warm-ups
of every point it runs.

    >>> q = assign(plan_runs(2, 2, "interleaved"), ["h1", "h2"])
    >>> [(r.point, r.repetition) for r in q["h1"]], [(r.point, r.repetition) for r in q["h2"]]
    ([(0, 1), (1, 2)], [(1, 1), (0, 2)])
"""

from __future__ import annotations

from collections import Counter

from netrig.plan.runs import PlannedRun, plan_runs  # noqa: F401  (the doctest uses plan_runs)


def assign(runs: list[PlannedRun], hosts: list[str]) -> dict[str, list[PlannedRun]]:
    """Each host's queue, in the order of `runs`."""
    if not hosts:
        raise ValueError("no hosts")
    seen: Counter[int] = Counter()
    owner: dict[tuple[int, int], str] = {}
    for run in runs:
        if not run.warmup:
            owner[run.point, run.repetition] = hosts[(seen[run.point] + run.point) % len(hosts)]
            seen[run.point] += 1
    points_of = {h: {p for (p, _), o in owner.items() if o == h} for h in hosts}
    queues: dict[str, list[PlannedRun]] = {h: [] for h in hosts}
    for run in runs:
        if run.warmup:
            for host in hosts:
                if run.point in points_of[host]:
                    queues[host].append(run)
        else:
            queues[owner[run.point, run.repetition]].append(run)
    return queues


def spread(runs: list[PlannedRun], hosts: list[str]) -> dict[str, list[PlannedRun]]:
    """A lost host's queue shared among the hosts left, round robin (its warm-ups dropped:
    the receiving host warms up for a point it already runs, or measures without)."""
    out: dict[str, list[PlannedRun]] = {h: [] for h in hosts}
    for i, run in enumerate(r for r in runs if not r.warmup):
        out[hosts[i % len(hosts)]].append(run)
    return out
