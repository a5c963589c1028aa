"""Readable units for axes and tables: 9.41e9 bit/s is shown as 9.41 Gbit/s.

The store keeps base units (bit/s, s, ms as the tool reports); a plot or table picks one
prefix for a whole axis or column from the largest value, so every number on it reads
alike.

    >>> display_scale("bit/s", [9.41e9, 1.2e9])
    Scale(factor=1000000000.0, unit='Gbit/s')
    >>> display_scale("ms", [0.043, 0.2]).unit
    'µs'
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# For each stored unit: (factor, display unit) from the largest prefix down. A value v is
# shown as v / factor in the display unit.
_LADDERS: dict[str, tuple[tuple[float, str], ...]] = {
    "bit/s": ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s")),
    "pps": ((1e9, "Gpps"), (1e6, "Mpps"), (1e3, "kpps"), (1.0, "pps")),
    "packets/s": ((1e9, "Gpps"), (1e6, "Mpps"), (1e3, "kpps"), (1.0, "pps")),
    "B/s": ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")),
    "bytes": ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "bytes")),
    "s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")),
    "ms": ((1e3, "s"), (1.0, "ms"), (1e-3, "µs"), (1e-6, "ns")),
    "us": ((1e6, "s"), (1e3, "ms"), (1.0, "µs"), (1e-3, "ns")),
    "µs": ((1e6, "s"), (1e3, "ms"), (1.0, "µs"), (1e-3, "ns")),
    "ns": ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")),
}


@dataclass(frozen=True)
class Scale:
    """Divide by `factor` to show a value in `unit`."""

    factor: float
    unit: str

    def __call__(self, value: float) -> float:
        return value / self.factor

    def text(self, value: float | None, digits: int = 4) -> str:
        """The value in this unit as number_text writes it; "-" for None or NaN."""
        if value is None or math.isnan(value):
            return "-"
        return number_text(value / self.factor, digits)


def number_text(value: float, digits: int = 4) -> str:
    """`digits` significant digits; a number of 10,000 to 10^15 whole (17289, not
    1.729e+04: req/s has no larger unit to scale to). The terminal's tables and the
    report's both write numbers so, and so read alike.

    >>> number_text(17289.4), number_text(9.41), number_text(2.5e-5)
    ('17289', '9.41', '2.5e-05')
    """
    if 1e4 <= abs(value) < 1e15:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def display_scale(unit: str, values: Iterable[float]) -> Scale:
    """The prefix under which the largest |value| reads between 1 and 1000."""
    ladder = _LADDERS.get(unit)
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    if ladder is None or not finite or max(finite) == 0:
        return Scale(1.0, unit)
    top = max(finite)
    for factor, name in ladder:
        if top >= factor:
            return Scale(factor, name)
    return Scale(*ladder[-1])


def axis_label(quantity: str, scale: Scale) -> str:
    """`throughput (Gbit/s)`; the quantity alone for a unit-less metric."""
    return f"{quantity} ({scale.unit})" if scale.unit else quantity
