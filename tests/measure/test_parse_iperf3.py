"""parse_iperf3 against real iperf3 3.12 --json runs recorded in tests/data/iperf3/.

Expected values are read from the recorded JSON by their documented paths, so each test
checks that the parser picked the right number (receiver, not sender; reverse direction; …).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure.parse_iperf3 import Iperf3Result, parse_iperf3

DATA = Path(__file__).resolve().parent.parent / "data" / "iperf3"
ALL = sorted(path.stem for path in DATA.glob("*.cmd"))
GOOD = [name for name in ALL if not name.startswith("error-")]


def load(name: str) -> tuple[str, dict[str, Any]]:
    text = (DATA / f"{name}.stdout").read_text()
    return text, json.loads(text)


def parse(name: str) -> Iperf3Result:
    return parse_iperf3((DATA / f"{name}.stdout").read_text(),
                        (DATA / f"{name}.stderr").read_text())


def summary(result: Iperf3Result, metric: str, stream: str | None = None) -> float:
    found = [s.value for s in result.samples
             if s.metric == metric and s.t is None and s.stream == stream]
    assert len(found) == 1, (metric, stream, found)
    return found[0]


def intervals(result: Iperf3Result, metric: str, stream: str | None = None) -> list[Sample]:
    return [s for s in result.samples
            if s.metric == metric and s.t is not None and s.stream == stream]


def test_the_recordings_cover_the_cases_the_plugins_use() -> None:
    expected = {"tcp", "tcp-p2", "tcp-reverse", "tcp-bidir", "tcp-bidir-p2", "tcp-omit", "udp",
                "udp-loss", "udp-reverse", "udp-bidir", "udp-p2", "error-refused",
                "error-noroute", "udp-loss-server", "tcp-server", "tcp-p2-server",
                "tcp-reverse-server"}
    assert expected <= set(ALL)


@pytest.mark.parametrize("name", GOOD)
def test_summary_throughput_is_the_receiver_sum(name: str) -> None:
    _, doc = load(name)
    result = parse(name)
    received = doc["end"]["sum_received"]["bits_per_second"]
    assert result.throughput == received > 0
    assert summary(result, "throughput") == received
    assert result.sender_throughput == doc["end"]["sum_sent"]["bits_per_second"]
    assert summary(result, "sender_throughput") == result.sender_throughput
    assert result.duration == doc["end"]["sum_received"]["seconds"]
    assert result.protocol == doc["start"]["test_start"]["protocol"]
    assert result.version == "iperf 3.12"


@pytest.mark.parametrize("name", GOOD)
def test_cpu_use_of_both_ends(name: str) -> None:
    _, doc = load(name)
    cpu = doc["end"]["cpu_utilization_percent"]
    result = parse(name)
    assert (result.cpu_client, result.cpu_server) == (cpu["host_total"], cpu["remote_total"])
    assert summary(result, "cpu_client") == cpu["host_total"]
    assert summary(result, "cpu_server") == cpu["remote_total"]


def client_side(doc: dict[str, Any]) -> str:
    """The metric of the client's own intervals: it receives with -R, else it sends."""
    bidir = "sum_received_bidir_reverse" in doc["end"]
    return "throughput" if bidir or doc["start"]["test_start"]["reverse"] else "sender_throughput"


@pytest.mark.parametrize("name", GOOD)
def test_one_sample_per_interval_at_its_start_named_by_the_side_that_saw_it(name: str) -> None:
    """The client's intervals are its side's: a sender's rate is never `throughput` (a UDP
    client's 100 Mbit/s over a 50mbit link had been stored as the interval throughput)."""
    _, doc = load(name)
    kept = [i["sum"] for i in doc["intervals"] if not i["sum"]["omitted"]]
    samples = intervals(parse(name), client_side(doc))
    assert [s.t for s in samples] == [i["start"] for i in kept]
    assert [s.value for s in samples] == [i["bits_per_second"] for i in kept]
    assert all(s.unit == "bit/s" for s in samples)


