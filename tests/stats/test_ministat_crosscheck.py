"""`netrig stat` against the real ministat, byte for byte: stdout, stderr and exit code.

400 generated cases plus hand-picked edge cases. The generated cases draw fresh seeds at
every run (so the suite keeps exploring); a failure names its seed, and
NETRIG_CROSSCHECK_SEED=BASE runs the same 400 again. The real binary is required: without it
these tests fail (CI installs the Debian package).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from ministat_harness import (
    INSTALL_HINT,
    Case,
    check_same,
    ministat_path,
    run_ministat,
    run_netrig,
)

N_GENERATED = 400
# the first of this run's seeds: fresh each run unless given, to reproduce a failure
BASE_SEED = int(os.environ.get("NETRIG_CROSSCHECK_SEED") or random.SystemRandom().randrange(2**32))
LEVELS = ["80", "90", "95", "98", "99", "99.5"]
LEVEL_SPELLINGS = {"95": ["95", "95.0", "9.5e1", "0x5f"], "80": ["80", "+80", "80."]}
FORMATS = ["%d", "%.1f", "%.3f", "%g", "%.17g", "%e", "%.10e", "%r", "%.2f", "%.8g"]
WIDTHS = [0, 2, 3, 5, 20, 40, 60, 74, 100, 133, 200]
SIZES = [2, 3, 3, 4, 5, 5, 7, 10, 13, 20, 31, 50, 100, 250, 1000, 10000]
SIZE_WEIGHTS = [2, 6, 6, 6, 10, 10, 8, 8, 6, 6, 6, 6, 5, 4, 3, 1]
DELIMITERS = [",", ";", ":", "\t", " ,", "|", ",;"]


@pytest.fixture(scope="module")
def ministat() -> str:
    path = ministat_path()
    if path is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return path


# -- generated cases -------------------------------------------------------------------------


def _number(rng: random.Random, kind: str, centre: float, scale: float) -> float:
    if kind == "ties":
        return float(rng.randint(0, max(1, int(scale))))
    if kind == "constant":
        return centre
    if kind == "uniform":
        return rng.uniform(centre - scale, centre + scale)
    if kind == "lognormal":
        return centre + rng.lognormvariate(0, 1) * scale
    return rng.gauss(centre, scale)


def _magnitude(rng: random.Random) -> tuple[float, float]:
    """(centre, scale) of a data set: ordinary, negative, integer-like, huge or tiny."""
    choice = rng.choice(["plain", "plain", "negative", "around0", "big", "huge", "tiny", "pps"])
    if choice == "negative":
        return -rng.uniform(1, 1e4), rng.uniform(0.1, 500)
    if choice == "around0":
        return 0.0, rng.uniform(0.5, 10)
    if choice == "big":
        return rng.uniform(1e9, 1e12), rng.uniform(1e6, 1e9)
    if choice == "huge":
        e = rng.choice([150, 250, 300, 307])
        return 10.0**e, 10.0 ** (e - rng.randint(0, 3))
    if choice == "tiny":
        e = rng.choice([-12, -100, -300, -310])
        return 10.0**e, 10.0 ** (e - rng.randint(0, 2))
    if choice == "pps":  # like seed 003: forwarding rates
        return rng.uniform(7e5, 1e7), rng.uniform(1e3, 1e5)
    return rng.uniform(1, 1e4), rng.uniform(0.01, 100)


def _format(rng: random.Random, value: float, fmt: str) -> str:
    if fmt == "%d":
        return str(round(value)) if abs(value) < 1e18 else f"{value:.0f}"
    return fmt % value


def _decorate(rng: random.Random, lines: list[str]) -> bytes:
    """Comments, blank lines, stray white space, CRLF: what real data files contain."""
    out: list[str] = []
    style = rng.random()
    for line in lines:
        if style < 0.15 and rng.random() < 0.2:
            out.append(rng.choice(["# comment", "#", "   ", "", "\t# indented comment"]))
        if style < 0.25 and rng.random() < 0.3:
            line = rng.choice([" ", "\t", "  "]) + line + rng.choice(["", " ", "\t", " # note"])
        out.append(line)
    eol = "\r\n" if rng.random() < 0.05 else "\n"
    text = eol.join(out)
    if rng.random() < 0.9:
        text += eol
    return text.encode()


def _columns(rng: random.Random, values: list[str], column: int, delim: str) -> bytes:
    """Rows with the values in field `column`, other fields numbers or words."""
    rows = []
    for v in values:
        width = column + rng.randint(0, 2)
        fields = [rng.choice(["host1", "17", "-3.5", "x", "1e3"]) for _ in range(width)]
        fields[column - 1] = v
        sep = delim[rng.randrange(len(delim))]
        rows.append(sep.join(fields) + (sep if rng.random() < 0.1 else ""))
    return ("\n".join(rows) + "\n").encode()


def _dataset(rng: random.Random, size: int, base: tuple[float, float], kind: str) -> list[str]:
    centre, scale = base
    if rng.random() < 0.5:  # a shifted version of the reference: sometimes a real difference
        centre += rng.choice([0.0, 0.0, 0.5, 2.0, 10.0]) * scale
        scale *= rng.choice([1.0, 1.0, 0.3, 3.0])
    fmt = rng.choice(FORMATS)
    values = [_format(rng, _number(rng, kind, centre, scale), fmt) for _ in range(size)]
    if rng.random() < 0.03:  # a broken line
        values[rng.randrange(size)] = rng.choice(["abc", "1.2.3", "12x", "--5", "1e", "5#x"])
    if rng.random() < 0.05:
        values[rng.randrange(size)] = rng.choice(["-0", "0", "0.0", "-0.0"])
    return values


def generated_case(seed: int) -> Case:
    rng = random.Random(seed)
    nfiles = rng.choice([1, 1, 2, 2, 2, 2, 3, 3, 4, 5, 6, 7])
    base = _magnitude(rng)
    kind = rng.choice(["normal", "normal", "uniform", "ties", "ties", "lognormal", "constant"])
    column, delim = 1, None
    if rng.random() < 0.15:
        column, delim = rng.randint(1, 4), rng.choice(DELIMITERS)
    files: dict[str, bytes] = {}
    for i in range(nfiles):
        name = f"set{i}.txt"
        if i and rng.random() < 0.12:  # an identical copy of an earlier set
            files[name] = files[f"set{rng.randrange(i)}.txt"]
            continue
        size = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        values = _dataset(rng, size, base, kind)
        if delim is None:
            files[name] = _decorate(rng, values)
        else:
            files[name] = _columns(rng, values, column, delim)
    opts: list[list[str]] = []
    if delim is not None:
        opts += [["-C", str(column)], ["-d", delim]]
    if rng.random() < 0.6:
        level = rng.choice(LEVELS)
        opts.append(["-c", rng.choice(LEVEL_SPELLINGS.get(level, [level]))])
    if rng.random() < 0.3:
        opts.append(["-w", str(rng.choice(WIDTHS))])
    for flag, p in (("-A", 0.12), ("-n", 0.12), ("-s", 0.25)):
        if rng.random() < p:
            opts.append([flag])
    rng.shuffle(opts)
    if len(opts) >= 2 and len(opts[0]) == len(opts[1]) == 1 and rng.random() < 0.5:
        opts[:2] = [[opts[0][0] + opts[1][0][1:]]]  # a cluster such as -As
    argv = [a for o in opts for a in o]
    names = list(files)
    stdin = b""
    if nfiles == 1 and rng.random() < 0.3:  # read from stdin, as `... | ministat`
        stdin = files.pop(names[0])
        names = [] if rng.random() < 0.5 else ["-"]
    if names and opts and rng.random() < 0.15:  # GNU getopt: options after operands
        return Case(argv=[names[0], *argv, *names[1:]], files=files, stdin=stdin)
    return Case(argv=[*argv, *names], files=files, stdin=stdin)


@pytest.mark.parametrize("index", range(N_GENERATED))
def test_generated_case_matches_ministat(ministat: str, tmp_path: Path, index: int) -> None:
    seed = BASE_SEED + index
    try:
        check_same(ministat, generated_case(seed), tmp_path)
    except AssertionError as exc:
        raise AssertionError(
            f"seed {seed} (reproduce: NETRIG_CROSSCHECK_SEED={BASE_SEED}, case {index}): {exc}"
        ) from None


def test_generated_cases_cover_what_they_claim(ministat: str, tmp_path: Path) -> None:
    """The generator really produces plots, verdicts, errors and big sets (not only one kind);
    fixed seeds: this is about the generator, not about this run's draw."""
    seen: dict[str, int] = {}
    for seed in range(0, N_GENERATED, 4):
        case = generated_case(seed)
        real = check_same(ministat, case, tmp_path / str(seed))
        out = real.stdout
        for key, hit in {
            "plot": b"+-----" in out,
            "difference": b"Difference at" in out,
            "no difference": b"No difference proven" in out,
            "error": real.rc != 0,
            "ok": real.rc == 0,
            "overlap": any(s in out for s in (b"*", b"#", b"O")),
            "big set": max((len(d) for d in case.files.values()), default=0) > 50_000,
        }.items():
            seen[key] = seen.get(key, 0) + int(hit)
    assert all(seen.values()), seen


