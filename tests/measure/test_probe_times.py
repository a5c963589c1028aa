"""Where each probe of `ping per_probe` goes on the clock: fping's own stamps, not number ×
interval from one start (fping's period drifts: the outage of a run with events moved with
it, ~0.1 s within a few seconds)."""

from __future__ import annotations

import pytest

from netrig.measure.ping import _send_times, probe_times

START = 1_700_000_000.0
PERIOD = 0.0103  # what fping really kept for `-p 10`


def stamped(seq: int, rtt_ms: float = 0.05) -> str:
    sent = START + seq * PERIOD
    return f"[{sent + rtt_ms / 1000:.6f}] 198.18.0.2 : [{seq}], 64 bytes, {rtt_ms} ms (x avg, 0% loss)"


def test_an_answered_probe_is_where_its_reply_says_and_a_lost_one_between_its_neighbours() -> None:
    answered = [i for i in range(300) if not 100 <= i < 150]  # 100–149 lost
    sent = _send_times("\n".join(stamped(i) for i in answered))
    times = probe_times(sent["198.18.0.2"], 300, 0.010, began=START - 0.02)
    assert times[99] == pytest.approx(START + 99 * PERIOD, abs=1e-6)
    assert times[100] == pytest.approx(START + 100 * PERIOD, abs=1e-6)  # the first lost
    assert times[149] == pytest.approx(START + 149 * PERIOD, abs=1e-6)
    assert times[299] == pytest.approx(START + 299 * PERIOD, abs=1e-6)
    # number × interval would have put probe 299 ~0.9 s early: 3 ms a probe, 300 probes
    assert times[299] - (START + 299 * 0.010) == pytest.approx(0.0897, abs=1e-3)


def test_probes_before_the_first_and_after_the_last_answer_are_an_interval_apart() -> None:
    sent = _send_times("\n".join(stamped(i) for i in range(10, 20)))
    times = probe_times(sent["198.18.0.2"], 30, 0.010, began=START)
    assert times[0] == pytest.approx(START + 10 * PERIOD - 10 * 0.010, abs=1e-6)
    assert times[29] == pytest.approx(START + 19 * PERIOD + 10 * 0.010, abs=1e-6)
    assert times == sorted(times)


def test_nothing_answered_counts_from_the_start() -> None:
    assert probe_times({}, 3, 0.5, began=10.0) == [10.0, 10.5, 11.0]
    assert probe_times({5: 99.0}, 3, 0.5, began=10.0) == [10.0, 10.5, 11.0]  # no such probe