@pytest.mark.parametrize("name", ["udp-loss-server", "tcp-server", "tcp-reverse-server"])
def test_the_servers_report_gives_the_other_sides_intervals(name: str) -> None:
    _, doc = load(name)
    result = parse(name)
    other = "sender_throughput" if client_side(doc) == "throughput" else "throughput"
    kept = [i["sum"] for i in doc["server_output_json"]["intervals"] if not i["sum"]["omitted"]]
    if kept[-1]["seconds"] < kept[0]["seconds"] / 2:  # a last sliver (tested below)
        kept = kept[:-1]
    samples = intervals(result, other)
    assert [s.t for s in samples] == [i["start"] for i in kept]
    assert [s.value for s in samples] == [i["bits_per_second"] for i in kept]


@pytest.mark.parametrize(("name", "sliver"), [("udp-loss-server", 0.054),
                                              ("tcp-p2-server", 0.009)])  # fmt: skip
def test_a_last_sliver_of_an_interval_is_no_sample(name: str, sliver: float) -> None:
    """The server's last interval lasted 9–54 ms of 0.5 s: its rate, of a few packets, had
    been a full sample (14.9 Mbit/s on a 10mbit link; a plot's line falling at its end)."""
    _, doc = load(name)
    last = doc["server_output_json"]["intervals"][-1]["sum"]
    assert round(last["seconds"], 3) == sliver
    receiver = intervals(parse(name), "throughput")
    assert receiver and all(s.t < last["start"] for s in receiver)
    assert len(receiver) == len(doc["server_output_json"]["intervals"]) - 1


def test_udp_intervals_say_what_arrived_through_a_narrower_link() -> None:
    """-b 100M through a 50mbit link: the client sent 100 Mbit/s each interval, ~half of it
    arrived, the rest lost, as the summary says too."""
    result = parse("udp-loss-server")
    sent = [s.value for s in intervals(result, "sender_throughput")]
    arrived = [s.value for s in intervals(result, "throughput")]
    assert min(sent) > 95e6 and max(arrived) < 52e6
    assert all(s.value > 40 for s in intervals(result, "loss_percent"))
    assert result.throughput < 52e6


def test_parallel_streams_from_the_server_are_labelled_in_its_order() -> None:
    _, doc = load("tcp-p2-server")
    result = parse("tcp-p2-server")
    server = doc["server_output_json"]
    for label, stream in zip(("1", "2"), server["end"]["streams"], strict=True):
        socket = stream["receiver"]["socket"]
        expected = [s["bits_per_second"] for i in server["intervals"][:-1]  # not its sliver
                    for s in i["streams"] if s["socket"] == socket]
        assert [s.value for s in intervals(result, "throughput", label)] == expected


def test_tcp_retransmits_and_congestion() -> None:
    _, doc = load("tcp")
    result = parse("tcp")
    assert not result.reverse and not result.bidir and result.streams == 1
    assert result.retransmits == doc["end"]["sum_sent"]["retransmits"]
    assert summary(result, "retransmits") == result.retransmits
    assert result.congestion == doc["end"]["sender_tcp_congestion"]
    assert result.loss_percent is None and result.jitter_ms is None
    assert result.throughput_reverse is None
    # A single stream has no per-stream samples: the summary is that stream.
    assert all(s.stream is None for s in result.samples)
    assert [s.value for s in intervals(result, "retransmits")] == [
        i["sum"]["retransmits"] for i in doc["intervals"]
    ]


