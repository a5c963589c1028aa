"""Parsing of human units in lab files: rates (tc's spelling), durations, percentages."""

from __future__ import annotations

import math
import re
from typing import Any

# tc's convention: "bit" units are bits per second, "bps" units are BYTES per second.
_RATE_UNITS = {
    "": 1,
    "bit": 1,
    "kbit": 10**3,
    "mbit": 10**6,
    "gbit": 10**9,
    "tbit": 10**12,
    "bps": 8,
    "kbps": 8 * 10**3,
    "mbps": 8 * 10**6,
    "gbps": 8 * 10**9,
    "tbps": 8 * 10**12,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
}
_TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}
_NUMBER = r"(\d+(?:\.\d+)?)"


def _text_or_number(value: Any, what: str, example: str) -> str | int | float:
    """A YAML value may be anything (null, a list, nan): refuse what is no text or number."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a {what}; write e.g. {example}")
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not a {what}; write e.g. {example}")
    return value


def parse_rate(text: str | int | float) -> int:
    """'100mbit' → 100_000_000 bit/s (tc units; '1mbps' is one megaBYTE per second)."""
    text = _text_or_number(text, "rate", "100mbit")
    if isinstance(text, int | float):
        if text <= 0:
            raise ValueError("a rate must be positive")
        return int(text)
    m = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]*)", text.strip())
    if not m or m.group(2).lower() not in _RATE_UNITS:
        raise ValueError(
            f"{text!r} is not a rate; write e.g. 100mbit, 1gbit, 500kbit (tc units: bit/kbit/"
            "mbit/gbit; kbps/mbps/gbps mean BYTES per second)"
        )
    value = float(m.group(1)) * _RATE_UNITS[m.group(2).lower()]
    if value < 8:
        raise ValueError(f"{text!r} is too small a rate")
    return int(value)


# A link's rate limit is a token bucket (tbf) set through pyroute2, whose rate is 32-bit
# bytes per second (no rate64) and whose buffer, in ticks, overflows 32 bits below ~480 bit/s
TBF_MIN_RATE = 1_000
TBF_MAX_RATE = (2**32 - 1) * 8  # 34.36 gbit


def parse_link_rate(text: str | int | float) -> int:
    """parse_rate, within what a link's token bucket can take."""
    value = parse_rate(text)
    if not TBF_MIN_RATE <= value <= TBF_MAX_RATE:
        raise ValueError(
            f"{text!r}: a link's rate limit must be between 1kbit and 34gbit (its token "
            "bucket's rate is 32-bit bytes per second)"
        )
    return value


def parse_duration(text: str | int | float) -> float:
    """'10ms' → 0.01 seconds; a bare number is seconds."""
    text = _text_or_number(text, "duration", "10ms, 1.5s")
    if isinstance(text, int | float):
        return float(text)
    m = re.fullmatch(_NUMBER + r"\s*([a-z]*)", text.strip())
    if not m or (m.group(2) or "s") not in _TIME_UNITS:
        raise ValueError(f"{text!r} is not a duration; write e.g. 10ms, 1.5s, 200us")
    return float(m.group(1)) * _TIME_UNITS[m.group(2) or "s"]


def parse_percent(text: str | int | float) -> float:
    """'1%' or 1 → 1.0 (percent)."""
    text = _text_or_number(text, "percentage", "1% or 0.5%")
    value = float(text) if isinstance(text, int | float) else None
    if value is None:
        m = re.fullmatch(_NUMBER + r"\s*%?", str(text).strip())
        if not m:
            raise ValueError(f"{text!r} is not a percentage; write e.g. 1% or 0.5%")
        value = float(m.group(1))
    if not 0 <= value <= 100:
        raise ValueError(f"{text!r}: a percentage is between 0 and 100")
    return value
