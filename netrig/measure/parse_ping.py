"""Parse iputils `ping` output into RTT and loss samples.

Why parse the closing statistics rather than average the reply lines ourselves: they are
ping's own numbers (mdev included) and are there even with `-q`. The reply lines are kept as
`replies`; with `-D` they carry timestamps and become per-reply `rtt` samples at time t.

No reply at all (100 % loss, no route, unknown host) raises MeasurementFailed, carrying the
sent/received/loss samples, so a dead path is stored as a failed run and never as RTT 0.

    result = parse_ping(completed.stdout, completed.stderr)
    result.rtt_avg, result.loss_percent      # 0.124, 0.0 (ms, %)

Metric names (summary, t=None): rtt_min, rtt_avg, rtt_max, rtt_mdev [ms]; sent, received
[packets]; loss_percent [%]. Per reply with -D: rtt [ms] at t seconds after the first reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from netrig.base.sample import MeasurementFailed, Sample

_HEADER = re.compile(r"^PING (?P<target>\S+?)\s*\((?P<address>[^)]*)\)")
_REPLY = re.compile(
    r"^(?:\[(?P<stamp>\d+\.\d+)\] )?\d+ bytes from .*?icmp_seq=(?P<seq>\d+)"
    r".*?time[=<](?P<rtt>\d+(?:\.\d+)?) ms(?P<dup> \(DUP!\))?"
)
_COUNTS = re.compile(
    r"^(?P<sent>\d+) packets transmitted, (?P<received>\d+) (?:packets )?received,"
    r"(?: \+(?P<duplicates>\d+) duplicates,)?(?: \+\d+ corrupted,)?"
    r"(?: \+(?P<errors>\d+) errors,)? (?P<loss>\d+(?:\.\d+)?)% packet loss"
)
# iputils: "rtt min/avg/max/mdev = …"; BusyBox and others: "round-trip min/avg/max = …".
_RTT = re.compile(
    r"^(?:rtt|round-trip) min/avg/max(?:/mdev)? = (?P<min>[\d.]+)/(?P<avg>[\d.]+)/"
    r"(?P<max>[\d.]+)(?:/(?P<mdev>[\d.]+))? ms"
)
_PROBLEM = re.compile(r"^From (?P<source>\S+?)(?: \([^)]*\))? icmp_seq=\d+ (?P<what>.+)$")


@dataclass(frozen=True)
class PingReply:
    """One echo reply line: sequence number, RTT in ms, and the -D timestamp if any."""

    seq: int
    rtt_ms: float
    timestamp: float | None = None


@dataclass(frozen=True)
class PingResult:
    """One ping run to one target."""

    target: str
    address: str
    sent: int
    received: int
    loss_percent: float
    errors: int
    duplicates: int
    rtt_min: float  # ms
    rtt_avg: float
    rtt_max: float
    rtt_mdev: float | None  # None where the ping has no mdev (BusyBox)
    replies: tuple[PingReply, ...]
    samples: tuple[Sample, ...]


def _last_line(text: str) -> str:
    # ping's warnings come first on stderr; the error that ended it comes last.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def parse_ping(stdout: str, stderr: str = "") -> PingResult:
    """Parse one ping run; raise MeasurementFailed if no reply came back."""
    target = address = ""
    replies: list[PingReply] = []
    problems: list[str] = []
    counts = rtt = None
    for line in stdout.splitlines():
        line = line.strip()
        if match := _HEADER.match(line):
            target, address = match["target"], match["address"]
        elif match := _REPLY.match(line):
            if not match["dup"]:
                stamp = float(match["stamp"]) if match["stamp"] else None
                replies.append(PingReply(int(match["seq"]), float(match["rtt"]), stamp))
        elif match := _PROBLEM.match(line):
            problems.append(f"{match['what']} from {match['source']}")
        elif match := _COUNTS.match(line):
            counts = match
        elif match := _RTT.match(line):
            rtt = match

    if counts is None:
        detail = _last_line(stderr) or (problems[0] if problems else "") or "printed no statistics"
        if not detail.startswith("ping"):
            detail = f"ping {target}: {detail}" if target else f"ping: {detail}"
        raise MeasurementFailed(detail)
    sent, received = int(counts["sent"]), int(counts["received"])
    loss = float(counts["loss"])
    totals = [
        Sample("sent", sent, "packets"),
        Sample("received", received, "packets"),
        Sample("loss_percent", loss, "%"),
    ]
    if received == 0 or rtt is None:
        # what came back instead, as ping printed it: the first, and how many errors in all
        errors = int(counts["errors"] or 0)
        said = [problems[0]] if problems else []
        said += [f"{errors} errors"] if errors > 1 or (errors and not problems) else []
        why = f" ({'; '.join(said)})" if said else ""
        raise MeasurementFailed(
            f"no reply from {target or address}: {sent} sent, 0 received, {loss:g}% loss{why}",
            totals,
        )

    summary = [
        Sample("rtt_min", float(rtt["min"]), "ms"),
        Sample("rtt_avg", float(rtt["avg"]), "ms"),
        Sample("rtt_max", float(rtt["max"]), "ms"),
    ]
    if rtt["mdev"] is not None:
        summary.append(Sample("rtt_mdev", float(rtt["mdev"]), "ms"))
    first = next((r.timestamp for r in replies if r.timestamp is not None), None)
    per_reply = [
        Sample("rtt", r.rtt_ms, "ms", r.timestamp - first)
        for r in replies
        if r.timestamp is not None and first is not None
    ]
    return PingResult(
        target=target,
        address=address,
        sent=sent,
        received=received,
        loss_percent=loss,
        errors=int(counts["errors"] or 0),
        duplicates=int(counts["duplicates"] or 0),
        rtt_min=float(rtt["min"]),
        rtt_avg=float(rtt["avg"]),
        rtt_max=float(rtt["max"]),
        rtt_mdev=float(rtt["mdev"]) if rtt["mdev"] is not None else None,
        replies=tuple(replies),
        samples=(*summary, *totals, *per_reply),
    )
