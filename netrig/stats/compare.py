"""Comparisons ministat lacks, for `netrig compare`: is a change real, how big, and is N enough?

Pure functions over two samples of numbers, `reference` (before) and `candidate` (after);
differences are always candidate - reference, as in ministat's verdict lines.

- welch_t: Student's t without ministat's equal-variance assumption.
- relative_difference: (candidate / reference - 1) with a Fieller confidence interval, which,
  unlike ministat's ``e / avg``, also counts the uncertainty of the reference mean (under
  Student's or Welch's variance assumption: the one of the verdict printed beside it).
- mann_whitney: a rank test for skewed data such as latencies (exact for small samples,
  ties included).
- runs_needed: how many runs per side make a given relative difference detectable.

    >>> w = welch_t([10.1, 9.9, 10.0, 10.2], [10.6, 10.4, 10.5, 10.7])
    >>> w.significant, round(w.difference, 3)
    (True, 0.5)
    >>> runs_needed(1.0, 1.0, reference_mean=50.0, relative=0.02).runs_per_side
    17
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from netrig.stats.spread import stddev, variance

Sample = Sequence[float] | np.ndarray


def _as_sample(values: Sample, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or len(a) < 2:
        raise ValueError(f"{what} needs at least 2 values, got {a.size}")
    return a


def _check_level(level: float, what: str) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"{what} must be a fraction between 0 and 1, got {level}")


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom for two sample variances."""
    qa, qb = var_a / n_a, var_b / n_b
    denominator = qa * qa / (n_a - 1) + qb * qb / (n_b - 1)
    return (qa + qb) ** 2 / denominator if denominator > 0 else float(n_a + n_b - 2)


# -- Welch's t --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WelchResult:
    """Welch's two-sided t test of candidate - reference."""

    difference: float  # mean(candidate) - mean(reference)
    ci_low: float  # confidence interval of the difference
    ci_high: float
    t: float
    df: float
    p_value: float
    confidence: float
    significant: bool  # the interval excludes 0 (p < 1 - confidence)

    def verdict(self) -> str:
        """ministat-style wording, so both tools read the same."""
        pct = self.confidence * 100
        if not self.significant:
            return f"No difference proven at {pct:.1f}% confidence (Welch's t)"
        half = (self.ci_high - self.ci_low) / 2
        return f"Difference at {pct:.1f}% confidence: {self.difference:g} +/- {half:g} (Welch's t)"


def welch_t(reference: Sample, candidate: Sample, confidence: float = 0.95) -> WelchResult:
    """Welch's t test: right when the two variances differ (e.g. a change adds jitter)."""
    _check_level(confidence, "confidence")
    a, b = _as_sample(reference, "reference"), _as_sample(candidate, "candidate")
    va, vb = variance(a), variance(b)  # rounding noise of a constant sample is no spread
    d = float(np.mean(b) - np.mean(a))
    se = math.sqrt(va / len(a) + vb / len(b))
    df = welch_df(va, len(a), vb, len(b))
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    if se > 0:
        t = d / se
        p = float(2 * stats.t.sf(abs(t), df))
    else:  # both samples constant: either identical or certainly different
        t = 0.0 if d == 0 else math.copysign(math.inf, d)
        p = 1.0 if d == 0 else 0.0
    return WelchResult(d, d - half, d + half, t, df, p, confidence, p < 1 - confidence)


# -- relative difference ----------------------------------------------------------------------


@dataclass(frozen=True)
class RelativeDifference:
    """candidate / reference - 1, in percent, with a Fieller confidence interval.

    `bounded` is False when the reference mean is not clearly away from zero at this
    confidence; the interval is then (-inf, inf) and no percentage is meaningful.
    """

    percent: float
    ci_low: float  # percent
    ci_high: float  # percent
    confidence: float
    bounded: bool

    @property
    def significant(self) -> bool:
        return self.bounded and (self.ci_low > 0 or self.ci_high < 0)