def test_parallel_streams_are_labelled_and_add_up() -> None:
    _, doc = load("tcp-p2")
    result = parse("tcp-p2")
    assert result.streams == 2
    per_stream = [summary(result, "throughput", label) for label in ("1", "2")]
    assert per_stream == [s["receiver"]["bits_per_second"] for s in doc["end"]["streams"]]
    assert sum(per_stream) == pytest.approx(result.throughput, rel=1e-3)
    assert [summary(result, "retransmits", label) for label in ("1", "2")] == [
        s["sender"]["retransmits"] for s in doc["end"]["streams"]
    ]
    for label, socket in (("1", doc["end"]["streams"][0]["sender"]["socket"]),
                          ("2", doc["end"]["streams"][1]["sender"]["socket"])):
        expected = [s["bits_per_second"] for i in doc["intervals"] for s in i["streams"]
                    if s["socket"] == socket]
        assert [s.value for s in intervals(result, "sender_throughput", label)] == expected


def test_reverse_is_measured_at_the_client_which_receives() -> None:
    _, doc = load("tcp-reverse")
    result = parse("tcp-reverse")
    assert result.reverse and not result.bidir
    # -R: the client is the receiver, so its sum_received is not a sender's number.
    assert doc["end"]["sum_received"]["sender"] is False
    assert result.throughput == doc["end"]["sum_received"]["bits_per_second"]
    assert result.retransmits == doc["end"]["sum_sent"]["retransmits"]
    assert result.throughput_reverse is None
    assert not any(s.metric.endswith("_reverse") for s in result.samples)


@pytest.mark.parametrize("name", ["tcp-bidir", "tcp-bidir-p2"])
def test_bidir_has_both_directions(name: str) -> None:
    _, doc = load(name)
    end = doc["end"]
    result = parse(name)
    assert result.bidir
    back = end["sum_received_bidir_reverse"]["bits_per_second"]
    assert result.throughput_reverse == back
    assert summary(result, "throughput_reverse") == back
    assert summary(result, "sender_throughput_reverse") == (
        end["sum_sent_bidir_reverse"]["bits_per_second"]
    )
    assert summary(result, "retransmits_reverse") == end["sum_sent_bidir_reverse"]["retransmits"]
    assert [s.value for s in intervals(result, "throughput_reverse")] == [
        i["sum_bidir_reverse"]["bits_per_second"] for i in doc["intervals"]
    ]


def test_bidir_parallel_labels_each_direction_from_one() -> None:
    _, doc = load("tcp-bidir-p2")
    result = parse("tcp-bidir-p2")
    assert result.streams == 2
    forward = [s for s in doc["end"]["streams"] if s["receiver"]["sender"]]
    backward = [s for s in doc["end"]["streams"] if not s["receiver"]["sender"]]
    assert len(forward) == len(backward) == 2
    assert [summary(result, "throughput", label) for label in ("1", "2")] == [
        s["receiver"]["bits_per_second"] for s in forward
    ]
    assert [summary(result, "throughput_reverse", label) for label in ("1", "2")] == [
        s["receiver"]["bits_per_second"] for s in backward
    ]


@pytest.mark.parametrize("name", ["udp", "udp-loss", "udp-reverse", "udp-p2", "udp-bidir"])
def test_udp_loss_and_jitter_come_from_end_sum(name: str) -> None:
    _, doc = load(name)
    total = doc["end"]["sum"]
    result = parse(name)
    assert result.protocol == "UDP"
    assert result.retransmits is None
    assert result.loss_percent == total["lost_percent"] == summary(result, "loss_percent")
    assert result.jitter_ms == total["jitter_ms"] == summary(result, "jitter_ms")
    assert result.lost_packets == total["lost_packets"] == summary(result, "lost_packets")
    assert summary(result, "packets") == total["packets"]


def test_udp_with_loss_reports_what_arrived_not_what_was_sent() -> None:
    _, doc = load("udp-loss")
    result = parse("udp-loss")
    assert result.loss_percent is not None and result.loss_percent > 1
    assert result.throughput < result.sender_throughput
    assert result.throughput == doc["end"]["sum_received"]["bits_per_second"]
    assert result.throughput != doc["end"]["sum"]["bits_per_second"]


