"""A byte-exact port of Debian's ministat (package 20150715-1, FreeBSD's usr.bin/ministat).

Pure: functions take bytes and numbers and return bytes; reading files and writing to the
terminal is the CLI's job (netrig/cli/cmd_stat.py). The arithmetic follows ministat.c
operation by operation (running sums in input order, the same divisions, the same
truncations to int) so that every printed digit matches, including ministat's quirks:
a negative rounding-error variance prints as ``-nan`` and a later data set with shorter
stacks hides the top rows of the plot.

    >>> ds = make_dataset(b"before", parse_values(b"1\\n2\\n3\\n"))
    >>> print(render([ds], RenderOptions(suppress_plot=True)).decode(), end="")
    x before
        N           Min           Max        Median           Avg        Stddev
    x   3             1             3             2             2             1
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# -- ministat's constants ----------------------------------------------------------------------

#: Confidence levels accepted by ``-c``; the index into this tuple selects the table column.
STUDENT_PCT: tuple[float, ...] = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)
DEFAULT_CONFIDENCE_INDEX = 2  # 95 %
NSTUDENT = 100
#: Two-sided Student's t critical values, row = degrees of freedom (row 0 = infinity),
#: copied digit for digit from ministat's table (checked against the binary's .data).
STUDENT_T: tuple[tuple[float, ...], ...] = (
    (  1.282,   1.645,   1.960,   2.326,   2.576,   3.090),  # df inf
    (  3.078,   6.314,  12.706,  31.821,  63.657, 318.313),  # df 1
    (  1.886,   2.920,   4.303,   6.965,   9.925,  22.327),  # df 2
    (  1.638,   2.353,   3.182,   4.541,   5.841,  10.215),  # df 3
    (  1.533,   2.132,   2.776,   3.747,   4.604,   7.173),  # df 4
    (  1.476,   2.015,   2.571,   3.365,   4.032,   5.893),  # df 5
    (  1.440,   1.943,   2.447,   3.143,   3.707,   5.208),  # df 6
    (  1.415,   1.895,   2.365,   2.998,   3.499,   4.782),  # df 7
    (  1.397,   1.860,   2.306,   2.896,   3.355,   4.499),  # df 8
    (  1.383,   1.833,   2.262,   2.821,   3.250,   4.296),  # df 9
    (  1.372,   1.812,   2.228,   2.764,   3.169,   4.143),  # df 10
    (  1.363,   1.796,   2.201,   2.718,   3.106,   4.024),  # df 11
    (  1.356,   1.782,   2.179,   2.681,   3.055,   3.929),  # df 12
    (  1.350,   1.771,   2.160,   2.650,   3.012,   3.852),  # df 13
    (  1.345,   1.761,   2.145,   2.624,   2.977,   3.787),  # df 14
    (  1.341,   1.753,   2.131,   2.602,   2.947,   3.733),  # df 15
    (  1.337,   1.746,   2.120,   2.583,   2.921,   3.686),  # df 16
    (  1.333,   1.740,   2.110,   2.567,   2.898,   3.646),  # df 17
    (  1.330,   1.734,   2.101,   2.552,   2.878,   3.610),  # df 18
    (  1.328,   1.729,   2.093,   2.539,   2.861,   3.579),  # df 19
    (  1.325,   1.725,   2.086,   2.528,   2.845,   3.552),  # df 20
    (  1.323,   1.721,   2.080,   2.518,   2.831,   3.527),  # df 21
    (  1.321,   1.717,   2.074,   2.508,   2.819,   3.505),  # df 22
    (  1.319,   1.714,   2.069,   2.500,   2.807,   3.485),  # df 23
    (  1.318,   1.711,   2.064,   2.492,   2.797,   3.467),  # df 24
    (  1.316,   1.708,   2.060,   2.485,   2.787,   3.450),  # df 25
    (  1.315,   1.706,   2.056,   2.479,   2.779,   3.435),  # df 26
    (  1.314,   1.703,   2.052,   2.473,   2.771,   3.421),  # df 27
    (  1.313,   1.701,   2.048,   2.467,   2.763,   3.408),  # df 28
    (  1.311,   1.699,   2.045,   2.462,   2.756,   3.396),  # df 29
    (  1.310,   1.697,   2.042,   2.457,   2.750,   3.385),  # df 30
    (  1.309,   1.696,   2.040,   2.453,   2.744,   3.375),  # df 31
    (  1.309,   1.694,   2.037,   2.449,   2.738,   3.365),  # df 32
    (  1.308,   1.692,   2.035,   2.445,   2.733,   3.356),  # df 33
    (  1.307,   1.691,   2.032,   2.441,   2.728,   3.348),  # df 34
    (  1.306,   1.690,   2.030,   2.438,   2.724,   3.340),  # df 35
    (  1.306,   1.688,   2.028,   2.434,   2.719,   3.333),  # df 36
    (  1.305,   1.687,   2.026,   2.431,   2.715,   3.326),  # df 37
    (  1.304,   1.686,   2.024,   2.429,   2.712,   3.319),  # df 38
    (  1.304,   1.685,   2.023,   2.426,   2.708,   3.313),  # df 39
    (  1.303,   1.684,   2.021,   2.423,   2.704,   3.307),  # df 40
    (  1.303,   1.683,   2.020,   2.421,   2.701,   3.301),  # df 41
    (  1.302,   1.682,   2.018,   2.418,   2.698,   3.296),  # df 42
    (  1.302,   1.681,   2.017,   2.416,   2.695,   3.291),  # df 43
    (  1.301,   1.680,   2.015,   2.414,   2.692,   3.286),  # df 44
    (  1.301,   1.679,   2.014,   2.412,   2.690,   3.281),  # df 45
    (  1.300,   1.679,   2.013,   2.410,   2.687,   3.277),  # df 46
    (  1.300,   1.678,   2.012,   2.408,   2.685,   3.273),  # df 47
    (  1.299,   1.677,   2.011,   2.407,   2.682,   3.269),  # df 48
    (  1.299,   1.677,   2.010,   2.405,   2.680,   3.265),  # df 49
    (  1.299,   1.676,   2.009,   2.403,   2.678,   3.261),  # df 50
    (  1.298,   1.675,   2.008,   2.402,   2.676,   3.258),  # df 51
    (  1.298,   1.675,   2.007,   2.400,   2.674,   3.255),  # df 52
    (  1.298,   1.674,   2.006,   2.399,   2.672,   3.251),  # df 53
    (  1.297,   1.674,   2.005,   2.397,   2.670,   3.248),  # df 54
    (  1.297,   1.673,   2.004,   2.396,   2.668,   3.245),  # df 55
    (  1.297,   1.673,   2.003,   2.395,   2.667,   3.242),  # df 56
    (  1.297,   1.672,   2.002,   2.394,   2.665,   3.239),  # df 57
    (  1.296,   1.672,   2.002,   2.392,   2.663,   3.237),  # df 58
    (  1.296,   1.671,   2.001,   2.391,   2.662,   3.234),  # df 59
    (  1.296,   1.671,   2.000,   2.390,   2.660,   3.232),  # df 60
    (  1.296,   1.670,   2.000,   2.389,   2.659,   3.229),  # df 61
    (  1.295,   1.670,   1.999,   2.388,   2.657,   3.227),  # df 62
    (  1.295,   1.669,   1.998,   2.387,   2.656,   3.225),  # df 63
    (  1.295,   1.669,   1.998,   2.386,   2.655,   3.223),  # df 64
    (  1.295,   1.669,   1.997,   2.385,   2.654,   3.220),  # df 65
    (  1.295,   1.668,   1.997,   2.384,   2.652,   3.218),  # df 66
    (  1.294,   1.668,   1.996,   2.383,   2.651,   3.216),  # df 67
    (  1.294,   1.668,   1.995,   2.382,   2.650,   3.214),  # df 68
    (  1.294,   1.667,   1.995,   2.382,   2.649,   3.213),  # df 69
    (  1.294,   1.667,   1.994,   2.381,   2.648,   3.211),  # df 70
    (  1.294,   1.667,   1.994,   2.380,   2.647,   3.209),  # df 71
    (  1.293,   1.666,   1.993,   2.379,   2.646,   3.207),  # df 72
    (  1.293,   1.666,   1.993,   2.379,   2.645,   3.206),  # df 73
    (  1.293,   1.666,   1.993,   2.378,   2.644,   3.204),  # df 74
    (  1.293,   1.665,   1.992,   2.377,   2.643,   3.202),  # df 75
    (  1.293,   1.665,   1.992,   2.376,   2.642,   3.201),  # df 76
    (  1.293,   1.665,   1.991,   2.376,   2.641,   3.199),  # df 77
    (  1.292,   1.665,   1.991,   2.375,   2.640,   3.198),  # df 78
    (  1.292,   1.664,   1.990,   2.374,   2.640,   3.197),  # df 79
    (  1.292,   1.664,   1.990,   2.374,   2.639,   3.195),  # df 80
    (  1.292,   1.664,   1.990,   2.373,   2.638,   3.194),  # df 81
    (  1.292,   1.664,   1.989,   2.373,   2.637,   3.193),  # df 82
    (  1.292,   1.663,   1.989,   2.372,   2.636,   3.191),  # df 83
    (  1.292,   1.663,   1.989,   2.372,   2.636,   3.190),  # df 84
    (  1.292,   1.663,   1.988,   2.371,   2.635,   3.189),  # df 85
    (  1.291,   1.663,   1.988,   2.370,   2.634,   3.188),  # df 86
    (  1.291,   1.663,   1.988,   2.370,   2.634,   3.187),  # df 87
    (  1.291,   1.662,   1.987,   2.369,   2.633,   3.185),  # df 88
    (  1.291,   1.662,   1.987,   2.369,   2.632,   3.184),  # df 89
    (  1.291,   1.662,   1.987,   2.368,   2.632,   3.183),  # df 90
    (  1.291,   1.662,   1.986,   2.368,   2.631,   3.182),  # df 91
    (  1.291,   1.662,   1.986,   2.368,   2.630,   3.181),  # df 92
    (  1.291,   1.661,   1.986,   2.367,   2.630,   3.180),  # df 93
    (  1.291,   1.661,   1.986,   2.367,   2.629,   3.179),  # df 94
    (  1.291,   1.661,   1.985,   2.366,   2.629,   3.178),  # df 95
    (  1.290,   1.661,   1.985,   2.366,   2.628,   3.177),  # df 96
    (  1.290,   1.661,   1.985,   2.365,   2.627,   3.176),  # df 97
    (  1.290,   1.661,   1.984,   2.365,   2.627,   3.175),  # df 98
    (  1.290,   1.660,   1.984,   2.365,   2.626,   3.175),  # df 99
    (  1.290,   1.660,   1.984,   2.364,   2.626,   3.174),  # df 100
)
#: Plot symbol per data set; overlapping sets OR their numbers, so x|+ = 1|2 = 3 = '*'.
SYMBOLS = b" x+*%#@O"
MAX_DATASETS = len(SYMBOLS) - 1
DEFAULT_WIDTH = 74
#: fgets(buf, BUFSIZ) with glibc's BUFSIZ of 8192 returns at most 8191 bytes per "line".
FGETS_CHUNK = 8191
_C_SPACE = b" \t\n\x0b\x0c\r"  # isspace() in the C locale
_NEG_NAN = -math.nan  # the x86 "default NaN" that 0/0 and sqrt(-1) produce prints as -nan

USAGE_LINE = (
    b"Usage: ministat [-C column] [-c confidence] [-d delimiter(s)] [-Ans] [-w width]"
    b" [file [file ...]]\n"
)
VITALS_HEAD = (
    b"    N           Min           Max        Median           Avg        Stddev\n"
)


def usage_text(whine: bytes) -> bytes:
    """What ministat's usage() prints to stderr (before exiting 2)."""
    levels = b", ".join(b"%g%%" % p for p in STUDENT_PCT)
    return (
        whine + b"\n" + USAGE_LINE
        + b"\tconfidence = {" + levels + b"}\n"
        + b"\t-A : print statistics only. suppress the graph.\n"
        + b"\t-C : column number to extract (starts and defaults to 1)\n"
        + b'\t-d : delimiter(s) string, default to " \\t"\n'
        + b"\t-n : print summary statistics only, no graph/test\n"
        + b"\t-s : print avg/median/stddev bars on separate lines\n"
        + b"\t-w : width of graph/test output (default 74 or terminal width)\n"
    )