def relative_difference(
    reference: Sample,
    candidate: Sample,
    confidence: float = 0.95,
    *,
    pooled: bool = False,
    critical_t: float | None = None,
) -> RelativeDifference:
    """Fieller's interval for the ratio of two independent means, as a % change.

    Solves (mb - R ma)^2 <= t^2 (vb + R^2 va) for R, with va, vb the variances of the
    means. `pooled`: both from the pooled variance and t with n_a + n_b - 2 degrees of
    freedom, Student's assumption; else each side's own variance and Welch's degrees of
    freedom. Take the one whose t-test the reader is told holds: the interval then
    excludes 0 % exactly when that test proves a difference (at R = 1 the inequality is
    that test), where Welch's df beside Student's verdict had contradicted it.
    `critical_t`: the t that test uses, when not scipy's exact quantile at this df
    (ministat's table: 1.960 at 95 % beyond 100 df, 3 decimals below), so that the
    interval and the test's verdict come from one t.
    """
    _check_level(confidence, "confidence")
    a, b = _as_sample(reference, "reference"), _as_sample(candidate, "candidate")
    ma, mb = float(np.mean(a)), float(np.mean(b))
    sa2, sb2 = variance(a), variance(b)
    if pooled:
        df = float(len(a) + len(b) - 2)
        sa2 = sb2 = ((len(a) - 1) * sa2 + (len(b) - 1) * sb2) / df
    else:
        df = welch_df(sa2, len(a), sb2, len(b))
    va, vb = sa2 / len(a), sb2 / len(b)
    t = float(stats.t.ppf(0.5 + confidence / 2, df)) if critical_t is None else critical_t
    if ma == 0:
        return RelativeDifference(math.nan, -math.inf, math.inf, confidence, False)
    percent = (mb / ma - 1) * 100
    denominator = ma * ma - t * t * va
    if denominator <= 0:
        return RelativeDifference(percent, -math.inf, math.inf, confidence, False)
    root = t * math.sqrt(max(ma * ma * vb + mb * mb * va - t * t * va * vb, 0.0))
    lo, hi = sorted(((ma * mb - root) / denominator, (ma * mb + root) / denominator))
    return RelativeDifference(percent, (lo - 1) * 100, (hi - 1) * 100, confidence, True)


# -- Mann–Whitney U ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MannWhitneyResult:
    """Two-sided Mann–Whitney U test; no normality assumed."""

    u: float  # U of the candidate sample
    p_value: float
    confidence: float
    significant: bool
    #: P(candidate > reference) + P(tie)/2: 0.5 = no shift, 1 = candidate always larger
    probability_greater: float


#: the exact p is worked out over every split of the values into the two sides while there
#: are at most this many (C(n_a + n_b, n_a): 10 against 10 is 184,756); above, the normal
#: approximation (tie-corrected) is close enough
EXACT_SPLITS = 200_000


def exact_splits(n_a: int, n_b: int) -> bool:
    """Is the Mann–Whitney p of n_a against n_b values exact (see EXACT_SPLITS)?"""
    return math.comb(n_a + n_b, n_a) <= EXACT_SPLITS


