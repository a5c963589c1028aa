"""netrig.plan.prefixes.smallest_table: overlapping prefixes whose longest match gives every
address an allowed value, never cover an UNROUTED address, and are the fewest there are
(checked against an exhaustive search on a small address space)."""

from __future__ import annotations

import itertools
import random

import pytest

from netrig.plan.prefixes import ANY, UNROUTED, smallest_table

BITS = 4  # 16 addresses: every prefix table of up to 3 entries can be tried


def lookup(table: list[tuple[int, int, int]], addr: int) -> int | None:
    """The value of the longest prefix holding addr (None: no route)."""
    best: tuple[int, int] | None = None
    for start, size_log, value in table:
        if start <= addr < start + (1 << size_log) and (best is None or size_log < best[0]):
            best = (size_log, value)
    return None if best is None else best[1]


def serves(table: list[tuple[int, int, int]], allowed: list[int]) -> bool:
    for addr, want in enumerate(allowed):
        got = lookup(table, addr)
        if want == UNROUTED and got is not None:
            return False
        if want not in (ANY, UNROUTED) and (got is None or not want >> got & 1):
            return False
    return True


def fewest_by_search(allowed: list[int], values: int) -> int:
    prefixes = [(s, k) for k in range(BITS + 1) for s in range(0, 1 << BITS, 1 << k)]
    for size in range(len(allowed) + 1):
        for chosen in itertools.combinations(prefixes, size):
            for vals in itertools.product(range(values), repeat=size):
                table = [(s, k, v) for (s, k), v in zip(chosen, vals, strict=True)]
                if serves(table, allowed):
                    return size
        if size == 3:
            break
    return 99


def spans_of(allowed: list[int]) -> list[tuple[int, int, int]]:
    return [(a, a, x) for a, x in enumerate(allowed)]


@pytest.mark.parametrize("seed", range(40))
def test_tables_are_right_and_smallest(seed: int) -> None:
    rng = random.Random(seed)
    allowed = [rng.choice([1, 1, 1, 2, 3, ANY, UNROUTED if seed % 3 == 0 else 1])
               for _ in range(1 << BITS)]  # fmt: skip
    table = smallest_table(spans_of(allowed), [(0, (1 << BITS) - 1)], BITS)
    assert serves(table, allowed), table
    searched = fewest_by_search(allowed, 2)
    if searched <= 3:  # the search stops at 3 prefixes
        assert len(table) == searched, (allowed, table)
    else:
        assert len(table) > 3


def test_a_covering_prefix_and_its_exceptions() -> None:
    """Addresses 0-15 go one way except 5 and 6: 3 prefixes, where disjoint blocks need 5."""
    allowed = [1] * 16
    allowed[5] = allowed[6] = 2
    table = smallest_table(spans_of(allowed), [(0, 15)], BITS)
    assert table == [(0, 4, 0), (5, 0, 1), (6, 0, 1)]


def test_space_outside_the_pools_and_unreachable_addresses_are_never_covered() -> None:
    allowed = [1] * 16
    allowed[9] = UNROUTED  # a destination no gateway reaches
    spans = [(a, a, x) for a, x in enumerate(allowed) if a not in (2, 3)]  # 2, 3 unused
    inside = smallest_table(spans, [(0, 15)], BITS)
    assert serves(inside, [ANY if a in (2, 3) else x for a, x in enumerate(allowed)])
    assert lookup(inside, 9) is None
    assert lookup(inside, 2) == 0  # unused space inside the pool may be covered
    outside = smallest_table(spans, [(4, 15)], BITS)  # 2 and 3 lie outside the pool now
    assert serves(outside, [UNROUTED if a in (2, 3) else x for a, x in enumerate(allowed)])


def test_addresses_the_node_covers_itself_need_no_route() -> None:
    allowed = [ANY] * 16
    allowed[12] = 2
    assert smallest_table(spans_of(allowed), [(0, 15)], BITS) == [(12, 0, 1)]
    assert smallest_table(spans_of([ANY] * 16), [(0, 15)], BITS) == []


def test_runs_merge_while_a_value_is_allowed_by_all() -> None:
    """merge_runs (large labs, before smallest_table): contiguous spans merge while what
    they all allow is not empty; ANY spans and gaps end a run; UNROUTED never merges."""
    from netrig.plan.prefixes import merge_runs

    spans = [(0, 0, 3), (1, 1, 1), (2, 2, 5), (3, 3, 4), (4, 4, ANY), (5, 5, ANY),
             (6, 6, 6), (8, 8, 6), (9, 9, UNROUTED), (10, 10, UNROUTED)]  # fmt: skip
    assert merge_runs(spans) == [
        (0, 2, 1), (3, 3, 4), (4, 5, ANY), (6, 6, 6), (8, 8, 6), (9, 9, 0), (10, 10, 0)
    ]


@pytest.mark.parametrize("seed", range(30))
def test_numpy_runs_merge_as_python_does(seed: int) -> None:
    """netrig.plan.routes merges runs in numpy for large labs: as merge_runs does."""
    import numpy as np

    from netrig.plan.prefixes import merge_runs
    from netrig.plan.routes import _merged_runs

    rng = random.Random(seed)
    lo, hi, allowed, at = [], [], [], 0
    for _ in range(rng.randrange(1, 60)):
        at += rng.choice([0, 0, 0, 3])  # sometimes a gap
        lo.append(at)
        hi.append(at + rng.choice([0, 1]))
        at = hi[-1] + 1
        allowed.append(rng.choice([1, 2, 3, 5, 6, 7, 4, ANY, ANY, UNROUTED]))
    apart = np.array([True] + [lo[i] != hi[i - 1] + 1 for i in range(1, len(lo))])
    index = np.arange(len(lo))
    firsts, lasts, merged = _merged_runs(index, index, np.array(allowed, np.int64), apart)
    got = [(lo[f], hi[e], x) for f, e, x in zip(firsts, lasts, merged.tolist(), strict=True)]
    assert merge_runs(got) == merge_runs(list(zip(lo, hi, allowed, strict=True)))
    assert len(got) == len(merge_runs(list(zip(lo, hi, allowed, strict=True))))
