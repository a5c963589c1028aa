"""The C-emulation pieces of netrig.stats.ministat and the getopt of netrig stat, one by one."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from netrig.cli.cmd_stat import GnuGetopt, UsageError, parse_command_line
from netrig.stats import ministat as m


@pytest.mark.parametrize(
    ("text", "value", "used"),
    [
        (b"42", 42.0, 2),
        (b"-1.5e3", -1500.0, 6),
        (b"  \x0c7", 7.0, 4),
        (b".5", 0.5, 2),
        (b"5.", 5.0, 2),
        (b"1e", 1.0, 1),
        (b"1e+", 1.0, 1),
        (b"0x1p3", 8.0, 5),
        (b"0x1.8P+1", 3.0, 8),
        (b"0x", 0.0, 1),
        (b"0x.8", 0.5, 4),
        (b"infinity", math.inf, 8),
        (b"-INFin", -math.inf, 4),
        (b"1_000", 1.0, 1),
        (b"--5", 0.0, 0),
        (b"", 0.0, 0),
        (b"1e400", math.inf, 5),
    ],
)
def test_strtod(text: bytes, value: float, used: int) -> None:
    assert m.strtod(text) == (value, used)


def test_strtod_nan_sign_and_payload() -> None:
    v, used = m.strtod(b"-nan(0x12)")
    assert math.isnan(v) and math.copysign(1, v) < 0 and used == 10
    v, used = m.strtod(b"nan(")
    assert math.isnan(v) and math.copysign(1, v) > 0 and used == 3


def test_strtol_and_int_wrap() -> None:
    assert m.strtol(b" +12x") == (12, 4)
    assert m.strtol(b"x") == (0, 0)
    assert m.strtol(b"99999999999999999999")[0] == 2**63 - 1
    assert m.c_int(2**63 - 1) == -1
    assert m.c_int(4294967370) == 74
    assert m.atoi(b"80abc") == 80


def test_c_division_and_sqrt() -> None:
    assert m.c_div(1.0, 0.0) == math.inf
    assert m.c_div(-1.0, 0.0) == -math.inf
    nan = m.c_div(0.0, 0.0)
    assert math.isnan(nan) and math.copysign(1, nan) < 0  # x86's default NaN
    assert m.fmt_g(m.c_sqrt(-1e-30), b"%13.8g") == b"         -nan"
    assert m.fmt_g(math.nan, b"%13.8g") == b"          nan"
    assert m.fmt_g(-math.inf) == b"-inf"
    assert m.fmt_g(-0.0, b"%13.8g") == b"           -0"


def test_running_sums_are_sequential_not_pairwise() -> None:
    rng = np.random.default_rng(7)
    v = rng.normal(1e6, 3, 20_000)
    ds = m.make_dataset(b"x", v)
    sy = syy = 0.0
    for a in v.tolist():
        sy += a
        syy += a * a
    assert (ds.sy, ds.syy) == (sy, syy)
    assert ds.sy != float(np.sum(v)) or ds.syy != float(np.sum(v * v))  # pairwise differs


def test_qsort_orders_nan_like_glibc_merge_sort() -> None:
    vals = [3.0, math.nan, 1.0, 2.0, math.nan, 0.5]
    out = m.qsort(np.array(vals))
    # glibc's merge sort, by hand: [3, nan, 1] and [2, nan, 0.5] each stay as they are
    # (nan never compares greater), then merging them takes 2, 3, nan, 1, nan, 0.5
    assert [str(x) for x in out] == ["2.0", "3.0", "nan", "1.0", "nan", "0.5"]
    rng = random.Random(3)
    plain = [rng.uniform(-5, 5) for _ in range(500)]
    assert m._glibc_msort(plain) == sorted(plain)


def test_qsort_keeps_signed_zero_order() -> None:
    out = m.qsort(np.array([1.0, 0.0, -0.0, -1.0]))
    assert [math.copysign(1, x) for x in out[1:3]] == [1.0, -1.0]


def _random_file(rng: random.Random) -> bytes:
    pieces = ["1", "-2.5", "3e2", ".5", "7.", "1e", "x", "#c", "0x10", "inf", "1_0", "+4"]
    seps = [" ", "\t", "  ", ",", " \t"]
    lines = []
    for _ in range(rng.randint(0, 12)):
        fields = [rng.choice(pieces) for _ in range(rng.randint(0, 4))]
        lines.append(rng.choice(["", " ", "\t"]) + rng.choice(seps).join(fields))
    return ("\n".join(lines) + rng.choice(["", "\n", "\r\n"])).encode()


@pytest.mark.parametrize("seed", range(40))
def test_fast_parser_agrees_with_reference_reader(seed: int) -> None:
    """Whenever the numpy path answers, it must be what the line-by-line reader says."""
    rng = random.Random(seed)
    answered = 0
    for _ in range(50):
        data = _random_file(rng)
        column = rng.choice([1, 1, 2, 3])
        delims = rng.choice([b" \t", b" ", b"\t", b",", b" ,"])
        fast = m._parse_fast(data, column, delims)
        try:
            slow = m._parse_slow(data, column, delims)
        except m.InvalidData:
            slow = None
        if fast is not None:
            answered += 1
            assert slow is not None and fast.tolist() == slow, (data, column, delims)
    assert answered > 0


def test_fgets_splits_long_lines() -> None:
    data = b"a" * 8191 + b"b\nc"
    assert m._fgets_lines(data) == [b"a" * 8191, b"b\n", b"c"]
    assert m._fgets_lines(b"1\x002\n3\n") == [b"1", b"3\n"]


def test_sum_of_negative_zeros_is_positive_zero() -> None:
    """ministat's `sy` starts at 0.0 and 0.0 + -0.0 is 0.0: the average of values all -0.0
    prints "0" (seed 183141890 of a longer cross-check run); the median keeps its -0."""
    ds = m.make_dataset(b"z", [-0.0, -0.0, -0.0])
    assert math.copysign(1.0, ds.avg()) == 1.0
    assert math.copysign(1.0, ds.median()) == -1.0


def test_plot_height_comes_from_the_last_set() -> None:
    """ministat sets pl->height = m for every set: a flatter later set hides stacked rows."""
    tall = m.make_dataset(b"a", [1.0] * 5 + [2.0, 3.0])
    flat = m.make_dataset(b"b", [1.0, 2.0, 3.0])
    text = m.render_plot([tall, flat], 10, False).decode()
    assert text.count("\n") == 4  # frame, one point row, one bar row, frame
    assert m.render_plot([flat, tall], 10, False).decode().count("\n") == 8


def test_plot_refuses_what_crashes_ministat() -> None:
    ds = m.make_dataset(b"a", [1.0, 2.0, 3.0])
    with pytest.raises(m.PlotError):
        m.render_plot([ds], 1, False)
    with pytest.raises(m.PlotError):
        m.render_plot([m.make_dataset(b"b", [1.0, math.inf, 3.0])], 74, False)


def test_plot_leaves_out_an_average_beyond_the_points() -> None:
    """Ten equal values whose sum rounds low: stddev is nan and the average lies left of
    every point, so its "A" would go 18 columns before the bar; CI's seed 612714131."""
    ref = m.make_dataset(b"a", [973142198818.723] * 5)
    low = m.make_dataset(b"b", [973142198818.72253] * 10)
    assert math.isnan(low.stddev()) and low.avg() < low.min()
    plot = m.draw_plot([ref, low], 74, True)
    assert plot.marks_left_out == [b"A"]
    bars = plot.dump().decode().splitlines()[-3:-1]
    assert bars == ["|" + " " * 73 + "A|", "|M" + " " * 73 + "|"]


