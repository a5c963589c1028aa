"""Parse the client's `iperf3 --json` output into samples.

Why the receiver side: what counts is what got through, so the summary `throughput` is
`end.sum_received` (bit/s), for TCP and UDP, forward or `-R`. What the sender pushed is kept as
`sender_throughput`. Interval samples are named by the side that saw them too: `throughput`
(and UDP's loss and jitter) per interval are the receiver's, `sender_throughput` (and TCP's
retransmits) the sender's. The client sees its own side only: the receiver's intervals of a
forward run come from the server's report (`--get-server-output` of a `--json` server, which
the iperf3 plugin asks for); without it a forward run has `sender_throughput` intervals only
(over a 50mbit link a UDP client's intervals said 100 Mbit/s, its receiver's 48.6). With
`--bidir` the client's intervals are kept as they were: its sender side for the forward
direction, its receiver side for `_reverse`.

iperf3 3.12 exits 0 even when it fails under --json, so the "error" key, not the exit status,
decides: an error, unreadable output or a run that moved no data raises MeasurementFailed.

    result = parse_iperf3(completed.stdout, completed.stderr)
    result.throughput          # 9.41e9, bit/s at the receiver
    result.samples             # summary (t=None) and per-interval samples

Metric names (t=None for the run's summary; `stream` "1", "2"… per parallel stream):
    throughput, sender_throughput [bit/s]; retransmits [segments] (TCP);
    cpu_client, cpu_server [%]; loss_percent [%], jitter_ms [ms], lost_packets,
    packets [packets] (UDP). With --bidir the server→client direction repeats these with
    the suffix `_reverse`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from netrig.base.sample import MeasurementFailed, Sample

BITS = "bit/s"
REVERSE_SUFFIX = "_reverse"

# (key in an iperf3 interval or stream record, our metric, unit); absent keys are skipped.
_INTERVAL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("bits_per_second", "throughput", BITS),
    ("retransmits", "retransmits", "segments"),
    ("jitter_ms", "jitter_ms", "ms"),
    ("lost_packets", "lost_packets", "packets"),
    ("lost_percent", "loss_percent", "%"),
)
_UDP_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("lost_percent", "loss_percent", "%"),
    ("jitter_ms", "jitter_ms", "ms"),
    ("lost_packets", "lost_packets", "packets"),
    ("packets", "packets", "packets"),
)


@dataclass(frozen=True)
class Iperf3Result:
    """One iperf3 client run: the headline numbers, and every value as `samples`."""

    version: str
    protocol: str  # "TCP" or "UDP"
    streams: int  # parallel streams per direction (-P)
    reverse: bool  # -R: the server sent
    bidir: bool  # --bidir: both directions at once
    duration: float  # seconds covered by the receiver's summary
    throughput: float  # bit/s at the receiver
    sender_throughput: float | None  # bit/s at the sender
    retransmits: int | None  # TCP only
    cpu_client: float | None  # % of one host's CPUs, as iperf3 reports it
    cpu_server: float | None
    loss_percent: float | None  # UDP only
    jitter_ms: float | None  # UDP only
    lost_packets: int | None  # UDP only
    throughput_reverse: float | None  # --bidir only: server → client, at the client
    congestion: str | None  # TCP congestion control of the sender
    samples: tuple[Sample, ...]


def _metric(name: str, reverse_direction: bool) -> str:
    return name + REVERSE_SUFFIX if reverse_direction else name


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _load(stdout: str, stderr: str) -> dict[str, Any]:
    if not stdout.strip():
        detail = _last_line(stderr) or "no output"
        raise MeasurementFailed(f"iperf3 printed no JSON: {detail}")
    try:
        document = json.loads(stdout)
    except json.JSONDecodeError as error:
        detail = _last_line(stderr) or f"{error.msg} at line {error.lineno}"
        raise MeasurementFailed(f"iperf3 output is not valid JSON: {detail}") from None
    if not isinstance(document, dict):
        raise MeasurementFailed("iperf3 output is JSON but not an iperf3 result object")
    return document


def _stream_labels(end: Mapping[str, Any], bidir: bool) -> dict[int, tuple[str, bool]]:
    """socket → (label "1", "2"…, is server→client in --bidir), in iperf3's stream order."""
    labels: dict[int, tuple[str, bool]] = {}
    counts = {False: 0, True: 0}
    for stream in end.get("streams", []):
        record = stream.get("receiver") or stream.get("sender") or stream.get("udp") or {}
        if "socket" not in record:
            continue
        # In --bidir the client is the sender of the forward streams only.
        backward = bidir and not record.get("sender", True)
        counts[backward] += 1
        labels[record["socket"]] = (str(counts[backward]), backward)
    return labels