# -- C number semantics ---------------------------------------------------------------------------

_STRTOD_RE = re.compile(
    rb"[\x20\t\n\x0b\x0c\r]*[+-]?(?:"
    rb"0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    rb"|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
    rb"|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?"
    rb")"
)
_STRTOL_RE = re.compile(rb"[\x20\t\n\x0b\x0c\r]*([+-]?)([0-9]+)")
_LONG_MAX = 2**63 - 1


def strtod(text: bytes) -> tuple[float, int]:
    """glibc strtod in the C locale: (value, bytes consumed); 0 consumed means no number."""
    m = _STRTOD_RE.match(text)
    if m is None:
        return 0.0, 0
    body = m.group().lstrip(_C_SPACE).decode("ascii")
    negative = body.startswith("-")
    body = body.lstrip("+-")
    low = body.lower()
    if low.startswith("0x"):
        try:
            value = float.fromhex(body)
        except OverflowError:
            value = math.inf
    elif low.startswith("inf"):
        value = math.inf
    elif low.startswith("nan"):
        value = math.nan
    else:
        value = float(body)
    return (-value if negative else value), m.end()


def strtol(text: bytes) -> tuple[int, int]:
    """glibc strtol(text, &end, 10): (value clamped to a 64-bit long, bytes consumed)."""
    m = _STRTOL_RE.match(text)
    if m is None:
        return 0, 0
    value = int(m.group(1) + m.group(2))
    return max(-_LONG_MAX - 1, min(_LONG_MAX, value)), m.end()


