"""`netrig compare` and `netrig stat --experiment`: verdict wording (golden), ministat's block
byte-identical to the real ministat on the same numbers, exit codes, and the routing that
keeps `netrig stat`'s ministat mode untouched."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from ministat_harness import INSTALL_HINT, ministat_path

from netrig.base.sample import Sample
from netrig.cli import cmd_compare
from netrig.cli.cmd_compare import compare_command
from netrig.cli.cmd_stat import stored_mode
from netrig.report.verdicts import beyond_ministat, compare
from netrig.results.store import ResultStore

# -- golden verdict wording -------------------------------------------------------------------------

GOLDEN = {
    "shift": (
        [100, 101, 99, 100.5, 99.5],
        [104, 105, 103, 104.5, 103.5],
        [
            "Relative difference: +4.00%, 95.0% interval +2.83% .. +5.18% (Fieller, as "
            "Student's t): a real increase",
            "Variances: no difference proven (F = 1, p = 1); Student's t above holds",
            "Mann-Whitney U = 25, p = 0.0079: Difference at 95.0% confidence (P(+ > x) = 1.00)",
            "Runs: N = 5 per side can detect a 2% difference (4 needed for 80% power at 95.0% "
            "confidence)",
        ],
    ),
    "same": (
        [10, 12, 11, 13, 9],
        [11, 12, 10, 13, 10],
        [
            "Relative difference: +1.82%, 95.0% interval -15.93% .. +23.40% (Fieller, as "
            "Student's t): no difference proven",
            "Variances: no difference proven (F = 0.68, p = 0.72); Student's t above holds",
            "Mann-Whitney U = 13.5, p = 0.99: No difference proven at 95.0% confidence "
            "(P(+ > x) = 0.54)",
            "Warning: N = 5 and 5 is too small to detect a 2% difference: 683 runs per side "
            "needed (80% power at 95.0% confidence)",
        ],
    ),
    "jitter": (
        [100, 100.1, 99.9, 100.05, 99.95],
        [90, 110, 95, 112, 85],
        [
            "Relative difference: -1.60%, 95.0% interval -16.57% .. +13.37% (Fieller, as "
            "Welch's t): no difference proven",
            "Variances differ (F = 2.32e+04, p = 1.1e-08): No difference proven at 95.0% "
            "confidence (Welch's t)",
            "Mann-Whitney U = 10, p = 0.69: No difference proven at 95.0% confidence "
            "(P(+ > x) = 0.40)",
            "Warning: N = 5 and 5 is too small to detect a 2% difference: 288 runs per side "
            "needed (80% power at 95.0% confidence)",
        ],
    ),
    "three-runs": (
        [1, 2, 3],
        [7, 8, 9],
        [
            "Relative difference: +300.00%, 95.0% interval +112.09% .. +1923.68% (Fieller, as "
            "Student's t): a real increase",
            "Variances: no difference proven (F = 1, p = 1); Student's t above holds",
            "Mann-Whitney U = 9, p = 0.1: No difference proven at 95.0% confidence "
            "(P(+ > x) = 1.00); with 3 and 3 values p cannot go below 0.1",
            "Warning: N = 3 and 3 is too small to detect a 2% difference: 9813 runs per side "
            "needed (80% power at 95.0% confidence)",
        ],
    ),
    "zero": (
        [0, 0, 0],
        [0, 0, 0],
        [
            "Relative difference: interval unbounded (the reference mean is not clearly away "
            "from 0): no difference proven",
            "Variances: both sides constant, no F test possible; Student's t above holds",
            "Mann-Whitney U = 4.5, p = 1: No difference proven at 95.0% confidence "
            "(P(+ > x) = 0.50); with 3 and 3 values p cannot go below 0.1",
            "Warning: cannot size the runs for a 2% difference of a reference mean of 0",
        ],
    ),
    "noisy-reference": (
        [-1, 1, 0.5, -0.4],
        [0.2, 0.3, 0.1, 0.4],
        [
            "Relative difference: +900.00%, interval unbounded (the reference mean is not "
            "clearly away from 0): no difference proven",
            "Variances differ (F = 0.0208, p = 0.0098): No difference proven at 95.0% "
            "confidence (Welch's t)",
            "Mann-Whitney U = 8, p = 1: No difference proven at 95.0% confidence (P(+ > x) = 0.50)",
            "Warning: N = 4 and 4 is too small to detect a 2% difference: at least 1000000 "
            "runs per side needed (80% power at 95.0% confidence)",
        ],
    ),
}


def test_an_unbounded_interval_keeps_the_t_tests_verdict() -> None:
    """v = 1, 3, 2 against 7, 7, 4 (a user's counter): Student's t proves +200 % ± 160 %,
    but the reference mean is too near 0 for Fieller's interval to close. The line had
    said nothing of the verdict, and the report "no difference proven"."""
    c = compare([1, 3, 2], [7, 7, 4], 0.95, 0.02)
    assert c.student and c.proven and not c.relative.bounded
    assert beyond_ministat(c)[0] == (
        "Relative difference: +200.00%, interval unbounded (the reference mean is not "
        "clearly away from 0): a real increase (Student's t), its size unbounded"
    )
    down = compare([-1, 1, 0.5, -0.4, 0.3], [-30, -30.01, -29.99, -30.005, -30], 0.95, 0.02)
    assert down.proven and not down.student and not down.relative.bounded
    assert beyond_ministat(down)[0].endswith("a real decrease (Welch's t), its size unbounded")


@pytest.mark.parametrize(("shift", "proven"), [(1.97, True), (1.95, False), (1.99, True)])
def test_fieller_takes_ministats_t_beside_its_verdict(shift: float, proven: bool) -> None:
    """60 against 60 values (118 df): ministat's Student's t takes its table's 1.960 there,
    scipy's exact t is 1.98. A shift of 1.97 standard errors is proven by ministat, and
    Fieller's interval with scipy's t had held 0 (-0.00% .. +0.72%) beside "a real
    increase"; the interval and the verdict now come from one t, as in the report."""
    import numpy as np

    from netrig.report.html import _comparison_row
    from netrig.stats.ministat import STUDENT_T, make_dataset, student_t
    from netrig.stats.stored import Group

    base = np.random.default_rng(7).standard_normal(60)
    base = (base - base.mean()) / base.std(ddof=1)  # mean 0, sd 1 exactly
    se = float(np.sqrt(2 / 60))
    a, b = 100 + base, 100 + shift * se + base
    assert STUDENT_T[0][2] == 1.960  # ministat's t beyond 100 df
    assert student_t(make_dataset(b"+", b), make_dataset(b"x", a), 2).proven is proven
    c = compare(a, b, 0.95, 0.02)
    assert c.student and c.proven is proven and c.relative.significant is proven
    line = beyond_ministat(c)[0]
    low = c.relative.ci_low
    assert (low > 0) is proven and line.endswith("a real increase" if proven else "proven")
    assert f"interval {low:+.2f}% .. " in line and ("interval -" not in line) is proven
    row = _comparison_row(Group((("v", "a"),), list(a)), Group((("v", "b"),), list(b)))
    shown = re.search(r"\(([-+][0-9.]+)% \.\. ", row)
    assert shown is not None and shown.group(1).startswith("+") is proven
    assert (">increase</td>" in row) is proven and ("no difference proven" in row) is not proven


def test_rounding_noise_of_a_constant_sample_is_no_spread() -> None:
    """A user's `lat 0.15 ms` against `lat 0.35 ms`, each printed every run: numpy's
    variance of [0.35] * 3 is 4.6e-33, of [0.15] * 3 exactly 0, and the F test had said
    "Variances differ (F = inf, p = 0)" and switched to Welch's t."""
    import numpy as np

    assert np.var([0.35] * 3, ddof=1) > 0 == np.var([0.15] * 3, ddof=1)  # the noise
    c = compare([0.15] * 3, [0.35] * 3, 0.95, 0.02)
    assert c.variances.constant == "both" and not c.variances.differ and c.student
    assert c.proven and c.welch.ci_low == c.welch.ci_high == pytest.approx(0.2)
    lines = beyond_ministat(c)
    assert lines[0].startswith("Relative difference: +133.33%, 95.0% interval +133.33% .. ")
    assert lines[0].endswith("(Fieller, as Student's t): a real increase")
    assert lines[1] == "Variances: both sides constant, no F test possible; Student's t above holds"
    assert beyond_ministat(c, student_shown=False)[1] == (
        "Variances: both sides constant, no F test possible; Difference at 95.0% confidence: "
        "0.2 +/- 0 (Welch's t)"
    )
    # integers (exact zero variance) read the same
    assert beyond_ministat(compare([1, 1, 1], [3, 3, 3]))[1] == lines[1]
    # one side constant (noise included), the other not: no F test either, Welch's t
    one = compare([0.35] * 4, [0.3, 0.4, 0.35, 0.36])
    assert one.variances.differ and one.variances.constant == "x" and not one.student
    assert beyond_ministat(one)[1].startswith(
        "Variances differ (x is constant, + is not; no F test possible): No difference proven"
    )


@pytest.mark.parametrize("case", list(GOLDEN))
def test_verdict_wording(case: str) -> None:
    reference, candidate, expected = GOLDEN[case]
    assert beyond_ministat(compare(reference, candidate, 0.95, 0.02)) == expected


def test_welch_verdict_when_variances_differ_and_difference_is_real() -> None:
    lines = beyond_ministat(compare([100, 100.2, 99.8, 100.1, 99.9], [120, 131, 125, 118, 128]))
    assert lines[1].startswith("Variances differ (F = ")
    assert lines[1].endswith("): Difference at 95.0% confidence: 24.4 +/- 6.71941 (Welch's t)")


def test_detect_and_confidence_change_the_wording() -> None:
    c = compare([10, 12, 11, 13, 9], [11, 12, 10, 13, 10], confidence=0.99, detect=0.5)
    lines = beyond_ministat(c)
    assert lines[0].startswith("Relative difference: +1.82%, 99.0% interval")
    assert lines[-1] == (
        "Runs: N = 5 per side can detect a 50% difference (4 needed for 80% power at 99.0% "
        "confidence)"
    )
    assert beyond_ministat(compare([1, 2, 3], [2, 3, 4], detect=None))[-1].startswith("Mann")


# -- end to end on a store --------------------------------------------------------------------------

BEFORE = [9.41e9, 9.38e9, 9.44e9, 9.40e9, 9.39e9]
AFTER = [9.21e9, 9.25e9, 9.19e9, 9.30e9, 9.22e9]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    with ResultStore(path) as store:
        eid = store.begin_experiment("ring", "name: ring\n", {})
        for rep, (a, b) in enumerate(zip(BEFORE, AFTER, strict=True)):
            store.record_run(
                eid, {"hops": 1}, rep, "ok", {"iperf3": [Sample("throughput", a, "bit/s")]}
            )
            store.record_run(
                eid, {"hops": 8}, rep, "ok", {"iperf3": [Sample("throughput", b, "bit/s")]}
            )
        store.record_run(eid, {"hops": 8}, 5, "failed", reason="iperf3: connection refused")
        store.record_run(eid, {"hops": 16}, 0, "failed", reason="iperf3: no route to host")
        store.record_run(eid, {"hops": 16}, 1, "failed", reason="iperf3: no route to host")
        store.finish_experiment(eid, "failed")
    return path


@pytest.fixture(scope="module")
def ministat() -> str:
    path = ministat_path()
    if path is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return path


def real_ministat(binary: str, cwd: Path, files: dict[str, list[float]], *args: str) -> str:
    """The real ministat's stdout on files of these values (named as netrig names the sets)."""
    for name, values in files.items():
        (cwd / name).write_text("".join(f"{v!r}\n" for v in values))
    done = subprocess.run(
        ["ministat", *args, *files], executable=binary, cwd=cwd, capture_output=True, check=True
    )
    return done.stdout.decode()


def netrig(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netrig", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "", **(env or {})},
    )


def test_compare_prints_ministat_verbatim_and_more(ministat: str, db: Path, tmp_path: Path) -> None:
    done = netrig("compare", "ring:hops=1", "ring:hops=8", "--db", str(db))
    assert done.returncode == 0, done.stderr
    work = tmp_path / "ministat"
    work.mkdir()
    block = real_ministat(ministat, work, {"ring:hops=1": BEFORE, "ring:hops=8": AFTER})
    c = compare(BEFORE, AFTER)
    expected = (
        "== iperf3 throughput (bit/s)\n"
        "+ 1 failed run(s), not counted: iperf3: connection refused\n"
        + block
        + "\n".join(beyond_ministat(c))
        + "\n"
    )
    assert done.stdout == expected
    assert "Difference at 95.0% confidence\n\t-1.7e+08 +/- 5.00991e+07\n" in done.stdout
    # Student's t holds (F's p = 0.26): the interval pools too (Welch's df had given
    # -2.37% .. -1.25%), so it reads as ministat's -1.81% +/- 0.53% does
    assert (
        "Relative difference: -1.81%, 95.0% interval -2.33% .. -1.28% (Fieller, as Student's t)"
        in done.stdout
    )


def test_a_sweep_value_that_was_never_run_is_bad_input(db: Path) -> None:
    """As `stat` and `plot` say it: the values there are, and no "at least 2 per side are
    needed" (it had said `+ ring:hops=5: no run matches`, then that advice)."""
    stat = netrig("stat", "--experiment", "ring:hops=5", "--db", str(db))
    assert stat.stderr == "netrig: no run of experiment 1 matches hops=5 (ring has hops 1, 8, 16)\n"
    for args in (["ring:hops=1", "ring:hops=5"], ["ring:hops=5", "ring:hops=1"], ["hops=5", "hops=1"]):
        done = netrig("compare", *args, "--db", str(db))
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stdout == "" and done.stderr == stat.stderr


def test_compare_filters_alone_use_the_newest_experiment(db: Path) -> None:
    result = CliRunner().invoke(
        compare_command, ["hops=1", "hops=8", "--db", str(db), "--confidence", "99", "-w", "40"]
    )
    assert result.exit_code == 0, result.output
    # the newest experiment, by id
    assert "x 1:hops=1\n+ 1:hops=8\n+----------------------------------------+\n" in result.output
    assert "Difference at 99.0% confidence" in result.output
    assert "too small to detect a 2% difference" not in result.output  # 5 runs are enough


def test_compare_two_experiments_and_the_detect_warning(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    with ResultStore(path) as store:
        for name, base in (("before", 100.0), ("after", 100.5)):
            eid = store.begin_experiment(name, f"name: {name}\n", {})
            for rep, noise in enumerate([0.0, 3.0, -2.0, 1.0]):
                samples = {"ping": [Sample("rtt_avg", base + noise, "ms")]}
                store.record_run(eid, {}, rep, "ok", samples)
    result = CliRunner().invoke(
        compare_command, ["before", "after", "--db", str(path), "--detect", "1%", "-w", "60"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("== ping rtt_avg (ms)\nx before\n+ after\n")
    assert "No difference proven at 95.0% confidence\n" in result.output
    assert "Warning: N = 4 and 4 is too small to detect a 1% difference: " in result.output


def test_compare_errors_and_exit_codes(db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(compare_command, ["nope", "ring", "--db", str(db)])
    assert missing.exit_code == 2
    assert "no experiment 'nope'" in missing.output and "experiments: ring" in missing.output
    failed = runner.invoke(compare_command, ["ring:hops=1", "ring:hops=16", "--db", str(db)])
    assert failed.exit_code == 1
    assert "+ 2 failed run(s), not counted: iperf3: no route to host (×2)" in failed.output
    assert "cannot compare: + has 0 value(s); at least 2 per side are needed" in failed.output
    # one side short by one, the other empty: each named with its own count
    lines: list[str] = []
    assert cmd_compare._verdict(lines, [1.0], [], ("a", "b"), 95.0, 74, None) is False
    assert lines == [
        "cannot compare: x has 1 value(s) and + has 0 value(s); at least 2 per side are needed"
    ]
    lines = []
    assert cmd_compare._verdict(lines, [], [1.0, 2.0], ("a", "b"), 95.0, 74, None) is False
    assert lines == ["cannot compare: x has 0 value(s); at least 2 per side are needed"]
    # two values a side: no ministat block, so no Student's t "above" to hold
    lines = []
    assert cmd_compare._verdict(lines, [1.0, 2.0], [1.5, 2.5], ("a", "b"), 0.95, 74, None)
    assert lines[0].startswith("(ministat's block left out")
    assert not [line for line in lines if "above holds" in line], lines
    assert "Variances: no difference proven (F = 1, p = 1); No difference proven at 95.0% " \
        "confidence (Welch's t)" in lines
    no_param = runner.invoke(compare_command, ["ring:rate=1", "ring", "--db", str(db)])
    assert no_param.exit_code == 2 and "no sweep parameter 'rate'" in no_param.output
    no_db = runner.invoke(compare_command, ["a", "b", "--db", str(tmp_path / "none.db")])
    assert no_db.exit_code == 2 and "no results database" in no_db.output
    assert not (tmp_path / "none.db").exists()
    bad_detect = runner.invoke(compare_command, ["a", "b", "--detect", "lots", "--db", str(db)])
    assert bad_detect.exit_code == 2


# -- netrig stat --experiment -----------------------------------------------------------------------


def test_stat_experiment_blocks_are_ministat_verbatim(
    ministat: str, db: Path, tmp_path: Path
) -> None:
    done = netrig("stat", "--experiment", "ring", "--db", str(db))
    assert done.returncode == 0, done.stderr
    work = tmp_path / "m"
    work.mkdir()
    one = real_ministat(ministat, work, {"hops=1": BEFORE})
    eight = real_ministat(ministat, work, {"hops=8": AFTER})
    assert done.stdout == (
        f"== iperf3 throughput (bit/s), hops=1\n{one}\n"
        f"== iperf3 throughput (bit/s), hops=8\n{eight}\n"
        "== iperf3 throughput (bit/s), hops=16\n"
        "hops=16: 2 run(s) failed: iperf3: no route to host (×2)\n"
    )


def test_stat_experiment_by_parameter_compares_its_values(
    ministat: str, db: Path, tmp_path: Path
) -> None:
    done = netrig("stat", "--experiment", "ring", "--by", "hops", "-c", "99", "-s", "--db", str(db))
    assert done.returncode == 0, done.stderr
    block = real_ministat(ministat, tmp_path, {"hops=1": BEFORE, "hops=8": AFTER}, "-c", "99", "-s")
    assert done.stdout == (
        "== iperf3 throughput (bit/s)\n"
        "hops=16: 2 run(s) failed: iperf3: no route to host (×2)\n" + block
    )


def test_stat_experiment_errors(db: Path) -> None:
    unknown = netrig("stat", "--experiment", "ring", "--by", "rate", "--db", str(db))
    assert unknown.returncode == 2 and "no sweep parameter 'rate'" in unknown.stderr
    two = netrig("stat", "--experiment", "ring", "--by", "hops,rate", "--db", str(db))
    assert two.returncode == 2 and "--by takes one parameter" in two.stderr, two.stderr
    assert "try --by hops or --by rate" in two.stderr
    metric = netrig("stat", "--experiment=ring", "--metric", "jitter", "--db", str(db))
    assert metric.returncode == 2 and "no metric 'jitter'" in metric.stderr
    # a filter no run matches printed nothing at all (exit 1); now says so, as compare does
    none = netrig("stat", "--experiment", "ring:hops=5", "--db", str(db))
    assert none.returncode == 2 and none.stdout == "", none.stdout
    assert "no run of experiment 1 matches hops=5" in none.stderr
    assert "(ring has hops 1, " in none.stderr  # the values there are


def test_stored_mode_never_takes_a_command_line_ministat_accepts() -> None:
    assert stored_mode(["--experiment", "ring"])
    assert stored_mode(["-A", "--experiment=ring", "--by", "hops"])
    assert not stored_mode(["-d", "--experiment", "file"])  # -d's argument
    assert stored_mode(["-Cw", "--experiment"])  # -C took "w"; --experiment is an option
    assert not stored_mode(["-w", "--experiment"])
    assert not stored_mode(["--", "--experiment"])
    assert not stored_mode(["file", "--experiment"], posixly_correct=True)
    assert stored_mode(["file", "--experiment"], posixly_correct=False)
    assert not stored_mode(["a", "b"])


def test_filters_alone_on_a_newest_experiment_without_that_parameter(tmp_path: Path) -> None:
    """`compare alg=roundrobin alg=leastconn` took the newest experiment, which has no
    `alg`, and said it had no metric 'requests_per_s' (with --metric) instead."""
    path = tmp_path / "two.db"
    with ResultStore(path) as store:
        lb = store.begin_experiment("lbalg", "name: lbalg\n", {}, {"ab": "ab"})
        for alg in ("roundrobin", "leastconn"):
            for rep in range(3):
                samples = {"ab": [Sample("requests_per_s", 17000.0 + rep, "req/s")]}
                store.record_run(lb, {"alg": alg}, rep, "ok", samples)
        ring = store.begin_experiment("ring", "name: ring\n", {}, {"iperf3": "iperf3"})
        for hops in (1, 2):
            samples = {"iperf3": [Sample("throughput", 9e9, "bit/s")]}
            store.record_run(ring, {"hops": hops}, 0, "ok", samples)
    for extra in ((), ("--metric", "requests_per_s")):
        done = netrig("compare", "alg=roundrobin", "alg=leastconn", *extra, "--db", str(path))
        assert done.returncode == 2 and done.stdout == "", done.stdout
        assert done.stderr == (
            "netrig: 'alg=roundrobin' names no experiment, so it took the newest, experiment 2 "
            "(ring), which has no sweep parameter 'alg'; lbalg (experiment 1) has it: write "
            "lbalg:alg=roundrobin\n"
        )
    other = netrig("compare", "ring:hops=1", "alg=leastconn", "--db", str(path))
    assert other.returncode == 2
    assert "'alg=leastconn' names no experiment, so it took the other side's" in other.stderr
    nowhere = netrig("compare", "bogus=1", "bogus=2", "--db", str(path))
    assert nowhere.returncode == 2 and f"no experiment in {path} has it" in nowhere.stderr
    named = netrig("compare", "lbalg:alg=roundrobin", "lbalg:alg=leastconn", "--db", str(path))
    assert named.returncode == 0, named.stderr
    assert "== ab requests_per_s (req/s)" in named.stdout


def test_a_switch_swept_reads_as_the_file_writes_it(tmp_path: Path) -> None:
    """`vary: {bfd: [true, false]}` read bfd=true in the run's points but bfd=True in
    `stat --by`, plot legends and the CSV export (where a filter takes `true`)."""
    path = tmp_path / "results.db"
    with ResultStore(path) as store:
        eid = store.begin_experiment("sw", "name: sw\n", {})
        for rep in range(3):
            for flag, value in ((True, 1.0 + rep), (False, 2.0 + rep)):
                store.record_run(eid, {"bfd": flag}, rep, "ok",
                                 {"cmd": [Sample("v", value, "")]})  # fmt: skip
        store.finish_experiment(eid, "ok")
    by = netrig("stat", "--experiment", "sw", "--by", "bfd", "--db", str(path))
    assert by.returncode == 0, by.stderr
    assert "bfd=true" in by.stdout and "bfd=false" in by.stdout and "True" not in by.stdout
    export = netrig("results", "export", "sw", "--db", str(path))
    assert export.returncode == 0, export.stderr
    cells = {line.split(",")[6] for line in export.stdout.splitlines()[1:]}
    assert cells == {"true", "false"}, export.stdout[:300]
    from netrig.report.plots import PlotRequest, figure
    from netrig.stats.stored import load

    with ResultStore(path) as store:
        data = load(store, "sw")
    for kind in ("line", "box"):
        ax = figure(data, PlotRequest(kind=kind, y="v", x="bfd")).axes[0]  # type: ignore[arg-type]
        assert {t.get_text() for t in ax.get_xticklabels()} == {"true", "false"}, kind
    from netrig.report.html import render

    page = render(data)
    assert "bfd=true" in page and "bfd=True" not in page and "bfd=False" not in page
