"""parse_fping against real fping 5.1 output recorded in tests/data/fping/.

The targets: 198.18.0.2 and .3 answer, 198.18.0.99 is on-link but nobody owns it, and
198.18.9.9 has no route.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from netrig.base.sample import MeasurementFailed
from netrig.measure.parse_fping import FpingResult, parse_fping

Recorded = Callable[[str, str], tuple[str, str]]


def parsed(recorded: Recorded, name: str) -> FpingResult:
    return parse_fping(*recorded("fping", name))


def by_target(result: FpingResult, target: str) -> dict[str, float]:
    samples = [s for s in result.samples if s.stream == target]
    assert all(s.t is None for s in samples)
    return {s.metric: s.value for s in samples}


def test_vector_lists_every_rtt_per_target(recorded: Recorded) -> None:
    result = parsed(recorded, "vector")
    assert [t.target for t in result.targets] == [
        "198.18.0.2", "198.18.0.3", "198.18.0.99", "198.18.9.9"
    ]
    first = result.target("198.18.0.2")
    assert first.rtts == (0.056, 0.050, 0.062, 0.029, 0.020)
    assert (first.rtt_min, first.rtt_max) == (0.020, 0.062)
    assert first.rtt_avg == pytest.approx(0.0434)
    assert (first.sent, first.received, first.loss_percent) == (5, 5, 0.0)
    assert result.target("198.18.0.99").rtts == (None,) * 5
    assert result.unreachable == ("198.18.0.99", "198.18.9.9")


def test_vector_samples_carry_the_target(recorded: Recorded) -> None:
    result = parsed(recorded, "vector")
    answered = by_target(result, "198.18.0.3")
    assert answered["rtt_min"] == 0.005 and answered["rtt_max"] == 0.013
    assert answered["rtt_mdev"] == pytest.approx(0.0026833, abs=1e-6)
    assert (answered["sent"], answered["received"], answered["loss_percent"]) == (5, 5, 0)
    # A silent target is 100 % loss, with no RTT at all (never an RTT of 0).
    assert by_target(result, "198.18.9.9") == {"sent": 5, "received": 0, "loss_percent": 100.0}


def test_vector_with_some_loss(recorded: Recorded) -> None:
    result = parsed(recorded, "vector-loss-some")
    target = result.target("198.18.0.2")
    assert target.rtts == (0.034, None, 0.015, 0.008, None, None, 0.068, 0.010, None, 0.071)
    assert (target.sent, target.received, target.loss_percent) == (10, 6, 40.0)
    assert target.rtt_avg == pytest.approx((0.034 + 0.015 + 0.008 + 0.068 + 0.010 + 0.071) / 6)
    assert result.target("198.18.0.3").loss_percent == 30.0
    assert result.unreachable == ()


def test_count_summaries(recorded: Recorded) -> None:
    result = parsed(recorded, "count")
    assert by_target(result, "198.18.0.2") == {
        "rtt_min": 0.044, "rtt_avg": 0.061, "rtt_max": 0.071,
        "sent": 5, "received": 5, "loss_percent": 0.0,
    }
    assert by_target(result, "198.18.0.3")["rtt_avg"] == 0.039
    assert by_target(result, "198.18.0.99") == {"sent": 5, "received": 0, "loss_percent": 100.0}
    assert result.unreachable == ("198.18.0.99", "198.18.9.9")
    assert result.target("198.18.0.2").rtt_mdev is None  # -c gives no deviation


def test_count_with_some_loss(recorded: Recorded) -> None:
    result = parsed(recorded, "count-loss-some")
    assert by_target(result, "198.18.0.2") == {
        "rtt_min": 0.018, "rtt_avg": 0.049, "rtt_max": 0.073,
        "sent": 10, "received": 6, "loss_percent": 40.0,
    }
    assert result.target("198.18.0.3").received == 8


@pytest.mark.parametrize("name", ["count-verbose", "vector-verbose"])
def test_per_probe_lines_without_q_are_ignored(recorded: Recorded, name: str) -> None:
    stdout, _ = recorded("fping", name)
    assert " : [0], " in stdout
    result = parsed(recorded, name)
    assert [t.target for t in result.targets] == ["198.18.0.2", "198.18.0.99"]
    assert result.target("198.18.0.2").rtt_max == 0.064
    assert result.target("198.18.0.2").sent == 3
    assert result.unreachable == ("198.18.0.99",)


def test_alive_mode_and_icmp_errors(recorded: Recorded) -> None:
    result = parsed(recorded, "alive")
    assert [(t.target, t.alive) for t in result.targets] == [
        ("198.18.0.2", True), ("198.18.0.3", True), ("198.18.0.99", False)
    ]
    assert result.target("198.18.0.99").errors == ["ICMP Host Unreachable"]
    assert by_target(result, "198.18.0.2") == {"reachable": 1}
    assert by_target(result, "198.18.0.99") == {"reachable": 0}


def test_no_target_answering_fails(
    recorded: Recorded, exit_status: Callable[[str, str], int]
) -> None:
    assert exit_status("fping", "all-lost") == 1
    with pytest.raises(MeasurementFailed) as caught:
        parsed(recorded, "all-lost")
    assert caught.value.reason == "no reply from any target: 198.18.0.99"
    assert {s.metric: s.value for s in caught.value.samples}["loss_percent"] == 100.0


def test_unreachable_alone_fails_with_the_icmp_error() -> None:
    stderr = (
        "ICMP Host Unreachable from 198.18.0.1 for ICMP Echo sent to 198.18.0.99\n"
    )
    with pytest.raises(MeasurementFailed) as caught:
        parse_fping("198.18.0.99 is unreachable\n", stderr)
    assert caught.value.reason == (
        "no reply from any target: 198.18.0.99 (ICMP Host Unreachable)"
    )


@pytest.mark.parametrize(
    ("stdout", "stderr", "words"),
    [
        ("", "", "fping reported no target: no output"),
        ("", "nosuchhost: Name or service not known", "Name or service not known"),
        ("hello\n", "", "fping reported no target: hello"),
    ],
)
def test_garbage_fails_with_a_reason(stdout: str, stderr: str, words: str) -> None:
    with pytest.raises(MeasurementFailed, match=words):
        parse_fping(stdout, stderr)
