"""Sample refuses values that must never reach the store; MeasurementFailed keeps its data."""

from __future__ import annotations

import math

import pytest

from netrig.base.sample import MeasurementFailed, Sample


def test_numbers_become_floats() -> None:
    sample = Sample("retransmits", 3, "segments", t=1)
    assert sample.value == 3.0 and isinstance(sample.value, float)
    assert sample.t == 1.0 and isinstance(sample.t, float)
    assert sample.stream is None


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        Sample("throughput", value, "bit/s")


@pytest.mark.parametrize("value", ["9.4e9", None, True])
def test_non_numbers_are_refused(value: object) -> None:
    with pytest.raises(TypeError, match="number"):
        Sample("throughput", value, "bit/s")  # type: ignore[arg-type]


def test_a_metric_name_is_required() -> None:
    with pytest.raises(ValueError, match="metric"):
        Sample("", 1.0, "")


def test_failure_carries_reason_and_samples() -> None:
    kept = [Sample("loss_percent", 100, "%")]
    failure = MeasurementFailed("no reply from 192.0.2.2", kept)
    assert str(failure) == failure.reason == "no reply from 192.0.2.2"
    assert failure.samples == tuple(kept)
    assert MeasurementFailed("x").samples == ()
