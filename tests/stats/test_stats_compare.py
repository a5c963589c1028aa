"""netrig.stats.compare against scipy, textbook values and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from netrig.stats.compare import (
    NoEstimate,
    mann_whitney,
    relative_difference,
    runs_needed,
    runs_needed_for,
    welch_power,
    welch_t,
)

BEFORE = [9822232.0, 9803502.5, 9843579.5, 9812345.0, 9830507.0]
AFTER = [9670171.0, 9449022.0, 9682297.0, 9675000.0, 9669184.0]


def test_welch_matches_scipy() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.normal(100, 1, 8), rng.normal(101, 4, 13)
    ours = welch_t(a, b, confidence=0.99)
    ref = stats.ttest_ind(b, a, equal_var=False)
    ci = ref.confidence_interval(0.99)
    assert ours.t == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert ours.df == pytest.approx(ref.df, rel=1e-12)
    assert (ours.ci_low, ours.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert ours.difference == pytest.approx(np.mean(b) - np.mean(a))
    assert ours.significant == (ours.p_value < 0.01)


def test_welch_by_hand() -> None:
    """x = 1,2,3 and 10,11,13: se^2 = 1/3 + (7/3)/3, df = se^4 / ((1/3)^2/2 + (7/9)^2/2)."""
    w = welch_t([1, 2, 3], [10, 11, 13])
    se2 = 1 / 3 + 7 / 9
    assert w.difference == pytest.approx(28 / 3)
    assert w.t == pytest.approx((28 / 3) / math.sqrt(se2))
    assert w.df == pytest.approx(se2**2 / ((1 / 3) ** 2 / 2 + (7 / 9) ** 2 / 2))
    assert w.significant
    assert w.verdict().startswith("Difference at 95.0% confidence: 9.33333 +/- ")


def test_welch_on_the_seed_003_shape() -> None:
    w = welch_t(BEFORE, AFTER)
    assert w.significant and w.difference < 0 and w.ci_high < 0
    assert "No difference" in welch_t(BEFORE, BEFORE[::-1]).verdict()


def test_welch_constant_samples() -> None:
    same = welch_t([5, 5, 5], [5, 5, 5])
    assert (same.p_value, same.significant) == (1.0, False)
    apart = welch_t([5, 5, 5], [6, 6, 6])
    assert (apart.p_value, apart.significant, apart.t) == (0.0, True, math.inf)


def test_relative_difference_reduces_to_t_interval_for_an_exact_reference() -> None:
    """With a constant reference, Fieller's interval is (mb ± t sb/sqrt(nb)) / ma - 1."""
    ref = [200.0] * 4
    cand = [204.0, 206.0, 205.0, 209.0]
    r = relative_difference(ref, cand)
    t = stats.t.ppf(0.975, len(cand) - 1)
    half = t * np.std(cand, ddof=1) / math.sqrt(len(cand)) / 200 * 100
    assert r.percent == pytest.approx(3.0)
    assert (r.ci_low, r.ci_high) == pytest.approx((3.0 - half, 3.0 + half))
    assert r.bounded and r.significant


def test_relative_difference_is_wider_than_ministats() -> None:
    """Counting the reference's own noise widens ministat's e / avg interval a little."""
    r = relative_difference(BEFORE, AFTER)
    assert r.ci_low < r.percent < r.ci_high < 0
    assert r.percent == pytest.approx((np.mean(AFTER) / np.mean(BEFORE) - 1) * 100)
    w = welch_t(BEFORE, AFTER)
    naive_half = (w.ci_high - w.ci_low) / 2 / np.mean(BEFORE) * 100
    assert (r.ci_high - r.ci_low) / 2 > naive_half * 0.999


def _fieller_by_root_finding(
    a: np.ndarray, b: np.ndarray, confidence: float, *, equal_var: bool,
    t: float | None = None,
) -> tuple[float, float]:  # fmt: skip
    """Fieller's bounds (as %) found numerically: the ratios R where the t statistic of
    mean(b) - R mean(a) reaches scipy's critical t (or `t`), with scipy's own degrees of
    freedom (ttest_ind's df: n_a + n_b - 2 pooled, Welch–Satterthwaite otherwise)."""
    from scipy.optimize import brentq

    ma, mb = float(np.mean(a)), float(np.mean(b))
    test = stats.ttest_ind(b, a, equal_var=equal_var)
    if equal_var:
        pooled = ((len(a) - 1) * np.var(a, ddof=1) + (len(b) - 1) * np.var(b, ddof=1)) / test.df
        va, vb = pooled / len(a), pooled / len(b)
    else:
        va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    if t is None:
        t = stats.t.ppf(0.5 + confidence / 2, test.df)

    def excess(r: float) -> float:
        return float((mb - r * ma) ** 2 - t * t * (vb + r * r * va))

    ratio = mb / ma
    low = brentq(excess, ratio - 10 * abs(ratio) - 10, ratio)
    high = brentq(excess, ratio, ratio + 10 * abs(ratio) + 10)
    return (low - 1) * 100, (high - 1) * 100


