"""Is a change real, how big, and were there enough runs? Two samples in, a verdict out.

One `Comparison` holds everything `netrig compare` prints and the HTML report tabulates:
ministat's own block (rendered by netrig.stats.ministat, so it is byte for byte what
ministat prints for these numbers) and what ministat lacks, from netrig.stats.compare:
Welch's t when the variances differ, the Mann–Whitney U test, the relative difference with
its confidence interval, and how many runs a difference of the asked size needs.

    >>> c = compare([100, 101, 99, 100.5], [104, 105, 103, 104.5], confidence=0.95)
    >>> c.relative.significant, c.student, c.runs_ok  # 4 runs cannot detect 2 %
    (True, True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from netrig.stats.compare import (
    MannWhitneyResult,
    NoEstimate,
    RelativeDifference,
    SampleSize,
    WelchResult,
    exact_splits,
    mann_whitney,
    relative_difference,
    runs_needed_for,
    welch_t,
)
from netrig.stats.ministat import (
    STUDENT_PCT,
    PlotError,
    RenderOptions,
    critical_t,
    make_dataset,
    render,
    student_t,
)
from netrig.stats.spread import variance

MINISTAT_MIN_VALUES = 3  # ministat refuses a data set with fewer points
DEFAULT_POWER = 0.8
MAX_RUNS = 1_000_000  # runs_needed stops counting here


@dataclass(frozen=True)
class VarianceTest:
    """Two-sided F test of equal variances: do we need Welch instead of Student?

    `constant` names the sides without spread (rounding noise counts as none: see
    netrig.stats.spread), where no F test is possible: "" (the test was made), "x", "+"
    or "both". Both constant: Student's t holds (its pooled variance is 0 as well); one
    side constant, the other not: the variances differ, Welch's t.
    """

    f: float  # var(candidate) / var(reference); NaN when a side is constant
    p_value: float  # NaN when a side is constant
    differ: bool
    constant: str = ""


def variance_test(reference: np.ndarray, candidate: np.ndarray, confidence: float) -> VarianceTest:
    va, vb = variance(reference), variance(candidate)
    if va == 0 and vb == 0:
        return VarianceTest(math.nan, math.nan, False, "both")
    if va == 0 or vb == 0:  # one side constant, the other not: certainly different
        return VarianceTest(math.nan, math.nan, True, "x" if va == 0 else "+")
    f = vb / va
    dist = stats.f(len(candidate) - 1, len(reference) - 1)
    p = min(1.0, 2 * min(float(dist.cdf(f)), float(dist.sf(f))))
    return VarianceTest(f, p, p < 1 - confidence)


def mann_whitney_floor(n_a: int, n_b: int) -> float | None:
    """The smallest two-sided exact p-value possible with n_a and n_b values (ties only
    raise it).

    With 3 runs per side it is 0.1: no shift, however large, is significant at 95 %.
    None where the p is the normal approximation's (netrig.stats.compare.exact_splits).
    """
    if not exact_splits(n_a, n_b):
        return None
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


@dataclass(frozen=True)
class Comparison:
    """Candidate (B, ministat's +) against reference (A, ministat's x)."""

    reference: np.ndarray
    candidate: np.ndarray
    confidence: float  # a fraction: 0.95
    welch: WelchResult
    variances: VarianceTest
    relative: RelativeDifference
    mann_whitney: MannWhitneyResult
    mw_floor: float | None
    detect: float | None  # relative difference to detect, 0.02 for 2 %
    needed: SampleSize | None
    # Student's t holds (variances alike, and ministat's block there to print it): the
    # relative interval then pools the variances as Student's t does, else it is Welch's
    student: bool = True
    # the verdict of that t test (ministat's Student's t, else Welch's): every verdict
    # netrig prints for the pair follows it, also when Fieller's interval is unbounded
    proven: bool = False

    @property
    def direction(self) -> str:
        """"increase" or "decrease": the sign of mean(candidate) - mean(reference)."""
        return "increase" if self.welch.difference > 0 else "decrease"

    @property
    def runs_ok(self) -> bool:
        """Enough runs on both sides to detect the asked difference (True if none asked)."""
        if self.needed is None:
            return self.detect is None
        return self.needed.enough(min(len(self.reference), len(self.candidate)))


def compare(
    reference: np.ndarray | list[float],
    candidate: np.ndarray | list[float],
    confidence: float = 0.95,
    detect: float | None = 0.02,
    power: float = DEFAULT_POWER,
) -> Comparison:
    """Every test on the two samples (each needs at least 2 values)."""
    a = np.asarray(reference, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    variances = variance_test(a, b, confidence)
    # as the verdict printed beside the interval: see variance_line
    student = not variances.differ and min(len(a), len(b)) >= MINISTAT_MIN_VALUES
    welch = welch_t(a, b, confidence)
    proven = _student_proven(a, b, confidence) if student else welch.significant
    # Fieller's interval with the t of the test whose verdict is printed beside it: with
    # Student's, ministat's table t (1.960 beyond 100 df, where scipy's is 1.98 at 118):
    # an interval containing 0 had been called "a real increase"
    t = _ministat_t(len(a) + len(b) - 2, confidence) if student else None
    needed = None
    if detect is not None and np.mean(a) != 0:  # 2 % of 0 is no difference to detect
        try:
            needed = runs_needed_for(a, b, detect, confidence, power)
        except NoEstimate:
            needed = None
    return Comparison(
        a,
        b,
        confidence,
        welch,
        variances,
        relative_difference(a, b, confidence, pooled=student, critical_t=t),
        mann_whitney(a, b, confidence),
        mann_whitney_floor(len(a), len(b)),
        detect,
        needed,
        student,
        proven,
    )


def _ministat_t(df: int, confidence: float) -> float | None:
    """The critical t of ministat's Student's t at this level (None: a level its table
    lacks, where _student_proven takes scipy's test, as the interval then does)."""
    try:
        return critical_t(df, confidence_index(confidence))
    except ValueError:
        return None


def _student_proven(reference: np.ndarray, candidate: np.ndarray, confidence: float) -> bool:
    """ministat's Student's t verdict, as its block prints it (scipy's Student's t for a
    confidence level ministat's table lacks)."""
    try:
        index = confidence_index(confidence)
    except ValueError:
        return bool(stats.ttest_ind(candidate, reference).pvalue < 1 - confidence)
    rs, ds = make_dataset(b"x", reference), make_dataset(b"+", candidate)
    return student_t(ds, rs, index).proven


# -- text -----------------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{value:+.2f}%" if math.isfinite(value) else f"{value:+}%"


def _p(value: float) -> str:
    return f"{value:.2g}"


def relative_line(c: Comparison) -> str:
    """The relative difference with Fieller's interval; its verdict is the t test's (the
    one the reader is told holds), so the lines never contradict each other."""
    r = c.relative
    test = "Student's t" if c.student else "Welch's t"
    if not r.bounded:
        shown = "" if math.isnan(r.percent) else f"{_pct(r.percent)}, "
        what = (
            f"a real {c.direction} ({test}), its size unbounded"
            if c.proven
            else "no difference proven"
        )
        return (
            f"Relative difference: {shown}interval unbounded "
            f"(the reference mean is not clearly away from 0): {what}"
        )
    assumption = f"as {test}"
    what = f"a real {c.direction}" if c.proven else "no difference proven"
    return (
        f"Relative difference: {_pct(r.percent)}, {c.confidence * 100:.1f}% interval "
        f"{_pct(r.ci_low)} .. {_pct(r.ci_high)} (Fieller, {assumption}): {what}"
    )


def variance_line(c: Comparison, student_shown: bool = True) -> str:
    """Which t-test to read: ministat's Student's t above, or Welch's here (variances
    that differ, or no ministat block above to hold a Student's t)."""
    v = c.variances
    if v.constant == "both":
        held = "Student's t above holds" if student_shown else c.welch.verdict()
        return f"Variances: both sides constant, no F test possible; {held}"
    if v.constant:
        other = "+" if v.constant == "x" else "x"
        return (
            f"Variances differ ({v.constant} is constant, {other} is not; no F test "
            f"possible): {c.welch.verdict()}"
        )
    f = f"F = {v.f:.3g}, p = {_p(v.p_value)}"
    if v.differ:
        return f"Variances differ ({f}): {c.welch.verdict()}"
    if not student_shown:
        return f"Variances: no difference proven ({f}); {c.welch.verdict()}"
    return f"Variances: no difference proven ({f}); Student's t above holds"


def mann_whitney_line(c: Comparison) -> str:
    m = c.mann_whitney
    pct = c.confidence * 100
    verdict = (
        f"Difference at {pct:.1f}% confidence"
        if m.significant
        else f"No difference proven at {pct:.1f}% confidence"
    )
    line = f"Mann-Whitney U = {m.u:g}, p = {_p(m.p_value)}: {verdict}"
    line += f" (P(+ > x) = {m.probability_greater:.2f})"
    if c.mw_floor is not None and c.mw_floor >= 1 - c.confidence:
        line += (
            f"; with {len(c.reference)} and {len(c.candidate)} values p cannot go below "
            f"{_p(c.mw_floor)}"
        )
    return line


def runs_line(c: Comparison) -> str | None:
    """The --detect verdict: a warning when N is too small, else a confirmation."""
    if c.detect is None:
        return None
    size = f"{c.detect * 100:g}%"
    if c.needed is None:
        return f"Warning: cannot size the runs for a {size} difference of a reference mean of 0"
    n_a, n_b = len(c.reference), len(c.candidate)
    n = c.needed
    how = f"{n.power * 100:g}% power at {n.confidence * 100:.1f}% confidence"
    if c.runs_ok:
        return (
            f"Runs: N = {min(n_a, n_b)} per side can detect a {size} difference "
            f"({n.runs_per_side} needed for {how})"
        )
    needed = f"{n.runs_per_side}" if n.runs_per_side < MAX_RUNS else f"at least {MAX_RUNS}"
    return (
        f"Warning: N = {n_a} and {n_b} is too small to detect a {size} difference: "
        f"{needed} runs per side needed ({how})"
    )


def beyond_ministat(c: Comparison, student_shown: bool = True) -> list[str]:
    """The lines `netrig compare` prints under ministat's block (student_shown: the block
    is there, with its Student's t)."""
    lines = [relative_line(c), variance_line(c, student_shown), mann_whitney_line(c)]
    extra = runs_line(c)
    if extra:
        lines.append(extra)
    return lines


def ministat_block(
    names: tuple[str, str],
    reference: np.ndarray | list[float],
    candidate: np.ndarray | list[float],
    confidence: float = 0.95,
    width: int = 74,
) -> bytes | None:
    """What `ministat -c CONFIDENCE A B` prints for these values (in run order), or None
    when a side has fewer values than ministat accepts."""
    if min(len(reference), len(candidate)) < MINISTAT_MIN_VALUES:
        return None
    return ministat_text(
        [(names[0], reference), (names[1], candidate)], confidence=confidence, width=width
    )


def ministat_text(
    datasets: list[tuple[str, np.ndarray | list[float]]],
    *,
    confidence: float = 0.95,
    width: int = 74,
    suppress_plot: bool = False,
    summary_only: bool = False,
    separate_bars: bool = False,
) -> bytes:
    """ministat's output for named data sets (the first is the reference)."""
    opts = RenderOptions(
        width=width,
        confidence_index=confidence_index(confidence),
        suppress_plot=suppress_plot,
        summary_only=summary_only,
        separate_bars=separate_bars,
    )
    sets = [make_dataset(name.encode(), np.asarray(v, dtype=np.float64)) for name, v in datasets]
    try:
        return render(sets, opts)
    except PlotError as exc:  # values ministat cannot plot (inf, 1e308): the rest without it
        note = b"[no plot: %s, where ministat crashes]\n" % str(exc).encode()
        return note + render(sets, replace(opts, suppress_plot=True))


def confidence_index(confidence: float) -> int:
    """ministat's column for a confidence fraction; ValueError for a level it lacks."""
    for i, pct in enumerate(STUDENT_PCT):
        if math.isclose(pct, confidence * 100):
            return i
    levels = ", ".join(f"{p:g}" for p in STUDENT_PCT)
    raise ValueError(f"confidence {confidence * 100:g}%: ministat knows {levels}")