# -- hand-picked edge cases -----------------------------------------------------------------

A = b"1\n2\n3\n"
B = b"1\n2\n4\n5\n"
X1 = b"1\n2\n3\n"
X2 = b"10\n11\n13\n"
TIES = b"".join(b"%d\n" % (i % 4) for i in range(40))
TIES2 = b"".join(b"%d\n" % (i % 3) for i in range(10))
ROUND5 = b"973142198818.723\n" * 5
ROUND10 = b"973142198818.72253\n" * 10
NAN_MIX = b"".join(b"nan\n" if i % 7 == 3 else b"%d\n" % (i * 37 % 101) for i in range(99))

EDGE: dict[str, Case] = {
    "stdin": Case([], stdin=B),
    "dash is stdin": Case(["-", "a"], {"a": A}, stdin=B),
    "stdin twice": Case(["-", "-"], stdin=B),
    "no stdin at all": Case([], stdin=None),
    "missing file": Case(["nope"]),
    "missing second file": Case(["a", "nope"], {"a": A}),
    "short file before missing": Case(["a", "nope"], {"a": b"1\n2\n"}),
    "empty filename": Case([""]),
    "directory": Case(["/"]),
    "no values": Case(["a"], {"a": b""}),
    "one value": Case(["a"], {"a": b"42\n"}),
    "two values": Case(["a"], {"a": b"4\n2\n"}),
    "only comments": Case(["a"], {"a": b"# x\n#\n\n"}),
    "three equal values": Case(["a"], {"a": b"0.1\n0.1\n0.1\n"}),
    "equal values two sets": Case(["a", "b"], {"a": b"7\n7\n7\n", "b": b"7\n7\n7\n7\n"}),
    "identical sets": Case(["a", "b"], {"a": B, "b": B}),
    "seven identical sets": Case(list("abcdefg"), dict.fromkeys("abcdefg", B)),
    "too many sets": Case(list("abcdefgh"), dict.fromkeys("abcdefgh", A)),
    "later set has shorter stacks": Case(["a", "b"], {"a": TIES, "b": TIES2}),
    "separate bars": Case(["-s", "a", "b", "c"], {"a": X1, "b": X2, "c": B}),
    "bad option": Case(["-h"]),
    "bad long option": Case(["--foo"]),
    "bad option in cluster": Case(["-nq", "a"], {"a": A}),
    "missing -w argument": Case(["a", "-w"], {"a": A}),
    "missing -C argument": Case(["-C"]),
    "missing -c argument": Case(["-c"]),
    "missing -d argument": Case(["-d"]),
    "column zero": Case(["-C", "0", "a"], {"a": A}),
    "column negative": Case(["-C", "-3", "a"], {"a": A}),
    "column not a number": Case(["-C", "two", "a"], {"a": A}),
    "column empty": Case(["-C", "", "a"], {"a": A}),
    "column trailing junk": Case(["-C", "2x", "a"], {"a": A}),
    "column leading space": Case(["-C", " 1", "a"], {"a": A}),
    "column overflow": Case(["-C", "99999999999999999999", "a"], {"a": A}),
    "column wraps to 2": Case(["-n", "-C", "4294967298", "a"], {"a": b"1 2\n3 4\n5 6\n"}),
    "column beyond fields": Case(["-C", "3", "a"], {"a": b"1 2\n3 4\n5 6\n"}),
    "confidence unknown": Case(["-c", "42", "a", "b"], {"a": A, "b": B}),
    "confidence not a number": Case(["-c", "ninety", "a"], {"a": A}),
    "confidence empty": Case(["-c", "", "a"], {"a": A}),
    "confidence trailing space": Case(["-c", "95 ", "a"], {"a": A}),
    "confidence hex": Case(["-c", "0x5f", "a", "b"], {"a": X1, "b": X2}),
    "confidence attached": Case(["-c99.5", "a", "b"], {"a": X1, "b": X2}),
    "confidence good then bad": Case(["-c", "99", "-c", "42", "a", "b"], {"a": X1, "b": X2}),
    "confidence bad then good": Case(["-c", "42", "-c", "99", "a", "b"], {"a": X1, "b": X2}),
    "confidence 80": Case(["-c", "80", "a", "b"], {"a": X1, "b": X2}),
    "empty delimiter": Case(["-d", "", "a"], {"a": A}),
    "width negative": Case(["-w", "-1", "a"], {"a": A}),
    "width not a number": Case(["-w", "wide", "a"], {"a": A}),
    "width hex": Case(["-w", "0x10", "a"], {"a": A}),
    "width empty is zero": Case(["-w", "", "a", "b"], {"a": X1, "b": X2}),
    "width zero": Case(["-w", "0", "a", "b"], {"a": X1, "b": X2}),
    "width zero taller second": Case(["-w0", "a", "b"], {"a": X1, "b": TIES}),
    "width one crashes": Case(["-w", "1", "a", "b"], {"a": X1, "b": X2}),
    "width two": Case(["-w", "2", "a", "b"], {"a": X1, "b": X2}),
    "width three": Case(["-w3", "a", "b"], {"a": X1, "b": X2}),
    "width wraps to 74": Case(["-w", "4294967370", "a"], {"a": B}),
    "width plus sign": Case(["-w", "+50", "a"], {"a": B}),
    "clustered flags": Case(["-nAs", "a", "b"], {"a": X1, "b": X2}),
    "cluster ending in -w": Case(["-sw", "30", "a", "b"], {"a": X1, "b": X2}),
    "cluster with attached -w": Case(["-sw30", "a", "b"], {"a": X1, "b": X2}),
    "options after files": Case(["a", "-n", "b"], {"a": X1, "b": X2}),
    "POSIXLY_CORRECT stops at file": Case(
        ["a", "-n", "b"], {"a": X1, "b": X2}, posixly_correct=True
    ),
    "double dash": Case(["-A", "--", "-n"]),
    "double dash as -w argument": Case(["-w", "--", "a"], {"a": A}),
    "dash dash then files": Case(["--", "a", "b"], {"a": X1, "b": X2}),
    "-A keeps the verdict": Case(["-A", "a", "b"], {"a": X1, "b": X2}),
    "-n drops the verdict": Case(["-n", "a", "b"], {"a": X1, "b": X2}),
    "invalid data line number": Case(["a"], {"a": b"# head\n\n1\n2\nabc\n3\n"}),
    "invalid data second file": Case(["a", "b"], {"a": A, "b": b"1\n2\n3\n4x\n"}),
    "invalid data 1e": Case(["a"], {"a": b"1\n1e\n2\n"}),
    "invalid hash inside": Case(["a"], {"a": b"1\n5#x\n2\n"}),
    "comment after value": Case(["a"], {"a": b"1 # one\n2\t#two\n3\n"}),
    "comment field before column": Case(["-C", "2", "a"], {"a": b"1 5\n# 6\n2 7\n3 # 8\n4 9\n"}),
    "crlf": Case(["a"], {"a": b"1\r\n2\r\n3\r\n4\r\n"}),
    "trailing white space": Case(["a"], {"a": b"1 \n2\t\n3\x0b\n4\x0c\n"}),
    "leading form feed": Case(["-d", ",", "a"], {"a": b"\x0c1\n 2\n\t3\n"}),
    "comma fields with spaces": Case(["-d", ",", "-C", "2", "a"], {"a": b"a, 1\nb, 2\nc,3 \n"}),
    "inner space invalid with comma": Case(["-d", ",", "a"], {"a": b"1\n2 \xc2\n3\n"}),
    "delimiters include digit": Case(["-d", "5", "-n", "a"], {"a": b"152\n253\n354\n"}),
    "no final newline": Case(["a"], {"a": b"1\n2\n3"}),
    "nul byte": Case(["a"], {"a": b"1\n2\x00junk\n3\n4\n"}),
    "binary junk": Case(["a"], {"a": b"1\n\xff\xfe\n3\n"}),
    "non-utf8 file name": Case(["caf\udce9"], {"caf\udce9": A}),
    "long line": Case(["a"], {"a": b" " * 9000 + b"5\n1\n2\n3\n"}),
    "number across fgets chunks": Case(["a"], {"a": b" " * 8188 + b"12345\n1\n2\n"}),
    "long line of numbers": Case(["-n", "a"], {"a": b"1 " * 5000 + b"\n" + b"2\n" * 3}),
    "hex floats": Case(
        ["a", "b"], {"a": b"0x1p3\n0x1.8P+1\n0x.8\n", "b": b"0x10\n0X1f\n0xa.8p-1\n"}
    ),
    "hex without digits": Case(["a"], {"a": b"0x\n1\n2\n"}),
    "infinity -n": Case(["-n", "a"], {"a": b"inf\n-INF\nInfinity\n1\n"}),
    "infinity plot": Case(["a"], {"a": b"inf\n1\n2\n3\n"}),
    "nan -n": Case(["-n", "a", "b"], {"a": b"nan\n1\n2\n", "b": b"-nan\n3\nNaN(123)\n4\n"}),
    "nan plot zero span": Case(["a"], {"a": b"nan\n1\n1\n"}),
    "nan plot": Case(["a", "b"], {"a": b"1\nnan\n2\n3\n", "b": A}),
    "nan signs": Case(["-n", "a", "b"], {"a": b"-nan\nnan\n1\n", "b": b"nan\n-nan\n1\n"}),
    "nan after inf": Case(["-n", "a", "b"], {"a": b"inf\n-inf\nnan\n", "b": b"1\n-nan\ninf\n"}),
    "inf minus inf": Case(["-n", "a", "b"], {"a": b"inf\n-inf\n1\n", "b": b"-inf\n2\n-inf\n"}),
    "nan sort order": Case(["-n", "a"], {"a": b"3\nnan\n1\n2\nnan\n0.5\n4\n"}),
    "nan sort order long": Case(["-n", "a"], {"a": NAN_MIX}),
    "all nan": Case(["-A", "a"], {"a": b"nan\nnan\nnan\n"}),
    "overflow to inf": Case(["-A", "a"], {"a": b"1e400\n1\n2\n"}),
    "underflow to zero": Case(["a"], {"a": b"1e-400\n1e-310\n5e-324\n"}),
    "huge values crash the plot": Case(["a"], {"a": b"1e300\n-1e300\n5\n"}),
    "huge values -n": Case(["-n", "a"], {"a": b"1e300\n-1e300\n5\n"}),
    "negative zero": Case(["a", "b"], {"a": b"0\n-0\n0\n-0.0\n", "b": b"-0\n-0\n1\n"}),
    "all negative zero": Case(["a", "b"], {"a": b"1\n2\n3\n", "b": b"-0.00\n-0.00\n-0.00\n"}),
    "negative zero minimum": Case(["-n", "a"], {"a": b"1\n0\n-0\n2\n"}),
    "avg zero relative": Case(["a", "b"], {"a": b"-1\n0\n1\n", "b": b"5\n6\n7\n"}),
    "student beyond 100 df": Case(["-A", "a", "b"], {"a": TIES, "b": TIES2 * 7}),
    "student 100 df": Case(
        ["-A", "a", "b"], {"a": TIES, "b": b"".join(b"%d\n" % (i % 5) for i in range(62))}
    ),
    # stddev nan and the average beyond the points: ministat writes "A" past its bar
    "average beyond the points, -s": Case(
        ["-s", "-c", "90", "a", "b"], {"a": ROUND5, "b": ROUND10}
    ),
    "average beyond the points": Case(["a", "b"], {"a": ROUND5, "b": ROUND10}),
    # its points land at column 1 of a zero-width grid (seed 2872095500)
    "width zero, points beyond the grid": Case(["-s", "-w", "0", "a"], {"a": b"7080.345\n" * 10}),
    "seed 003 shape": Case(
        ["a", "b"],
        {
            "a": b"9803502.5\n9843579.5\n9822232\n9810000\n9833852\n",
            "b": b"9449022\n9682297\n9670171\n9670000\n9674184\n",
        },
    ),
}