@pytest.mark.parametrize("equal_var", [True, False], ids=["pooled", "welch"])
def test_relative_difference_matches_an_independent_fieller(equal_var: bool) -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = rng.normal(100, 5, 5), rng.normal(95, 12, 7)
        ours = relative_difference(a, b, 0.95, pooled=equal_var)
        assert ours.bounded
        assert (ours.ci_low, ours.ci_high) == pytest.approx(
            _fieller_by_root_finding(a, b, 0.95, equal_var=equal_var), rel=1e-9
        )
        # at R = 1 Fieller's inequality is that t-test: the verdicts agree
        proven = stats.ttest_ind(b, a, equal_var=equal_var).pvalue < 0.05
        assert ours.significant == proven


def test_compare_takes_the_variance_assumption_of_its_verdict() -> None:
    """A user's compare had said `Difference … (Student's t)`, then a Fieller interval
    with Welch's df (≈4.3, not 6) `-65.74% .. +3.18%: no difference proven`, then
    `Student's t above holds`. With Student's t holding the interval now pools, with the
    t ministat's Student's t takes (its table's 2.447 at 6 df)."""
    from netrig.report.verdicts import beyond_ministat, compare
    from netrig.stats.ministat import STUDENT_T

    before, after = [104.8, 86.4, 100.2, 91.9], [87.7, 64.2, 73.7, 33.4]
    assert stats.ttest_ind(after, before).pvalue < 0.05  # Student's t: a difference
    assert stats.ttest_ind(after, before, equal_var=False).pvalue > 0.05  # Welch's: none
    c = compare(before, after)
    assert c.student and not c.variances.differ
    assert not relative_difference(before, after).significant  # Welch's df, as it had been
    low, high = _fieller_by_root_finding(
        np.array(before), np.array(after), 0.95, equal_var=True, t=STUDENT_T[6][2]
    )
    assert (c.relative.ci_low, c.relative.ci_high) == pytest.approx((low, high), rel=1e-9)
    lines = beyond_ministat(c)
    assert lines[0].endswith("(Fieller, as Student's t): a real decrease"), lines[0]
    assert lines[1].endswith("Student's t above holds")
    # variances that differ: Welch's interval beside Welch's verdict
    jitter = compare([100, 100.1, 99.9, 100.05, 99.95], [90, 110, 95, 112, 85])
    assert jitter.variances.differ and not jitter.student
    assert jitter.relative == relative_difference(
        [100, 100.1, 99.9, 100.05, 99.95], [90, 110, 95, 112, 85]
    )
    assert "(Fieller, as Welch's t)" in beyond_ministat(jitter)[0]
    # two values a side: no ministat block, so Welch's verdict is printed, and its interval
    short = compare([10.0, 11.0], [14.0, 15.0])
    assert not short.student and "as Welch's t" in beyond_ministat(short, False)[0]


def test_relative_difference_unbounded_near_zero() -> None:
    r = relative_difference([-1.0, 1.5, -0.4, 0.2], [3.0, 4.0, 5.0])
    assert not r.bounded and not r.significant
    assert (r.ci_low, r.ci_high) == (-math.inf, math.inf)


def test_mann_whitney_matches_scipy() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.exponential(1.0, 30), rng.exponential(1.6, 25)
    ours = mann_whitney(a, b)
    ref = stats.mannwhitneyu(b, a, alternative="two-sided")
    assert (ours.u, ours.p_value) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    assert ours.probability_greater == pytest.approx(ref.statistic / (30 * 25))


def test_mann_whitney_extremes() -> None:
    apart = mann_whitney([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12])
    assert apart.probability_greater == 1.0 and apart.significant
    assert apart.p_value == pytest.approx(2 / math.comb(12, 6))  # exact test, all 6 above
    tied = mann_whitney([1, 2, 3], [1, 2, 3])
    assert tied.probability_greater == 0.5 and not tied.significant


