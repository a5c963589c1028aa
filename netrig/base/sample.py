"""The unit of measured data, and the failure that stands in for it.

Measurement plugins and their parsers produce `Sample`s, the runner collects them and the
results store persists them, so the type lives below all three. A tool that failed raises
`MeasurementFailed`: the caller stores a failed run with the reason instead of a zero.

    >>> Sample("throughput", 9.4e9, "bit/s")
    Sample(metric='throughput', value=9400000000.0, unit='bit/s', t=None, stream=None)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured value.

    `t` is the start of the interval in seconds since the measurement began; None marks a
    summary value of the whole run. `stream` names a part of the measurement (a parallel
    stream, a ping target) when there are several; None is the measurement as a whole.
    """

    metric: str
    value: float
    unit: str
    t: float | None = None
    stream: str | None = None

    def __post_init__(self) -> None:
        # Checked here, once, so a NaN or a stray string never reaches the database.
        if not self.metric:
            raise ValueError("a sample needs a metric name")
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise TypeError(f"sample {self.metric!r}: value must be a number, not {self.value!r}")
        if not math.isfinite(self.value):
            raise ValueError(f"sample {self.metric!r}: value must be finite, not {self.value!r}")
        object.__setattr__(self, "value", float(self.value))
        if self.t is not None:
            object.__setattr__(self, "t", float(self.t))


class MeasurementFailed(Exception):
    """A tool ran but measured nothing usable (error, no reply, unreadable output).

    `reason` is one line for the results table; `samples` keeps whatever the tool did
    report (e.g. ping's 100 % loss counters), so the caller may store it with the failed run;
    `stderr` is the tool's error output, stored with the run to explain the failure.
    """

    def __init__(self, reason: str, samples: Sequence[Sample] = (), stderr: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.samples: tuple[Sample, ...] = tuple(samples)
        self.stderr = stderr