def c_int(value: int) -> int:
    """Store a long into a C int (x86-64: keep the low 32 bits, two's complement)."""
    value &= 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


def atoi(text: bytes) -> int:
    """glibc atoi: (int) strtol(text, NULL, 10), garbage after the digits ignored."""
    return c_int(strtol(text)[0])


def c_div(a: float, b: float) -> float:
    """C double division: x/0 is ±inf and 0/0 is -nan instead of a Python exception."""
    if b != 0.0:
        return a / b
    with np.errstate(all="ignore"):
        return float(np.float64(a) / np.float64(b))


def c_sqrt(v: float) -> float:
    """C sqrt: a negative argument gives -nan (ministat's output for a tiny negative variance)."""
    return _NEG_NAN if v < 0.0 else math.sqrt(v)


def fmt_g(value: float, spec: bytes = b"%g") -> bytes:
    """printf-style %g; NaN keeps its sign like glibc ("-nan"), which Python's % drops."""
    if math.isnan(value) and math.copysign(1.0, value) < 0:
        width = spec[1:].split(b".")[0].rstrip(b"g")  # b"%13.8g" -> b"13"
        return (b"%" + width + b"s") % b"-nan"
    return spec % value


# -- reading data sets ---------------------------------------------------------------------------


class InvalidData(ValueError):
    """A selected field is not entirely a number; ministat exits 2 naming the line."""

    def __init__(self, line: int) -> None:
        super().__init__(f"Invalid data on line {line}")
        self.line = line


