"""Sample variance and standard deviation, with rounding noise read as the zero it is.

numpy's two-pass variance of a constant sample is not always 0: var([0.35] * 3) is
4.6e-33 (the mean 0.35 is not exact in binary), while var([0.15] * 3) is 0. Taken at its
word, that noise made an F test of two constant samples say "Variances differ (F = inf,
p = 0)" and switch to Welch's t, and the report show a stddev of 6.8e-14 where the
end-of-run table prints 0. A spread within rounding of the values' magnitude is zero
here, in `netrig compare`, in the report and in every reducer.

    >>> variance([0.35, 0.35, 0.35]), stddev([0.15, 0.15, 0.15]), stddev([1.0, 2.0, 3.0])
    (0.0, 0.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: a standard deviation at most this fraction of the mean's magnitude is rounding noise
#: (a double holds ~16 digits; four are left for the sums of a few thousand values)
ROUNDING = 1e-12


def variance(values: Sequence[float] | np.ndarray) -> float:
    """The sample variance (N - 1), 0 when its square root is within rounding of the
    mean (ROUNDING); NaN below two values."""
    a = np.asarray(values, dtype=np.float64)
    if a.size < 2:
        return math.nan
    v = float(np.var(a, ddof=1))
    if math.sqrt(v) <= ROUNDING * abs(float(np.mean(a))):
        return 0.0
    return v


def stddev(values: Sequence[float] | np.ndarray) -> float:
    """The sample standard deviation (N - 1), rounding noise as 0 (see variance)."""
    return math.sqrt(variance(values))
