"""Parsers for the `pps` measurement: interface counters and the generators' reports.

    >>> netdev_counters(" eth0: 1760 24 0 0 0 0 0 0 1760 24 0 0 0 0 0 0\\n")["eth0"].rx_packets
    24

Pure functions over text, tested against recorded output (tests/data/trafgen, netrig_gen).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from netrig.base.sample import MeasurementFailed


@dataclass(frozen=True)
class Counters:
    """One interface's packet counters, as /proc/net/dev shows them."""

    rx_packets: int
    rx_dropped: int
    tx_packets: int
    tx_dropped: int


def netdev_counters(text: str) -> dict[str, Counters]:
    """Interface name → counters, from the text of /proc/net/dev (header lines skipped)."""
    out = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or "|" in line:
            continue
        fields = rest.split()
        if len(fields) < 16 or not all(f.isdigit() for f in fields):
            continue
        # receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets errs drop …
        out[name.strip()] = Counters(
            int(fields[1]), int(fields[3]), int(fields[9]), int(fields[11])
        )
    return out


@dataclass(frozen=True)
class GeneratorReport:
    """What a generator says it did: frames the kernel took, frames refused, seconds sending."""

    sent: int
    refused: int
    seconds: float


_TRAFGEN_SENT = re.compile(r"^\s*(\d+) packets outgoing\s*$", re.M)
_TRAFGEN_CPU = re.compile(r"^\s*(\d+) sec, (\d+) usec on CPU\d+ \((\d+) packets\)\s*$", re.M)


def parse_trafgen(stdout: str) -> GeneratorReport:
    """trafgen's exit summary: `N packets outgoing` and one `S sec, U usec on CPUk (n packets)`
    line per worker; the longest worker's time is the sending time."""
    text = stdout.replace("\r", "\n")
    sent = _TRAFGEN_SENT.search(text)
    cpus = _TRAFGEN_CPU.findall(text)
    if sent is None or not cpus:
        raise MeasurementFailed("trafgen printed no summary (packets outgoing, time per CPU)")
    seconds = max(int(s) + int(u) / 1e6 for s, u, _ in cpus)
    return GeneratorReport(int(sent.group(1)), 0, seconds)


def parse_netrig_gen(stdout: str) -> GeneratorReport:
    """netrig_gen's one JSON line: {"sent": N, "refused": N, "seconds": S, "threads": N}."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and {"sent", "refused", "seconds"} <= set(data):
            return GeneratorReport(int(data["sent"]), int(data["refused"]), float(data["seconds"]))
    raise MeasurementFailed("netrig_gen printed no report (a JSON line with sent and seconds)")


def udp_received(text: str, family: int) -> int:
    """UDP datagrams that reached this namespace's UDP layer, from /proc/net/snmp (IPv4) or
    /proc/net/snmp6 (IPv6): to no socket (NoPorts), to a socket (InDatagrams, counted when
    read), or refused (InErrors: bad checksum, full buffer)."""
    keys = ("InDatagrams", "NoPorts", "InErrors")
    if family == 6:
        values = dict(line.split()[:2] for line in text.splitlines() if line.strip())
        return sum(int(values[f"Udp6{k}"]) for k in keys)
    rows = [line.split() for line in text.splitlines() if line.startswith("Udp: ")]
    if len(rows) < 2:
        raise ValueError("no Udp: lines in the snmp text")
    values = dict(zip(rows[0][1:], rows[1][1:], strict=True))
    return sum(int(values[k]) for k in keys)
