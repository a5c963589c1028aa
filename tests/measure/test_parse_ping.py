"""parse_ping against real iputils ping (20221126) output recorded in tests/data/ping/."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from netrig.base.sample import MeasurementFailed
from netrig.measure.parse_ping import PingResult, parse_ping

Recorded = Callable[[str, str], tuple[str, str]]


def parsed(recorded: Recorded, name: str) -> PingResult:
    return parse_ping(*recorded("ping", name))


def values(result: PingResult) -> dict[str, float]:
    summary = {s.metric: s.value for s in result.samples if s.t is None}
    assert len(summary) == len([s for s in result.samples if s.t is None])  # no duplicates
    return summary


def test_replies_and_statistics(recorded: Recorded) -> None:
    result = parsed(recorded, "ok")
    assert (result.target, result.address) == ("198.18.0.2", "198.18.0.2")
    assert [(r.seq, r.rtt_ms) for r in result.replies] == [
        (1, 0.293), (2, 0.055), (3, 0.071), (4, 0.067), (5, 0.069)
    ]
    assert values(result) == {
        "rtt_min": 0.055, "rtt_avg": 0.111, "rtt_max": 0.293, "rtt_mdev": 0.091,
        "sent": 5, "received": 5, "loss_percent": 0.0,
    }
    assert {s.unit for s in result.samples if s.metric.startswith("rtt")} == {"ms"}
    assert all(s.stream is None for s in result.samples)


def test_mdev_is_the_population_deviation_of_the_replies(recorded: Recorded) -> None:
    # parse_fping computes rtt_mdev for -C the same way; this pins down the definition.
    result = parsed(recorded, "ok")
    rtts = [r.rtt_ms for r in result.replies]
    mean = sum(rtts) / len(rtts)
    mdev = math.sqrt(sum((x - mean) ** 2 for x in rtts) / len(rtts))
    assert result.rtt_mdev == pytest.approx(mdev, abs=0.0006)
    assert result.rtt_avg == pytest.approx(mean, abs=0.0006)


def test_quiet_output_has_the_statistics_only(recorded: Recorded) -> None:
    result = parsed(recorded, "ok-quiet")
    assert result.replies == ()
    assert (result.rtt_min, result.rtt_avg, result.rtt_max, result.rtt_mdev) == (
        0.025, 0.059, 0.071, 0.017
    )
    assert (result.sent, result.received, result.loss_percent) == (5, 5, 0.0)


def test_single_probe_has_zero_mdev_but_a_real_rtt(recorded: Recorded) -> None:
    result = parsed(recorded, "ok-one")
    assert (result.rtt_avg, result.rtt_mdev, result.sent) == (0.025, 0.0, 1)


def test_ipv6_loopback_header(recorded: Recorded) -> None:
    result = parsed(recorded, "ok-ipv6-loopback")
    assert (result.target, result.address) == ("::1", "::1")
    assert (result.rtt_min, result.rtt_max, result.received) == (0.022, 0.062, 3)


def test_timestamps_give_per_reply_samples(recorded: Recorded) -> None:
    result = parsed(recorded, "ok-timestamps")
    assert [r.timestamp for r in result.replies] == [
        1795425827.467939, 1795425827.670108, 1795425827.873963
    ]
    per_reply = [s for s in result.samples if s.t is not None]
    assert [s.metric for s in per_reply] == ["rtt"] * 3
    assert [s.value for s in per_reply] == [0.069, 0.066, 0.026]
    assert [s.t for s in per_reply] == pytest.approx([0.0, 0.202169, 0.406024])


def test_partial_loss_is_a_result(recorded: Recorded) -> None:
    result = parsed(recorded, "loss-some")
    assert (result.sent, result.received, result.loss_percent) == (20, 10, 50.0)
    assert [r.seq for r in result.replies] == [3, 4, 7, 8, 11, 12, 14, 16, 17, 18]
    assert (result.rtt_min, result.rtt_avg, result.rtt_max) == (0.009, 0.038, 0.069)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("loss-all", "no reply from 198.18.0.99: 3 sent, 0 received, 100% loss"),
        ("loss-all-errors", "no reply from 198.18.0.99: 8 sent, 0 received, 100% loss"
                            " (Destination Host Unreachable from 198.18.0.1; 8 errors)"),
        # what came back, and from where (ICMP errors are rate-limited: 7 for 20 probes)
        ("ttl-exceeded", "no reply from 198.18.0.5: 20 sent, 0 received, 100% loss"
                         " (Time to live exceeded from 198.18.0.3; 7 errors)"),
    ],
)
def test_total_loss_fails_and_keeps_the_counts(recorded: Recorded, name: str, reason: str) -> None:
    with pytest.raises(MeasurementFailed) as caught:
        parsed(recorded, name)
    assert caught.value.reason == reason
    kept = {s.metric: s.value for s in caught.value.samples}
    assert kept["received"] == 0 and kept["loss_percent"] == 100.0
    assert not any(s.metric.startswith("rtt") for s in caught.value.samples)


def test_errors_are_counted(recorded: Recorded) -> None:
    stdout, _ = recorded("ping", "loss-all-errors")
    assert "+8 errors" in stdout
    # Same line with one reply, to see the count parsed where the run succeeds.
    stdout = stdout.replace("0 received, +8 errors, 100%", "1 received, +7 errors, 87.5%")
    stdout += "rtt min/avg/max/mdev = 1.0/1.0/1.0/0.000 ms\n"
    result = parse_ping(stdout)
    assert (result.errors, result.received, result.loss_percent) == (7, 1, 87.5)


def test_no_route_fails_with_pings_own_words(
    recorded: Recorded, exit_status: Callable[[str, str], int]
) -> None:
    assert exit_status("ping", "no-route") == 2
    with pytest.raises(MeasurementFailed) as caught:
        parsed(recorded, "no-route")
    assert caught.value.reason == "ping: connect: Network is unreachable"


def test_duplicates_do_not_count_as_replies() -> None:
    text = (
        "PING 192.0.2.1 (192.0.2.1) 56(84) bytes of data.\n"
        "64 bytes from 192.0.2.1: icmp_seq=1 ttl=64 time=0.100 ms\n"
        "64 bytes from 192.0.2.1: icmp_seq=1 ttl=64 time=0.300 ms (DUP!)\n"
        "\n--- 192.0.2.1 ping statistics ---\n"
        "1 packets transmitted, 1 received, +1 duplicates, 0% packet loss, time 0ms\n"
        "rtt min/avg/max/mdev = 0.100/0.200/0.300/0.100 ms\n"
    )
    result = parse_ping(text)
    assert [r.rtt_ms for r in result.replies] == [0.1]
    assert result.duplicates == 1


@pytest.mark.parametrize(
    ("stdout", "stderr", "reason"),
    [
        ("", "ping: nosuchhost: Name or service not known", "ping: nosuchhost: Name or service"),
        ("garbage\n", "", "ping: printed no statistics"),
        ("PING 192.0.2.1 (192.0.2.1) 56(84) bytes of data.\n", "", "ping 192.0.2.1: printed no"),
        ("", "", "ping: printed no statistics"),
    ],
)
def test_garbage_fails_with_a_reason(stdout: str, stderr: str, reason: str) -> None:
    with pytest.raises(MeasurementFailed) as caught:
        parse_ping(stdout, stderr)
    assert caught.value.reason.startswith(reason)