def mann_whitney(
    reference: Sample, candidate: Sample, confidence: float = 0.95
) -> MannWhitneyResult:
    """Rank test for data with outliers or long tails (latency), where t tests mislead.

    The two-sided p is exact while the samples are small (exact_splits), tied values too:
    scipy's default falls back to the normal approximation on ties, which gave 3 against
    3 tied values p = 0.047, below the 0.1 that three runs a side can ever reach.
    """
    _check_level(confidence, "confidence")
    a, b = _as_sample(reference, "reference"), _as_sample(candidate, "candidate")
    u = float(stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic").statistic)
    if exact_splits(len(a), len(b)):
        p = _exact_rank_p(a, b)
    else:
        p = float(stats.mannwhitneyu(b, a, alternative="two-sided").pvalue)
    return MannWhitneyResult(u, p, confidence, p < 1 - confidence, u / (len(a) * len(b)))


def _exact_rank_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided permutation p of the rank sum (so of U) over every split of the pooled
    values into sides of len(a) and len(b): 2 min(P(S <= s), P(S >= s)), at most 1, as
    scipy's exact test and its permutation_test compute it. Mid-ranks of ties, doubled,
    are whole numbers, so the sums compare exactly."""
    ranks = np.rint(2 * stats.rankdata(np.concatenate((a, b)))).astype(np.int64)
    k = min(len(a), len(b))
    side = ranks[: len(a)] if len(a) == k else ranks[len(a) :]
    observed = int(side.sum())
    count = math.comb(len(ranks), k)
    picks = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(len(ranks)), k)),
        dtype=np.int64,
        count=count * k,
    ).reshape(count, k)
    sums = ranks[picks].sum(axis=1)
    low = np.count_nonzero(sums <= observed) / count
    high = np.count_nonzero(sums >= observed) / count
    return float(min(1.0, 2 * min(low, high)))


# -- how many runs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleSize:
    """Runs per side for a two-sided Welch test to detect `relative` with `power`."""

    runs_per_side: int
    relative: float  # the relative difference to detect, e.g. 0.02 for 2 %
    confidence: float
    power: float

    def enough(self, runs: int) -> bool:
        return runs >= self.runs_per_side


def welch_power(
    sd_a: float, sd_b: float, delta: float, runs: int, confidence: float = 0.95
) -> float:
    """Power of the two-sided Welch test with `runs` per side against a true shift `delta`.

    Uses the noncentral t distribution with Welch–Satterthwaite degrees of freedom.
    """
    _check_level(confidence, "confidence")
    if runs < 2:
        return 0.0
    se = math.sqrt((sd_a * sd_a + sd_b * sd_b) / runs)
    if se == 0:
        return 1.0 if delta != 0 else 1 - confidence
    df = welch_df(sd_a * sd_a, runs, sd_b * sd_b, runs)
    crit = float(stats.t.ppf(0.5 + confidence / 2, df))
    nc = abs(delta) / se
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


class NoEstimate(ValueError):
    """A spread so large against the difference to detect that its square overflows: no
    number of runs can be worked out."""


def runs_needed(
    sd_a: float,
    sd_b: float,
    reference_mean: float,
    relative: float = 0.02,
    confidence: float = 0.95,
    power: float = 0.8,
    max_runs: int = 1_000_000,
) -> SampleSize:
    """Smallest runs per side so that a `relative` change of `reference_mean` is detected.

    Starts from the normal approximation and steps to the exact noncentral-t answer.
    """
    _check_level(confidence, "confidence")
    _check_level(power, "power")
    delta = abs(relative * reference_mean)
    if delta == 0:
        raise ValueError("the difference to detect is zero")
    z = stats.norm.ppf(0.5 + confidence / 2) + stats.norm.ppf(power)
    # in units of delta (the answer does not depend on the scale): values near 1e-320 have
    # squares of 0, their ratios to delta do not
    with np.errstate(all="ignore"):
        a, b = float(np.float64(sd_a) / delta), float(np.float64(sd_b) / delta)
        estimate = float(np.float64(z * z) * (np.float64(a) * a + np.float64(b) * b))
    if not math.isfinite(estimate):
        raise NoEstimate("the spread is too large against the difference to estimate runs")
    n = max(2, math.ceil(estimate))
    n = min(n, max_runs)
    while n > 2 and welch_power(a, b, 1.0, n - 1, confidence) >= power:
        n -= 1
    while n < max_runs and welch_power(a, b, 1.0, n, confidence) < power:
        n += 1
    return SampleSize(n, relative, confidence, power)


def runs_needed_for(
    reference: Sample,
    candidate: Sample,
    relative: float = 0.02,
    confidence: float = 0.95,
    power: float = 0.8,
) -> SampleSize:
    """runs_needed with the spreads and reference mean estimated from two samples."""
    a, b = _as_sample(reference, "reference"), _as_sample(candidate, "candidate")
    return runs_needed(
        stddev(a),
        stddev(b),
        float(np.mean(a)),
        relative,
        confidence,
        power,
    )