def parse_values(data: bytes, column: int = 1, delimiters: bytes = b" \t") -> np.ndarray:
    """Values of one data set in input order, read exactly like ministat's ReadSet.

    Each line (fgets chunk) is trimmed of trailing white space, split with strtok on any of
    `delimiters`; a field starting with '#' ends the line; field number `column` must be a
    number as a whole (strtod) or InvalidData is raised. A fast numpy path handles plain
    numeric files; anything unusual goes through the line-by-line reference path.
    """
    values = _parse_fast(data, column, delimiters)
    if values is None:
        values = np.array(_parse_slow(data, column, delimiters), dtype=np.float64)
    return values


_FAST_BYTES = b"0123456789.+-eE\n"


def _parse_fast(data: bytes, column: int, delimiters: bytes) -> np.ndarray | None:
    """Plain numbers separated by blanks: tokens via bytes.split(), values via float().

    Returns None (use the slow path) when the input has anything float() and strtod could
    disagree on, or a field that does not parse, so that the slow path names the line.
    """
    if any(c in b"0123456789.+-eE" for c in delimiters):
        return None
    blanks = bytes(c for c in b" \t" if c in delimiters)
    if data.translate(None, _FAST_BYTES + blanks):
        return None
    tokens = data.split()
    if not (b" " in data or b"\t" in data):  # at most one field per line
        if tokens and max(map(len, tokens)) >= FGETS_CHUNK:
            return None
        chosen = tokens if column == 1 else []
    else:
        ranks = _field_ranks(data)
        if ranks is None:
            return None
        chosen = [tokens[i] for i in np.flatnonzero(ranks == column - 1)]
    try:
        return np.fromiter(map(float, chosen), dtype=np.float64, count=len(chosen))
    except ValueError:
        return None