@pytest.mark.parametrize("name", list(EDGE))
def test_edge_case_matches_ministat(ministat: str, tmp_path: Path, name: str) -> None:
    check_same(ministat, EDGE[name], tmp_path)


def test_crash_cases_are_reported_not_copied(ministat: str, tmp_path: Path) -> None:
    """Where ministat segfaults, netrig says why and exits 2 (checked inside check_same)."""
    crashed = [
        name
        for name in ("width one crashes", "huge values crash the plot", "infinity plot")
        if check_same(ministat, EDGE[name], tmp_path / name.replace(" ", "_")).rc < 0
    ]
    assert crashed, "expected ministat to crash on at least one of these inputs"


def test_average_beyond_the_points_draws_what_ministat_prints_when_it_survives(
    ministat: str, tmp_path: Path
) -> None:
    """With -s the stray "A" lands in freed memory and ministat prints the plot without it,
    byte for byte what netrig prints; without -s it hits the bar pointers and segfaults,
    and netrig prints the same kind of plot instead of nothing."""
    case = EDGE["average beyond the points, -s"]
    argv = case.materialise(tmp_path / "s")
    real, ours = run_ministat(ministat, argv, case), run_netrig(argv, case)
    assert real.rc == 0 and ours == real
    case = EDGE["average beyond the points"]
    argv = case.materialise(tmp_path / "one_bar")
    real, ours = run_ministat(ministat, argv, case), run_netrig(argv, case)
    assert real.rc < 0 and ours.rc == 0
    assert ours.stdout.splitlines()[-6] == b"|M" + b" " * 72 + b"A|"  # set 1's A only


def test_a_plot_one_column_wide_names_the_width_not_the_data(tmp_path: Path) -> None:
    """-w 1 on finite data said "a plot column is not finite", blaming the data; the
    width is what leaves no step between columns."""
    argv = EDGE["width one crashes"].materialise(tmp_path)
    ours = run_netrig(argv, EDGE["width one crashes"])
    assert ours.rc == 2 and b"1 column wide (-w 1)" in ours.stderr, ours.stderr
    assert b"not finite" not in ours.stderr