def test_zero_width_plot_takes_points_a_rounding_error_puts_beyond_it() -> None:
    """The average of ten 7080.345 rounds up, so a zero-width plot's points fall at column
    1 (seed 2872095500 of a longer cross-check run): nothing shows, ministat survives."""
    flat = m.make_dataset(b"a", [7080.345] * 10)
    plot = m.draw_plot([flat], 0, True)
    assert plot.marks_left_out == [b"point"]
    assert plot.dump().count(b"||\n") == 11  # ten stacked points and the bar
    wide = m.Plot(74, False, 1)
    wide.adjust(0.0)
    wide.adjust(73.0)
    with pytest.raises(m.PlotError, match="outside"):  # with a width: another row, refused
        wide._point_columns(np.array([200.0]))


def test_getopt_permutes_and_stops_at_double_dash() -> None:
    g = GnuGetopt([b"a", b"-nw", b"40", b"b", b"--", b"-s"])
    assert list(g) == [(ord("n"), None), (ord("w"), b"40")]
    assert g.operands == [b"a", b"b", b"-s"]
    g = GnuGetopt([b"a", b"-n"], posixly_correct=True)
    assert list(g) == [] and g.operands == [b"a", b"-n"]


def test_getopt_errors_read_like_glibc() -> None:
    assert list(GnuGetopt([b"-q"])) == [(ord("?"), b"ministat: invalid option -- 'q'\n")]
    assert list(GnuGetopt([b"-C"])) == [
        (ord("?"), b"ministat: option requires an argument -- 'C'\n")
    ]


def test_command_line_validation_order() -> None:
    with pytest.raises(UsageError) as e:
        parse_command_line([b"-C0", b"-x"])
    assert e.value.whine == b"Column number should be positive."
    with pytest.raises(UsageError) as e:
        parse_command_line([b"-x", b"-C0"])
    assert e.value.getopt_message.endswith(b"'x'\n")
    inv = parse_command_line([b"-c", b"99", b"-c", b"42", b"-As", b"f"])
    assert (inv.confidence_index, inv.suppress_plot, inv.separate_bars) == (4, True, True)
    with pytest.raises(UsageError, match="Too many"):
        parse_command_line([b"f"] * 8)