def _permutation_p(a: list[float], b: list[float]) -> float:
    """scipy's exact permutation test of U: every split of the pooled values."""
    def u(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        return stats.mannwhitneyu(x, y, method="asymptotic", axis=axis).statistic

    return float(
        stats.permutation_test(
            (b, a), u, permutation_type="independent", n_resamples=np.inf, vectorized=True
        ).pvalue
    )


def test_mann_whitney_is_exact_with_ties_at_small_n() -> None:
    """3 against 3 tied values: scipy's default had taken the normal approximation,
    p = 0.047, below the 0.1 that three runs a side can reach, and said "Difference"."""
    for a, b in (([1, 1, 1], [3, 3, 3]), ([1, 3, 2], [7, 7, 4])):
        assert stats.mannwhitneyu(b, a).pvalue < 0.1  # the approximation
        m = mann_whitney(a, b)
        assert m.p_value == pytest.approx(0.1) and not m.significant
    rng = np.random.default_rng(3)
    for _ in range(5):  # many ties: small integers
        a = rng.integers(0, 4, 6).astype(float).tolist()
        b = rng.integers(1, 5, 7).astype(float).tolist()
        assert mann_whitney(a, b).p_value == pytest.approx(_permutation_p(a, b), rel=1e-12)


def test_mann_whitney_exact_without_ties_is_scipys_exact() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 10), rng.normal(0.8, 1, 10)  # C(20, 10) = 184,756 splits
    ours = mann_whitney(a, b)
    assert ours.p_value == pytest.approx(
        stats.mannwhitneyu(b, a, method="exact").pvalue, rel=1e-9
    )
    one = mann_whitney([5.0, 6.0], list(np.arange(300.0)))  # few on one side, many on the other
    assert one.p_value == pytest.approx(_permutation_p([5.0, 6.0], list(np.arange(300.0))))


@pytest.mark.parametrize(("effect", "runs"), [(1.0, 17), (0.8, 26), (0.5, 64)])
def test_runs_needed_matches_cohens_table(effect: float, runs: int) -> None:
    """Cohen (1988): two-sided alpha 0.05, power 0.8, d = 1 / 0.8 / 0.5 -> 17 / 26 / 64."""
    # sd 1 on both sides, 2 % of a mean of 50 * effect is a shift of `effect` sds
    need = runs_needed(1.0, 1.0, reference_mean=50.0 * effect, relative=0.02)
    assert need.runs_per_side == runs
    assert need.enough(runs) and not need.enough(runs - 1)


def test_runs_needed_is_the_smallest_that_reaches_the_power() -> None:
    need = runs_needed(3.0, 5.0, reference_mean=100.0, relative=0.03, confidence=0.99, power=0.9)
    n = need.runs_per_side
    assert welch_power(3.0, 5.0, 3.0, n, 0.99) >= 0.9 > welch_power(3.0, 5.0, 3.0, n - 1, 0.99)


@pytest.mark.parametrize("scale", [2.0**-1060, 2.0**-20, 1.0, 2.0**40, 2.0**1000])
def test_runs_needed_does_not_depend_on_the_unit(scale: float) -> None:
    """The same data in other units needs the same runs: values near 1e-320 (whose
    squares are 0) and near 1e300 (whose squares overflow) included. Powers of two keep
    every value exact, even subnormal ones."""
    need = runs_needed(2.0 * scale, 3.0 * scale, reference_mean=8.0 * scale, relative=0.5)
    n = need.runs_per_side
    assert n == runs_needed(2.0, 3.0, reference_mean=8.0, relative=0.5).runs_per_side
    assert welch_power(2.0, 3.0, 4.0, n) >= 0.8 > welch_power(2.0, 3.0, 4.0, n - 1)


def test_a_spread_beyond_floats_against_the_difference_has_no_estimate() -> None:
    with pytest.raises(NoEstimate):
        runs_needed(1e300, 1e300, reference_mean=1e-300)


def test_power_agrees_with_simulation() -> None:
    """Simulate 4000 experiments of 17 runs per side with a 1-sd shift: ~80 % detect it."""
    rng = np.random.default_rng(2024)
    a = rng.normal(0.0, 1.0, (4000, 17))
    b = rng.normal(1.0, 1.0, (4000, 17))
    hits = np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05)
    assert hits == pytest.approx(welch_power(1.0, 1.0, 1.0, 17), abs=0.025)


def test_runs_needed_for_samples() -> None:
    need = runs_needed_for(BEFORE, AFTER, relative=0.02)
    assert need.runs_per_side >= 2
    tighter = runs_needed_for(BEFORE, AFTER, relative=0.002)
    assert tighter.runs_per_side > need.runs_per_side


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        welch_t([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="between 0 and 1"):
        welch_t([1.0, 2.0], [1.0, 2.0], confidence=95)
    with pytest.raises(ValueError, match="zero"):
        runs_needed(1.0, 1.0, reference_mean=0.0)