def _field_ranks(data: bytes) -> np.ndarray | None:
    """For each blank-separated field in order, its 0-based position on its line.

    None if some line is longer than one fgets chunk (the slow path splits those).
    """
    u = np.frombuffer(data, dtype=np.uint8)
    newline = u == 10
    ends = np.concatenate(([-1], np.flatnonzero(newline), [len(u) - 1]))
    if np.max(np.diff(ends)) > FGETS_CHUNK:  # line lengths, newline included
        return None
    field = ~(newline | (u == 32) | (u == 9))
    starts = np.flatnonzero(field & ~np.concatenate(([False], field[:-1])))
    line_of = np.cumsum(newline)[starts]
    index = np.arange(len(starts))
    first = np.concatenate(([True], line_of[1:] != line_of[:-1]))
    return index - np.maximum.accumulate(np.where(first, index, 0))


def _fgets_lines(data: bytes) -> list[bytes]:
    """The successive buffers fgets(buf, 8192) returns, as C strings (cut at a NUL byte)."""
    pieces = data.split(b"\n")
    lines = [p + b"\n" for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    chunks: list[bytes] = []
    for line in lines:
        if len(line) <= FGETS_CHUNK:
            chunks.append(line)
        else:
            chunks.extend(line[i : i + FGETS_CHUNK] for i in range(0, len(line), FGETS_CHUNK))
    return [c.split(b"\0", 1)[0] for c in chunks]


def _select_field(line: bytes, column: int, delimiters: bytes) -> bytes | None:
    """strtok the trimmed line; the `column`th field, or None if absent or after a '#'."""
    first = delimiters[:1]
    table = bytes.maketrans(delimiters, first * len(delimiters))
    fields = (f for f in line.rstrip(_C_SPACE).translate(table).split(first) if f)
    for i, field in enumerate(fields, start=1):
        if field.startswith(b"#"):
            return None
        if i == column:
            return field
    return None


def _parse_slow(data: bytes, column: int, delimiters: bytes) -> list[float]:
    """The reference reader: ministat's ReadSet loop, one fgets chunk at a time."""
    values: list[float] = []
    for number, line in enumerate(_fgets_lines(data), start=1):
        field = _select_field(line, column, delimiters)
        if field is None:
            continue
        value, used = strtod(field)
        if used != len(field):
            raise InvalidData(number)
        values.append(value)
    return values


# -- one data set ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """A data set as ministat holds it: sorted points plus running sums in input order."""

    name: bytes
    points: np.ndarray  # sorted the way glibc's qsort sorts them
    sy: float  # sum of values, accumulated in input order
    syy: float  # sum of squares, accumulated in input order

    @property
    def n(self) -> int:
        return len(self.points)

    def min(self) -> float:
        return float(self.points[0])

    def max(self) -> float:
        return float(self.points[-1])

    def avg(self) -> float:
        return c_div(self.sy, self.n)

    def median(self) -> float:
        """points[n/2], also for even n: this ministat version does not average the middle."""
        return float(self.points[self.n // 2])

    def var(self) -> float:
        """Textbook one-pass variance; may come out slightly negative, as in ministat."""
        n = self.n
        return c_div(self.syy - self.sy * self.sy / n, n - 1.0)

    def stddev(self) -> float:
        return c_sqrt(self.var())


def make_dataset(name: bytes, values: np.ndarray | Sequence[float]) -> Dataset:
    """Build a Dataset from values in input order (ministat's AddPoint, then qsort)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return Dataset(name, v, 0.0, 0.0)
    with np.errstate(all="ignore"):  # overflow to inf is what C does too
        partial = np.add.accumulate(v)  # sequential, like `sy += a`; not pairwise
        # ministat's sum starts at 0.0, and 0.0 + -0.0 is 0.0: of values all -0.0 the sum
        # is 0.0, not the -0.0 numpy's (which starts at the first value) gives
        sy = float(partial[-1]) + 0.0
        syy = float(np.add.accumulate(v * v)[-1])
    if math.isnan(sy):
        sy = _first_nan(v, partial)
    if math.isnan(syy):
        syy = float(v[np.isnan(v)][-1])  # `syy += a * a` lets the newest NaN win
    return Dataset(name, qsort(v), sy, syy)


def _first_nan(v: np.ndarray, partial: np.ndarray) -> float:
    """The NaN `sy += a` ends with: x86 keeps the accumulator's NaN once it has one.

    That is the first NaN value read, or -nan if inf + -inf came first. Only the sign is
    visible (ministat prints "nan" or "-nan"), but it must be the right one.
    """
    k = int(np.argmax(np.isnan(partial)))
    return float(v[k]) if math.isnan(v[k]) else _NEG_NAN


def qsort(values: np.ndarray) -> np.ndarray:
    """Sort like glibc's qsort (a stable merge sort) with ministat's dbl_cmp.

    Order only shows for -0.0 next to 0.0 (stability) and for NaN, which compares equal
    to everything; those cases take the stable sort or the merge-sort port.
    """
    if np.isnan(values).any():
        return np.array(_glibc_msort(values.tolist()), dtype=np.float64)
    if np.any((values == 0) & np.signbit(values)):
        return np.sort(values, kind="stable")
    return np.sort(values)


def _glibc_msort(b: list[float]) -> list[float]:
    """glibc msort_with_tmp: split n/2, sort halves, merge taking left unless left > right."""
    n = len(b)
    if n <= 1:
        return b
    left, right = _glibc_msort(b[: n // 2]), _glibc_msort(b[n // 2 :])
    out: list[float] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] > right[j]:  # dbl_cmp(l, r) > 0
            out.append(right[j])
            j += 1
        else:
            out.append(left[i])
            i += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


# -- the table and the verdict -------------------------------------------------------------------


def vitals(ds: Dataset, flag: int) -> bytes:
    """One table row: symbol, N, Min, Max, Median, Avg, Stddev (%13.8g each)."""
    cols = (ds.min(), ds.max(), ds.median(), ds.avg(), ds.stddev())
    return b"%c %3d " % (SYMBOLS[flag], ds.n) + b" ".join(fmt_g(v, b"%13.8g") for v in cols) + b"\n"


@dataclass(frozen=True)
class Verdict:
    """Student's t comparison of `ds` against the reference `rs`, as ministat computes it."""

    confidence: float
    difference: float  # d = avg(ds) - avg(rs)
    error: float  # e = t * s, the half-width of the interval
    pooled_s: float
    proven: bool

    def percent(self, reference_avg: float) -> tuple[float, float]:
        return c_div(self.difference * 100, reference_avg), c_div(self.error * 100, reference_avg)


def critical_t(df: int, confidence_index: int) -> float:
    """ministat's two-sided critical t for `df` degrees of freedom: its table's (row 0, the
    normal's 1.960 at 95 %, beyond 100 df)."""
    return STUDENT_T[0 if df > NSTUDENT else df][confidence_index]


def student_t(ds: Dataset, rs: Dataset, confidence_index: int) -> Verdict:
    """ministat's Relative(): pooled variance, t from the table (row 0 beyond 100 df)."""
    df = ds.n + rs.n - 2
    t = critical_t(df, confidence_index)
    spool = (ds.n - 1) * ds.var() + (rs.n - 1) * rs.var()
    spool = c_div(spool, float(df))
    spool = c_sqrt(spool)
    s = spool * math.sqrt(1.0 / ds.n + 1.0 / rs.n)
    d = ds.avg() - rs.avg()
    e = t * s
    return Verdict(STUDENT_PCT[confidence_index], d, e, spool, abs(d) > e)


def relative(ds: Dataset, rs: Dataset, confidence_index: int) -> bytes:
    """The verdict lines printed under each data set after the first."""
    v = student_t(ds, rs, confidence_index)
    if not v.proven:
        return b"No difference proven at %.1f%% confidence\n" % v.confidence
    pct, pct_err = v.percent(rs.avg())
    return (
        b"Difference at %.1f%% confidence\n" % v.confidence
        + b"\t" + fmt_g(v.difference) + b" +/- " + fmt_g(v.error) + b"\n"
        + b"\t" + fmt_g(pct) + b"% +/- " + fmt_g(pct_err) + b"%\n"
        + b"\t(Student's t, pooled s = " + fmt_g(v.pooled_s) + b")\n"
    )


# -- the ASCII plot -------------------------------------------------------------------------------


class PlotError(ValueError):
    """A plot column is not a valid int index: ministat itself would crash (SIGSEGV) here."""


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class Plot:
    """ministat's struct plot: DimPlot each set, PlotSet each set, then DumpPlot.

    `data` is a rows x width grid of OR-ed set numbers; row 0 is never shown, and the
    shown height is that of the *last* set plotted (ministat's `pl->height = m`).

    A bar mark can fall outside the plot: when a set's stddev is nan (a negative variance
    from rounding), DimPlot does not widen the plot by avg ± stddev, and a rounded average
    can lie beyond every point. ministat then writes past its bar's buffer, which is
    undefined: it crashes, or prints the bar without that mark. netrig leaves the mark out
    and lists it in `marks_left_out` (as it does a zero-width plot's points: _point_columns).
    """

    def __init__(self, width: int, separate_bars: bool, num_datasets: int) -> None:
        self.width = width
        self.separate_bars = separate_bars
        self.min, self.max = 999e99, -999e99
        self.span = self.dx = self.x0 = 0.0
        self.height = 0
        self.data = np.zeros((0, width), dtype=np.uint8)
        self.allocated = False
        self.bars: list[bytearray | None] = [None] * num_datasets
        # bar marks that fall outside the bar: ministat writes them past its buffer
        self.marks_left_out: list[bytes] = []

    def adjust(self, a: float) -> None:
        """AdjPlot: widen the range to include `a` (NaN never compares, so never widens)."""
        if a < self.min:
            self.min = a
        if a > self.max:
            self.max = a
        self.span = self.max - self.min
        self.dx = c_div(self.span, self.width - 1.0)
        self.x0 = self.min - 0.5 * self.dx

    def dim(self, ds: Dataset) -> None:
        """DimPlot: min, max and avg ± stddev must fit."""
        self.adjust(ds.min())
        self.adjust(ds.max())
        self.adjust(ds.avg() - ds.stddev())
        self.adjust(ds.avg() + ds.stddev())

    def _check(self, cols: np.ndarray) -> np.ndarray:
        """Truncate to int like C, refusing what would index outside the row in C."""
        if len(cols) and not np.isfinite(cols).all():
            if self.width == 1 and np.isfinite(self.span) and self.span > 0:
                # the data is fine: one column leaves no step between columns (span / 0)
                raise PlotError("a plot 1 column wide (-w 1) has no step between columns")
            raise PlotError("a plot column is not finite")
        if len(cols) and (cols.min() <= _INT_MIN - 1 or cols.max() >= _INT_MAX + 1):
            raise PlotError("a plot column is beyond the int range")
        return cols.astype(np.int64)

    def _point_columns(self, points: np.ndarray) -> np.ndarray:
        """The columns of a set's points. min and max widened the plot, so a point outside
        it would land in another row of ministat's grid: refused, never seen. A zero-width
        grid shows no point, so there a column a rounding error puts at -1 or 1 (never
        written here) is a write ministat makes past its grid, like a bar mark's."""
        with np.errstate(all="ignore"):
            x = self._check((points - self.x0) / self.dx)
        if len(x) and (x.min() < 0 or x.max() >= max(self.width, 1)):
            if self.width:
                raise PlotError("a plot column is outside the plot")
            self.marks_left_out.append(b"point")
        return x

    def column(self, v: float) -> int:
        """The bar column of one value: (int)((v - x0) / dx), possibly outside the bar."""
        return int(self._check(np.array([c_div(v - self.x0, self.dx)]))[0])

    def add(self, ds: Dataset, val: int) -> None:
        """PlotSet: stack the points of set number `val` and draw its bar."""
        if self.span == 0:
            return
        bar = val - 1 if self.separate_bars else 0
        if self.bars[bar] is None:
            self.bars[bar] = bytearray(self.width)
        x = self._point_columns(ds.points)
        j = _stack_positions(x)
        m = (int(j.max()) if len(j) else 1) + 1
        if m > self.height:
            self._grow(m)
        self.height = m
        if self.width:
            self.data[j, x] |= val
        self._draw_bar(self.bars[bar], ds)  # type: ignore[arg-type]

    def _grow(self, rows: int) -> None:
        """realloc the grid to `rows` rows and zero the rows from the old height up."""
        if self.width == 0 and self.allocated:
            raise PlotError("zero-width plot: realloc(p, 0) frees the grid")
        if rows > len(self.data):
            extra = np.zeros((rows - len(self.data), self.width), dtype=np.uint8)
            self.data = np.concatenate((self.data, extra))
        self.data[self.height : rows] = 0
        self.allocated = True

    def _draw_bar(self, line: bytearray, ds: Dataset) -> None:
        """|___A___M___|: avg ± stddev, then median, then average on top."""

        def put(x: int, ch: bytes) -> None:
            if not self.width:
                return
            if 0 <= x < self.width:
                line[x] = ch[0]
            else:
                self.marks_left_out.append(ch)

        sd = ds.stddev()
        if not math.isnan(sd):
            lo = self.column(ds.avg() - sd)
            hi = self.column(ds.avg() + sd)
            put(hi, b"|")
            put(lo, b"|")
            if lo + 1 < 0 or hi > self.width:
                self.marks_left_out.append(b"_")
            for i in range(max(lo + 1, 0), min(hi, self.width)):
                if line[i] == 0:
                    line[i] = ord("_")
        put(self.column(ds.median()), b"M")
        put(self.column(ds.avg()), b"A")

    def dump(self) -> bytes:
        """DumpPlot: the framed grid, top row first, then one line per bar."""
        if self.span == 0:
            return b"[no plot, span is zero width]\n"
        w = self.width
        edge = b"+" + b"-" * w + b"+\n"
        rows = self.data[self.height - 1 : 0 : -1] if self.height > 1 else self.data[:0]
        grid = np.empty((len(rows), w + 3), dtype=np.uint8)
        grid[:, 0] = grid[:, w + 1] = ord("|")
        grid[:, w + 2] = ord("\n")
        grid[:, 1 : w + 1] = np.frombuffer(SYMBOLS, dtype=np.uint8)[rows]
        bars = b"".join(
            b"|" + bytes(c or 32 for c in bar) + b"|\n" for bar in self.bars if bar is not None
        )
        return edge + grid.tobytes() + bars + edge


def _stack_positions(x: np.ndarray) -> np.ndarray:
    """1-based height of each point in its column: runs of equal consecutive columns stack."""
    index = np.arange(len(x))
    new_run = np.ones(len(x), dtype=bool)
    new_run[1:] = x[1:] != x[:-1]
    return index - np.maximum.accumulate(np.where(new_run, index, 0)) + 1


def draw_plot(datasets: Sequence[Dataset], width: int, separate_bars: bool) -> Plot:
    """DimPlot and PlotSet for every set, or raise PlotError where ministat crashes."""
    plot = Plot(width, separate_bars, len(datasets))
    for ds in datasets:
        plot.dim(ds)
    for val, ds in enumerate(datasets, start=1):
        plot.add(ds, val)
    return plot


def render_plot(datasets: Sequence[Dataset], width: int, separate_bars: bool) -> bytes:
    """The whole ASCII plot for the data sets, or raise PlotError where ministat crashes."""
    return draw_plot(datasets, width, separate_bars).dump()


# -- the whole report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderOptions:
    """ministat's flags that shape the output (-w, -c, -s, -A, -n)."""

    width: int = DEFAULT_WIDTH
    confidence_index: int = DEFAULT_CONFIDENCE_INDEX
    separate_bars: bool = False  # -s
    suppress_plot: bool = False  # -A
    summary_only: bool = False  # -n: no plot, no t test


def render(datasets: Sequence[Dataset], opts: RenderOptions = RenderOptions()) -> bytes:
    """Everything ministat prints on stdout for these data sets (the first is the reference)."""
    out = [b"%c %s\n" % (SYMBOLS[i], ds.name) for i, ds in enumerate(datasets, start=1)]
    if not opts.summary_only and not opts.suppress_plot:
        out.append(render_plot(datasets, opts.width, opts.separate_bars))
    out.append(VITALS_HEAD)
    out.append(vitals(datasets[0], 1))
    for flag, ds in enumerate(datasets[1:], start=2):
        out.append(vitals(ds, flag))
        if not opts.summary_only:
            out.append(relative(ds, datasets[0], opts.confidence_index))
    return b"".join(out)