def test_udp_without_sum_received_falls_back_to_the_receivers_share() -> None:
    # Older iperf3 has no sum_received for UDP; the lossy run checks the estimate.
    _, doc = load("udp-loss")
    real = doc["end"].pop("sum_received")["bits_per_second"]
    doc["end"].pop("sum_sent")
    result = parse_iperf3(json.dumps(doc))
    assert result.throughput == pytest.approx(real, rel=5e-3)
    assert result.throughput < result.sender_throughput  # type: ignore[operator]


def test_udp_bidir_reverse_direction() -> None:
    _, doc = load("udp-bidir")
    result = parse("udp-bidir")
    assert result.bidir
    assert result.throughput_reverse == doc["end"]["sum_received_bidir_reverse"]["bits_per_second"]
    reverse = doc["end"]["sum_bidir_reverse"]
    assert summary(result, "loss_percent_reverse") == reverse["lost_percent"]
    assert summary(result, "jitter_ms_reverse") == reverse["jitter_ms"]


def test_udp_parallel_streams_keep_their_loss() -> None:
    _, doc = load("udp-p2")
    result = parse("udp-p2")
    streams = [s["udp"] for s in doc["end"]["streams"]]
    assert [summary(result, "sender_throughput", label) for label in ("1", "2")] == [
        s["bits_per_second"] for s in streams
    ]
    assert [summary(result, "jitter_ms", label) for label in ("1", "2")] == [
        s["jitter_ms"] for s in streams
    ]


def test_omitted_seconds_are_left_out() -> None:
    _, doc = load("tcp-omit")
    assert doc["intervals"][0]["sum"]["omitted"] is True
    result = parse("tcp-omit")
    times = [s.t for s in intervals(result, "sender_throughput")]
    assert times == [i["sum"]["start"] for i in doc["intervals"][1:]]


@pytest.mark.parametrize(
    ("name", "words"),
    [("error-refused", "Connection refused"), ("error-noroute", "Network is unreachable")],
)
def test_tool_errors_fail_even_though_iperf3_exits_0(
    name: str, words: str, exit_status: Any
) -> None:
    assert exit_status("iperf3", name) == 0  # why the parser, not the exit status, decides
    with pytest.raises(MeasurementFailed) as caught:
        parse(name)
    assert caught.value.reason == f"iperf3: unable to connect to server: {words}"
    assert caught.value.samples == ()


def test_error_after_some_intervals_keeps_them_but_fails() -> None:
    _, doc = load("tcp")
    doc["error"] = "control socket has closed unexpectedly"
    with pytest.raises(MeasurementFailed) as caught:
        parse_iperf3(json.dumps(doc))
    assert "control socket" in caught.value.reason
    assert [s.t for s in caught.value.samples if s.metric == "sender_throughput"] == [
        i["sum"]["start"] for i in doc["intervals"]
    ]


def test_zero_bytes_received_is_a_failure_not_a_zero() -> None:
    _, doc = load("tcp")
    doc["end"]["sum_received"].update(bytes=0, bits_per_second=0.0)
    with pytest.raises(MeasurementFailed, match="0 bytes"):
        parse_iperf3(json.dumps(doc))


@pytest.mark.parametrize(
    ("stdout", "stderr", "words"),
    [
        ("", "iperf3: error - unable to start listener", "unable to start listener"),
        ("", "", "no output"),
        ("Connecting to host 198.18.0.2, port 5201\n", "", "not valid JSON"),
        ("[1, 2]", "", "not an iperf3 result"),
        ('{"start": {}, "intervals": [], "end": {}}', "", "no receiver summary"),
    ],
)
def test_garbage_fails_with_a_reason(stdout: str, stderr: str, words: str) -> None:
    with pytest.raises(MeasurementFailed, match=words):
        parse_iperf3(stdout, stderr)


def test_truncated_output_fails() -> None:
    text, _ = load("tcp")
    with pytest.raises(MeasurementFailed, match="not valid JSON"):
        parse_iperf3(text[: len(text) // 2])