# per interval, by the side that measures it: what arrived, and what was sent
_RECEIVER_FIELDS = ("bits_per_second", "jitter_ms", "lost_packets", "lost_percent")
_SENDER_FIELDS = ("bits_per_second", "retransmits")


def _full_intervals(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The intervals, less a last one shorter than half the others (iperf3 often ends with
    10–30 ms of a 1-s interval: its rate, of a few packets, read as a full sample: 14.9
    Mbit/s on a 10mbit link, a plot's line falling at its end). pps drops its last too."""
    intervals = list(document.get("intervals", []))
    if len(intervals) < 2:
        return intervals

    def seconds(interval: Mapping[str, Any]) -> float:
        return float((interval.get("sum") or {}).get("seconds", 0.0))

    others = sorted(seconds(i) for i in intervals[:-1])
    if seconds(intervals[-1]) < others[len(others) // 2] / 2:
        return intervals[:-1]
    return intervals


def _sided_intervals(
    document: Mapping[str, Any], per_stream: bool, receiver: bool
) -> Iterator[Sample]:
    """One side's interval samples of a one-way run (no --bidir): the receiver's as
    `throughput` (and UDP's loss and jitter), the sender's as `sender_throughput` (and
    retransmits). Streams are labelled 1, 2 … in the order this side lists them."""
    wanted = _RECEIVER_FIELDS if receiver else _SENDER_FIELDS
    fields = [(f, m, u) for f, m, u in _INTERVAL_FIELDS if f in wanted]
    if not receiver:
        fields = [("bits_per_second", "sender_throughput", BITS), *fields[1:]]
    labels = _stream_labels(document.get("end") or {}, bidir=False)
    for interval in _full_intervals(document):
        total = interval.get("sum")
        if not total or total.get("omitted"):
            continue  # -O: the warm-up seconds are not part of the result
        for field, metric, unit in fields:
            if field in total:
                yield Sample(metric, total[field], unit, total["start"])
        if not per_stream:
            continue
        for stream in interval.get("streams", []):
            if stream.get("omitted"):
                continue
            label = labels.get(stream["socket"], (str(stream["socket"]), False))[0]
            for field, metric, unit in fields:
                if field in stream:
                    yield Sample(metric, stream[field], unit, stream["start"], label)


def _one_way_intervals(
    document: Mapping[str, Any], reverse: bool, per_stream: bool
) -> list[Sample]:
    """The client's intervals (the receiver's with -R, else the sender's) and, when the
    client asked for it, the server's (the other side)."""
    out = list(_sided_intervals(document, per_stream, receiver=reverse))
    server = document.get("server_output_json")
    if isinstance(server, Mapping) and server.get("intervals"):
        out += _sided_intervals(server, per_stream, receiver=not reverse)
    return out


def _interval_samples(
    document: Mapping[str, Any], labels: Mapping[int, tuple[str, bool]], per_stream: bool
) -> Iterator[Sample]:
    for interval in _full_intervals(document):
        parts = [("sum", False), ("sum_bidir_reverse", True)]
        for key, backward in parts:
            total = interval.get(key)
            if not total or total.get("omitted"):
                continue  # -O: the warm-up seconds are not part of the result
            t = total["start"]
            for field, metric, unit in _INTERVAL_FIELDS:
                if field in total:
                    yield Sample(_metric(metric, backward), total[field], unit, t)
        if not per_stream:
            continue
        for stream in interval.get("streams", []):
            if stream.get("omitted"):
                continue
            label, backward = labels.get(stream["socket"], (str(stream["socket"]), False))
            for field, metric, unit in _INTERVAL_FIELDS:
                if field in stream:
                    yield Sample(_metric(metric, backward), stream[field], unit,
                                 stream["start"], label)


def _stream_summaries(
    end: Mapping[str, Any], labels: Mapping[int, tuple[str, bool]]
) -> Iterator[Sample]:
    for stream in end.get("streams", []):
        if "udp" in stream:
            udp = stream["udp"]
            label, backward = labels.get(udp["socket"], (str(udp["socket"]), False))
            # iperf3 gives a UDP stream only its sender rate, plus the receiver's loss count.
            yield Sample(_metric("sender_throughput", backward), udp["bits_per_second"], BITS,
                         None, label)
            for field, metric, unit in _UDP_FIELDS:
                if field in udp:
                    yield Sample(_metric(metric, backward), udp[field], unit, None, label)
            continue
        sender, receiver = stream.get("sender", {}), stream.get("receiver", {})
        socket = receiver.get("socket", sender.get("socket"))
        label, backward = labels.get(socket, (str(socket), False))
        if "bits_per_second" in receiver:
            yield Sample(_metric("throughput", backward), receiver["bits_per_second"], BITS,
                         None, label)
        if "bits_per_second" in sender:
            yield Sample(_metric("sender_throughput", backward), sender["bits_per_second"],
                         BITS, None, label)
        if "retransmits" in sender:
            yield Sample(_metric("retransmits", backward), sender["retransmits"], "segments",
                         None, label)


def _direction(
    end: Mapping[str, Any], protocol: str, backward: bool
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(received sum, sent sum, UDP loss sum) of one direction of the run's end summary."""
    suffix = "_bidir_reverse" if backward else ""
    received = dict(end.get("sum_received" + suffix) or {})
    sent = dict(end.get("sum_sent" + suffix) or {})
    udp = dict(end.get("sum" + suffix) or {})
    if protocol == "UDP" and not received and udp:
        # iperf3 before sum_received existed for UDP: the receiver's share of what was sent.
        received = dict(udp)
        received["bits_per_second"] = udp["bits_per_second"] * (1 - udp["lost_percent"] / 100)
        sent = sent or dict(udp)
    return received, sent, udp


def _summary_samples(
    received: Mapping[str, Any], sent: Mapping[str, Any], udp: Mapping[str, Any],
    protocol: str, backward: bool,
) -> Iterator[Sample]:
    yield Sample(_metric("throughput", backward), received["bits_per_second"], BITS)
    if "bits_per_second" in sent:
        yield Sample(_metric("sender_throughput", backward), sent["bits_per_second"], BITS)
    if protocol == "TCP" and "retransmits" in sent:
        yield Sample(_metric("retransmits", backward), sent["retransmits"], "segments")
    if protocol == "UDP":
        for field, metric, unit in _UDP_FIELDS:
            if field in udp:
                yield Sample(_metric(metric, backward), udp[field], unit)


def parse_iperf3(stdout: str, stderr: str = "") -> Iperf3Result:
    """Parse one `iperf3 --json` client output; raise MeasurementFailed if it measured nothing."""
    document = _load(stdout, stderr)
    error = document.get("error")
    end = document.get("end") or {}
    test = document.get("start", {}).get("test_start", {})
    protocol = str(test.get("protocol") or ("UDP" if "sum" in end else "TCP")).upper()
    bidir = "sum_received_bidir_reverse" in end
    labels = _stream_labels(end, bidir)
    streams = int(test.get("num_streams") or max(1, len(labels) // (2 if bidir else 1)))
    if bidir:
        intervals = list(_interval_samples(document, labels, per_stream=streams > 1))
    else:
        reverse = bool(test.get("reverse"))
        intervals = _one_way_intervals(document, reverse, per_stream=streams > 1)
    if error:
        raise MeasurementFailed(f"iperf3: {error}", intervals)

    received, sent, udp = _direction(end, protocol, backward=False)
    if "bits_per_second" not in received:
        raise MeasurementFailed("iperf3 output has no receiver summary (end.sum_received)",
                                intervals)
    if not received.get("bytes", 1) or received["bits_per_second"] <= 0:
        raise MeasurementFailed("iperf3 moved no data: the receiver got 0 bytes", intervals)

    samples = list(_summary_samples(received, sent, udp, protocol, backward=False))
    throughput_reverse = None
    if bidir:
        back_received, back_sent, back_udp = _direction(end, protocol, backward=True)
        throughput_reverse = back_received["bits_per_second"]
        samples += _summary_samples(back_received, back_sent, back_udp, protocol, True)
    cpu = end.get("cpu_utilization_percent") or {}
    if "host_total" in cpu:
        samples.append(Sample("cpu_client", cpu["host_total"], "%"))
    if "remote_total" in cpu:
        samples.append(Sample("cpu_server", cpu["remote_total"], "%"))
    if streams > 1:
        samples += _stream_summaries(end, labels)

    return Iperf3Result(
        version=str(document.get("start", {}).get("version", "")),
        protocol=protocol,
        streams=streams,
        reverse=bool(test.get("reverse")),
        bidir=bidir,
        duration=float(received.get("seconds", 0.0)),
        throughput=float(received["bits_per_second"]),
        sender_throughput=sent.get("bits_per_second"),
        retransmits=sent.get("retransmits") if protocol == "TCP" else None,
        cpu_client=cpu.get("host_total"),
        cpu_server=cpu.get("remote_total"),
        loss_percent=udp.get("lost_percent") if protocol == "UDP" else None,
        jitter_ms=udp.get("jitter_ms") if protocol == "UDP" else None,
        lost_packets=udp.get("lost_packets") if protocol == "UDP" else None,
        throughput_reverse=throughput_reverse,
        congestion=end.get("sender_tcp_congestion"),
        samples=(*samples, *intervals),
    )
